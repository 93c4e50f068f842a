// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Cache hits in user space: this process's table of the copies in the
 * node's cache it references (see "Cache hits in user space" in
 * Documentation/odsm/design.rst).
 *
 * The first borrow of a remote object's version takes a reference of the
 * process's file with ODSM_IOC_BORROW (a hit or a miss in the kernel's
 * cache); the table then records it: colored address -> copy, with a count
 * of the borrows of this process that read through it.  Later borrows of
 * the same colored address find it here and only raise the count; their
 * returns lower it.  A record whose count fell to 0 keeps its kernel
 * reference (it is *idle*): a borrow of it again costs nothing.  Idle
 * records go back to the kernel (ODSM_IOC_RETURN) in a batch when more
 * than HITS_IDLE_MAX of them pile up, when the module asks for them (the
 * hit page's want_epoch moved: it is over budget or short of memory), or
 * with odsm_hits_flush().
 *
 * Why a hit is safe: every record holds a reference of this process's
 * file, and the kernel never frees a referenced copy (budget, shrinker,
 * drop-copies); the reference goes only once the count is 0 and the
 * record is claimed (count -1), which no hit can undo.  A colored address
 * changes with every write, so a record of an older version is never
 * found by a borrow of the newer one.  What the colors do not cover -- a
 * home that restarted hands its colored addresses out again -- the module
 * says through the hit page's forget_epoch: a record made before the
 * epoch moved is never served again.
 *
 * Concurrency: hits and returns are lock-free (an atomic count per
 * record); recording and giving back take hits_lock.  A slot is reused
 * only after it was claimed and given back, and a hit re-reads the key
 * after it raised the count, so a hit never takes a slot that meanwhile
 * holds another object's copy (the ABA case).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_hits_int.h"

#define HITS_SLOTS	1024U		/* a power of 2 */
#define HITS_PROBE	16U		/* slots a key may sit in */
#define HITS_IDLE_MAX	64		/* idle records kept at most */

struct hit {
	_Atomic uint64_t key;		/* colored address; 0: free */
	_Atomic int64_t count;		/* borrows out; -1: free or claimed */
	uint64_t copy;			/* where the copy is, in the heap */
	uint64_t epoch;			/* forget_epoch when recorded */
};

static struct hit hits[HITS_SLOTS];
static pthread_mutex_t hits_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct odsm_hits_page *hits_page;
static size_t hits_len;			/* the page's: the kernel's page size */
static _Atomic uint64_t seen_want, seen_forget;
static _Atomic int idle;
static struct {
	_Atomic uint64_t hits, recorded, returns, given_back;
} st;

static unsigned int hit_slot(uint64_t g, unsigned int i)
{
	return (unsigned int)(((g * 0x9e3779b97f4a7c15ULL) >> 40) + i) &
	       (HITS_SLOTS - 1);
}

static uint64_t forget_epoch(void)
{
	return atomic_load_explicit((_Atomic uint64_t *)&hits_page->forget_epoch,
				    memory_order_acquire);
}

static void table_reset(void)
{
	unsigned int i;

	for (i = 0; i < HITS_SLOTS; i++) {
		atomic_init(&hits[i].key, 0);
		atomic_init(&hits[i].count, -1);
	}
	atomic_init(&idle, 0);
}

/* The forked child shares the parent's file: the references are the
 * parent's records, not the child's to give back.
 */
static void hits_atfork_child(void)
{
	pthread_mutex_init(&hits_lock, NULL);
	table_reset();
}

int odsm__hits_init(int fd)
{
	static bool atfork_done;
	void *p;

	table_reset();
	hits_len = (size_t)sysconf(_SC_PAGESIZE);
	/* the page goes where we reserved room for it */
	p = mmap(NULL, hits_len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (mmap(p, hits_len, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
		 ODSM_HITS_OFFSET) == MAP_FAILED) {
		int ret = -errno;

		munmap(p, hits_len);
		return ret;
	}
	odsm__hits_attach(p);
	if (!atfork_done && !pthread_atfork(NULL, NULL, hits_atfork_child))
		atfork_done = true;
	return 0;
}

void odsm__hits_attach(const struct odsm_hits_page *page)
{
	table_reset();
	hits_page = page;
	if (page) {
		atomic_store(&seen_want, page->want_epoch);
		atomic_store(&seen_forget, forget_epoch());
	}
}

void odsm__hits_fini(void)
{
	/* the references go with the file */
	if (hits_page)
		munmap((void *)hits_page, hits_len);
	odsm__hits_attach(NULL);
}

/*
 * Give back the idle records: all of them, or (all false) those recorded
 * before the last forget only, or (key) those of key only.  The number
 * given back.
 */
static int give_back_key(bool all, uint64_t key)
{
	uint64_t ep = forget_epoch();
	unsigned int i;
	int n = 0;

	pthread_mutex_lock(&hits_lock);
	for (i = 0; i < HITS_SLOTS; i++) {
		struct hit *e = &hits[i];
		struct odsm_borrow b = { 0 };
		int64_t zero = 0;

		b.gaddr = atomic_load_explicit(&e->key, memory_order_relaxed);
		if (!b.gaddr || (key && b.gaddr != key) ||
		    (!key && !all && e->epoch == ep))
			continue;
		/* claimed: no hit can raise the count from here */
		if (!atomic_compare_exchange_strong(&e->count, &zero, -1))
			continue;
		atomic_fetch_sub(&idle, 1);
		/* ENOENT only if a forked sibling gave it back for us */
		ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &b);
		atomic_store_explicit(&e->key, 0, memory_order_release);
		atomic_fetch_add_explicit(&st.given_back, 1,
					  memory_order_relaxed);
		n++;
	}
	pthread_mutex_unlock(&hits_lock);
	return n;
}

static int give_back(bool all)
{
	return give_back_key(all, 0);
}

void odsm__hit_release(uint64_t g)
{
	if (hits_page)
		give_back_key(true, g);
}

/* What the module asked for since we looked: one load each, no call. */
static void heed_module(void)
{
	uint64_t w = atomic_load_explicit((_Atomic uint64_t *)&hits_page->want_epoch,
					  memory_order_relaxed);
	uint64_t f = forget_epoch();

	if (__builtin_expect(w != atomic_load_explicit(&seen_want,
						       memory_order_relaxed), 0)) {
		atomic_store(&seen_want, w);
		give_back(true);
	} else if (__builtin_expect(f != atomic_load_explicit(&seen_forget,
							      memory_order_relaxed), 0)) {
		atomic_store(&seen_forget, f);
		give_back(false);
	}
}

bool odsm__hit_get(uint64_t g, uint64_t *copy)
{
	unsigned int i;
	uint64_t ep;

	if (!hits_page)
		return false;
	heed_module();
	ep = forget_epoch();
	for (i = 0; i < HITS_PROBE; i++) {
		struct hit *e = &hits[hit_slot(g, i)];
		int64_t c;

		if (atomic_load_explicit(&e->key, memory_order_acquire) != g)
			continue;
		c = atomic_load_explicit(&e->count, memory_order_relaxed);
		do {
			if (c < 0)
				break;	/* free or claimed */
		} while (!atomic_compare_exchange_weak_explicit(&e->count, &c,
								c + 1,
								memory_order_acq_rel,
								memory_order_relaxed));
		if (c < 0)
			continue;
		/* the slot may have been given back and reused in between */
		if (atomic_load_explicit(&e->key, memory_order_acquire) != g ||
		    e->epoch != ep) {
			/* undone: what the count was, idle or not, it is */
			atomic_fetch_sub_explicit(&e->count, 1,
						  memory_order_release);
			continue;
		}
		if (!c)
			atomic_fetch_sub(&idle, 1);
		*copy = e->copy;
		atomic_fetch_add_explicit(&st.hits, 1, memory_order_relaxed);
		return true;
	}
	return false;
}


bool odsm__hit_record(uint64_t g, uint64_t copy, uint64_t epoch)
{
	unsigned int i;
	bool ok = false;

	if (!hits_page)
		return false;
	pthread_mutex_lock(&hits_lock);
	for (i = 0; i < HITS_PROBE && !ok; i++) {
		struct hit *e = &hits[hit_slot(g, i)];

		if (atomic_load_explicit(&e->key, memory_order_relaxed))
			continue;
		e->copy = copy;
		e->epoch = epoch;
		/* a late hit that raises this count re-reads the key */
		atomic_store_explicit(&e->count, 1, memory_order_release);
		atomic_store_explicit(&e->key, g, memory_order_release);
		ok = true;
	}
	pthread_mutex_unlock(&hits_lock);
	if (ok)
		atomic_fetch_add_explicit(&st.recorded, 1,
					  memory_order_relaxed);
	return ok;
}

uint64_t odsm__hits_epoch(void)
{
	return hits_page ? forget_epoch() : 0;
}

bool odsm__hit_return(uint64_t g, uint64_t copy)
{
	unsigned int i;

	if (!hits_page)
		return false;
	for (i = 0; i < HITS_PROBE; i++) {
		struct hit *e = &hits[hit_slot(g, i)];

		int64_t c;

		/* a record with a count cannot change under us */
		if (atomic_load_explicit(&e->key, memory_order_acquire) != g ||
		    e->copy != copy)
			continue;
		/* never below 0: two records of one copy share its borrows */
		c = atomic_load_explicit(&e->count, memory_order_relaxed);
		do {
			if (c <= 0)
				break;
		} while (!atomic_compare_exchange_weak_explicit(&e->count, &c,
								c - 1,
								memory_order_release,
								memory_order_relaxed));
		if (c <= 0)
			continue;
		atomic_fetch_add_explicit(&st.returns, 1, memory_order_relaxed);
		if (c == 1 && atomic_fetch_add(&idle, 1) + 1 > HITS_IDLE_MAX)
			give_back(true);
		else
			heed_module();
		return true;
	}
	return false;
}

int odsm_hits_flush(void)
{
	if (odsm_rt.fd < 0)
		return -EBADF;
	return hits_page ? give_back(true) : 0;
}

void odsm_hits_stats(struct odsm_hits_stats *s)
{
	s->hits = atomic_load(&st.hits);
	s->recorded = atomic_load(&st.recorded);
	s->returns = atomic_load(&st.returns);
	s->given_back = atomic_load(&st.given_back);
	s->idle = (uint64_t)(atomic_load(&idle) > 0 ? atomic_load(&idle) : 0);
}
