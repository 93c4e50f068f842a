// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-dsbench: the data structures of odsm_ds.h against BCL's cost model
 * (issue 17).  Node 0 holds a hash table segment and a queue, entrusted to
 * its trustee; node 1 measures, in one run:
 *
 *   - the components (odsm_ds_calibrate: read, write, CAS, FAO of node
 *     0's words, a request's round trip), row ds_costs;
 *   - for every (operation, promise) pair, the model's prediction and the
 *     measured median latency one-sided and as a request, rows ds_op
 *     (BCL's Tables II and III and Figures 4 and 5 in one table), then
 *     ds_model_rank_agreement R/N: the pairs where the model picks the
 *     variant that measured faster;
 *   - a mixed workload (inserts, finds, updates, deletes, pushes, pops at
 *     CRW) in operations per second on a table and a queue opened
 *     ONESIDED, REQUEST and AUTO: ds_auto_vs_best_fixed ratio=R (AUTO
 *     over the better fixed one);
 *   - attentiveness: node 0's trustee computes C us between requests (a
 *     thread of node 0 keeps it busy with an operation that spins C us),
 *     and CRW pushes are timed both ways at each C: rows ds_attentiveness,
 *     then ds_attentiveness_crossover_us=X, the C (interpolated) where
 *     one-sided overtakes requests, and whether an AUTO queue calibrated
 *     again there switched (ds_auto_switch).
 *
 *   odsm-dsbench serve                    on node 0
 *   odsm-dsbench NODE0_IP [N [LABEL]]     on node 1 (N ops per median)
 *
 * Node 0 sends the handles over TCP (port 7202) and takes the busy time
 * from a word node 1 writes; node 1 sends a byte when done.  A benchmark,
 * not a test: it checks only that every operation succeeded.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_ds.h"
#include "bench.h"

#define PORT		7202
#define BUCKETS		8192
#define QCAP		1024
#define MIX_ROUNDS	12

struct info {
	struct odsm_ds_seg seg, q;
	uint64_t busy;		/* a word of node 0: the busy time, us */
};

static struct info I;
static uint64_t OP_BUSY;

static void must(const char *what, int ret)
{
	if (ret)
		errx(1, "%s: %s", what, odsm_strerror(ret));
}

/* the owner computing: spins arg microseconds on the trustee */
static int busy(void *obj, const void *arg, size_t len, void *ret, size_t *rl)
{
	uint64_t us = 0;
	double end;

	*rl = 0;
	if (len == sizeof(us))
		memcpy(&us, arg, sizeof(us));
	end = now_us() + (double)us;
	while (now_us() < end)
		;
	return 0;
}

static volatile int serving = 1;

/* node 0: keep the trustee busy as the word says, until told to stop */
static void *loader(void *arg)
{
	const odsm_trust *t = arg;
	volatile uint64_t *w = odsm_ptr(I.busy);
	uint64_t us;
	size_t rl;

	while (serving) {
		us = *w;
		if (!us) {
			usleep(2000);
			continue;
		}
		rl = 0;
		odsm_deleg_apply(t, OP_BUSY, &us, sizeof(us), NULL, &rl);
	}
	return NULL;
}

static int serve(void)
{
	struct odsm_deleg_config cfg = { .trustees = 1, .clients = 64 };
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(PORT) };
	struct odsm_deleg_arena a;
	struct odsm_deleg *d;
	pthread_t tid;
	int ls, cs, one = 1;
	char c;

	must("arena", odsm_deleg_arena_heap(&a, odsm_deleg_arena_size(&cfg)));
	must("runtime", odsm_deleg_start(&a, &cfg, &d));
	must("segment", odsm_ds_seg_create(d, 0, BUCKETS, &I.seg));
	must("queue", odsm_ds_queue_create(d, 0, QCAP, &I.q));
	must("busy word", odsm_alloc(8, 8, ODSM_ALLOC_ZERO, &I.busy));
	if (pthread_create(&tid, NULL, loader, &I.seg.t))
		errx(1, "loader thread");
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 8))
		err(1, "listen");
	cs = accept(ls, NULL, NULL);
	if (cs < 0 || write(cs, &I, sizeof(I)) != sizeof(I))
		err(1, "client");
	if (read(cs, &c, 1) != 1)
		warnx("the client went without a word");
	serving = 0;
	pthread_join(tid, NULL);
	close(cs);
	close(ls);
	odsm_deleg_stop(d);
	return 0;
}

