// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's names, start-up, barrier and mutex (odsm_sync.h) against the
 * fake /dev/odsm (fake_odsm.h: node 0 of 2, node 1 down or up as the
 * test says), threads of this process standing for every participant:
 *
 *   - odsm_app_join of two threads (the barrier counts arrivals) and a
 *     second join that finds the record; names published, found, taken
 *     twice by racing threads (one 0, the rest -EEXIST), an owner box
 *     moved into the table, a wait that times out, a full table, bad
 *     names;
 *   - barrier rounds of 4 threads, checked like cluster_sync_test;
 *   - both mutexes under 4 threads: exact totals;
 *   - robust semantics: a lock word or a ticket of node 1, node 1 down:
 *     -EOWNERDEAD, consistent or not (-ENOTRECOVERABLE); a barrier with
 *     node 1 counted in it: -EHOSTDOWN;
 *   - a lock names this node's incarnation from the hit page, with no
 *     ODSM_IOC_STATUS.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fake_odsm.h"
#include "odsm_sync_int.h"
#include "odsm_hits_int.h"

#include "ksft_host.h"

#define NT	4

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct joiner {
	pthread_t th;
	struct odsm_app app;
	int ret;
};

static void *join_thread(void *arg)
{
	struct joiner *j = arg;

	j->ret = odsm_app_join(&j->app, "app", 0, 5000);
	return NULL;
}

/* Two arrivals at the app's barrier: this thread and another. */
static int join2(struct odsm_app *app)
{
	struct joiner j = { .ret = 0 };
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	int ret;

	if (pthread_create(&j.th, NULL, join_thread, &j))
		return -EAGAIN;
	nanosleep(&ts, NULL);	/* it made the directory and waits */
	ret = odsm_app_join(app, "app", 0, 5000);
	pthread_join(j.th, NULL);
	return ret ? ret : j.ret;
}

FIXTURE(sy)
{
	struct odsm_app app;
};

FIXTURE_SETUP(sy)
{
	fk_init();
	ASSERT_EQ(0, join2(&self->app));
}

FIXTURE_TEARDOWN(sy)
{
	fk_fini();
}

TEST_F(sy, join_gives_a_record)
{
	struct odsm_app again;
	uint64_t dir[2];

	ASSERT_EQ(0U, self->app.self);
	ASSERT_EQ(2U, self->app.nodes);
	ASSERT_NE(0ULL, self->app.root);
	ASSERT_NE(0ULL, self->app.barrier);
	/* the directory is the partition's first object, with its magic */
	ASSERT_EQ(0, odsm_read(fk_part(0), dir, sizeof(dir)));
	ASSERT_EQ(ODSM_DIR_MAGIC, dir[0]);
	/* a second run finds the same record */
	ASSERT_EQ(0, join2(&again));
	ASSERT_EQ(self->app.root, again.root);
	ASSERT_EQ(self->app.barrier, again.barrier);
	/* a count that is not the cluster's */
	ASSERT_EQ(-EINVAL, odsm_app_join(&again, "app", 3, 100));
	ASSERT_EQ(-EINVAL, odsm_app_join(&again, NULL, 0, 100));
	/* node 1 down: it never comes */
	fk.peer_state = ODSM_PEER_DOWN;
	ASSERT_EQ(-ETIMEDOUT, odsm_app_join(&again, "other", 0, 100));
}

struct racer {
	pthread_t th;
	int ret;
};

static void *race_thread(void *arg)
{
	struct racer *r = arg;

	r->ret = odsm_name_publish("raced", ODSM_NAME_ADDR, 0x77);
	return NULL;
}

