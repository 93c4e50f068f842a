// SPDX-License-Identifier: GPL-2.0
/*
 * Lanes of a delegation endpoint (ODSM_DELEG_BIND_LANES), on one node:
 * the module writes a batch into a lane of its trustee (a request/response
 * slot pair in the runtime's arena, heap memory), wakes the trustee and
 * sleeps on the response's seq word, with no gateway thread in between.
 *
 * The runtime here is the test's own: an arena object laid out as the
 * lanes' geometry says, bound on a file of its own, and a "trustee"
 * thread that polls the lanes and answers as the test's mode says (a
 * good answer naming the lane it came through, a malformed one, none).
 * The client is this process's DELEG_CALL to the endpoint, which is on
 * this node: the same deliver() a peer's DELEG reaches.  An arena freed
 * while its file lives on (a forked child holds it) is never written.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/odsm_deleg.h>
#include "odsm_vm.h"

#define SLOT		256
#define LANES_OFF	4096		/* the lanes' first slot in the arena */
#define WAKE_STRIDE	64
#define ARENA		KiB(64)
#define CELLS		4

enum { ANSWER, BAD, NONE };

struct rt {
	int fd;				/* the runtime's file, bound */
	int cfd;			/* the clients' */
	uint64_t cg;			/* the arena */
	uint8_t *p;
	uint32_t trustees, lanes;
	pthread_t thr;
	int stop, mode;
	uint32_t flags_seen;		/* of the last batch taken */
};

static uint64_t lane_req(const struct rt *r, uint32_t t, uint32_t l)
{
	return LANES_OFF + ((uint64_t)t * r->lanes + l) * 2 * SLOT;
}

static uint32_t *wake_word(const struct rt *r, uint32_t t)
{
	return (uint32_t *)(r->p + t * WAKE_STRIDE);
}

static uint64_t stat_of(const char *name)
{
	char path[96];

	snprintf(path, sizeof(path), "stats/%s", name);
	return t_sysfs(path);
}

/*
 * Answer the batch in lane (t, l): one record per request, status 0,
 * 8 bytes of result: the batch's seq << 16 | t * 100 + l (BAD: more
 * bytes than the request allowed, which the module must refuse).
 */
static void answer(struct rt *r, uint32_t t, uint32_t l, uint32_t seq)
{
	uint8_t *q = r->p + lane_req(r, t, l), *s = q + SLOT;
	struct odsm_dslot_hdr qh, *sh = (void *)s;
	struct odsm_dresp rec = { 0 };
	struct odsm_dreq req;
	struct odsm_wake wk = { 0 };
	uint64_t val = (uint64_t)seq << 16 | (t * 100 + l);

	memcpy(&qh, q, sizeof(qh));
	memcpy(&req, q + sizeof(qh), sizeof(req));
	rec.tag = req.tag;
	rec.ret_len = r->mode == BAD ? req.ret_max + 8 : 8;
	memcpy(s + sizeof(*sh), &rec, sizeof(rec));
	memset(s + sizeof(*sh) + sizeof(rec), 0, rec.ret_len);
	memcpy(s + sizeof(*sh) + sizeof(rec), &val, sizeof(val));
	sh->count = 1;
	sh->flags = 0;
	sh->status = 0;
	sh->len = sizeof(rec) + ((rec.ret_len + 7) & ~7U);
	r->flags_seen = qh.flags;
	__atomic_store_n(&sh->seq, seq, __ATOMIC_RELEASE);
	wk.gaddr = (r->cg & ODSM_ADDR_MASK) + lane_req(r, t, l) + SLOT;
	ioctl(r->fd, ODSM_IOC_WAKE, &wk);
}

static void *trustee(void *arg)
{
	struct rt *r = arg;
	uint32_t t, l, q, s;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		for (t = 0; t < r->trustees; t++) {
			for (l = 0; l < r->lanes; l++) {
				uint8_t *p = r->p + lane_req(r, t, l);

				q = __atomic_load_n((uint32_t *)p,
						    __ATOMIC_ACQUIRE);
				s = __atomic_load_n((uint32_t *)(p + SLOT),
						    __ATOMIC_ACQUIRE);
				if (q != s &&
				    __atomic_load_n(&r->mode,
						    __ATOMIC_ACQUIRE) != NONE)
					answer(r, t, l, q);
			}
		}
		usleep(200);
	}
	return NULL;
}

