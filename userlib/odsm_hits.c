// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Cache hits in user space: this process's table of the copies in the
 * node's cache it references (see "Cache hits in user space" in
 * Documentation/odsm/design.rst).
 *
 * The first borrow of a remote object's version takes a reference of the
 * process's file with ODSM_IOC_BORROW (a hit or a miss in the kernel's
 * cache); the table then records it: colored address -> copy.  Later
 * borrows of the same colored address find it here and count themselves;
 * their returns uncount.  A record nobody counts keeps its kernel
 * reference (it is *idle*): a borrow of it again costs nothing.  Idle
 * records go back to the kernel (ODSM_IOC_RETURN) in a batch when a
 * record is made while HITS_KEEP of them exist, when the module asks for
 * them (the hit page's want_epoch moved: it is over budget or short of
 * memory), before a mutable borrow of that address, and with
 * odsm_hits_flush().
 *
 * Where the borrows are counted: a hit or a return does no atomic
 * read-modify-write and writes no line another thread writes.  Each
 * thread has a small table of its own (struct odsm__th in odsm.h:
 * ODSM__TH_SLOTS entries, one per colored address it uses) in which it
 * counts the borrows it takes and the returns it makes of a record, with
 * plain stores -- inline in the program (odsm__hit_fast), or here when
 * the entry is made; a
 * return of a borrow that another thread counted (a ref handed over) is
 * counted here too, negative; the sum over every thread's entries and the
 * record's shared count (borrows of a thread whose entry was busy with
 * another address, and the entries of threads that exited) is the number
 * of borrows out.
 *
 * Why a hit is safe: every record holds a reference of this process's
 * file, and the kernel never frees a referenced copy (budget, shrinker,
 * drop-copies); the reference goes only after the record was *claimed*
 * and found idle.  The claim and a hit are the two sides of Dekker's
 * mutual exclusion, made asymmetric with membarrier(2) as liburcu does:
 * a hit stores its count, then (a compiler barrier only) loads the
 * record's tag and backs out if it changed; the give-back stores CLAIMED
 * into the tag, then runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
 * a full barrier on every CPU that runs a thread of this process, then
 * sums the counts.  Either the hit sees CLAIMED, or the sum sees its
 * count: a record found at 0 has no borrow out, and none comes.  A sum
 * read while returns run is never below the borrows out (each borrow's
 * count was stored before the claim; a return it misses only adds), so
 * "0" is exact.  Without membarrier (an old kernel, a seccomp filter)
 * every borrow counts in the shared count with an atomic add, which is a
 * full barrier itself.
 *
 * Tags: the tag of a record is its generation (raised at each give-back)
 * shifted left 2, or CLAIMED, or STALE (made before the forget epoch
 * moved, in use: never served again).  An entry keeps the tag it saw;
 * a hit through it needs that exact tag, a return the same generation.
 * A colored address changes with every write, so a record of an older
 * version is never found by a borrow of the newer one.
 *
 * Concurrency: recording and giving back take hits_lock; hits and returns
 * take nothing (but a hit that backs out of a record's shared count, and a
 * thread's exit handing its counts over, take hits_lock: a give-back in
 * between would have them count on the slot's next record).  A thread's
 * entries are written by that thread only (and reset by the fork child);
 * the give-back only reads them.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_hits_int.h"

#define HITS_SLOTS	1024U		/* a power of 2 */
#define HITS_PROBE	16U		/* slots a key may sit in */
#define HITS_KEEP	64		/* records kept before a give-back */

#define TAG_CLAIMED	1ULL
#define TAG_STALE	2ULL
#define TAG_FLAGS	(TAG_CLAIMED | TAG_STALE)

/* __atomic builtins: the entries are odsm.h's plain words, inline code's */
#define RLX	__ATOMIC_RELAXED
#define ACQ	__ATOMIC_ACQUIRE
#define REL	__ATOMIC_RELEASE
#define LD(p, mo)	__atomic_load_n((p), (mo))
#define ST(p, v, mo)	__atomic_store_n((p), (v), (mo))

struct hit {
	uint64_t key;			/* colored address; 0: free */
	uint64_t tag;			/* generation << 2 | flags */
	int64_t shared;			/* borrows counted here, may be < 0 */
	uint64_t copy;			/* where the copy is, in the heap */
	uint64_t epoch;			/* forget_epoch when recorded */
};

static struct hit hits[HITS_SLOTS];
static pthread_mutex_t hits_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct odsm_hits_page *hits_page;
static size_t hits_len;			/* the page's: the kernel's page size */
static uint64_t seen_want, seen_forget;	/* atomics */
static int nrec;			/* records (hits_lock) */
static bool fenced;			/* membarrier registered: entries work */
static struct odsm__th *blocks;		/* every thread's (atomic) */
static pthread_key_t th_key;
static pthread_once_t th_once = PTHREAD_ONCE_INIT;
ODSM__TLS_IE __thread struct odsm__th *odsm__th;
static struct {
	uint64_t hits, recorded, returns, given_back;	/* atomics */
} st;

static unsigned int hit_slot(uint64_t g, unsigned int i)
{
	return (unsigned int)(((g * 0x9e3779b97f4a7c15ULL) >> 40) + i) &
	       (HITS_SLOTS - 1);
}

static uint64_t forget_epoch(void)
{
	return LD(&hits_page->forget_epoch, ACQ);
}

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* ---- the threads' blocks -------------------------------------------------- */

/* The record whose tag word an entry names. */
static struct hit *rec_of(uint64_t *rtag)
{
	return (struct hit *)((char *)rtag - offsetof(struct hit, tag));
}

/* Whether entry e counts a live generation of its record. */
static bool ent_live(const struct odsm__th_ent *e)
{
	uint64_t *rt = LD(&e->rtag, RLX);

	return rt && (LD(rt, ACQ) & ~TAG_FLAGS) ==
		     (LD(&e->tag, ACQ) & ~TAG_FLAGS);
}

/*
 * A thread that exits hands its counts to the records' shared counts
 * (add first, then clear: a sum that reads the entry after the clear
 * reads the shared count after the add) and its block to the next thread.
 */
static void th_exit(void *arg)
{
	struct odsm__th *b = arg;
	unsigned int i;

	/*
	 * Under hits_lock: a give-back that summed an entry and then reset
	 * and reused its record's slot would otherwise take this add (which
	 * may be negative: a thread returns borrows others counted) on the
	 * new record.
	 */
	pthread_mutex_lock(&hits_lock);
	for (i = 0; i < ODSM__TH_SLOTS; i++) {
		struct odsm__th_ent *e = &b->ent[i];
		int64_t n = LD(&e->n, RLX);

		if (n && ent_live(e))
			__atomic_fetch_add(&rec_of(LD(&e->rtag, RLX))->shared, n,
					   __ATOMIC_SEQ_CST);
		ST(&e->n, 0, REL);
		ST(&e->key, 0, RLX);
	}
	pthread_mutex_unlock(&hits_lock);
	odsm__th = NULL;
	ST(&b->used, 0, REL);
}

static void th_key_make(void)
{
	if (pthread_key_create(&th_key, th_exit))
		th_key = (pthread_key_t)-1;
}

/* This thread's block, reused or new; NULL: count in the shared counts. */
static struct odsm__th *th_attach(void)
{
	struct odsm__th *b;

	if (!fenced)
		return NULL;
	pthread_once(&th_once, th_key_make);
	if (th_key == (pthread_key_t)-1)
		return NULL;
	for (b = LD(&blocks, ACQ); b; b = LD(&b->next, ACQ)) {
		int f = 0;

		if (__atomic_compare_exchange_n(&b->used, &f, 1, false,
						__ATOMIC_SEQ_CST, RLX))
			break;
	}
	if (!b) {
		b = aligned_alloc(64, (sizeof(*b) + 63) & ~(size_t)63);
		if (!b)
			return NULL;
		memset(b, 0, sizeof(*b));
		b->used = 1;
		b->next = LD(&blocks, RLX);
		while (!__atomic_compare_exchange_n(&blocks, &b->next, b, true,
						    REL, RLX))
			;
	}
	if (pthread_setspecific(th_key, b)) {
		ST(&b->used, 0, REL);
		return NULL;
	}
	b->page = hits_page;
	b->want = LD(&seen_want, RLX);
	odsm__th = b;
	return b;
}

static struct odsm__th *th_get(void)
{
	return odsm__th ? odsm__th : th_attach();
}

/* ---- set-up ----------------------------------------------------------------- */

static void table_reset(void)
{
	struct odsm__th *b;
	unsigned int i;

	for (i = 0; i < HITS_SLOTS; i++) {
		ST(&hits[i].key, 0, RLX);
		ST(&hits[i].tag, 0, RLX);
		ST(&hits[i].shared, 0, RLX);
	}
	nrec = 0;
	/* every block's entries name records of the table just emptied */
	for (b = LD(&blocks, ACQ); b; b = LD(&b->next, ACQ)) {
		for (i = 0; i < ODSM__TH_SLOTS; i++) {
			ST(&b->ent[i].key, 0, RLX);
			ST(&b->ent[i].n, 0, RLX);
			ST(&b->ent[i].rtag, NULL, RLX);
		}
		b->page = hits_page;
	}
}

/*
 * The forked child shares the parent's file: the references are the
 * parent's records, not the child's to give back.  Its one thread keeps
 * its block; the others' blocks are free.
 */
static void hits_atfork_child(void)
{
	struct odsm__th *b;

	pthread_mutex_init(&hits_lock, NULL);
	table_reset();
	for (b = LD(&blocks, ACQ); b; b = LD(&b->next, ACQ))
		ST(&b->used, b == odsm__th, RLX);
	/* membarrier's registration is the parent's mm's */
	if (fenced)
		fenced = !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
	if (!fenced)
		odsm__th = NULL;
}

int odsm__hits_init(int fd)
{
	void *p;

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
	return 0;
}

/*
 * A new page (or none): an empty table, and no thread serves a hit inline
 * until it asked the library again (odsm__th cleared in this thread; the
 * others' entries are empty, so their first hit asks).
 */
void odsm__hits_attach(const struct odsm_hits_page *page)
{
	static bool atfork_done;

	/* once, before the lock (the child handler initializes it) */
	if (page && !atfork_done && !pthread_atfork(NULL, NULL,
						    hits_atfork_child))
		atfork_done = true;
	pthread_mutex_lock(&hits_lock);
	hits_page = page;
	table_reset();
	if (page) {
		ST(&seen_want, page->want_epoch, RLX);
		ST(&seen_forget, forget_epoch(), RLX);
		fenced = !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
	}
	pthread_mutex_unlock(&hits_lock);
}

bool odsm__hits_node_inc(uint64_t *inc)
{
	const struct odsm_hits_page *p = hits_page;

	if (!p || !(LD(&p->features, RLX) & ODSM_HITS_F_NODE_INC))
		return false;
	/* pairs with the module's store-release at a join or a leave */
	*inc = LD(&p->node_incarnation, ACQ);
	return true;
}

void odsm__hits_fini(void)
{
	/* the references go with the file */
	const struct odsm_hits_page *p = hits_page;

	odsm__hits_attach(NULL);
	if (p)
		munmap((void *)p, hits_len);
}

/* ---- giving back ------------------------------------------------------------ */

/* The borrows out of r (claimed, after the barrier): >= the true number. */
static int64_t borrows_of(struct hit *r)
{
	uint64_t gen = LD(&r->tag, RLX) & ~TAG_FLAGS;
	struct odsm__th *b;
	int64_t sum = 0;
	unsigned int i;

	/* the entries first: an exiting thread adds to shared, then clears */
	for (b = LD(&blocks, ACQ); b; b = LD(&b->next, ACQ))
		for (i = 0; i < ODSM__TH_SLOTS; i++) {
			struct odsm__th_ent *e = &b->ent[i];

			if (LD(&e->rtag, ACQ) == &r->tag &&
			    (LD(&e->tag, ACQ) & ~TAG_FLAGS) == gen)
				sum += LD(&e->n, ACQ);
		}
	return sum + LD(&r->shared, ACQ);
}

/*
 * Give back the idle records: all of them (all), those of key only (key),
 * or those recorded before the last forget only; the in-use ones of those
 * are marked STALE then, never served again.  Called with hits_lock held.
 * The number given back.
 */
static int give_back_locked(bool all, uint64_t key)
{
	bool cand[HITS_SLOTS];
	uint64_t ep = forget_epoch();
	unsigned int i, nc = 0;
	int n = 0;

	for (i = 0; i < HITS_SLOTS; i++) {
		struct hit *e = &hits[i];
		uint64_t k = LD(&e->key, RLX);

		cand[i] = k && (!key || k == key) &&
			  (all || key || LD(&e->epoch, RLX) != ep);
		if (!cand[i])
			continue;
		__atomic_fetch_or(&e->tag, TAG_CLAIMED, __ATOMIC_SEQ_CST);
		nc++;
	}
	if (!nc)
		return 0;
	/*
	 * every thread's count stored before it saw the claim is seen now;
	 * without membarrier no entry counts (all in shared, atomically)
	 */
	if (fenced && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
		/* cannot happen once registered: nothing is proved idle */
		for (i = 0; i < HITS_SLOTS; i++)
			if (cand[i])
				__atomic_fetch_and(&hits[i].tag, ~TAG_CLAIMED,
						   __ATOMIC_SEQ_CST);
		return 0;
	}
	for (i = 0; i < HITS_SLOTS; i++) {
		struct hit *e = &hits[i];
		struct odsm_borrow b = { 0 };
		uint64_t t;

		if (!cand[i])
			continue;
		t = LD(&e->tag, RLX);
		if (borrows_of(e) > 0) {
			/* in use: kept; one of a forgotten epoch is stale */
			t &= ~TAG_CLAIMED;
			if (!all && !key)
				t |= TAG_STALE;
			ST(&e->tag, t, REL);
			continue;
		}
		b.gaddr = LD(&e->key, RLX);
		b.addr = LD(&e->copy, RLX);	/* that copy's reference */
		/* ENOENT only if a forked sibling gave it back for us */
		ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &b);
		/*
		 * A new generation: the entries of this one count no more.
		 * The slot stays CLAIMED while free: a lookup that finds the
		 * key still there must not find a clean tag with it, or it
		 * would serve (and keep serving, the tags being equal) the
		 * copy just given back.  odsm__hit_record() clears the flag.
		 */
		ST(&e->shared, 0, RLX);
		ST(&e->key, 0, REL);
		ST(&e->tag, ((t & ~TAG_FLAGS) + (1ULL << 2)) | TAG_CLAIMED, REL);
		__atomic_fetch_add(&st.given_back, 1, RLX);
		nrec--;
		n++;
	}
	return n;
}

