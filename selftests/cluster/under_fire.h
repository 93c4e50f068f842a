/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Objects under fire: the stress shared by cluster_coherence_test
 * (under_fire) and cluster_borrow_test (owner_writes_under_fire).
 *
 * Node 0 allocates a table of owner boxes, one per object, a word of lock
 * per object and a word of "last completed version" per object, and
 * publishes their addresses in three words of its directory.  Every node
 * then runs one writer and f->readers reader threads over random objects:
 *
 *   the writer    takes the object's lock for writing, gets write access
 *                 (a mutable borrow through the table, or on node 0 with
 *                 f->owner_writes a write through the owner box in place),
 *                 checks the object is whole, bumps its version, gives the
 *                 access back and publishes the version as completed
 *   a reader      notes the last completed version, takes the lock for
 *                 reading, borrows the object through a copy of its box and
 *                 checks it is whole and no older than the version noted
 *
 * The locks are readers-writer locks in words of node 0 (-1 a writer,
 * n > 0 readers) built on remote compare-and-swap and fetch-and-add only.
 * At the end the versions must add up to the writes made: a lost write is
 * as much a failure as a torn or stale read.
 */
#ifndef _ODSM_UNDER_FIRE_H
#define _ODSM_UNDER_FIRE_H

#include <pthread.h>
#include "odsm_cluster.h"

#define FIRE_PAYLOAD	(KiB(2) - 16)
#define FIRE_MAX_READERS 4

struct fire_obj {
	uint64_t version;
	uint8_t payload[FIRE_PAYLOAD];
	uint64_t sum;
};

struct fire {
	const char *name;	/* the test, for failure lines */
	unsigned int nr_obj;
	unsigned int writes;	/* per node (node 0 with owner_writes: twice) */
	unsigned int reads;	/* per reader thread */
	unsigned int readers;	/* per node, <= FIRE_MAX_READERS */
	bool owner_writes;	/* node 0 writes through its owner boxes */
	bool keep_ext;		/* readers borrow through the box's ext as is */
	uint64_t table, locks, done;	/* colored addresses in node 0 */
	int errors;
};

static C_UNUSED uint64_t fire_sum(const struct fire_obj *o)
{
	uint64_t s = o->version * 0x9e3779b97f4a7c15ULL;
	unsigned int i;

	for (i = 0; i < FIRE_PAYLOAD; i++)
		s = (s ^ o->payload[i]) * 0x100000001b3ULL;
	return s;
}

static C_UNUSED void fire_fill(struct fire_obj *o, uint64_t version)
{
	unsigned int i;

	o->version = version;
	for (i = 0; i < FIRE_PAYLOAD; i++)
		o->payload[i] = (uint8_t)(version * 31 + i * 7);
	o->sum = fire_sum(o);
}

static void fire_fail(struct fire *f, const char *what, unsigned int obj,
		      uint64_t a, uint64_t b)
{
	fprintf(stderr, "# %s: node %u object %u: %s (%llu, %llu)\n",
		f->name, C.self, obj, what, (unsigned long long)a,
		(unsigned long long)b);
	__atomic_add_fetch(&f->errors, 1, __ATOMIC_RELAXED);
}

static void fire_lock(struct fire *f, unsigned int i, bool write)
{
	uint64_t word = f->locks + 8 * i, old = 0, want;
	int ret;

	for (;;) {
		ret = odsm_cmp_swap(word, 0, 0, &old);	/* read it */
		if (ret) {
			fire_fail(f, "lock read", i, (uint64_t)-ret, 0);
			c_sleep_ms(10);
			continue;
		}
		if (write ? old != 0 : old == (uint64_t)-1) {
			c_sleep_ms(1);
			continue;
		}
		want = write ? (uint64_t)-1 : old + 1;
		if (!odsm_cmp_swap(word, old, want, &old) &&
		    old == (write ? 0 : want - 1))
			return;
	}
}

static void fire_unlock(struct fire *f, unsigned int i, bool write)
{
	uint64_t word = f->locks + 8 * i;

	if (write)
		odsm_cmp_swap(word, (uint64_t)-1, 0, NULL);
	else
		odsm_fetch_add(word, (uint64_t)-1, NULL);
}

static unsigned int fire_next(unsigned int *seed, unsigned int nr)
{
	*seed = *seed * 1103515245 + 12345;
	return (*seed >> 16) % nr;
}

struct fire_thread {
	struct fire *f;
	unsigned int seed;
};

static unsigned int fire_node_writes(const struct fire *f, unsigned int node)
{
	return f->owner_writes && node == 0 ? 2 * f->writes : f->writes;
}

static void *fire_writer(void *arg)
{
	struct fire_thread *t = arg;
	struct fire *f = t->f;
	bool in_place = f->owner_writes && C.self == 0;
	odsm_box *tab = odsm_ptr(f->table);
	unsigned int n, i, seed = t->seed;
	struct fire_obj *o;
	odsm_mut m;
	void *w;
	int ret;

	for (n = 0; n < fire_node_writes(f, C.self); n++) {
		i = fire_next(&seed, f->nr_obj);
		if (f->owner_writes)
			c_sleep_ms(3);		/* let readers in between */
		fire_lock(f, i, true);
		if (in_place)		/* the table is here: write through it */
			ret = odsm_box_write(&tab[i], &w);
		else
			ret = odsm_borrow_mut_at(f->table + 16 * i, &m, &w);
		if (ret) {
			fire_fail(f, "write access", i, (uint64_t)-ret, 0);
			fire_unlock(f, i, true);
			continue;
		}
		o = w;
		if (o->sum != fire_sum(o))
			fire_fail(f, "writer found a torn object", i,
				  o->version, 0);
		fire_fill(o, o->version + 1);
		if (!in_place && (ret = odsm_return_mut(&m)))
			fire_fail(f, "return of the mutable borrow", i,
				  (uint64_t)-ret, 0);
		/* the last completed write of object i */
		if (odsm_write(f->done + 8 * i, &o->version, 8))
			fire_fail(f, "publish version", i, o->version, 0);
		fire_unlock(f, i, true);
	}
	return NULL;
}

