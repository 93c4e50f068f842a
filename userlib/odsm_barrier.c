// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm barrier: threads of any nodes meet in rounds on one word of a
 * barrier object (round << 32 | arrivals): an arrival is one fetch-and-
 * add, which also tells the last arrival that it is, and it opens the
 * round with a second (arrivals to 0, round + 1).  The others poll the
 * word with backoff, checking meanwhile that no node with a thread in
 * the barrier went down -- its thread would never arrive.  The word is
 * of the NIC atomic domain: over RDMA the atomics are one-sided.
 */
#include <errno.h>
#include "odsm.h"
#include "odsm_sync_int.h"

/* How often a waiter asks the module who is down, in polls. */
#define DOWN_CHECK_EVERY	4

int odsm_barrier_new(uint64_t *barrier, unsigned int count)
{
	struct odsm_barrier_obj b = { .magic = ODSM_BARRIER_MAGIC,
				      .count = count };
	uint64_t cg;
	int ret;

	if (!barrier || !count)
		return -EINVAL;
	ret = odsm_alloc(sizeof(b), 64, ODSM_ALLOC_ZERO, &cg);
	if (ret)
		return ret;
	/* nobody knows the address yet: a plain write sets it up */
	ret = odsm_write(cg, &b, sizeof(b));
	if (ret) {
		odsm_free(cg);
		return ret;
	}
	*barrier = cg;		/* colored: odsm_barrier_free() frees it */
	return 0;
}

/* The barrier's count, or -EINVAL when barrier is not one. */
static int barrier_count(uint64_t barrier, uint64_t *count)
{
	uint64_t w[2];
	int ret;

	if (!barrier || barrier % 8 || !odsm_in_heap(barrier))
		return -EINVAL;
	ret = odsm_read(odsm_addr_of(barrier), w, sizeof(w));
	if (ret)
		return ret;
	if (w[0] != ODSM_BARRIER_MAGIC || !w[1])
		return -EINVAL;
	*count = w[1];
	return 0;
}

/* Put this node in the barrier's mask of nodes (once). */
static int mark_node(uint64_t barrier)
{
	unsigned int id = odsm_rt.info.node_id;
	uint64_t bit = 1ULL << (id % 64), m, old;
	uint64_t at = barrier + ODSM_B_NODES + 8 * (id / 64);
	int ret;

	if (id >= ODSM_MAX_NODES)
		return -EINVAL;
	ret = odsm_read(at, &m, sizeof(m));
	while (!ret && !(m & bit)) {
		ret = odsm_cmp_swap(at, m, m | bit, &old);
		if (!ret && old == m)
			break;
		m = old;
	}
	return ret;
}

int odsm_barrier_wait(uint64_t barrier, unsigned int timeout_ms)
{
	uint64_t end = timeout_ms ? odsm__sync_now_ms() + timeout_ms : 0;
	uint64_t count, old, w, nodes[ODSM_MAX_NODES / 64];
	unsigned int us = 0, polls = 0;
	int ret;

	ret = barrier_count(barrier, &count);
	barrier = odsm_addr_of(barrier);
	if (!ret)
		ret = mark_node(barrier);
	if (!ret)
		ret = odsm_fetch_add_nic(barrier + ODSM_B_WORD, 1, &old);
	if (ret)
		return ret;
	if (odsm_b_last(old, count))
		return odsm_fetch_add_nic(barrier + ODSM_B_WORD,
					  odsm_b_close(count), NULL);
	for (;;) {
		odsm__sync_nap(&us);
		ret = odsm_read(barrier + ODSM_B_WORD, &w, sizeof(w));
		if (ret)
			return ret;
		if (odsm_b_round(w) != odsm_b_round(old))
			return 0;
		if (++polls % DOWN_CHECK_EVERY == 0) {
			ret = odsm_read(barrier + ODSM_B_NODES, nodes,
					sizeof(nodes));
			if (!ret)
				ret = odsm__any_down(nodes,
						     ODSM_MAX_NODES / 64);
			if (ret)
				return ret < 0 ? ret : -EHOSTDOWN;
		}
		if (end && odsm__sync_now_ms() >= end)
			return -ETIMEDOUT;
	}
}

int odsm_barrier_free(uint64_t barrier)
{
	uint64_t count, zero = 0;
	int ret;

	ret = barrier_count(barrier, &count);
	if (!ret)	/* a stale handle must not find a barrier here again */
		ret = odsm_write(odsm_addr_of(barrier), &zero, sizeof(zero));
	if (!ret)
		ret = odsm_free(barrier);
	return ret;
}