static struct odsm_deleg_lanes geometry(const struct rt *r)
{
	uint64_t g = r->cg & ODSM_ADDR_MASK;
	struct odsm_deleg_lanes l = {
		.slots = g + LANES_OFF,
		.trustee_stride = (uint64_t)r->lanes * 2 * SLOT,
		.wake = g,
		.wake_stride = WAKE_STRIDE,
		.trustees = r->trustees,
		.lanes = r->lanes,
		.cells = CELLS,
	};

	return l;
}

static int bind_lanes(int fd, uint64_t endpoint, struct odsm_deleg_lanes *l)
{
	struct odsm_deleg_bind b = {
		.endpoint = endpoint, .slot_size = SLOT,
		.flags = ODSM_DELEG_BIND_LANES, .lanes = (uintptr_t)l,
	};

	return t_ioctl(fd, ODSM_IOC_DELEG_BIND, &b);
}

/* A runtime of trustees x lanes, its trustee thread polling (mode). */
static int rt_start(struct rt *r, uint32_t trustees, uint32_t lanes,
		    int mode)
{
	struct odsm_deleg_lanes l;
	struct odsm_info in;
	int ret;

	memset(r, 0, sizeof(*r));
	r->trustees = trustees;
	r->lanes = lanes;
	r->mode = mode;
	r->cfd = odsm_rt.fd;
	ret = t_info(r->cfd, &in);
	if (ret)
		return ret;
	ret = t_alloc(r->cfd, ARENA, 4096, ODSM_ALLOC_ZERO, &r->cg, NULL);
	if (ret)
		return ret;
	r->p = t_p(r->cg);
	r->fd = t_open();
	if (r->fd < 0)
		return -errno;
	l = geometry(r);
	ret = bind_lanes(r->fd, r->cg & ODSM_ADDR_MASK, &l);
	if (ret)
		return ret;
	return -pthread_create(&r->thr, NULL, trustee, r);
}

static void rt_stop(struct rt *r)
{
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	if (r->thr)
		pthread_join(r->thr, NULL);
	if (r->fd >= 0)
		close(r->fd);
	if (r->cg)
		t_free(r->cfd, r->cg);
}

/*
 * A batch of one APPLY on cell, flags in its header; with: an APPLY_WITH
 * whose argument is at global address with (8 bytes).
 */
static uint32_t batch(uint8_t *b, uint32_t cell, uint16_t flags,
		      uint64_t with)
{
	struct odsm_dslot_hdr h = { .count = 1, .flags = flags,
				    .len = sizeof(struct odsm_dreq) };
	struct odsm_dreq q = { .op = 1, .obj = cell, .ret_max = 8,
			       .kind = ODSM_DREQ_APPLY, .tag = 7 };
	struct odsm_dwith w = { .gaddr = with, .len = 8 };

	memset(b, 0, SLOT);
	if (with) {
		q.kind = ODSM_DREQ_APPLY_WITH;
		q.arg_len = sizeof(w);
		h.len += sizeof(w);
		memcpy(b + sizeof(h) + sizeof(q), &w, sizeof(w));
	}
	memcpy(b, &h, sizeof(h));
	memcpy(b + sizeof(h), &q, sizeof(q));
	return sizeof(h) + h.len;
}