static int give_back_key(bool all, uint64_t key)
{
	int n;

	pthread_mutex_lock(&hits_lock);
	n = give_back_locked(all, key);
	pthread_mutex_unlock(&hits_lock);
	return n;
}

void odsm__hit_release(uint64_t g)
{
	if (hits_page)
		give_back_key(true, g);
}

/*
 * What the module asked for since we looked: one load each, no call.
 * The forget epoch, for the caller's check of the record it serves.
 */
static uint64_t heed_module(struct odsm__th *b)
{
	uint64_t w = LD(&hits_page->want_epoch, RLX);
	uint64_t f = forget_epoch();

	if (__builtin_expect(w != LD(&seen_want, RLX), 0)) {
		ST(&seen_want, w, RLX);
		give_back_key(true, 0);
	} else if (__builtin_expect(f != LD(&seen_forget, RLX), 0)) {
		ST(&seen_forget, f, RLX);
		give_back_key(false, 0);
	}
	/* this thread's inline hits may go on: it heeded w */
	if (b)
		b->want = w;
	return f;
}

/* ---- hits and returns ------------------------------------------------------- */

static bool hit_uncount(uint64_t g, uint64_t copy);

/*
 * Take back a hit's +1 on r->shared that its recheck refused (r's tag was
 * t then).  Under hits_lock, so no give-back runs meanwhile, and only if
 * r is still of t's generation: a give-back in between reset shared to 0
 * (and a new record in the slot may have set it to 1 for a borrow of its
 * own), which the +1 either missed or now over-counts -- a reference kept
 * until close at worst -- where a -1 would make a record in use look idle.
 */
