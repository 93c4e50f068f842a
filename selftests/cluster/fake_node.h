/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the programs of the fake-node run share (tools/check.sh runs them
 * with rig.fake_peer=1: node 1 holds a second address, ODSM_FAKE_IP, the
 * cluster's table gives to a last node no module runs): they run on node
 * 0, the module under test, and node 1, the fake node's host, over TCP
 * only (the fake peer speaks TCP), and they SKIP anywhere else.
 *
 * Include after odsm_cluster.h and fake_peer.h.
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

#endif /* _ODSM_FAKE_NODE_H */
