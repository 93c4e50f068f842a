// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm mutex, the compare-and-swap kind: the lock word holds the
 * holder (its node and thread), taken by a compare-and-swap from 0 (the
 * NIC's atomics over RDMA: the word is of the NIC atomic domain, so
 * every atomic on it is an odsm_*_nic one, and nothing writes it), then
 * polled with bounded backoff.  A waiter that finds the holder's node
 * down, or the word naming the incarnation it saw before the last one
 * (the node left and joined again: its processes are gone), takes the lock over in
 * one compare-and-swap from the dead holder's word, marked inconsistent:
 * -EOWNERDEAD.
 */
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "odsm.h"
#include "odsm_sync_int.h"
#include "odsm_mutex_int.h"

/* This thread's word: asks for this node's incarnation (a system call) */
static int my_word(uint64_t *w)
{
	uint32_t inc;
	int ret = odsm__node_inc_tag(odsm_rt.info.node_id, &inc);

	*w = odsm_mx_holder_word(odsm_rt.info.node_id,
				 (uint32_t)syscall(SYS_gettid), inc);
	return ret;
}

int odsm__mutex_lock_cas(struct odsm_guard *g, bool wait)
{
	uint64_t at = g->mutex + ODSM_MX_WORD, mine, expect = 0, want, old;
	unsigned int us = 0;
	int ret, down;

	ret = my_word(&mine);
	if (ret)
		return ret;
	want = mine;

	for (;;) {
		ret = odsm_cmp_swap_nic(at, expect, want, &old);
		if (ret)
			return ret;
		if (old == expect) {
			g->word = want;
			g->flags = ODSM_GUARD_HELD;
			if (want & ODSM_MX_INCONSISTENT) {
				g->flags |= ODSM_GUARD_INCONS;
				return -EOWNERDEAD;
			}
			return 0;
		}
		if (old & ODSM_MX_NOTRECOVERABLE)
			return -ENOTRECOVERABLE;
		/* this thread holds it (whatever incarnation it named) */
		if (old && (old & ODSM_MX_WHO) == (mine & ODSM_MX_WHO))
			return -EDEADLK;
		if (old) {
			down = odsm__holder_gone((unsigned int)odsm_mx_holder(old),
						 odsm_mx_holder_inc(old));
			if (down < 0)
				return down;
		} else {
			down = 0;
		}
		if (down) {		/* take it from the dead holder */
			expect = old;
			want = mine | ODSM_MX_INCONSISTENT;
			continue;
		}
		expect = 0;
		want = mine;
		if (old && !wait)
			return -EBUSY;
		if (old)
			odsm__sync_nap(&us);
	}
}

int odsm__mutex_still_ours_cas(struct odsm_guard *g)
{
	uint64_t w;
	int ret;

	ret = odsm_read(g->mutex + ODSM_MX_WORD, &w, sizeof(w));
	if (!ret && w != g->word)
		ret = -EPERM;
	return ret;
}

int odsm__mutex_release_cas(struct odsm_guard *g)
{
	uint64_t to = g->flags & ODSM_GUARD_INCONS ? ODSM_MX_NOTRECOVERABLE : 0;
	uint64_t old;
	int ret;

	ret = odsm_cmp_swap_nic(g->mutex + ODSM_MX_WORD, g->word, to, &old);
	if (!ret && old != g->word)
		ret = -EPERM;
	return ret;
}

int odsm__mutex_consistent_cas(struct odsm_guard *g)
{
	uint64_t to = g->word & ~ODSM_MX_INCONSISTENT, old;
	int ret;

	ret = odsm_cmp_swap_nic(g->mutex + ODSM_MX_WORD, g->word, to, &old);
	if (!ret && old != g->word)
		ret = -EPERM;
	if (!ret)
		g->word = to;
	return ret;
}
