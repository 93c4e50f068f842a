// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-xbench: delegation across nodes.  Clients on nodes 1..N increment
 * a counter held on node 0, four ways side by side, in one run:
 *
 *   batched    odsm_deleg_apply_then() to node 0's trustee (the module
 *              carries a batch per (thread, trustee) pair: many requests
 *              per round trip)
 *   unbatched  odsm_deleg_apply(): one request, one round trip
 *   cas_lock   a lock built from remote compare-and-swap: lock (CAS until
 *              it is won), read the counter, write it + 1, unlock (a
 *              write): four round trips when uncontended
 *   fetch_add  a remote fetch-and-add (odsm_fetch_add): one round trip,
 *              the best a lock-free remote counter can do
 *
 * in operations per second (the median of REPS runs of MS ms, THREADS
 * client threads), and the latency of one apply against one plain
 * two-sided request of about its size (an ODSM_IOC_READ of 48 bytes of
 * an object on node 0: an apply's batch is 56 bytes out, 40 back), the
 * median of 200 each, taken alternately.
 *
 *   odsm-xbench serve NCLIENTS          on node 0
 *   odsm-xbench NODE0_IP [MS [REPS [THREADS [LABEL]]]]   on each client
 *
 * Node 0 starts a runtime, entrusts the counter to it and sends the
 * addresses to each client over a TCP socket (port 7201); a client sends
 * one byte back when it is done.  Rows (client): "ODSM_BENCH
 * deleg_remote LABEL threads=T batched=... unbatched=... cas_lock=...
 * fetch_add=...", "ODSM_BENCH deleg_remote_latency LABEL apply_us=...
 * read_us=...", then deleg_remote_vs_cas_lock (batched over cas_lock),
 * deleg_remote_batched_vs_unbatched and deleg_apply_vs_rpc_latency (one
 * apply's median over one read's), each "ratio=R label=LABEL".  A
 * benchmark, not a test.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
#include "odsm.h"
#include "bench.h"

#define PORT	7201
#define LAT_N	200
#define RD_LEN	48

struct info {
	uint64_t arena;
	uint32_t cell, gen;
	uint64_t lock;		/* lock word, counter word: 16 bytes */
	uint64_t faa;		/* a counter word for fetch_add */
	uint64_t rd;		/* RD_LEN bytes the read latency reads */
};

enum { BATCHED, UNBATCHED, CAS_LOCK, FETCH_ADD, NMETHODS };

static struct info I;
static int info_fd = -1;	/* a client's socket to node 0 */
static odsm_trust T;
static uint64_t OP_INC;
static volatile int stop;

static int inc(void *obj, const void *arg, size_t len, void *ret,
	       size_t *rl)
{
	uint64_t *c = obj;

	*c += 1;
	if (*rl >= sizeof(*c)) {
		memcpy(ret, c, sizeof(*c));
		*rl = sizeof(*c);
	} else {
		*rl = 0;
	}
	return 0;
}

static void must(const char *what, int ret)
{
	if (ret)
		die(what, ret);
}

/* ---- node 0 ---------------------------------------------------------- */

static int serve(int nclients)
{
	struct odsm_deleg_config cfg = { .trustees = 1, .clients = 64 };
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(PORT) };
	struct odsm_deleg_arena a;
	struct odsm_deleg *d;
	int ls, one = 1, i, *cs;
	odsm_box b;
	char c;

	cs = calloc(nclients, sizeof(*cs));
	if (!cs)
		errx(1, "out of memory");
	must("arena", odsm_deleg_arena_heap(&a, odsm_deleg_arena_size(&cfg)));
	must("runtime", odsm_deleg_start(&a, &cfg, &d));
	must("counter", odsm_box_new(&b, 8, ODSM_ALLOC_ZERO));
	must("entrust", odsm_deleg_entrust(d, 0, &b, 0, &T));
	must("lock", odsm_alloc(16, 16, ODSM_ALLOC_ZERO, &I.lock));
	must("faa", odsm_alloc(8, 8, ODSM_ALLOC_ZERO, &I.faa));
	must("rd", odsm_alloc(RD_LEN, 8, ODSM_ALLOC_ZERO, &I.rd));
	I.arena = T.arena;
	I.cell = T.cell;
	I.gen = T.gen;
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 8))
		die("listen", -errno);
	for (i = 0; i < nclients; i++) {
		cs[i] = accept(ls, NULL, NULL);
		if (cs[i] < 0 || write(cs[i], &I, sizeof(I)) != sizeof(I))
			die("client", -errno);
	}
	/* every client done: the runtime may go */
	for (i = 0; i < nclients; i++) {
		if (read(cs[i], &c, 1) != 1)
			warnx("client %d went without a word", i);
		close(cs[i]);
	}
	close(ls);
	odsm_deleg_stop(d);
	free(cs);
	return 0;
}

/* ---- a client ------------------------------------------------------------ */

static void fetch_info(const char *ip)
{
	int s = bench_dial(ip, PORT, &I, sizeof(I));

	T.arena = I.arena;
	T.cell = I.cell;
	T.gen = I.gen;
	info_fd = s;		/* the "done" goes back on it */
}

struct worker {
	pthread_t tid;
	int method;
	uint64_t ops;
	int err;
};

static void then_done(void *cookie, int st, const void *ret, size_t len)
{
	struct worker *w = cookie;

	if (st && !w->err)
		w->err = st;
	w->ops++;
}