static void shared_back(struct hit *r, uint64_t t)
{
	pthread_mutex_lock(&hits_lock);
	if ((LD(&r->tag, ACQ) & ~TAG_FLAGS) == (t & ~TAG_FLAGS))
		__atomic_fetch_sub(&r->shared, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&hits_lock);
}

/*
 * The first hit of record r by this thread (or one whose entry is busy):
 * count it in the entry when the slot is free, else in r's shared count.
 */
static bool hit_rec(struct hit *r, struct odsm__th *b, uint64_t g,
		    uint64_t ep, uint64_t *copy)
{
	uint64_t t = LD(&r->tag, ACQ), c;
	struct odsm__th_ent *e = b ? &b->ent[odsm__th_slot(g)] : NULL;

	if ((t & TAG_FLAGS) || LD(&r->epoch, RLX) != ep)
		return false;
	c = LD(&r->copy, RLX);
	if (e && LD(&e->n, RLX) && ent_live(e))
		e = NULL;	/* the slot counts borrows of a record */
	if (e) {
		/* n is 0 (or of a generation given back): the slot is ours */
		ST(&e->n, 0, RLX);
		ST(&e->rtag, &r->tag, RLX);
		/* after n's 0: a sum that sees this tag sees no older n */
		ST(&e->tag, t, REL);
		e->copy = c;
		e->epoch = ep;
		ST(&e->key, g, RLX);
		ST(&e->n, 1, RLX);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (LD(&r->tag, RLX) == t && LD(&r->key, RLX) == g) {
			*copy = c;
			return true;
		}
		ST(&e->n, 0, RLX);
		ST(&e->key, 0, RLX);
		return false;
	}
	__atomic_fetch_add(&r->shared, 1, __ATOMIC_SEQ_CST);	/* a barrier */
	if (LD(&r->tag, ACQ) == t && LD(&r->key, RLX) == g) {
		*copy = c;
		return true;
	}
	shared_back(r, t);
	return false;
}

