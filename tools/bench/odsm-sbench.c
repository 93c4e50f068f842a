// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-sbench: remote execution and channels across two nodes
 * (userlib/odsm_spawn.h, odsm_chan.h).  Node 0 holds a 4 KiB object and
 * receives on a channel; node 1 measures:
 *
 *   spawn_to   odsm_spawn_to() of an op that sums the object's 4 KiB, on
 *              node 0 (where it lives), and odsm_task_join(): the whole
 *              round trip, median of LAT_N
 *   local      the same op called directly on a 4 KiB object of node 1's
 *              own: what running it locally on the owner's node costs
 *   pull       the op run on node 1 over a shared borrow of node 0's
 *              object (the coherence path: the bytes come here)
 *
 * and the channel: node 1 sends MSGS boxes of 64 B, then of 64 KiB
 * (allocated beforehand in its partition), to node 0's channel, which
 * receives and drops them; messages per second from the first send to
 * the receiver's last (the receiver reports its count over the socket).
 * No object byte travels: the two sizes should cost the same.
 *
 *   odsm-sbench serve               on node 0
 *   odsm-sbench NODE0_IP [LABEL]    on node 1
 *
 * The addresses go over a TCP socket (port 7202), as odsm-xbench does.
 * Rows (node 1): "ODSM_BENCH spawn_remote LABEL spawn_to_us=...
 * local_us=... pull_us=...", "ODSM_BENCH spawn_to_vs_local_call ratio=R
 * label=LABEL", "ODSM_BENCH spawn_to_vs_pull ratio=R label=LABEL",
 * "ODSM_BENCH channel_msgs_per_s b64=X b64k=Y label=LABEL".  A benchmark,
 * not a test.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
#include "odsm.h"
#include "bench.h"

#define PORT	7202
#define LAT_N	50
#define OBJ_LEN	4096
#define MSGS	200
#define CAP	64

struct info {
	uint64_t rt;		/* node 0's spawn runtime */
	uint64_t obj;		/* its 4 KiB object */
	odsm_chan c;
};

static struct info I;
static uint64_t OP_SUM;

static uint64_t sum4k(const uint8_t *p)
{
	uint64_t s = 0;
	int i;

	for (i = 0; i < OBJ_LEN; i++)
		s += p[i];
	return s;
}

/* spawned: sum the object where it lives */
static int op_sum(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	const struct odsm_spawn_ctx *ctx = obj;
	odsm_box f = { .g = ctx->obj };
	const uint8_t *p;
	uint64_t s;
	odsm_ref r;
	int st;

	st = odsm_borrow_field(&f, &r, (const void **)&p);
	if (st)
		return st;
	s = sum4k(p);
	odsm_return(&r);
	if (*rl < sizeof(s))
		return -EINVAL;
	memcpy(ret, &s, sizeof(s));
	*rl = sizeof(s);
	return 0;
}

static void must(const char *what, int ret)
{
	if (ret)
		die(what, ret);
}

/* ---- node 0 ------------------------------------------------------------- */

static int serve(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(PORT) };
	uint64_t got = 0, want = 0;
	int ls, cs, one = 1, ret, i;
	odsm_box b = { 0 }, obj;
	uint8_t *p;

	must("spawn_start", odsm_spawn_start(2, &I.rt));
	must("chan", odsm_chan_new(CAP, &I.c));
	must("object", odsm_box_new(&obj, OBJ_LEN, 0));
	p = odsm_ptr(obj.g);
	/* not handed out yet: raw writes are right */
	for (i = 0; i < OBJ_LEN; i++)
		p[i] = (uint8_t)i;
	I.obj = odsm_box_share(&obj);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
		die("listen", -errno);
	cs = accept(ls, NULL, NULL);
	if (cs < 0 || write(cs, &I, sizeof(I)) != sizeof(I))
		die("client", -errno);
	/* two rounds: the client says how many, we say when all came */
	for (;;) {
		if (read(cs, &want, sizeof(want)) != sizeof(want))
			die("client's count", -errno);
		if (!want)
			break;
		for (got = 0; got < want; got++) {
			ret = odsm_chan_recv(&I.c, &b, NULL, 60000);
			if (ret)
				die("recv", ret);
			odsm_box_drop(&b);
			b.g = 0;
		}
		if (write(cs, &got, sizeof(got)) != sizeof(got))
			die("reply", -errno);
	}
	close(cs);
	close(ls);
	odsm_chan_free(&I.c);
	odsm_box_drop(&obj);
	odsm_spawn_stop();
	return 0;
}