TEST_F(sy, names)
{
	struct racer rs[8];
	struct odsm_name n;
	char name[40];
	odsm_box b = { 0 };
	uint64_t t0, *p;
	unsigned int i, won = 0;
	odsm_mut m;

	ASSERT_EQ(0, odsm_name_publish("a", ODSM_NAME_ADDR, 0x1234));
	ASSERT_EQ(0, odsm_name_lookup("a", &n));
	ASSERT_EQ((unsigned int)ODSM_NAME_ADDR, n.kind);
	ASSERT_EQ(0U, n.node);
	ASSERT_EQ(0x1234ULL, n.value);
	ASSERT_EQ(-EEXIST, odsm_name_publish("a", ODSM_NAME_DELEG, 1));
	ASSERT_EQ(-EEXIST, odsm_name_publish("app", ODSM_NAME_ADDR, 1));
	ASSERT_EQ(-ENOENT, odsm_name_lookup("b", &n));
	t0 = ms_now();
	ASSERT_EQ(-ETIMEDOUT, odsm_name_wait("b", 200, &n));
	ASSERT_LE(200ULL, ms_now() - t0);
	ASSERT_GE(1000ULL, ms_now() - t0);
	/* racing publishers of one name: one wins */
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, pthread_create(&rs[i].th, NULL, race_thread, &rs[i]));
	for (i = 0; i < 8; i++) {
		pthread_join(rs[i].th, NULL);
		if (rs[i].ret == 0)
			won++;
		else
			ASSERT_EQ(-EEXIST, rs[i].ret);
	}
	ASSERT_EQ(1U, won);
	/* a box moves into the table, and is taken from there */
	ASSERT_EQ(0, odsm_box_new(&b, 16, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_name_publish_box("box", &b));
	ASSERT_EQ(0ULL, b.g);
	ASSERT_EQ(0, odsm_name_lookup("box", &n));
	ASSERT_EQ((unsigned int)ODSM_NAME_BOX, n.kind);
	ASSERT_EQ(0, odsm_borrow_mut_at(n.value, &m, (void **)&p));
	*p = 99;
	ASSERT_EQ(0, odsm_return_mut(&m));
	ASSERT_EQ(0, odsm_borrow_mut_at(n.value, &m, (void **)&p));
	ASSERT_EQ(99ULL, *p);
	ASSERT_EQ(0, odsm_return_mut(&m));
	/* bad names */
	ASSERT_EQ(-EINVAL, odsm_name_lookup(NULL, &n));
	ASSERT_EQ(-EINVAL, odsm_name_lookup("", &n));
	ASSERT_EQ(-EINVAL, odsm_name_lookup("a", NULL));
	memset(name, 'x', 32);
	name[32] = 0;
	ASSERT_EQ(-ENAMETOOLONG, odsm_name_publish(name, ODSM_NAME_ADDR, 1));
	name[31] = 0;
	ASSERT_EQ(0, odsm_name_publish(name, ODSM_NAME_ADDR, 1));
	ASSERT_EQ(0, odsm_name_lookup(name, &n));
	ASSERT_EQ(-EINVAL, odsm_name_publish("c", ODSM_NAME_BOX, 1));
	ASSERT_EQ(-EINVAL, odsm_name_publish("c", 0, 1));
	ASSERT_EQ(-EINVAL, odsm_name_publish("c", ODSM_NAME_ADDR, 0));
	ASSERT_EQ(-EINVAL, odsm_name_publish_box("c", &b));	/* empty */
	/* the table fills up: app, a, raced, box, the long one, then ours */
	for (i = 0; i < ODSM_NT_SLOTS - 5; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		ASSERT_EQ(0, odsm_name_publish(name, ODSM_NAME_ADDR, 1 + i));
	}
	ASSERT_EQ(-ENOSPC, odsm_name_publish("one-more", ODSM_NAME_ADDR, 1));
	ASSERT_EQ(-ENOENT, odsm_name_lookup("one-more", &n));
	for (i = 0; i < ODSM_NT_SLOTS - 5; i += 17) {
		snprintf(name, sizeof(name), "n%u", i);
		ASSERT_EQ(0, odsm_name_lookup(name, &n));
		ASSERT_EQ(1ULL + i, n.value);
	}
}

/*
 * A publisher that died between claiming an entry and settling it: the
 * next publisher whose probe passes there waits odsm__nt_claim_ms (30 s;
 * 200 ms here), turns the claim into a tombstone and goes on.  Before,
 * it failed -ETIMEDOUT, and so did every later one, for good.
 */