/* lock, read, write, unlock: four remote operations */
static int cas_lock_inc(void)
{
	uint64_t old = 1, v, zero = 0;
	int ret;

	while (old) {
		ret = odsm_cmp_swap(I.lock, 0, 1, &old);
		if (ret)
			return ret;
	}
	ret = odsm_read(I.lock + 8, &v, sizeof(v));
	v++;
	if (!ret)
		ret = odsm_write(I.lock + 8, &v, sizeof(v));
	if (!ret)
		ret = odsm_write(I.lock, &zero, sizeof(zero));
	return ret;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct odsm_deleg *d;
	uint64_t v;
	size_t len;
	int ret = 0;

	while (!stop && !ret) {
		switch (w->method) {
		case BATCHED:
			ret = odsm_deleg_apply_then(&T, OP_INC, NULL, 0, NULL,
						    0, then_done, w, NULL, 0);
			break;
		case UNBATCHED:
			len = sizeof(v);
			ret = odsm_deleg_apply(&T, OP_INC, NULL, 0, &v, &len);
			w->ops++;
			break;
		case CAS_LOCK:
			ret = cas_lock_inc();
			w->ops++;
			break;
		case FETCH_ADD:
			ret = odsm_fetch_add(I.faa, 1, NULL);
			w->ops++;
			break;
		}
	}
	if (w->method == BATCHED) {
		/* what was queued completes, and counts */
		if (!ret && !odsm_deleg_at(T.arena, &d))
			ret = odsm_deleg_drain(d);
		if (!odsm_deleg_at(T.arena, &d))
			odsm_deleg_thread_done(d);
	}
	w->err = w->err ? w->err : ret;
	return NULL;
}

/* Operations per second of nthreads threads running method for ms. */
static double once(int method, int nthreads, int ms)
{
	struct worker w[16] = { 0 };
	double t0, t;
	uint64_t ops = 0;
	int i;

	stop = 0;
	t0 = now_us();
	for (i = 0; i < nthreads; i++) {
		w[i].method = method;
		if (pthread_create(&w[i].tid, NULL, work, &w[i]))
			errx(1, "pthread_create");
	}
	usleep(ms * 1000);
	stop = 1;
	for (i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		if (w[i].err)
			die("worker", w[i].err);
		ops += w[i].ops;
	}
	t = now_us() - t0;
	return ops / (t / 1e6);
}

/*
 * One apply and one read alternately, LAT_N of each: both see the same
 * moments of the (shared, emulated) machine, so their ratio is fair.
 */
static void latencies(double *apply_us, double *read_us)
{
	double *ta = calloc(LAT_N, sizeof(*ta)), *tr = calloc(LAT_N, sizeof(*tr));
	uint8_t buf[RD_LEN];
	double t0;
	uint64_t v;
	size_t len;
	int i;

	if (!ta || !tr)
		errx(1, "out of memory");
	for (i = 0; i < LAT_N; i++) {
		len = sizeof(v);
		t0 = now_us();
		must("apply", odsm_deleg_apply(&T, OP_INC, NULL, 0, &v, &len));
		ta[i] = now_us() - t0;
		t0 = now_us();
		must("read", odsm_read(I.rd, buf, sizeof(buf)));
		tr[i] = now_us() - t0;
	}
	stats(ta, LAT_N, apply_us, NULL);
	stats(tr, LAT_N, read_us, NULL);
	free(ta);
	free(tr);
}

int main(int argc, char **argv)
{
	static const char *const names[NMETHODS] = {
		"batched", "unbatched", "cas_lock", "fetch_add" };
	double r[16], med[NMETHODS], lat_apply, lat_read;
	int ms, reps, nthreads, m, i;
	const char *label;

	if (argc < 2)
		errx(1, "usage: odsm-xbench serve NCLIENTS | NODE0_IP [MS [REPS [THREADS [LABEL]]]]");
	must("odsm_init", odsm_init());
	must("register", odsm_deleg_register("xbench.inc", inc, &OP_INC));
	if (!strcmp(argv[1], "serve"))
		return serve((int)arg_num(argc, argv, 2, 1));
	ms = (int)arg_num(argc, argv, 2, 1000);
	reps = (int)arg_num(argc, argv, 3, 3);
	nthreads = (int)arg_num(argc, argv, 4, 2);
	label = argc > 5 ? argv[5] : "remote";
	if (reps < 1 || reps > 16 || nthreads < 1 || nthreads > 16 || ms < 1)
		errx(1, "REPS 1..16, THREADS 1..16, MS > 0");
	fetch_info(argv[1]);
	latencies(&lat_apply, &lat_read);
	for (m = 0; m < NMETHODS; m++) {
		for (i = 0; i < reps; i++)
			r[i] = once(m, nthreads, ms);
		stats(r, reps, &med[m], NULL);
	}
	row("deleg_remote %s threads=%d %s=%.0f %s=%.0f %s=%.0f %s=%.0f",
	    label, nthreads, names[0], med[0], names[1], med[1], names[2],
	    med[2], names[3], med[3]);
	row("deleg_remote_latency %s apply_us=%.1f read_us=%.1f", label,
	    lat_apply, lat_read);
	row("deleg_remote_vs_cas_lock ratio=%.2f label=%s",
	    med[BATCHED] / med[CAS_LOCK], label);
	row("deleg_remote_batched_vs_unbatched ratio=%.2f label=%s",
	    med[BATCHED] / med[UNBATCHED], label);
	row("deleg_apply_vs_rpc_latency ratio=%.2f label=%s",
	    lat_apply / lat_read, label);
	/* node 0 may stop its runtime */
	if (write(info_fd, "d", 1) != 1)
		warn("the done to node 0");
	close(info_fd);
	return 0;
}