static int fetch_info(const char *ip)
{
	return bench_dial(ip, PORT, &I, sizeof(I));
}

/* ---- the client: one (operation, promise, variant) timed -------------- */

static struct odsm_ds_hash *H;	/* any mode: the variant is forced */
static struct odsm_ds_queue *Q;
static uint64_t key_seq;

static uint64_t key_at(unsigned int set, unsigned int i)
{
	return (uint64_t)set << 32 | i;
}

/*
 * The median latency (us) of n operations op at promise p, variant req,
 * on keys set (inserted before for find/update/delete).
 */
static double time_op(enum odsm_ds_op op, enum odsm_ds_promise p, int req,
		      unsigned int set, unsigned int n)
{
	uint8_t v[ODSM_DS_VAL_MAX] = "value";
	double *t = calloc(n, sizeof(*t)), t0, med;
	unsigned int i;
	uint64_t k;
	size_t len;
	int ret;

	if (!t)
		errx(1, "out of memory");
	for (i = 0; i < n; i++) {
		k = key_at(set, i);
		len = op == ODSM_DS_FIND || op == ODSM_DS_POP ? sizeof(v) : 16;
		t0 = now_us();
		if (op >= ODSM_DS_PUSH)
			ret = odsm_ds_queue_op(Q, op, req, v, &len, p);
		else
			ret = odsm_ds_hash_op(H, op, req, &k, sizeof(k), v,
					      op == ODSM_DS_DELETE ? NULL : &len,
					      p);
		t[i] = now_us() - t0;
		if (ret)
			errx(1, "%s %s %s key %u: %s", odsm_ds_op_name(op),
			     odsm_ds_promise_name(p),
			     req ? "request" : "one-sided", i,
			     odsm_strerror(ret));
	}
	stats(t, (int)n, &med, NULL);
	free(t);
	return med;
}

static const struct { enum odsm_ds_op op; enum odsm_ds_promise p; } PAIRS[] = {
	{ ODSM_DS_INSERT, ODSM_DS_CRW }, { ODSM_DS_INSERT, ODSM_DS_CW },
	{ ODSM_DS_FIND, ODSM_DS_CRW }, { ODSM_DS_FIND, ODSM_DS_CR },
	{ ODSM_DS_UPDATE, ODSM_DS_CRW }, { ODSM_DS_UPDATE, ODSM_DS_CW },
	{ ODSM_DS_DELETE, ODSM_DS_CRW }, { ODSM_DS_DELETE, ODSM_DS_CW },
	{ ODSM_DS_PUSH, ODSM_DS_CRW }, { ODSM_DS_PUSH, ODSM_DS_CW },
	{ ODSM_DS_POP, ODSM_DS_CRW }, { ODSM_DS_POP, ODSM_DS_CR },
};
#define NPAIRS	(sizeof(PAIRS) / sizeof(PAIRS[0]))

/*
 * The table: per promise level (CRW; the weaker ones) and variant, a
 * key set inserted, found, updated, deleted (each timed at its pair's
 * promise), and a queue pushed then popped.
 */
static void op_table(const struct odsm_ds_costs *c, unsigned int n,
		     const char *label)
{
	double m[NPAIRS][2];
	unsigned int i, req, weak, agree = 0, set;

	for (weak = 0; weak < 2; weak++) {
		for (req = 0; req < 2; req++) {
			set = 1 + weak * 2 + req;
			for (i = 0; i < NPAIRS; i++) {
				if ((PAIRS[i].p != ODSM_DS_CRW) != weak)
					continue;
				m[i][req] = time_op(PAIRS[i].op, PAIRS[i].p,
						    req, set, n);
			}
		}
	}
	for (i = 0; i < NPAIRS; i++) {
		double po = odsm_ds_predict(c, PAIRS[i].op, PAIRS[i].p, 0);
		double pr = odsm_ds_predict(c, PAIRS[i].op, PAIRS[i].p, 1);
		int pick = odsm_ds_choose(c, PAIRS[i].op, PAIRS[i].p);
		int best = m[i][1] < m[i][0];

		agree += pick == best;
		row("ds_op %s op=%s promise=%s onesided_pred_us=%.0f onesided_us=%.0f request_pred_us=%.0f request_us=%.0f model=%s measured=%s",
		    label, odsm_ds_op_name(PAIRS[i].op),
		    odsm_ds_promise_name(PAIRS[i].p), po / 1e3, m[i][0],
		    pr / 1e3, m[i][1], pick ? "request" : "onesided",
		    best ? "request" : "onesided");
	}
	row("ds_model_rank_agreement %u/%u label=%s", agree,
	    (unsigned int)NPAIRS, label);
}

