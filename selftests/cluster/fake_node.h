/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the programs of the fake-node run share (tools/check.sh runs them
 * with rig.fake_peer=1: node 1 holds a second address, ODSM_FAKE_IP, the
 * cluster's table gives to a last node no module runs): they run on node
 * 0, the module under test, and node 1, the fake node's host, over TCP
 * only (the fake peer speaks TCP), and they SKIP anywhere else.
 *
 * Include after odsm_cluster.h and fake_peer.h.  A fake home serves node 0
 * with c_fake_home().
 */
#ifndef _ODSM_FAKE_NODE_H
#define _ODSM_FAKE_NODE_H

/* The address of the fake node, or NULL outside the fake-node run. */
static inline const char *c_fake_ip(void)
{
	const char *ip = getenv("ODSM_FAKE_IP");

	return ip && *ip ? ip : NULL;
}

/* Does node 0 see the fake node (the cluster's last id) up? */
static inline bool c_fake_node_is_up(void)
{
	unsigned int st[ODSM_MAX_NODES];

	return !c_states(st, C.nodes) && st[C.nodes - 1] == ODSM_PEER_UP;
}

/*
 * A test of the fake-node run begins: SKIP where it does not run, then
 * wait for both nodes' directories.
 */
#define C_FAKE_NODE_BEGIN() do { \
	C_BEGIN(); \
	if (C.transport != ODSM_TRANSPORT_TCP) \
		SKIP(return, "the cluster does not run over TCP"); \
	if (!c_fake_ip()) \
		SKIP(return, "no fake node in this cluster (rig.fake_peer=1)"); \
	if (C.self > 1) \
		SKIP(return, "only node 0 (the module under test) and node 1 (the fake node's host)"); \
	ASSERT_EQ(0, c_dir_wait(0, 120)); \
	ASSERT_EQ(0, c_dir_wait(1, 120)); \
} while (0)

/*
 * Dial node 0 as the fake node (the cluster's last id), incarnation inc
 * (0: fp_init()'s), from ODSM_FAKE_IP, and complete the handshake.
 * 0 or -errno.
 */
static inline int c_fake_node_dial(struct fake_peer *fp, uint64_t inc)
{
	struct odsm_peer_info p[ODSM_MAX_NODES];
	struct sockaddr_in to = { .sin_family = AF_INET };
	unsigned int nr = ODSM_MAX_NODES;
	int ret;

	ret = odsm_status(p, &nr, NULL);
	if (ret)
		return ret;
	to.sin_addr.s_addr = p[0].ipv4;
	to.sin_port = htons((uint16_t)C.port);
	fp_init(fp, C.nodes - 1, C.nodes, C.in.heap_base, C.in.part_size);
	if (inc)
		fp->inc = inc;
	return fp_connect(fp, 0, &to, inet_addr(c_fake_ip()));
}

/*
 * c_fake_node_dial(), then wait until node 0 serves a READ on the new
 * connection: then it counts that incarnation up.  0 or -errno.
 */
static inline int c_fake_node_up(struct fake_peer *fp, uint64_t inc)
{
	uint8_t b[8];
	int32_t st = 0;
	uint64_t seq;
	int ret;

	ret = c_fake_node_dial(fp, inc);
	if (ret)
		return ret;
	seq = fp_read_req(fp, c_word(0, W_MAGIC), 8);
	if (!seq)
		return -EIO;
	ret = fp_reply(fp, seq, &st, b, sizeof(b), 30);
	return ret ?: st;
}

/*
 * A fake home's server of requests: answer the request h (the first 64
 * bytes of its payload in p) on fp; 0 or -errno, -ENOSYS for a request it
 * does not serve.  ctx is the caller's.
 */
typedef int (*c_fake_serve_fn)(struct fake_peer *fp, const struct fp_hdr *h,
			       const uint8_t *p, void *ctx);

/*
 * Be the fake node's home on fp until node 0's word stop is set (0), or
 * for secs at most (-ETIMEDOUT): answer node 0's PINGs (so it keeps the
 * fake node up), hand every request to serve and refuse with -EINVAL
 * those it does not serve; replies (to the fake node's own READs, or
 * late ones) are dropped.  Another error: the connection's.
 */
static inline int c_fake_home(struct fake_peer *fp, unsigned int stop,
			      unsigned int secs, c_fake_serve_fn serve,
			      void *ctx)
{
	uint64_t end = c_now_ms() + secs * 1000ULL, v;
	uint8_t p[64], pong[16];
	struct fp_hdr h;
	int ret;

	while (c_now_ms() < end) {
		if (!c_get(0, stop, &v) && v)
			return 0;
		ret = fp_recv(fp, &h, p, sizeof(p), 1);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret)
			return ret;
		if (h.flags & F_REPLY)
			continue;
		if (h.type == T_PING) {
			/* the node's heartbeat: echo its send_ns */
			memset(pong, 0, sizeof(pong));
			memcpy(pong, p, 8);
			ret = h.len == 8 ? fp_send(fp, T_PONG, F_REPLY, h.seq,
						   0, pong, sizeof(pong)) : 0;
		} else {
			ret = serve(fp, &h, p, ctx);
			/* the type after a request's is its reply's */
			if (ret == -ENOSYS)
				ret = h.seq ? fp_send(fp, (uint8_t)(h.type + 1),
						      F_REPLY, h.seq, -EINVAL,
						      NULL, 0) : 0;
		}
		if (ret)
			return ret;
	}
	return -ETIMEDOUT;
}

#endif /* _ODSM_FAKE_NODE_H */
