// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm's checking mode: what a borrow checker would have refused,
 * caught at run time.  A program built with -DODSM_CHECK calls
 * odsm__check() from every borrow, dereference, owner access and return
 * (userlib/odsm.h); a program built without it never does and pays
 * nothing (odsm_box_drop(), out of line and next to an ioctl, asks in
 * every program: with no borrow recorded the answer is always yes).
 *
 * What it can see is this process: a table of the borrows it holds, keyed
 * by the address of the odsm_ref / odsm_mut that holds each one (a borrow
 * is that structure: copying it by value makes a second, unchecked one).
 * It reports
 *   - a mutable borrow, or an owner write, while shared borrows of the same
 *     object are out, or while another mutable borrow of it is out;
 *   - a shared borrow, or an owner read, while a mutable borrow of the
 *     object is out (a reborrow from that mutable borrow is fine), and a
 *     write through the mutable borrow while such a reborrow is out;
 *   - an ownership transfer or drop while borrows of the object are out;
 *   - a use of a borrow after it was returned (or that was never taken);
 *   - a double return;
 *   - a borrow, owner read or owner write through a colored address of a
 *     local object that is gone: freed or moved, its address perhaps
 *     reused by a newer object (the kernel is asked: one ODSM_IOC_OBJ_INFO
 *     per such call, the only system call this mode adds to local paths;
 *     remote objects are checked by their home on every fetch).
 * Each is a line on stderr naming the operation, the object and what was
 * wrong, a count (odsm_lib_stats()), the error -ENOTRECOVERABLE from the
 * call, and abort() when ODSM_CHECK_ABORT is set in the environment.
 *
 * A returned borrow is empty (its g is 0), so to name the object of a use
 * after return or a double return the last ODSM_CHECK_TOMBS returns are
 * remembered, by holder.
 *
 * Locking: one mutex around the table, the tombstones and the counters;
 * every operation is a scan of the borrows out in this process.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "odsm.h"

#define ODSM_CHECK_TOMBS	256

struct rec {
	const void *who;	/* the odsm_ref / odsm_mut holding it */
	uint64_t addr;		/* the object (uncolored), where it is now */
	uint64_t orig;		/* where it was when borrowed (a mutable
				 * borrow moves a remote object here: its
				 * owner still names the old address)
				 */
	unsigned char mut;	/* a mutable borrow */
	unsigned char local;	/* of a local object when taken */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec *recs;
static size_t nr, cap;
static struct rec tombs[ODSM_CHECK_TOMBS];	/* returned, newest last */
static unsigned int tomb_next;
static struct odsm_lib_stats stats;

static struct rec *find(const void *who)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (recs[i].who == who)
			return &recs[i];
	return NULL;
}

/* The newest return by who, if it is still remembered. */
static const struct rec *find_tomb(const void *who)
{
	unsigned int i, k;

	for (i = 1; i <= ODSM_CHECK_TOMBS; i++) {
		k = (tomb_next - i) % ODSM_CHECK_TOMBS;
		if (tombs[k].who == who)
			return &tombs[k];
	}
	return NULL;
}

/* borrows of addr out now: shared ones into *shared, mutable into *muts */
static void count(uint64_t addr, const void *except, unsigned int *shared,
		  unsigned int *muts)
{
	size_t i;

	*shared = *muts = 0;
	for (i = 0; i < nr; i++) {
		if ((recs[i].addr != addr && recs[i].orig != addr) ||
		    recs[i].who == except)
			continue;
		if (recs[i].mut)
			(*muts)++;
		else
			(*shared)++;
	}
}

static int add(const void *who, uint64_t g, int mut)
{
	struct rec *r;

	if (nr == cap) {
		r = realloc(recs, (cap ? cap * 2 : 64) * sizeof(*r));
		if (!r)
			return -ENOMEM;
		recs = r;
		cap = cap ? cap * 2 : 64;
	}
	recs[nr].who = who;
	recs[nr].addr = recs[nr].orig = odsm_addr_of(g);
	recs[nr].mut = (unsigned char)mut;
	recs[nr].local = odsm_is_local(g);
	nr++;
	if (mut)
		stats.local_muts += recs[nr - 1].local;
	else
		stats.local_borrows += recs[nr - 1].local;
	if (mut)
		stats.remote_muts += !recs[nr - 1].local;
	else
		stats.remote_borrows += !recs[nr - 1].local;
	return 0;
}

/* forget r: returned (remembered as a tombstone) or failed (not) */
static void del(struct rec *r, bool returned)
{
	if (returned) {
		tombs[tomb_next % ODSM_CHECK_TOMBS] = *r;
		tomb_next++;
		if (r->mut)
			stats.returns_mut++;
		else
			stats.returns++;
	} else if (r->mut) {
		stats.local_muts -= r->local;
		stats.remote_muts -= !r->local;
	} else {
		stats.local_borrows -= r->local;
		stats.remote_borrows -= !r->local;
	}
	*r = recs[--nr];
}

static const char *const ops[] = {
	[ODSM_CHK_BORROW] = "shared borrow",
	[ODSM_CHK_RETURN] = "return",
	[ODSM_CHK_USE] = "use of a shared borrow",
	[ODSM_CHK_MUT] = "mutable borrow",
	[ODSM_CHK_RETURN_MUT] = "return of a mutable borrow",
	[ODSM_CHK_USE_MUT] = "use of a mutable borrow",
	[ODSM_CHK_OWNER_WRITE] = "owner write",
	[ODSM_CHK_REBORROW] = "shared reborrow from a mutable borrow",
	[ODSM_CHK_OWNER_READ] = "owner read",
	[ODSM_CHK_OWNER_MOVE] = "ownership transfer",
	[ODSM_CHK_FAILED] = "failed borrow",
	[ODSM_CHK_OWNER_DROP] = "owner drop",
};

