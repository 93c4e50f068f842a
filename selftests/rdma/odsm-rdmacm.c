// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-rdmacm: a user-space RDMA-CM client that plays the attacker (or
 * the stressed local user) against odsm's RDMA transport, for the
 * rdma-fuzz scenario (tools/rig/scenarios/rdma-fuzz.sh).  One mode per
 * run; each prints one summary line "MODE: key=value ..." and exits 0
 * unless the tool itself failed (bad arguments, no device): what the
 * numbers must be is the scenario's judgement.
 *
 *   flood ADDR PORT N SECS [SRC]
 *	keep up to N connections to ADDR:PORT open for SECS seconds (from
 *	source address SRC), redialling every one that is refused or closed;
 *	prints attempts, established, peak (most open at once), rejected,
 *	closed.
 *   garbage ADDR PORT SECS [SIZE]
 *	one connection that SENDs (with immediate 0: valid credits) messages
 *	of SIZE bytes (default: the transport's largest) full of garbage, as
 *	fast as they complete, for SECS seconds; prints sent (completed
 *	SENDs), the status that ended it.
 *   hello ADDR PORT NODE NR_NODES HEAP_BASE PART_SIZE
 *	a HELLO offer claiming NODE (no key needed), and print the
 *	incarnation the acceptor's challenge carries in clear.
 *   loop ADDR PORT INCARNATION FIRST LAST SECS
 *	connection requests with the loopback pair's private data of
 *	before the token (magic "ODSMLOOP", INCARNATION, attempt FIRST..LAST),
 *	held open SECS seconds; prints established, rejected.
 *   atomics SECS THREADS BLOCKS
 *	odsm_fetch_add_nic() on words of BLOCKS fresh 64 KiB objects of this
 *	node's partition, taken in turn (so the first round registers one
 *	block after another), from THREADS threads for SECS seconds,
 *	tolerating every errno; prints ops, ok, and the count of each errno.
 *   remote NODE
 *	the cluster still works with NODE: allocate 4 KiB there, write a
 *	pattern, read it back, a NIC fetch-add on its first word (one-sided
 *	over RDMA), free it; prints "remote: ok" or what failed, and exits 1
 *	if anything did.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include "odsm.h"

#define MSG_MAX		(32 + (256u << 10) + 64)	/* RDMA_MSG_MAX */
#define LOOP_MAGIC	0x504f4f4c4d53444fULL
#define MAX_SLOTS	1024

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "odsm-rdmacm: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct sockaddr_in addr_of(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		fprintf(stderr, "odsm-rdmacm: bad address %s\n", ip);
		exit(2);
	}
	return a;
}

/* ---- a set of connections driven by one event channel ------------------- */

enum { S_IDLE, S_DIALLING, S_UP };

struct slot {
	struct rdma_cm_id *id;
	int state;
	int attempt;			/* loop mode: the attempt it claims */
};

struct cm {
	struct rdma_event_channel *ch;
	struct sockaddr_in dst, src;
	int has_src;
	const void *pdata;
	uint8_t pdata_len;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	/* counts */
	long attempts, established, rejected, closed, open, peak;
};

static void qp_make(struct cm *c, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	if (!c->pd) {
		c->pd = ibv_alloc_pd(id->verbs);
		if (!c->pd)
			die("ibv_alloc_pd");
		c->cq = ibv_create_cq(id->verbs, 256, NULL, NULL, 0);
		if (!c->cq)
			die("ibv_create_cq");
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	if (rdma_create_qp(id, c->pd, &qa))
		die("rdma_create_qp");
}

static void dial(struct cm *c, struct slot *s)
{
	if (rdma_create_id(c->ch, &s->id, s, RDMA_PS_TCP))
		die("rdma_create_id");
	s->state = S_DIALLING;
	c->attempts++;
	if (rdma_resolve_addr(s->id, c->has_src ? (struct sockaddr *)&c->src : NULL,
			      (struct sockaddr *)&c->dst, 2000)) {
		rdma_destroy_id(s->id);
		s->id = NULL;
		s->state = S_IDLE;
		c->rejected++;
	}
}

static void drop(struct cm *c, struct slot *s)
{
	if (s->state == S_UP)
		c->open--;
	if (s->id->qp)
		rdma_destroy_qp(s->id);
	rdma_destroy_id(s->id);
	s->id = NULL;
	s->state = S_IDLE;
}

/* Handle one event (waiting up to ms); 0 if none came. */
static int cm_step(struct cm *c, int ms)
{
	struct pollfd p = { .fd = c->ch->fd, .events = POLLIN };
	struct rdma_conn_param cp = {
		.retry_count = 7, .rnr_retry_count = 7,
		.responder_resources = 1, .initiator_depth = 1,
	};
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;
	struct slot *s;

	if (poll(&p, 1, ms) <= 0)
		return 0;
	if (rdma_get_cm_event(c->ch, &ev))
		die("rdma_get_cm_event");
	s = ev->id->context;
	type = ev->event;
	rdma_ack_cm_event(ev);
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(s->id, 2000))
			goto fail;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		qp_make(c, s->id);
		cp.private_data = c->pdata;
		cp.private_data_len = c->pdata_len;
		if (rdma_connect(s->id, &cp))
			goto fail;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		s->state = S_UP;
		c->established++;
		if (++c->open > c->peak)
			c->peak = c->open;
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		goto fail;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		c->closed++;
		drop(c, s);
		break;
	default:
		break;
	}
	return 1;