/* ---- the mixed workload --------------------------------------------------- */

/* one round: insert, find x2, update, push, pop, delete: 7 operations */
static void mix(struct odsm_ds_hash *h, struct odsm_ds_queue *q)
{
	uint8_t v[ODSM_DS_VAL_MAX] = "mixed";
	uint64_t k = key_at(100, (uint32_t)key_seq++);
	size_t len = sizeof(v);

	must("mix insert", odsm_ds_insert(h, &k, sizeof(k), v, 16,
					  ODSM_DS_CRW));
	must("mix find", odsm_ds_find(h, &k, sizeof(k), v, &len, ODSM_DS_CRW));
	len = sizeof(v);
	must("mix find", odsm_ds_find(h, &k, sizeof(k), v, &len, ODSM_DS_CRW));
	must("mix update", odsm_ds_update(h, &k, sizeof(k), v, 16,
					  ODSM_DS_CRW));
	must("mix push", odsm_ds_push(q, v, 16, ODSM_DS_CRW));
	len = sizeof(v);
	must("mix pop", odsm_ds_pop(q, v, &len, ODSM_DS_CRW));
	must("mix delete", odsm_ds_delete(h, &k, sizeof(k), ODSM_DS_CRW));
}

static double mix_rate(enum odsm_ds_mode mode, const struct odsm_ds_costs *c)
{
	struct odsm_ds_hash *h;
	struct odsm_ds_queue *q;
	double t0, r[3], med;
	unsigned int i, k;

	must("mix table", odsm_ds_hash_open(&I.seg, 1, mode, c, &h));
	must("mix queue", odsm_ds_queue_open(&I.q, mode, c, &q));
	for (k = 0; k < 3; k++) {
		t0 = now_us();
		for (i = 0; i < MIX_ROUNDS; i++)
			mix(h, q);
		r[k] = 7.0 * MIX_ROUNDS / ((now_us() - t0) / 1e6);
	}
	stats(r, 3, &med, NULL);
	odsm_ds_hash_close(h);
	odsm_ds_queue_close(q);
	return med;
}

/* ---- attentiveness -------------------------------------------------------- */

static void set_busy(uint64_t us)
{
	must("busy word", odsm_write(I.busy, &us, sizeof(us)));
	usleep(20000);		/* the loader reads it between applies */
}