TEST_F(sy, names_stale_claim)
{
	uint64_t nt, e, st, t0;
	struct odsm_name n;

	ASSERT_EQ(0, odsm__names_table(&nt));
	e = nt + (uint64_t)odsm_nt_slot(odsm_nt_hash("stale"), 0) *
		 ODSM_NT_ENTRY;
	st = odsm_nt_state(ODSM_NT_CLAIMED, 1, ODSM_NAME_ADDR);
	ASSERT_EQ(0, odsm_write(e + offsetof(struct odsm_nt_entry, state),
				&st, sizeof(st)));
	odsm__nt_claim_ms = 200;
	t0 = ms_now();
	EXPECT_EQ(0, odsm_name_publish("stale", ODSM_NAME_ADDR, 5));
	EXPECT_GE(5000ULL, ms_now() - t0);
	EXPECT_EQ(0, odsm_name_lookup("stale", &n));
	EXPECT_EQ(5ULL, n.value);
	ASSERT_EQ(0, odsm_read(e + offsetof(struct odsm_nt_entry, state),
			       &st, sizeof(st)));
	EXPECT_EQ(ODSM_NT_DEAD, odsm_nt_st(st));
	odsm__nt_claim_ms = 30000;
}

struct bt {
	pthread_t th;
	uint64_t bar, ctr;
	int ret;
};

static void *bar_thread(void *arg)
{
	struct bt *t = arg;
	uint64_t v;
	unsigned int r;

	for (r = 0; r < 200 && !t->ret; r++) {
		t->ret = odsm_fetch_add(t->ctr, 1, NULL);
		if (!t->ret)
			t->ret = odsm_barrier_wait(t->bar, 5000);
		if (!t->ret)
			t->ret = odsm_read(t->ctr, &v, sizeof(v));
		if (!t->ret && (v < (r + 1) * NT || v > (r + 2) * NT))
			t->ret = 1000 + r;
	}
	return NULL;
}

TEST_F(sy, barrier_rounds)
{
	struct bt ts[NT];
	uint64_t bar, ctr, v;
	unsigned int i;

	ASSERT_EQ(0, odsm_barrier_new(&bar, NT));
	ASSERT_EQ(0, odsm_alloc(8, 8, ODSM_ALLOC_ZERO, &ctr));
	for (i = 0; i < NT; i++) {
		ts[i] = (struct bt){ .bar = bar, .ctr = ctr };
		ASSERT_EQ(0, pthread_create(&ts[i].th, NULL, bar_thread, &ts[i]));
	}
	for (i = 0; i < NT; i++) {
		pthread_join(ts[i].th, NULL);
		ASSERT_EQ(0, ts[i].ret);
	}
	ASSERT_EQ(0, odsm_read(ctr, &v, sizeof(v)));
	ASSERT_EQ(200ULL * NT, v);
	ASSERT_EQ(-EINVAL, odsm_barrier_wait(ctr, 10));
	ASSERT_EQ(0, odsm_barrier_free(bar));
	ASSERT_EQ(-EINVAL, odsm_barrier_wait(bar, 10));
}

struct mt {
	pthread_t th;
	uint64_t mx;
	int ret;
};

static void *mx_thread(void *arg)
{
	struct mt *t = arg;
	struct odsm_guard g;
	uint64_t *p;
	unsigned int i;

	for (i = 0; i < 500 && !t->ret; i++) {
		t->ret = odsm_mutex_lock(t->mx, &g, (void **)&p);
		if (t->ret)
			break;
		p[0]++;
		p[1] += p[0];	/* torn without the lock */
		t->ret = odsm_mutex_unlock(&g);
	}
	return NULL;
}

static void under_fire(struct __test_metadata *_metadata, unsigned int kind)
{
	struct odsm_guard g;
	struct mt ts[NT];
	odsm_box b = { 0 };
	uint64_t mx, *p, n = 500 * NT;
	unsigned int i;

	ASSERT_EQ(0, odsm_box_new(&b, 16, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_mutex_new(&mx, kind, &b));
	for (i = 0; i < NT; i++) {
		ts[i] = (struct mt){ .mx = mx };
		ASSERT_EQ(0, pthread_create(&ts[i].th, NULL, mx_thread, &ts[i]));
	}
	for (i = 0; i < NT; i++) {
		pthread_join(ts[i].th, NULL);
		ASSERT_EQ(0, ts[i].ret);
	}
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(n, p[0]);
	ASSERT_EQ(n * (n + 1) / 2, p[1]);
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_free(mx, NULL));
}

TEST_F(sy, mutex_cas_under_fire)
{
	under_fire(_metadata, ODSM_MUTEX_CAS);
}

TEST_F(sy, mutex_fifo_under_fire)
{
	under_fire(_metadata, ODSM_MUTEX_FIFO);
}