struct call {
	const struct rt *r;
	uint32_t cell;
	uint16_t flags;
	uint64_t with;
	int ret;
	uint64_t val;			/* the answer's result */
	uint64_t ms;			/* how long the call took */
	uint64_t end;			/* when it returned (now_ms()) */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static void *do_call(void *arg)
{
	struct call *c = arg;
	uint8_t req[SLOT], resp[SLOT];
	struct odsm_deleg_call a = {
		.endpoint = c->r->cg & ODSM_ADDR_MASK,
		.req = (uintptr_t)req, .resp = (uintptr_t)resp,
		.resp_cap = SLOT, .slot_size = SLOT,
	};
	uint64_t t0 = now_ms();

	a.req_len = batch(req, c->cell, c->flags, c->with);
	c->ret = t_ioctl(c->r->cfd, ODSM_IOC_DELEG_CALL, &a);
	c->end = now_ms();
	c->ms = c->end - t0;
	if (!c->ret)
		memcpy(&c->val, resp + sizeof(struct odsm_dslot_hdr) +
		       sizeof(struct odsm_dresp), sizeof(c->val));
	return NULL;
}

/*
 * Serve one queued batch through ODSM_IOC_DELEG_SERVE: its answer 999,
 * given as resp_len bytes if that is not 0 (a length no slot has).
 */
static int serve_one_len(struct rt *r, uint32_t *flags, uint32_t resp_len)
{
	uint8_t req[SLOT], resp[SLOT];
	struct odsm_deleg_serve s = {
		.req = (uintptr_t)req, .resp = (uintptr_t)resp,
		.timeout_ms = 3000,
	};
	struct odsm_dslot_hdr h = { .count = 1 };
	struct odsm_dresp rec = { .ret_len = 8 };
	struct odsm_dreq q;
	uint64_t val = 999;
	int ret;

	ret = t_ioctl(r->fd, ODSM_IOC_DELEG_SERVE, &s);
	if (ret)
		return ret;
	memcpy(&h, req, sizeof(h));
	*flags = h.flags;
	memcpy(&q, req + sizeof(h), sizeof(q));
	rec.tag = q.tag;
	h.seq = 0;
	h.count = 1;
	h.flags = 0;
	h.len = sizeof(rec) + 8;
	h.status = 0;
	memcpy(resp, &h, sizeof(h));
	memcpy(resp + sizeof(h), &rec, sizeof(rec));
	memcpy(resp + sizeof(h) + sizeof(rec), &val, 8);
	s.done = s.ticket;
	s.resp_len = resp_len ? resp_len : sizeof(h) + h.len;
	s.timeout_ms = 1;
	ret = t_ioctl(r->fd, ODSM_IOC_DELEG_SERVE, &s);
	return ret == -EAGAIN ? 0 : ret;
}

/*
 * Make call c from another thread while this one serves the batch it
 * sends through DELEG_SERVE (the gateway's way): serve_one()'s result;
 * c's own in c->ret, c->val.
 */
static int call_via_gateway_len(struct rt *r, struct call *c,
				uint32_t *flags, uint32_t resp_len)
{
	pthread_t th;
	int ret;

	ret = -pthread_create(&th, NULL, do_call, c);
	if (ret)
		return ret;
	ret = serve_one_len(r, flags, resp_len);
	pthread_join(th, NULL);
	return ret;
}

static int call_via_gateway(struct rt *r, struct call *c, uint32_t *flags)
{
	return call_via_gateway_len(r, c, flags, 0);
}

FIXTURE(lanes) {
	struct rt r;
};

FIXTURE_SETUP(lanes)
{
	ASSERT_EQ(0, odsm_init());
	self->r.fd = -1;
}

FIXTURE_TEARDOWN(lanes)
{
	rt_stop(&self->r);
	odsm_fini();
}

/* Bad geometry is refused, each field on its own; nothing stays bound. */
TEST_F(lanes, bind_refuses_bad_lanes)
{
	struct rt *r = &self->r;
	struct odsm_deleg_lanes good, l;
	struct odsm_deleg_bind b;
	struct odsm_info in;
	uint64_t ep, end, other;
	int fd;

	r->trustees = 2;
	r->lanes = 2;
	r->cfd = odsm_rt.fd;
	ASSERT_EQ(0, t_info(r->cfd, &in));
	/* the partition's last 64 KiB: no object there in this test */
	end = t_local_lo(&in) + in.part_size - ARENA;
	ASSERT_EQ(0, t_alloc(r->cfd, ARENA, 4096, ODSM_ALLOC_ZERO, &r->cg,
			     NULL));
	r->p = t_p(r->cg);
	ep = r->cg & ODSM_ADDR_MASK;
	good = geometry(r);
	fd = t_open();
	ASSERT_LE(0, fd);

#define REFUSED(field, v, err) do {					\
		l = good;						\
		l.field = (v);						\
		EXPECT_EQ(err, bind_lanes(fd, ep, &l)) TH_LOG(#field);	\
	} while (0)
	REFUSED(reserved[0], 1, -EINVAL);
	REFUSED(reserved[1], 1, -EINVAL);
	REFUSED(trustees, 0, -EINVAL);
	REFUSED(trustees, ODSM_DELEG_TRUSTEES_MAX + 1, -EINVAL);
	REFUSED(lanes, 0, -EINVAL);
	REFUSED(lanes, ODSM_DELEG_LANES_MAX + 1, -EINVAL);
	REFUSED(cells, 0, -EINVAL);
	REFUSED(cells, 0x80000000U, -EINVAL);	/* trustees * cells > 2^32 */
	REFUSED(slots, good.slots + 4, -EINVAL);
	REFUSED(trustee_stride, 2 * SLOT, -EINVAL);	/* lanes overlap */
	REFUSED(wake, good.wake + 2, -EINVAL);
	REFUSED(wake_stride, 0, -EINVAL);
	REFUSED(trustee_stride, 1ULL << 62, -EINVAL);	/* past the end */
	REFUSED(trustee_stride, UINT64_MAX - 7, -EINVAL);	/* wraps */
	/* outside this node's partition, or no object there */
	REFUSED(slots, 4096, -EINVAL);
	REFUSED(wake, 4096, -EINVAL);
	REFUSED(slots, end, -EINVAL);
	REFUSED(wake, end, -EINVAL);
	/* in an object, but not the endpoint's: the lanes are its arena */
	ASSERT_EQ(0, t_alloc(r->cfd, ARENA, 4096, ODSM_ALLOC_ZERO, &other,
			     NULL));
	REFUSED(slots, other & ODSM_ADDR_MASK, -EINVAL);
	REFUSED(wake, other & ODSM_ADDR_MASK, -EINVAL);
	REFUSED(wake, ep + ARENA - 4, -EINVAL);	/* trustee 1 past its end */
#undef REFUSED
	/* an endpoint where no object starts */
	EXPECT_EQ(-EINVAL, bind_lanes(fd, ep + 64, &good));
	EXPECT_EQ(0, t_free(r->cfd, other));
	/* a lanes pointer without the flag, and a bad pointer */
	memset(&b, 0, sizeof(b));
	b.endpoint = ep;
	b.slot_size = SLOT;
	b.lanes = (uintptr_t)&good;
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_DELEG_BIND, &b));
	b.flags = ODSM_DELEG_BIND_LANES;
	b.lanes = 8;
	EXPECT_EQ(-EFAULT, t_ioctl(fd, ODSM_IOC_DELEG_BIND, &b));
	b.lanes = (uintptr_t)&good;
	b.reserved = 1;
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_DELEG_BIND, &b));
	/* none of those bound it: the good one does, once */
	EXPECT_EQ(0, bind_lanes(fd, ep, &good));
	r->fd = t_open();
	ASSERT_LE(0, r->fd);
	EXPECT_EQ(-EADDRINUSE, bind_lanes(r->fd, ep, &good));
	close(fd);
}