/* ---- node 1 ------------------------------------------------------------- */

static int fetch_info(const char *ip)
{
	return bench_dial(ip, PORT, &I, sizeof(I));
}

/* messages per second of MSGS boxes of len bytes sent to node 0 */
static double channel_rate(int s, size_t len)
{
	static odsm_box b[MSGS];
	uint64_t n = MSGS;
	double t0;
	int i;

	for (i = 0; i < MSGS; i++)
		must("box", odsm_box_new(&b[i], len, ODSM_ALLOC_ZERO));
	if (write(s, &n, sizeof(n)) != sizeof(n))
		die("count", -errno);
	t0 = now_us();
	for (i = 0; i < MSGS; i++)
		must("send", odsm_chan_send(&I.c, &b[i]));
	if (read(s, &n, sizeof(n)) != sizeof(n) || n != MSGS)
		die("node 0's count", -EPROTO);
	return MSGS / ((now_us() - t0) / 1e6);
}

int main(int argc, char **argv)
{
	double ts[LAT_N], tl[LAT_N], tp[LAT_N], sp, lo, pu, r64, r64k, t0;
	uint64_t v, zero = 0, rt;
	struct odsm_spawn_ctx ctx = { .node = 1 };
	odsm_box mine, remote;
	const uint8_t *p;
	const char *label;
	odsm_task *t;
	odsm_ref r;
	size_t len;
	int s, i;

	if (argc < 2)
		errx(1, "usage: odsm-sbench serve | NODE0_IP [LABEL]");
	must("odsm_init", odsm_init());
	must("register", odsm_deleg_register("sbench.sum", op_sum, &OP_SUM));
	if (!strcmp(argv[1], "serve"))
		return serve();
	label = argc > 2 ? argv[2] : "remote";
	s = fetch_info(argv[1]);
	/* this node's runtime: the channel's couriers and replies need none,
	 * but a program runs one on every node (programs.rst)
	 */
	must("spawn_start", odsm_spawn_start(1, &rt));
	must("peer", odsm_spawn_peer(0, I.rt));
	must("mine", odsm_box_new(&mine, OBJ_LEN, ODSM_ALLOC_ZERO));
	ctx.obj = mine.g;
	remote.g = I.obj;
	remote.ext = 0;
	for (i = 0; i < LAT_N; i++) {
		t0 = now_us();
		must("spawn_to", odsm_spawn_to(&remote, OP_SUM, NULL, 0, &t));
		len = sizeof(v);
		must("join", odsm_task_join(t, &v, &len));
		ts[i] = now_us() - t0;
		t0 = now_us();
		len = sizeof(v);
		must("local", op_sum(&ctx, NULL, 0, &v, &len));
		tl[i] = now_us() - t0;
		/* pull: a shared borrow of node 0's object, here */
		must("drop copies", odsm_drop_copies(NULL, NULL));
		t0 = now_us();
		must("borrow", odsm_borrow_field(&remote, &r,
						 (const void **)&p));
		v = sum4k(p);
		odsm_return(&r);
		tp[i] = now_us() - t0;
	}
	stats(ts, LAT_N, &sp, NULL);
	stats(tl, LAT_N, &lo, NULL);
	stats(tp, LAT_N, &pu, NULL);
	r64 = channel_rate(s, 64);
	r64k = channel_rate(s, 64 * 1024);
	if (write(s, &zero, sizeof(zero)) != sizeof(zero))
		warnx("node 0 went early");
	close(s);
	row("spawn_remote %s spawn_to_us=%.1f local_us=%.2f pull_us=%.1f",
	    label, sp, lo, pu);
	row("spawn_to_vs_pull ratio=%.2f label=%s", sp / pu, label);
	row("spawn_to_vs_local_call ratio=%.0f label=%s", sp / lo, label);
	row("channel_msgs_per_s b64=%.0f b64k=%.0f label=%s", r64, r64k,
	    label);
	odsm_box_drop(&mine);
	odsm_spawn_stop();
	return 0;
}