/* A mutex of kind guarding 42, and its address (not colored). */
static uint64_t mutex42(unsigned int kind)
{
	odsm_box b = { 0 };
	uint64_t mx, *p;

	if (odsm_box_new(&b, 8, 0) || odsm_box_write(&b, (void **)&p))
		abort();
	*p = 42;
	if (odsm_mutex_new(&mx, kind, &b))
		abort();
	return mx;
}

TEST_F(sy, cas_dead_holder)
{
	uint64_t mx = mutex42(ODSM_MUTEX_CAS), w, *p;
	struct odsm_guard g, g2;

	/* node 1 holds it */
	w = odsm_mx_holder_word(1, 77, 0);
	ASSERT_EQ(0, odsm_write(odsm_addr_of(mx) + ODSM_MX_WORD, &w, 8));
	ASSERT_EQ(-EBUSY, odsm_mutex_trylock(mx, &g, (void **)&p));
	fk.peer_state = ODSM_PEER_DOWN;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(42ULL, *p);
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(-EDEADLK, odsm_mutex_lock(mx, &g2, (void **)&p));
	/* a guard taken over from us is not ours to release */
	w = odsm_mx_holder_word(1, 78, 0);
	ASSERT_EQ(0, odsm_write(odsm_addr_of(mx) + ODSM_MX_WORD, &w, 8));
	ASSERT_EQ(-EPERM, odsm_mutex_unlock(&g));
	/* taken from the dead node again, and unlocked inconsistent */
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(-ENOTRECOVERABLE, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(-ENOTRECOVERABLE, odsm_mutex_trylock(mx, &g, (void **)&p));
}

TEST_F(sy, fifo_dead_holder)
{
	uint64_t mx = mutex42(ODSM_MUTEX_FIFO), at = odsm_addr_of(mx), e, *p;
	struct odsm_guard g;

	/* node 1 took ticket 0 (served at once: it holds the lock) */
	ASSERT_EQ(0, odsm_fetch_add(at + ODSM_MX_WORD, 1ULL << 32, NULL));
	e = odsm_mx_ring_entry(0, 1, 0);
	ASSERT_EQ(0, odsm_write(at + ODSM_MX_RINGOFF, &e, 8));
	ASSERT_EQ(-EBUSY, odsm_mutex_trylock(mx, &g, (void **)&p));
	fk.peer_state = ODSM_PEER_DOWN;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(42ULL, *p);
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	/* node 1 holds it again and dies: unlocked inconsistent */
	fk.peer_state = ODSM_PEER_UP;
	ASSERT_EQ(0, odsm_fetch_add(at + ODSM_MX_WORD, 1ULL << 32, NULL));
	e = odsm_mx_ring_entry(3, 1, 0);
	ASSERT_EQ(0, odsm_write(at + ODSM_MX_RINGOFF + 8 * 3, &e, 8));
	fk.peer_state = ODSM_PEER_DOWN;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(-ENOTRECOVERABLE, odsm_mutex_lock(mx, &g, (void **)&p));
}

/*
 * A lock takes this node's incarnation from the hit page, where the
 * module keeps it (ODSM_HITS_F_NODE_INC), not from ODSM_IOC_STATUS (a
 * system call per lock): the CAS kind's word and the FIFO kind's ring
 * entry name it (5000 + 1), or 0 while the node is in no cluster (the
 * page says 0).  A page without the feature (a module that keeps no
 * incarnation there) has the lock ask ODSM_IOC_STATUS (node 0: 1000).
 */
TEST_F(sy, own_incarnation_from_the_page)
{
	static struct odsm_hits_page page;
	uint64_t cas = mutex42(ODSM_MUTEX_CAS), fifo = mutex42(ODSM_MUTEX_FIFO);
	uint64_t w, e, *p;
	unsigned long st0;
	struct odsm_guard g;

	memset(&page, 0, sizeof(page));
	page.features = ODSM_HITS_F_NODE_INC;
	page.node_incarnation = 5000 | 1ULL << 40;	/* the tag: low 32 bits */
	fk.peer_inc = 1000;
	odsm__hits_attach(&page);
	st0 = fk.st.statuses;
	ASSERT_EQ(0, odsm_mutex_lock(cas, &g, (void **)&p));
	ASSERT_EQ(0, odsm_read(odsm_addr_of(cas) + ODSM_MX_WORD, &w, 8));
	EXPECT_EQ(odsm_mx_inc_tag(5000), odsm_mx_holder_inc(w));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_lock(fifo, &g, (void **)&p));
	ASSERT_EQ(0, odsm_read(odsm_addr_of(fifo) + ODSM_MX_RINGOFF, &e, 8));
	EXPECT_EQ(odsm_mx_ring_entry(0, 0, odsm_mx_inc_tag(5000)), e);
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	EXPECT_EQ(st0, fk.st.statuses);

	/* in no cluster: 0, still no system call */
	page.node_incarnation = 0;
	ASSERT_EQ(0, odsm_mutex_lock(cas, &g, (void **)&p));
	ASSERT_EQ(0, odsm_read(odsm_addr_of(cas) + ODSM_MX_WORD, &w, 8));
	EXPECT_EQ(0U, odsm_mx_holder_inc(w));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	EXPECT_EQ(st0, fk.st.statuses);

	/* a page without it: ODSM_IOC_STATUS says */
	page.features = 0;
	ASSERT_EQ(0, odsm_mutex_lock(cas, &g, (void **)&p));
	ASSERT_EQ(0, odsm_read(odsm_addr_of(cas) + ODSM_MX_WORD, &w, 8));
	EXPECT_EQ(odsm_mx_inc_tag(1000), odsm_mx_holder_inc(w));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	EXPECT_LT(st0, fk.st.statuses);
	odsm__hits_attach(NULL);
}