fail:
	c->rejected++;
	drop(c, s);
	return 1;
}

static void cm_init(struct cm *c, const char *ip, int port, const char *src)
{
	memset(c, 0, sizeof(*c));
	c->ch = rdma_create_event_channel();
	if (!c->ch)
		die("rdma_create_event_channel (no rdma_ucm?)");
	c->dst = addr_of(ip, port);
	if (src) {
		c->src = addr_of(src, 0);
		c->has_src = 1;
	}
}

static int flood(const char *ip, int port, int n, int secs, const char *src)
{
	static struct slot slots[MAX_SLOTS];
	double end = now_s() + secs;
	struct cm c;
	int i;

	if (n < 1 || n > MAX_SLOTS)
		n = MAX_SLOTS;
	cm_init(&c, ip, port, src);
	while (now_s() < end) {
		for (i = 0; i < n; i++)
			if (slots[i].state == S_IDLE)
				dial(&c, &slots[i]);
		while (cm_step(&c, 50))
			;
	}
	printf("flood: attempts=%ld established=%ld peak=%ld rejected=%ld closed=%ld\n",
	       c.attempts, c.established, c.peak, c.rejected, c.closed);
	fflush(stdout);
	for (i = 0; i < n; i++)
		if (slots[i].id)
			drop(&c, &slots[i]);
	return 0;
}

/* One connection, established within 10 s; exits on failure. */
static struct rdma_cm_id *connect_one(struct cm *c, struct slot *s)
{
	double end = now_s() + 10;

	dial(c, s);
	while (s->state == S_DIALLING && now_s() < end)
		cm_step(c, 100);
	return s->state == S_UP ? s->id : NULL;
}

static int garbage(const char *ip, int port, int secs, unsigned int size)
{
	struct slot s = { 0 };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc[16];
	struct ibv_sge sge;
	struct ibv_mr *mr;
	long sent = 0, posted = 0;
	int inflight = 0, status = 0, i, n;
	double end;
	struct cm c;
	char *buf;

	if (!size || size > MSG_MAX)
		size = MSG_MAX;
	cm_init(&c, ip, port, NULL);
	if (!connect_one(&c, &s)) {
		printf("garbage: not connected: rejected=%ld\n", c.rejected);
		return 0;
	}
	buf = malloc(MSG_MAX);
	if (!buf)
		die("malloc");
	memset(buf, 0xab, MSG_MAX);
	mr = ibv_reg_mr(c.pd, buf, MSG_MAX, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	end = now_s() + secs;
	while (now_s() < end && !status) {
		while (inflight < 8) {
			memset(&wr, 0, sizeof(wr));
			sge.addr = (uintptr_t)buf;
			sge.length = size;
			sge.lkey = mr->lkey;
			wr.opcode = IBV_WR_SEND_WITH_IMM;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.imm_data = 0;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			if (ibv_post_send(s.id->qp, &wr, &bad)) {
				status = -1;
				break;
			}
			inflight++;
			posted++;
		}
		n = ibv_poll_cq(c.cq, 16, wc);
		for (i = 0; i < n; i++) {
			inflight--;
			if (wc[i].status == IBV_WC_SUCCESS)
				sent++;
			else if (!status)
				status = wc[i].status;
		}
		if (!n)
			usleep(200);
	}
	printf("garbage: size=%u posted=%ld sent=%ld status=%s\n", size, posted, sent,
	       status > 0 ? ibv_wc_status_str(status) :
	       status ? "post failed" : "time up");
	fflush(stdout);
	drop(&c, &s);
	ibv_dereg_mr(mr);
	free(buf);
	return 0;
}

static void put_le32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = v >> (8 * i);
}