static int violation(int event, uint64_t addr, const char *what)
{
	stats.violations++;
	fprintf(stderr, "odsm: borrow check: %s of object 0x%llx: %s\n",
		ops[event], (unsigned long long)addr, what);
	if (getenv("ODSM_CHECK_ABORT"))
		abort();
	return -ENOTRECOVERABLE;
}

static int out_of_borrows(int event, uint64_t addr, unsigned int shared,
			  unsigned int muts)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "%u shared and %u mutable borrows of it are out",
		 shared, muts);
	return violation(event, addr, msg);
}

/* A use or return by who, which holds no borrow of that kind. */
static int not_held(int event, const void *who, uint64_t g, bool use)
{
	const struct rec *t = find_tomb(who);
	uint64_t addr = odsm_addr_of(g);

	if (!addr && t)
		addr = t->addr;
	if (t && t->addr == addr)
		return violation(event, addr, use ?
				 "the borrow was already returned" :
				 "returned twice");
	return violation(event, addr, use ?
			 "no such borrow is out (never taken, or it failed)" :
			 "no such borrow is out to return (never taken, or it failed)");
}

/*
 * Is g a colored address of a local object that is gone?  What the fast
 * paths cannot see: they use a local address in place, whatever its color.
 */
static const char *stale_local(uint64_t g, char *msg, size_t len)
{
	struct odsm_obj_info oi;
	int ret;

	if (!g || odsm_rt.fd < 0 || !odsm_is_local(g))
		return NULL;
	ret = odsm_obj_info(g, &oi);
	if (ret == -ESTALE)	/* -EINVAL: never one there; the call says so */
		return "no object starts at its address any more: it was freed or moved (a stale owner or borrow)";
	if (ret || odsm_color_of(g) >= oi.alloc_color)
		return NULL;
	snprintf(msg, len, "its color %u is older than the object now at its address (allocated at color %u): the object it named was freed or moved and the address reused (a stale owner or borrow)",
		 odsm_color_of(g), oi.alloc_color);
	return msg;
}

int odsm__check(int event, const void *who, uint64_t g)
{
	uint64_t addr = odsm_addr_of(g);
	unsigned int shared, muts;
	const char *stale = NULL;
	char msg[256];
	bool mutev;
	struct rec *r;
	int ret = 0;

	switch (event) {
	case ODSM_CHK_BORROW:
	case ODSM_CHK_REBORROW:
	case ODSM_CHK_MUT:
	case ODSM_CHK_OWNER_READ:
	case ODSM_CHK_OWNER_WRITE:
		stale = stale_local(g, msg, sizeof(msg));
		break;
	}
	pthread_mutex_lock(&lock);
	if (stale) {
		ret = violation(event, addr, stale);
		pthread_mutex_unlock(&lock);
		return ret;
	}
	r = find(who);
	switch (event) {
	case ODSM_CHK_BORROW:
	case ODSM_CHK_REBORROW:
		count(addr, who, &shared, &muts);
		if (r)
			ret = violation(event, addr, "this odsm_ref still holds a borrow that was never returned");
		else if (muts && event == ODSM_CHK_BORROW)
			ret = violation(event, addr, "a mutable borrow of it is out");
		else
			ret = add(who, g, 0);
		break;
	case ODSM_CHK_MUT:
		count(addr, who, &shared, &muts);
		if (r)
			ret = violation(event, addr, "this odsm_mut still holds a borrow that was never returned");
		else if (shared || muts)
			ret = out_of_borrows(event, addr, shared, muts);
		else
			ret = add(who, g, 1);
		break;
	case ODSM_CHK_OWNER_WRITE:
	case ODSM_CHK_OWNER_MOVE:
	case ODSM_CHK_OWNER_DROP:
		if (!nr)
			break;
		count(addr, NULL, &shared, &muts);
		if (shared || muts)
			ret = out_of_borrows(event, addr, shared, muts);
		break;
	case ODSM_CHK_OWNER_READ:
		count(addr, NULL, &shared, &muts);
		if (muts)
			ret = violation(event, addr, "a mutable borrow of it is out");
		break;
	case ODSM_CHK_USE:
	case ODSM_CHK_USE_MUT:
		mutev = event == ODSM_CHK_USE_MUT;
		if (!r || !g || r->mut != mutev) {
			ret = not_held(event, who, g, true);
			break;
		}
		if (!mutev)
			break;
		/* a write through the mut while a reborrow reads it */
		count(addr, who, &shared, &muts);
		if (shared)
			ret = violation(event, addr, "a shared reborrow of it is out");
		r->addr = addr;	/* it may have moved since it was taken */
		break;
	case ODSM_CHK_RETURN:
	case ODSM_CHK_RETURN_MUT:
		mutev = event == ODSM_CHK_RETURN_MUT;
		if (!r || !g || r->mut != mutev)
			ret = not_held(event, who, g, false);
		else
			del(r, true);
		break;
	case ODSM_CHK_FAILED:
		if (r)
			del(r, false);
		break;
	default:
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

void odsm_lib_stats(struct odsm_lib_stats *st)
{
	pthread_mutex_lock(&lock);
	*st = stats;
	pthread_mutex_unlock(&lock);
}