bool odsm__hit_get(uint64_t g, uint64_t *copy)
{
	struct odsm__th *b;
	unsigned int i;
	uint64_t ep;

	if (!hits_page)
		return false;
	b = th_get();
	ep = heed_module(b);
	/* the inline path, which the caller may not have tried */
	if (odsm__hit_fast(g, copy))
		return true;
	for (i = 0; i < HITS_PROBE; i++) {
		struct hit *r = &hits[hit_slot(g, i)];

		if (LD(&r->key, ACQ) != g)
			continue;
		if (hit_rec(r, b, g, ep, copy)) {
			if (b)
				ST(&b->hits, b->hits + 1, RLX);
			else
				__atomic_fetch_add(&st.hits, 1, RLX);
			return true;
		}
	}
	return false;
}

bool odsm__hit_record(uint64_t g, uint64_t copy, uint64_t epoch)
{
	struct hit *r = NULL;
	unsigned int i;

	if (!hits_page)
		return false;
	pthread_mutex_lock(&hits_lock);
	/*
	 * Another thread recorded the same copy meanwhile: count the borrow
	 * there and give the second reference back, so that one record
	 * counts every borrow of a copy (a return counted in the wrong one
	 * of two would keep the other from ever going idle).
	 */
	for (i = 0; i < HITS_PROBE; i++) {
		struct hit *e = &hits[hit_slot(g, i)];
		struct odsm_borrow b = { .gaddr = g, .addr = copy };

		if (LD(&e->key, RLX) != g || LD(&e->copy, RLX) != copy ||
		    (LD(&e->tag, RLX) & TAG_FLAGS) ||
		    LD(&e->epoch, RLX) != epoch)
			continue;
		__atomic_fetch_add(&e->shared, 1, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&hits_lock);
		ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &b);
		return true;
	}
	if (nrec >= HITS_KEEP)
		give_back_locked(true, 0);
	for (i = 0; i < HITS_PROBE && !r; i++) {
		struct hit *e = &hits[hit_slot(g, i)];

		if (LD(&e->key, RLX))
			continue;
		r = e;
		ST(&r->copy, copy, RLX);
		ST(&r->epoch, epoch, RLX);
		/* the borrow that made it: its return finds the record */
		ST(&r->shared, 1, RLX);
		/*
		 * Served from now on: after the copy and epoch (a lookup
		 * that sees the clean tag sees them), before the key.
		 */
		ST(&r->tag, LD(&r->tag, RLX) & ~TAG_FLAGS, REL);
		ST(&r->key, g, REL);
		nrec++;
	}
	pthread_mutex_unlock(&hits_lock);
	if (r)
		__atomic_fetch_add(&st.recorded, 1, RLX);
	return r != NULL;
}