static void put_le64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = v >> (8 * i);
}

static uint64_t get_le64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* A HELLO offer claiming node; the incarnation of the acceptor's answer. */
static int hello(const char *ip, int port, unsigned int node, unsigned int nr,
		 uint64_t base, uint64_t part)
{
	uint8_t *out, *in;
	struct ibv_mr *mro, *mri;
	struct ibv_recv_wr rw = { 0 }, *rbad;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge so, si;
	struct ibv_wc wc;
	struct slot s = { 0 };
	double end;
	struct cm c;
	int i;

	cm_init(&c, ip, port, NULL);
	/* the QP exists once the route is resolved: post receives after */
	if (!connect_one(&c, &s)) {
		printf("hello: not connected: rejected=%ld\n", c.rejected);
		return 1;
	}
	out = calloc(1, 4096);
	in = calloc(4, 4096);
	if (!out || !in)
		die("calloc");
	mro = ibv_reg_mr(c.pd, out, 4096, 0);
	mri = ibv_reg_mr(c.pd, in, 4 * 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mro || !mri)
		die("ibv_reg_mr");
	for (i = 0; i < 4; i++) {
		si.addr = (uintptr_t)in + i * 4096;
		si.length = 4096;
		si.lkey = mri->lkey;
		rw.sg_list = &si;
		rw.num_sge = 1;
		rw.wr_id = i;
		if (ibv_post_recv(s.id->qp, &rw, &rbad))
			die("ibv_post_recv");
	}
	/* header: magic, version 13 (ODSM_WIRE_VERSION), HELLO, no flags,
	 * src node, dst 0
	 */
	put_le32(out, 0x4d53444f);
	out[4] = 13;
	out[5] = 1;
	put_le32(out + 8, node);
	put_le32(out + 12, 0);
	put_le32(out + 24, 104);
	put_le32(out + 32, node);
	put_le32(out + 36, nr);
	put_le64(out + 40, base);
	put_le64(out + 48, part);
	put_le64(out + 56, 0x1234);
	put_le32(out + 64, 1);		/* offer */
	for (i = 0; i < 32; i++)
		out[72 + i] = rand();
	so.addr = (uintptr_t)out;
	so.length = 32 + 104;
	so.lkey = mro->lkey;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &so;
	wr.num_sge = 1;
	wr.wr_id = 100;
	if (ibv_post_send(s.id->qp, &wr, &bad))
		die("ibv_post_send");
	end = now_s() + 10;
	while (now_s() < end) {
		if (ibv_poll_cq(c.cq, 1, &wc) <= 0) {
			usleep(1000);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			printf("hello: %s\n", ibv_wc_status_str(wc.status));
			return 1;
		}
		if (wc.opcode != IBV_WC_RECV || wc.byte_len < 32 + 104)
			continue;
		printf("hello: incarnation=0x%016" PRIx64 "\n",
		       get_le64(in + wc.wr_id * 4096 + 32 + 24));
		fflush(stdout);
		return 0;
	}
	printf("hello: no challenge\n");
	return 1;
}

/* Requests carrying the loopback pair's former private data. */
static int loop_mode(const char *ip, int port, uint64_t inc, int first,
		     int last, int secs)
{
	static struct slot slots[64];
	uint8_t pd[64][24];
	double end;
	struct cm c;
	int i, n = last - first + 1;

	if (n < 1 || n > 64)
		return 2;
	cm_init(&c, ip, port, NULL);
	for (i = 0; i < n; i++) {
		put_le64(pd[i], LOOP_MAGIC);
		put_le64(pd[i] + 8, inc);
		put_le64(pd[i] + 16, first + i);
		c.pdata = pd[i];
		c.pdata_len = 24;
		slots[i].attempt = first + i;
		/* one at a time: each carries its own private data */
		connect_one(&c, &slots[i]);
	}
	printf("loop: attempts=%ld established=%ld rejected=%ld\n",
	       c.attempts, c.established, c.rejected);
	fflush(stdout);
	end = now_s() + secs;
	while (now_s() < end)
		cm_step(&c, 100);
	for (i = 0; i < n; i++)
		if (slots[i].id)
			drop(&c, &slots[i]);
	return 0;
}

/* ---- NIC-domain atomics on our own partition ---------------------------- */