/*
 * A batch goes through its trustee's lane: the answer is the lane's,
 * the trustee's wake word moved, and the counters say so.
 */
TEST_F(lanes, batch_through_lane)
{
	struct rt *r = &self->r;
	uint64_t lb = stat_of("deleg_lane_batches");
	uint64_t ib = stat_of("deleg_in_batches");
	struct call c = { .r = r, .cell = CELLS + 1 };	/* trustee 1 */
	uint32_t w0, w1;

	ASSERT_EQ(0, rt_start(r, 2, 2, ANSWER));
	w0 = __atomic_load_n(wake_word(r, 0), __ATOMIC_ACQUIRE);
	w1 = __atomic_load_n(wake_word(r, 1), __ATOMIC_ACQUIRE);
	do_call(&c);
	ASSERT_EQ(0, c.ret);
	EXPECT_EQ(1U << 16 | 100, c.val);	/* seq 1, trustee 1, lane 0 */
	EXPECT_EQ(w0, __atomic_load_n(wake_word(r, 0), __ATOMIC_ACQUIRE));
	EXPECT_EQ(w1 + 1, __atomic_load_n(wake_word(r, 1), __ATOMIC_ACQUIRE));
	EXPECT_EQ(lb + 1, stat_of("deleg_lane_batches"));
	EXPECT_EQ(ib + 1, stat_of("deleg_in_batches"));
	c.cell = 0;			/* trustee 0 */
	do_call(&c);
	ASSERT_EQ(0, c.ret);
	EXPECT_EQ(1U << 16, c.val);
	/* the same lane again: the next seq */
	do_call(&c);
	ASSERT_EQ(0, c.ret);
	EXPECT_EQ(2U << 16, c.val);
	EXPECT_EQ(lb + 3, stat_of("deleg_lane_batches"));
}

