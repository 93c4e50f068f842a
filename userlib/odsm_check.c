// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm's checking mode: what a borrow checker would have refused,
 * caught at run time.  A program built with -DODSM_CHECK calls
 * odsm__check() from every borrow, dereference and return (userlib/odsm.h);
 * a program built without it never does and pays nothing.
 *
 * What it can see is this process: a table of the borrows it holds, keyed
 * by the address of the odsm_ref / odsm_mut that holds each one (a borrow
 * is that structure: copying it by value makes a second, unchecked one).
 * It reports
 *   - a mutable borrow, or an owner write, while shared borrows of the same
 *     object are out, or while another mutable borrow of it is out;
 *   - a shared borrow while a mutable borrow of the object is out (a
 *     reborrow from that mutable borrow is fine), and a write through the
 *     mutable borrow while such a reborrow is out;
 *   - a use of a borrow after it was returned (or that was never taken);
 *   - a double return.
 * Each is a line on stderr naming the operation, the object and what was
 * wrong, a count (odsm_lib_stats()), the error -ENOTRECOVERABLE from the
 * call, and abort() when ODSM_CHECK_ABORT is set in the environment.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "odsm.h"

struct rec {
	const void *who;	/* the odsm_ref / odsm_mut holding it */
	uint64_t addr;		/* the object (uncolored) when borrowed */
	int mut;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec *recs;
static size_t nr, cap;
static struct odsm_lib_stats stats;

static struct rec *find(const void *who)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (recs[i].who == who)
			return &recs[i];
	return NULL;
}

/* borrows of addr out now: shared ones into *shared, mutable into *muts */
static void count(uint64_t addr, const void *except, unsigned int *shared,
		  unsigned int *muts)
{
	size_t i;

	*shared = *muts = 0;
	for (i = 0; i < nr; i++) {
		if (recs[i].addr != addr || recs[i].who == except)
			continue;
		if (recs[i].mut)
			(*muts)++;
		else
			(*shared)++;
	}
}

static int add(const void *who, uint64_t addr, int mut)
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
	recs[nr].addr = addr;
	recs[nr].mut = mut;
	nr++;
	return 0;
}

static void del(struct rec *r)
{
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
};

static int violation(int event, uint64_t g, const char *what)
{
	__atomic_add_fetch(&stats.violations, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "odsm: borrow check: %s of object 0x%llx: %s\n",
		ops[event], (unsigned long long)odsm_addr_of(g), what);
	if (getenv("ODSM_CHECK_ABORT"))
		abort();
	return -ENOTRECOVERABLE;
}

static void inc(uint64_t *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

int odsm__check(int event, const void *who, uint64_t g)
{
	uint64_t addr = odsm_addr_of(g);
	unsigned int shared, muts;
	struct rec *r;
	int ret = 0;
	char msg[160];

	pthread_mutex_lock(&lock);
	r = find(who);
	switch (event) {
	case ODSM_CHK_BORROW:
	case ODSM_CHK_REBORROW:
		count(addr, who, &shared, &muts);
		if (r)
			ret = violation(event, g, "this odsm_ref still holds a borrow that was never returned");
		else if (muts && event == ODSM_CHK_BORROW)
			ret = violation(event, g, "a mutable borrow of it is out");
		else
			ret = add(who, addr, 0);
		if (!ret)
			inc(odsm_is_local(g) ? &stats.local_borrows :
					       &stats.remote_borrows);
		break;
	case ODSM_CHK_MUT:
		count(addr, who, &shared, &muts);
		if (r) {
			ret = violation(event, g, "this odsm_mut still holds a borrow that was never returned");
		} else if (shared || muts) {
			snprintf(msg, sizeof(msg), "%u shared and %u mutable borrows of it are out",
				 shared, muts);
			ret = violation(event, g, msg);
		} else {
			ret = add(who, addr, 1);
		}
		if (!ret)
			inc(odsm_is_local(g) ? &stats.local_muts :
					       &stats.remote_muts);
		break;
	case ODSM_CHK_OWNER_WRITE:
		count(addr, NULL, &shared, &muts);
		if (shared || muts) {
			snprintf(msg, sizeof(msg), "%u shared and %u mutable borrows of it are out",
				 shared, muts);
			ret = violation(event, g, msg);
		}
		break;
	case ODSM_CHK_USE:
	case ODSM_CHK_USE_MUT:
		if (!r || !g || r->mut != (event == ODSM_CHK_USE_MUT)) {
			ret = violation(event, g, "the borrow was returned (or never taken)");
			break;
		}
		if (event == ODSM_CHK_USE)
			break;
		/* a write through the mut while a reborrow reads it */
		count(addr, who, &shared, &muts);
		if (shared)
			ret = violation(event, g, "a shared reborrow of it is out");
		r->addr = addr;	/* it may have moved since it was taken */
		break;
	case ODSM_CHK_RETURN:
	case ODSM_CHK_RETURN_MUT:
		if (!r || !g || r->mut != (event == ODSM_CHK_RETURN_MUT)) {
			ret = violation(event, g, "returned twice (or never taken)");
		} else {
			del(r);
			inc(event == ODSM_CHK_RETURN ? &stats.returns :
						       &stats.returns_mut);
		}
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
