// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm's synchronisation: what names, start-up, barrier and mutex
 * share -- time and backoff, the directories, who is down, and the name
 * table's root in node 0's directory.
 */
#include <errno.h>
#include <time.h>
#include "odsm.h"
#include "odsm_sync_int.h"
#include "odsm_hits_int.h"

uint64_t odsm__sync_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t odsm__sync_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void odsm__sync_sleep_us(unsigned int us)
{
	struct timespec ts;

	ts.tv_sec = us / 1000000;
	ts.tv_nsec = (long)(us % 1000000) * 1000;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void odsm__sync_nap(unsigned int *us)
{
	*us = odsm_backoff_next(*us);
	odsm__sync_sleep_us(*us);
}

uint64_t odsm__dir_word(unsigned int node, unsigned int idx)
{
	return odsm_rt.info.heap_base + (uint64_t)node * odsm_rt.info.part_size +
	       8ULL * idx;
}

int odsm__any_down(const uint64_t *mask, unsigned int words)
{
	struct odsm_peer_info p[ODSM_MAX_NODES];
	unsigned int n = ODSM_MAX_NODES, k;
	int ret;

	ret = odsm_status(p, &n, NULL);
	if (ret)
		return ret;
	if (!n)			/* not in a cluster: only this node */
		return 0;
	for (k = 0; k < n && k < 64 * words; k++)
		if ((mask[k / 64] >> (k % 64) & 1) &&
		    p[k].state == ODSM_PEER_DOWN)
			return 1;
	return 0;
}

/*
 * node's entry as ODSM_IOC_STATUS says it, into *pi: 1; 0 when this node
 * is in no cluster (only itself); -errno.
 */
static int peer_info(unsigned int node, struct odsm_peer_info *pi)
{
	struct odsm_peer_info p[ODSM_MAX_NODES];
	unsigned int n = node + 1;
	int ret;

	if (node >= ODSM_MAX_NODES)
		return -EINVAL;
	ret = odsm_status(p, &n, NULL);
	if (ret)
		return ret;
	if (!n || node >= n)
		return 0;
	*pi = p[node];
	return 1;
}

int odsm__node_inc(unsigned int node, uint32_t *inc)
{
	struct odsm_peer_info pi;
	uint64_t own;
	int ret;

	*inc = 0;
	/*
	 * This node's own, at every lock of a mutex: from the hit page,
	 * where the module keeps it, without a system call
	 */
	if (node == odsm_rt.info.node_id && odsm__hits_node_inc(&own)) {
		*inc = (uint32_t)own;
		return 0;
	}
	ret = peer_info(node, &pi);
	if (ret > 0)
		*inc = (uint32_t)pi.incarnation;
	return ret < 0 ? ret : 0;
}

int odsm__node_inc_tag(unsigned int node, uint32_t *tag)
{
	uint32_t inc;
	int ret = odsm__node_inc(node, &inc);

	*tag = odsm_mx_inc_tag(inc);
	return ret;
}

int odsm__node_gone(unsigned int node, uint32_t inc)
{
	struct odsm_peer_info pi;
	uint32_t now;
	int ret = peer_info(node, &pi);

	if (ret <= 0)		/* in no cluster: only this node */
		return ret;
	if (pi.state == ODSM_PEER_DOWN)
		return 1;
	/* restarted since: this node saw a join of another incarnation */
	now = (uint32_t)pi.incarnation;
	return inc && now && now != inc;
}

int odsm__holder_gone(unsigned int node, uint32_t tag)
{
	struct odsm_peer_info pi;
	uint32_t last, before;
	int ret = peer_info(node, &pi);

	if (ret <= 0)		/* in no cluster: only this node */
		return ret;
	if (pi.state == ODSM_PEER_DOWN)
		return 1;
	/*
	 * Gone only when the holder's incarnation is the one this node saw
	 * before the last: one it has not seen yet (its node restarted
	 * again, this node has not heard of it) is a live holder's.
	 */
	last = odsm_mx_inc_tag((uint32_t)pi.incarnation);
	before = odsm_mx_inc_tag((uint32_t)(pi.incarnation >> 32));
	return tag && tag == before && tag != last;
}

int odsm__dir_wait(unsigned int node, uint64_t deadline_ms)
{
	unsigned int us = 0;
	uint64_t v;
	int ret;

	for (;;) {
		ret = odsm_read(odsm__dir_word(node, 0), &v, sizeof(v));
		/*
		 * 0: the directory is allocated (zeroed) but its magic not
		 * written yet -- the owner is between the two steps, and a
		 * reader on another node sees that window (a 3-node join
		 * failed -EBADMSG in it): wait on, as for no object
		 */
		if (!ret && v)
			return v == (ODSM_DIR_MAGIC ^ node) ? 0 : -EBADMSG;
		/* -EINVAL: no object there yet; -EHOSTDOWN: not up yet */
		if (ret && ret != -EINVAL && ret != -EHOSTDOWN)
			return ret;
		if (deadline_ms && odsm__sync_now_ms() >= deadline_ms)
			return -ETIMEDOUT;
		odsm__sync_nap(&us);
	}
}

int odsm__names_table(uint64_t *nt)
{
	uint64_t at = odsm__dir_word(0, ODSM_DIR_W_NAMES), v, old, cg;
	int ret;

	ret = odsm__dir_wait(0, odsm__sync_now_ms());
	if (ret == -ETIMEDOUT || ret == -EBADMSG)
		return -ENOENT;
	if (ret)
		return ret;
	ret = odsm_read(at, &v, sizeof(v));
	if (ret || v) {
		*nt = v;
		return ret;
	}
	/* the first caller makes it; a loser of the race frees its own */
	ret = odsm_alloc_on(0, ODSM_NT_SIZE, ODSM_NT_ENTRY, ODSM_ALLOC_ZERO,
			    &cg);
	if (ret)
		return ret;
	ret = odsm_cmp_swap(at, 0, odsm_addr_of(cg), &old);
	if (ret || old) {
		odsm_free(cg);
		*nt = old;
		return ret;
	}
	*nt = odsm_addr_of(cg);
	return 0;
}