/*
 * What the gateway must see is queued for DELEG_SERVE: a batch that asks
 * for it (ODSM_DSLOT_F_GATEWAY), one whose cell no trustee has, and one
 * with an apply_with argument outside this node's partition.
 */
TEST_F(lanes, gateway_batches_are_queued)
{
	struct rt *r = &self->r;
	uint64_t lb = stat_of("deleg_lane_batches");
	struct call c = { .r = r };
	uint32_t flags = 0;

	ASSERT_EQ(0, rt_start(r, 1, 2, ANSWER));
	c.flags = ODSM_DSLOT_F_GATEWAY;
	EXPECT_EQ(0, call_via_gateway(r, &c, &flags));
	ASSERT_EQ(0, c.ret);
	EXPECT_EQ(999U, c.val);
	EXPECT_EQ((uint32_t)ODSM_DSLOT_F_GATEWAY, flags);

	c.flags = 0;
	c.cell = CELLS;			/* trustee 1 of 1 */
	EXPECT_EQ(0, call_via_gateway(r, &c, &flags));
	ASSERT_EQ(0, c.ret);
	EXPECT_EQ(999U, c.val);

	c.cell = 0;
	c.with = 4096;			/* not this node's */
	EXPECT_EQ(0, call_via_gateway(r, &c, &flags));
	ASSERT_EQ(0, c.ret);
	EXPECT_EQ(999U, c.val);
	EXPECT_EQ(lb, stat_of("deleg_lane_batches"));

	/* an argument of this node's goes through the lane */
	c.with = r->cg & ODSM_ADDR_MASK;
	do_call(&c);
	ASSERT_EQ(0, c.ret);
	EXPECT_EQ(1U << 16, c.val);
	EXPECT_EQ(lb + 1, stat_of("deleg_lane_batches"));
}

/* Every lane of the trustee busy: the next batch goes to the gateway. */
TEST_F(lanes, full_lanes_go_to_gateway)
{
	struct rt *r = &self->r;
	uint64_t full = stat_of("deleg_lane_full");
	struct call held = { .r = r }, next = { .r = r };
	uint32_t flags = 1;
	pthread_t a;
	int i;

	ASSERT_EQ(0, rt_start(r, 1, 1, NONE));
	ASSERT_EQ(0, pthread_create(&a, NULL, do_call, &held));
	/* the held batch is in the lane */
	for (i = 0; i < 2000 && !*(volatile uint32_t *)(r->p + LANES_OFF); i++)
		usleep(1000);
	ASSERT_NE(0U, *(volatile uint32_t *)(r->p + LANES_OFF));
	EXPECT_EQ(0, call_via_gateway(r, &next, &flags));
	EXPECT_EQ(0, next.ret);
	EXPECT_EQ(999U, next.val);
	EXPECT_EQ(0U, flags);
	EXPECT_EQ(full + 1, stat_of("deleg_lane_full"));
	/* now the trustee answers the held one */
	__atomic_store_n(&r->mode, ANSWER, __ATOMIC_RELEASE);
	pthread_join(a, NULL);
	EXPECT_EQ(0, held.ret);
	EXPECT_EQ(1U << 16, held.val);
}