static uint64_t *objs;
static int nobjs;
static unsigned int next_obj;
static double stop_at;
static long ops_total, ok_total, errs[256];
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void *atomic_worker(void *arg)
{
	unsigned int seed = (uintptr_t)arg;
	long ops = 0, ok = 0, e[256] = { 0 };
	uint64_t old;
	int i, ret;

	while (now_s() < stop_at) {
		/* in turn: the first round registers block after block */
		i = __atomic_fetch_add(&next_obj, 1, __ATOMIC_RELAXED) % nobjs;
		ret = odsm_fetch_add_nic(odsm_addr_of(objs[i]) +
					 8 * (rand_r(&seed) % 64), 1, &old);
		ops++;
		if (!ret)
			ok++;
		else
			e[-ret & 255]++;
	}
	pthread_mutex_lock(&count_lock);
	ops_total += ops;
	ok_total += ok;
	for (i = 0; i < 256; i++)
		errs[i] += e[i];
	pthread_mutex_unlock(&count_lock);
	return NULL;
}

static int atomics(int secs, int threads, int blocks)
{
	pthread_t t[16];
	int i, ret;

	if (threads < 1 || threads > 16 || blocks < 1)
		return 2;
	ret = odsm_init();
	if (ret) {
		fprintf(stderr, "odsm_init: %s\n", odsm_strerror(ret));
		return 2;
	}
	objs = calloc(blocks, sizeof(*objs));
	if (!objs)
		die("calloc");
	for (i = 0; i < blocks; i++) {
		ret = odsm_alloc(64 << 10, 4096, ODSM_ALLOC_ZERO, &objs[i]);
		if (ret)
			break;
	}
	nobjs = i;
	if (!nobjs) {
		fprintf(stderr, "odsm_alloc: %s\n", odsm_strerror(ret));
		return 2;
	}
	stop_at = now_s() + secs;
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, atomic_worker, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("atomics: blocks=%d ops=%ld ok=%ld", nobjs, ops_total, ok_total);
	for (i = 1; i < 256; i++)
		if (errs[i])
			printf(" %s=%ld", strerrorname_np(i) ? strerrorname_np(i) : "?",
			       errs[i]);
	printf("\n");
	fflush(stdout);
	/* the objects stay: the module may be gone or the node left */
	return 0;
}

static int remote(unsigned int node)
{
	uint8_t out[4096], in[4096];
	uint64_t cg, old = 1;
	const char *what;
	int ret, i;

	ret = odsm_init();
	what = "odsm_init";
	if (ret)
		goto fail;
	what = "odsm_alloc_on";
	ret = odsm_alloc_on(node, sizeof(out), 0, ODSM_ALLOC_ZERO, &cg);
	if (ret)
		goto fail;
	for (i = 0; i < (int)sizeof(out); i++)
		out[i] = i * 7 + node;
	what = "odsm_write";
	ret = odsm_write(cg, out, sizeof(out));
	if (ret)
		goto fail;
	what = "odsm_read";
	ret = odsm_read(cg, in, sizeof(in));
	if (ret)
		goto fail;
	what = "the bytes read back";
	ret = -EIO;
	if (memcmp(in, out, sizeof(in)))
		goto fail;
	/* word 8 onwards: the first 8 bytes hold out[0..7] */
	what = "odsm_fetch_add_nic";
	ret = odsm_fetch_add_nic(odsm_addr_of(cg) + 64, 5, &old);
	if (!ret && old != *(uint64_t *)(out + 64))
		ret = -EIO;
	if (ret)
		goto fail;
	what = "odsm_free";
	ret = odsm_free(cg);
	if (ret)
		goto fail;
	printf("remote: ok with node %u\n", node);
	return 0;
fail:
	printf("remote: %s failed with node %u: %s\n", what, node,
	       odsm_strerror(ret));
	return 1;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(m, "flood") && argc >= 6)
		return flood(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
			     argc > 6 ? argv[6] : NULL);
	if (!strcmp(m, "garbage") && argc >= 5)
		return garbage(argv[2], atoi(argv[3]), atoi(argv[4]),
			       argc > 5 ? strtoul(argv[5], NULL, 0) : 0);
	if (!strcmp(m, "hello") && argc >= 8)
		return hello(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
			     strtoull(argv[6], NULL, 0), strtoull(argv[7], NULL, 0));
	if (!strcmp(m, "loop") && argc >= 8)
		return loop_mode(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0),
				 atoi(argv[5]), atoi(argv[6]), atoi(argv[7]));
	if (!strcmp(m, "remote") && argc >= 3)
		return remote(atoi(argv[2]));
	if (!strcmp(m, "atomics") && argc >= 5)
		return atomics(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: see the comment at the top of %s\n", __FILE__);
	return 2;
}