/*
 * A holder whose node left and joined again (restarted: its processes
 * are gone) while nobody looked: up, but as another incarnation than the
 * one its word or ticket names.  Before, only a node seen down freed a
 * lock, so this one stayed held for good.  The holder's words name the
 * incarnation it had (tag of 1000 + 1); the node is now 2000 + 1, seen
 * after 1000 + 1.  A word naming an incarnation this node has not seen
 * yet (3000 + 1: the holder's node restarted again, and this node does
 * not know yet) is a live holder's: not taken over.
 */
TEST_F(sy, holder_node_restarted)
{
	uint64_t mx = mutex42(ODSM_MUTEX_CAS), at, w, e, *p;
	struct odsm_guard g, g2;
	uint32_t mine;

	fk.peer_inc = 1000;
	/* a lock taken here names this node's incarnation (1000 + 0) */
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_read(odsm_addr_of(mx) + ODSM_MX_WORD, &w, 8));
	EXPECT_EQ(odsm_mx_inc_tag(1000), odsm_mx_holder_inc(w));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm__node_inc_tag(0, &mine));
	EXPECT_EQ(odsm_mx_inc_tag(1000), mine);

	/* node 1, as it was, holds it: alive while it is that incarnation */
	w = odsm_mx_holder_word(1, 77, odsm_mx_inc_tag(1001));
	ASSERT_EQ(0, odsm_write(odsm_addr_of(mx) + ODSM_MX_WORD, &w, 8));
	ASSERT_EQ(-EBUSY, odsm_mutex_trylock(mx, &g, (void **)&p));
	fk.peer_inc = 2000;
	fk.peer_inc_before = 1000;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_trylock(mx, &g, (void **)&p));
	ASSERT_EQ(42ULL, *p);
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	/* a newer incarnation than this node saw: alive */
	w = odsm_mx_holder_word(1, 77, odsm_mx_inc_tag(3001));
	ASSERT_EQ(0, odsm_write(odsm_addr_of(mx) + ODSM_MX_WORD, &w, 8));
	ASSERT_EQ(-EBUSY, odsm_mutex_trylock(mx, &g, (void **)&p));
	w = 0;
	ASSERT_EQ(0, odsm_write(odsm_addr_of(mx) + ODSM_MX_WORD, &w, 8));
	/* this thread's own word, of an incarnation before: still its own */
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	fk.peer_inc = 4000;
	ASSERT_EQ(-EDEADLK, odsm_mutex_trylock(mx, &g2, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	fk.peer_inc = 2000;

	/* the FIFO kind: node 1's ticket 0, of incarnation 1001 */
	fk.peer_inc = 1000;
	fk.peer_inc_before = 0;
	mx = mutex42(ODSM_MUTEX_FIFO);
	at = odsm_addr_of(mx);
	ASSERT_EQ(0, odsm_fetch_add(at + ODSM_MX_WORD, 1ULL << 32, NULL));
	e = odsm_mx_ring_entry(0, 1, odsm_mx_inc_tag(1001));
	ASSERT_EQ(0, odsm_write(at + ODSM_MX_RINGOFF, &e, 8));
	fk.peer_inc = 2000;
	fk.peer_inc_before = 1000;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(42ULL, *p);
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	/* this node's own ticket named its incarnation */
	ASSERT_EQ(0, odsm_read(at + ODSM_MX_RINGOFF + 8, &e, 8));
	EXPECT_EQ(odsm_mx_inc_tag(2000), odsm_mx_ring_inc(e));
	fk.peer_inc = 0;
	fk.peer_inc_before = 0;
}

TEST_F(sy, barrier_dead_participant)
{
	uint64_t bar, m = 1ULL << 1, t0;

	ASSERT_EQ(0, odsm_barrier_new(&bar, 3));
	/* a thread of node 1 waits in it; we are the second of 3 */
	ASSERT_EQ(0, odsm_write(odsm_addr_of(bar) + ODSM_B_NODES, &m, 8));
	ASSERT_EQ(0, odsm_fetch_add(odsm_addr_of(bar) + ODSM_B_WORD, 1, NULL));
	fk.peer_state = ODSM_PEER_DOWN;
	t0 = ms_now();
	ASSERT_EQ(-EHOSTDOWN, odsm_barrier_wait(bar, 5000));
	ASSERT_GE(200ULL, ms_now() - t0);
}

/*
 * A cluster of more than 64 nodes: a holder or a participant on node 70
 * that dies is seen dead like one on node 1 (the status array, not a
 * 64-bit mask).  Before, the CAS mutex's waiter got -EINVAL ("not a
 * mutex"), the FIFO one -EINVAL with its ticket taken (the mutex stuck
 * for every later locker), and the barrier never saw node 70 at all.
 */
TEST_F(sy, holders_past_node_63)
{
	uint64_t mx = mutex42(ODSM_MUTEX_CAS), w, e, *p, at, bar, m, t0;
	struct odsm_guard g;

	fk.nodes = 80;
	w = odsm_mx_holder_word(70, 77, 0);
	ASSERT_EQ(0, odsm_write(odsm_addr_of(mx) + ODSM_MX_WORD, &w, 8));
	fk.peer_state = ODSM_PEER_DOWN;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));

	fk.peer_state = ODSM_PEER_UP;
	mx = mutex42(ODSM_MUTEX_FIFO);
	at = odsm_addr_of(mx);
	ASSERT_EQ(0, odsm_fetch_add(at + ODSM_MX_WORD, 1ULL << 32, NULL));
	e = odsm_mx_ring_entry(0, 70, 0);
	ASSERT_EQ(0, odsm_write(at + ODSM_MX_RINGOFF, &e, 8));
	fk.peer_state = ODSM_PEER_DOWN;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(42ULL, *p);
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));

	ASSERT_EQ(0, odsm_barrier_new(&bar, 3));
	m = 1ULL << (70 % 64);
	ASSERT_EQ(0, odsm_write(odsm_addr_of(bar) + ODSM_B_NODES + 8, &m, 8));
	ASSERT_EQ(0, odsm_fetch_add(odsm_addr_of(bar) + ODSM_B_WORD, 1, NULL));
	t0 = ms_now();
	ASSERT_EQ(-EHOSTDOWN, odsm_barrier_wait(bar, 5000));
	ASSERT_GE(200ULL, ms_now() - t0);
}

/*
 * A FIFO locker whose step after taking its ticket fails (here the ring
 * write) tries again instead of giving the ticket up: a ticket given up
 * is never served, and every later locker would wait for it for ever.
 */
TEST_F(sy, fifo_ticket_never_abandoned)
{
	uint64_t mx = mutex42(ODSM_MUTEX_FIFO), *p;
	struct odsm_guard g;

	fk.fail_write = -ETIMEDOUT;
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(42ULL, *p);
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	/* the next locker is served: no ticket was lost */
	ASSERT_EQ(0, odsm_mutex_trylock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	/* the state read of granted() fails once (the kind's read before
	 * the ticket goes through): tried again too
	 */
	fk.fail_skip = 1;
	fk.fail_read = -ETIMEDOUT;
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_trylock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
}

TEST_HARNESS_MAIN