/* An answer longer than the request's room: -EBADMSG, counted. */
TEST_F(lanes, bad_answer_refused)
{
	struct rt *r = &self->r;
	uint64_t bad = stat_of("deleg_malformed");
	struct call c = { .r = r };

	ASSERT_EQ(0, rt_start(r, 1, 1, BAD));
	do_call(&c);
	EXPECT_EQ(-EBADMSG, c.ret);
	EXPECT_EQ(bad + 1, stat_of("deleg_malformed"));
	/* the lane is free again: a good answer comes through it */
	__atomic_store_n(&r->mode, ANSWER, __ATOMIC_RELEASE);
	do_call(&c);
	EXPECT_EQ(0, c.ret);
}

/*
 * An answer through SERVE of a length no slot has (past the slot, short
 * of a header): SERVE says -EBADMSG and so does its client, at once.
 * (Before 2026-12-02 SERVE said -EINVAL and left the client to wait out
 * its time, -ETIMEDOUT.)  A bad length for no batch taken: -EINVAL.
 */
TEST_F(lanes, bad_length_answer_fails_client)
{
	struct rt *r = &self->r;
	uint64_t bad = stat_of("deleg_malformed");
	struct call c = { .r = r, .flags = ODSM_DSLOT_F_GATEWAY };
	struct odsm_deleg_serve s = { .done = 1U << 30, .resp_len = SLOT + 1 };
	uint8_t resp[SLOT + 8] = { 0 };
	uint32_t flags = 0;

	ASSERT_EQ(0, rt_start(r, 1, 2, ANSWER));
	EXPECT_EQ(-EBADMSG, call_via_gateway_len(r, &c, &flags, SLOT + 1));
	EXPECT_EQ(-EBADMSG, c.ret);
	EXPECT_EQ(-EBADMSG, call_via_gateway_len(r, &c, &flags, 4));
	EXPECT_EQ(-EBADMSG, c.ret);
	EXPECT_EQ(bad + 2, stat_of("deleg_malformed"));
	s.resp = (uintptr_t)resp;
	EXPECT_EQ(-EINVAL, t_ioctl(r->fd, ODSM_IOC_DELEG_SERVE, &s));
	/* the next good answer comes through */
	EXPECT_EQ(0, call_via_gateway(r, &c, &flags));
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(999U, c.val);
}

/* The runtime's file closes with a batch in a lane: fails at once. */
TEST_F(lanes, runtime_gone_fails_at_once)
{
	struct rt *r = &self->r;
	struct call c = { .r = r };
	uint64_t closed;
	pthread_t th;
	int i;

	ASSERT_EQ(0, rt_start(r, 1, 1, NONE));
	ASSERT_EQ(0, pthread_create(&th, NULL, do_call, &c));
	for (i = 0; i < 2000 && !*(volatile uint32_t *)(r->p + LANES_OFF); i++)
		usleep(1000);
	usleep(20000);			/* let its worker sleep on the answer */
	closed = now_ms();
	close(r->fd);
	r->fd = -1;
	pthread_join(th, NULL);
	EXPECT_EQ(-EOWNERDEAD, c.ret);
	/* woken by the close, not at the end of its wait (1.5 s or more) */
	EXPECT_GT(1000U, c.end - closed);
	TH_LOG("failed %" PRIu64 " ms after the close", c.end - closed);
}

/*
 * The runtime's file outlives its close(2) (a forked child holds it), and
 * the runtime frees its arena, a slab object whose block another object
 * keeps backed.  A batch for the endpoint must not be written into that
 * memory -- the slot is free, and the next object there would get it:
 * the lanes were the arena's, and the arena is gone (-EOWNERDEAD at once;
 * before, the batch was written into the freed slot and the call waited
 * its 3/4 of the cluster's timeout for an answer).
 */