static void *fire_reader(void *arg)
{
	struct fire_thread *t = arg;
	struct fire *f = t->f;
	unsigned int n, i, seed = t->seed;
	const struct fire_obj *o;
	uint64_t before;
	const void *p;
	odsm_box b;
	odsm_ref r;
	int ret;

	for (n = 0; n < f->reads; n++) {
		i = fire_next(&seed, f->nr_obj);
		/* the last write completed before this borrow */
		if (odsm_read(f->done + 8 * i, &before, 8)) {
			fire_fail(f, "read version", i, 0, 0);
			continue;
		}
		fire_lock(f, i, false);
		ret = odsm_read(f->table + 16 * i, &b, sizeof(b));
		if (!f->keep_ext)
			b.ext = 0;
		if (!ret)
			ret = odsm_borrow(&b, &r, &p);
		if (ret) {
			fire_fail(f, "shared borrow", i, (uint64_t)-ret, 0);
			fire_unlock(f, i, false);
			continue;
		}
		o = p;
		if (o->sum != fire_sum(o))
			fire_fail(f, "torn read", i, o->version, 0);
		if (o->version < before)
			fire_fail(f, "stale read", i, o->version, before);
		odsm_return(&r);
		fire_unlock(f, i, false);
	}
	return NULL;
}

/* Node 0: the table, its objects at version 0, published at words w.. w+2. */
static C_UNUSED int fire_setup(struct fire *f, unsigned int w)
{
	odsm_box *tab;
	unsigned int i;
	int ret;

	ret = odsm_alloc(16 * f->nr_obj, 16, ODSM_ALLOC_ZERO, &f->table);
	if (!ret)
		ret = odsm_alloc(8 * f->nr_obj, 8, ODSM_ALLOC_ZERO, &f->locks);
	if (!ret)
		ret = odsm_alloc(8 * f->nr_obj, 8, ODSM_ALLOC_ZERO, &f->done);
	if (ret)
		return ret;
	tab = odsm_ptr(f->table);
	for (i = 0; i < f->nr_obj; i++) {
		ret = odsm_box_new(&tab[i], sizeof(struct fire_obj), 0);
		if (ret)
			return ret;
		fire_fill(odsm_ptr(tab[i].g), 0);
	}
	ret = c_put(0, w, odsm_addr_of(f->table));
	if (!ret)
		ret = c_put(0, w + 1, odsm_addr_of(f->locks));
	if (!ret)
		ret = c_put(0, w + 2, odsm_addr_of(f->done));
	return ret;
}

/* Every node, after node 0's setup: the addresses it published. */
static C_UNUSED int fire_attach(struct fire *f, unsigned int w)
{
	int ret = c_get(0, w, &f->table);

	if (!ret)
		ret = c_get(0, w + 1, &f->locks);
	if (!ret)
		ret = c_get(0, w + 2, &f->done);
	f->table = odsm_addr_of(f->table);
	f->locks = odsm_addr_of(f->locks);
	f->done = odsm_addr_of(f->done);
	return ret;
}

/* One writer and f->readers readers on this node; the failures they saw. */
static C_UNUSED int fire_run(struct fire *f, unsigned int seed)
{
	struct fire_thread t[1 + FIRE_MAX_READERS];
	pthread_t th[1 + FIRE_MAX_READERS];
	unsigned int k, started;

	if (f->readers > FIRE_MAX_READERS)
		return -EINVAL;
	for (started = 0; started <= f->readers; started++) {
		t[started].f = f;
		t[started].seed = seed + started;
		if (pthread_create(&th[started], NULL,
				   started ? fire_reader : fire_writer,
				   &t[started])) {
			fire_fail(f, "pthread_create", started, 0, 0);
			break;
		}
	}
	for (k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	return f->errors;
}

/*
 * Node 0, after every node ran: -1 if an object is torn, else the sum of
 * the versions, which must equal fire_total_writes().
 */
static C_UNUSED int64_t fire_versions(struct fire *f)
{
	odsm_box *tab = odsm_ptr(f->table);
	struct fire_obj got;
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < f->nr_obj; i++) {
		if (odsm_read(tab[i].g, &got, sizeof(got)))
			return -1;
		if (got.sum != fire_sum(&got)) {
			fire_fail(f, "torn at the end", i, got.version, 0);
			return -1;
		}
		v += got.version;
	}
	return (int64_t)v;
}

static C_UNUSED uint64_t fire_total_writes(const struct fire *f)
{
	uint64_t n = 0;
	unsigned int k;

	for (k = 0; k < C.nodes; k++)
		n += fire_node_writes(f, k);
	return n;
}

#endif /* _ODSM_UNDER_FIRE_H */