uint64_t odsm__hits_epoch(void)
{
	return hits_page ? forget_epoch() : 0;
}

/* The return of a borrow of g's copy, counted; heed the module then. */
bool odsm__hit_return(uint64_t g, uint64_t copy)
{
	bool ok;

	if (!hits_page)
		return false;
	ok = hit_uncount(g, copy);
	/* the borrow is back: an idle record goes now if the module asks */
	heed_module(odsm__th);
	return ok;
}

static bool hit_uncount(uint64_t g, uint64_t copy)
{
	struct odsm__th *b = odsm__th;
	unsigned int i;

	/* this thread's entry of that record's generation */
	if (b) {
		struct odsm__th_ent *e = &b->ent[odsm__th_slot(g)];

		if (LD(&e->key, RLX) == g && e->copy == copy &&
		    (LD(e->rtag, RLX) & ~TAG_FLAGS) ==
		    (LD(&e->tag, RLX) & ~TAG_FLAGS)) {
			ST(&e->n, e->n - 1, REL);
			ST(&b->returns, b->returns + 1, RLX);
			return true;
		}
	}
	/* the record's shared count: one that counts borrows first */
	for (i = 0; i < HITS_PROBE; i++) {
		struct hit *r = &hits[hit_slot(g, i)];
		int64_t c;

		if (LD(&r->key, ACQ) != g || LD(&r->copy, RLX) != copy)
			continue;
		c = LD(&r->shared, RLX);
		do {
			if (c <= 0)
				break;
		} while (!__atomic_compare_exchange_n(&r->shared, &c, c - 1,
						      true, REL, RLX));
		if (c <= 0)
			continue;
		__atomic_fetch_add(&st.returns, 1, RLX);
		return true;
	}
	/* a borrow counted in another thread's entry: counted here, < 0 */
	for (i = 0; i < HITS_PROBE; i++) {
		struct hit *r = &hits[hit_slot(g, i)];

		if (LD(&r->key, ACQ) != g || LD(&r->copy, RLX) != copy)
			continue;
		__atomic_fetch_sub(&r->shared, 1, REL);
		__atomic_fetch_add(&st.returns, 1, RLX);
		return true;
	}
	return false;
}

int odsm_hits_flush(void)
{
	if (odsm_rt.fd < 0)
		return -EBADF;
	return hits_page ? give_back_key(true, 0) : 0;
}

void odsm_hits_stats(struct odsm_hits_stats *s)
{
	struct odsm__th *b;
	unsigned int i;
	uint64_t idle = 0;

	s->hits = LD(&st.hits, RLX);
	s->returns = LD(&st.returns, RLX);
	for (b = LD(&blocks, ACQ); b; b = LD(&b->next, ACQ)) {
		s->hits += LD(&b->hits, RLX);
		s->returns += LD(&b->returns, RLX);
	}
	s->recorded = LD(&st.recorded, RLX);
	s->given_back = LD(&st.given_back, RLX);
	/* idle: no borrow counted anywhere now (a snapshot, unclaimed) */
	pthread_mutex_lock(&hits_lock);
	for (i = 0; i < HITS_SLOTS; i++)
		if (LD(&hits[i].key, RLX) && borrows_of(&hits[i]) <= 0)
			idle++;
	pthread_mutex_unlock(&hits_lock);
	s->idle = idle;
}