#define SMALL_ARENA	KiB(8)

TEST_F(lanes, freed_arena_never_written)
{
	struct rt *r = &self->r;
	struct call c = { .r = r };
	struct odsm_deleg_lanes l;
	uint8_t before[SMALL_ARENA];
	uint64_t nb, i;
	pid_t child;
	int st;

	r->trustees = 1;
	r->lanes = 1;
	r->cfd = odsm_rt.fd;
	ASSERT_EQ(0, t_alloc(r->cfd, SMALL_ARENA, 0, ODSM_ALLOC_ZERO, &r->cg,
			     NULL));
	ASSERT_EQ(0, t_alloc(r->cfd, SMALL_ARENA, 0, ODSM_ALLOC_ZERO, &nb,
			     NULL));
	if ((nb & ODSM_ADDR_MASK) / KiB(64) !=
	    (r->cg & ODSM_ADDR_MASK) / KiB(64)) {
		t_free(r->cfd, nb);
		SKIP(return, "the two objects are in different blocks");
	}
	r->p = t_p(r->cg);
	r->fd = t_open();
	ASSERT_LE(0, r->fd);
	l = geometry(r);
	ASSERT_EQ(0, bind_lanes(r->fd, r->cg & ODSM_ADDR_MASK, &l));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		pause();	/* holds the runtime's file */
		_exit(0);
	}
	close(r->fd);
	r->fd = -1;
	memset(r->p, 0x5a, SMALL_ARENA);
	ASSERT_EQ(0, t_free(r->cfd, r->cg));
	/* the block stays backed (nb): the freed slot's bytes stay readable */
	memcpy(before, r->p, SMALL_ARENA);
	do_call(&c);
	TH_LOG("the call: %d (%s) after %" PRIu64 " ms", c.ret,
	       strerror(-c.ret), c.ms);
	EXPECT_EQ(-EOWNERDEAD, c.ret);
	for (i = 0; i < SMALL_ARENA && r->p[i] == before[i]; i++)
		;
	EXPECT_EQ(SMALL_ARENA, i) {
		TH_LOG("the freed arena was written at byte %" PRIu64, i);
	}
	r->cg = nb;	/* the teardown frees it */
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
}

/*
 * No answer: -ETIMEDOUT, the lane stays taken until the trustee answers
 * late, then the next batch goes through it again.
 */
TEST_F(lanes, unanswered_times_out_lane_reused)
{
	struct rt *r = &self->r;
	struct call c = { .r = r };
	uint64_t lb, full;
	uint32_t flags = 1;
	uint8_t *q;
	int i;

	ASSERT_EQ(0, rt_start(r, 1, 1, NONE));
	q = r->p + LANES_OFF;
	do_call(&c);
	ASSERT_EQ(-ETIMEDOUT, c.ret);
	TH_LOG("timed out after %" PRIu64 " ms", c.ms);
	/* not answered yet: the lane stays taken, the gateway serves */
	full = stat_of("deleg_lane_full");
	EXPECT_EQ(0, call_via_gateway(r, &c, &flags));
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(999U, c.val);
	EXPECT_EQ(full + 1, stat_of("deleg_lane_full"));
	/* answered late */
	__atomic_store_n(&r->mode, ANSWER, __ATOMIC_RELEASE);
	for (i = 0; i < 2000 && *(volatile uint32_t *)q !=
	     *(volatile uint32_t *)(q + SLOT); i++)
		usleep(1000);
	lb = stat_of("deleg_lane_batches");
	full = stat_of("deleg_lane_full");
	do_call(&c);
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(2U << 16, c.val);	/* its own answer, seq 2 */
	EXPECT_EQ(lb + 1, stat_of("deleg_lane_batches"));
	EXPECT_EQ(full, stat_of("deleg_lane_full"));
}

TEST_HARNESS_MAIN