static void attentiveness(unsigned int n, const char *label,
			  const struct odsm_ds_costs *idle)
{
	static const unsigned int cs[] = { 0, 250, 500, 1000, 2000, 4000,
					   8000 };
	double os[8], rq[8], x = -1;
	struct odsm_ds_costs c;
	struct odsm_ds_queue *q;
	unsigned int i, j, nc = sizeof(cs) / sizeof(cs[0]);
	size_t len;
	uint8_t v[ODSM_DS_VAL_MAX];
	int before, after;

	for (i = 0; i < nc; i++) {
		set_busy(cs[i]);
		os[i] = time_op(ODSM_DS_PUSH, ODSM_DS_CRW, 0, 0, n);
		rq[i] = time_op(ODSM_DS_PUSH, ODSM_DS_CRW, 1, 0, n);
		/* empty the ring again, one-sided: the owner is busy */
		for (j = 0; j < 2 * n; j++) {
			len = sizeof(v);
			must("drain", odsm_ds_queue_op(Q, ODSM_DS_POP, 0, v,
						       &len, ODSM_DS_CRW));
		}
		row("ds_attentiveness %s compute_us=%u onesided_push_us=%.0f request_push_us=%.0f",
		    label, cs[i], os[i], rq[i]);
		/* the first C where one-sided is cheaper: interpolate */
		if (x < 0 && os[i] < rq[i]) {
			if (!i) {
				x = 0;
			} else {
				double d0 = rq[i - 1] - os[i - 1];
				double d1 = rq[i] - os[i];

				x = cs[i - 1] + (cs[i] - cs[i - 1]) *
				    d0 / (d0 - d1);
			}
		}
	}
	/* an AUTO queue re-decides on a calibration under this load */
	must("auto queue", odsm_ds_queue_open(&I.q, ODSM_DS_AUTO, idle, &q));
	before = odsm_ds_queue_variant(q, ODSM_DS_PUSH, ODSM_DS_CRW);
	must("busy calibration", odsm_ds_calibrate(H, 0, 16, &c));
	odsm_ds_queue_set_costs(q, &c);
	after = odsm_ds_queue_variant(q, ODSM_DS_PUSH, ODSM_DS_CRW);
	set_busy(0);
	row("ds_auto_switch %s compute_us=%u req_us=%.0f req_idle_us=%.0f push_crw_before=%s push_crw_after=%s",
	    label, cs[nc - 1], c.req_ns / 1e3, idle->req_ns / 1e3,
	    before ? "request" : "onesided", after ? "request" : "onesided");
	odsm_ds_queue_close(q);
	if (x < 0)
		row("ds_attentiveness_crossover_us=none label=%s (requests cheaper up to %u us)",
		    label, cs[nc - 1]);
	else
		row("ds_attentiveness_crossover_us=%.0f label=%s", x, label);
}

int main(int argc, char **argv)
{
	struct odsm_ds_costs c;
	double rates[3];
	unsigned int n;
	const char *label;
	char txt[256];
	int s;

	if (argc < 2)
		errx(1, "usage: odsm-dsbench serve | NODE0_IP [N [LABEL]]");
	must("odsm_init", odsm_init());
	must("register", odsm_ds_register());
	must("register", odsm_deleg_register("dsbench.busy", busy, &OP_BUSY));
	if (!strcmp(argv[1], "serve"))
		return serve();
	n = (unsigned int)arg_num(argc, argv, 2, 40);
	label = argc > 3 ? argv[3] : "remote";
	if (n < 3 || n > QCAP / 2)
		errx(1, "N: 3..%d", QCAP / 2);
	s = fetch_info(argv[1]);

	/* the components, against node 0 (the first use calibrates) */
	must("open", odsm_ds_hash_open(&I.seg, 1, ODSM_DS_AUTO, NULL, &H));
	odsm_ds_get_costs(H, &c);
	must("queue", odsm_ds_queue_open(&I.q, ODSM_DS_AUTO, &c, &Q));
	must("format", odsm_ds_costs_format(&c, txt, sizeof(txt)));
	row("ds_costs %s read_us=%.0f write_us=%.0f cas_us=%.0f fao_us=%.0f req_us=%.0f",
	    label, c.read_ns / 1e3, c.write_ns / 1e3, c.cas_ns / 1e3,
	    c.fao_ns / 1e3, c.req_ns / 1e3);

	op_table(&c, n, label);

	rates[0] = mix_rate(ODSM_DS_ONESIDED, &c);
	rates[1] = mix_rate(ODSM_DS_REQUEST, &c);
	rates[2] = mix_rate(ODSM_DS_AUTO, &c);
	row("ds_mixed %s onesided_ops=%.0f request_ops=%.0f auto_ops=%.0f",
	    label, rates[0], rates[1], rates[2]);
	row("ds_auto_vs_best_fixed ratio=%.2f label=%s",
	    rates[2] / (rates[0] > rates[1] ? rates[0] : rates[1]), label);

	attentiveness(n / 2 < 10 ? 10 : n / 2, label, &c);

	if (write(s, "d", 1) != 1)
		warn("the done to node 0");
	close(s);
	odsm_ds_hash_close(H);
	odsm_ds_queue_close(Q);
	return 0;
}
