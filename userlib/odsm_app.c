// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm start-up: odsm_app_join() is the one call that a program run
 * on every node makes to meet the others -- every peer up, this node's
 * directory made, the program's record (its root box and a barrier of
 * one thread per node) published by node 0 under the program's name, and
 * a round of that barrier.
 */
#include <errno.h>
#include <string.h>
#include "odsm.h"
#include "odsm_sync_int.h"

/* Every node of the cluster up (an operation on a down node fails at once). */
static int peers_up(unsigned int nodes, uint64_t end)
{
	struct odsm_peer_info p[ODSM_MAX_NODES];
	unsigned int n, k, up, us = 0;
	int ret;

	for (;;) {
		n = ODSM_MAX_NODES;
		ret = odsm_status(p, &n, NULL);
		if (ret)
			return ret;
		if (!n)
			return nodes <= 1 ? 0 : -ENOTCONN;
		for (k = 0, up = 0; k < n; k++)
			up += p[k].state == ODSM_PEER_UP ||
			      p[k].state == ODSM_PEER_SELF;
		if (up == n)
			return 0;
		if (odsm__sync_now_ms() >= end)
			return -ETIMEDOUT;
		odsm__sync_nap(&us);
	}
}

/*
 * This node's directory: the first object of its partition, reused when
 * it exists (a second program on the same module load).
 */
static int dir_self(void)
{
	unsigned int self = odsm_rt.info.node_id;
	uint64_t at = odsm__dir_word(self, 0), magic = ODSM_DIR_MAGIC ^ self;
	struct odsm_obj_info oi;
	uint64_t cg, v;
	int ret;

	if (odsm_obj_info(at, &oi) == 0) {
		ret = odsm_read(at, &v, sizeof(v));
		if (!ret && (v != magic || oi.usable < ODSM_DIR_SIZE))
			ret = -EEXIST;
		return ret;
	}
	ret = odsm_alloc(ODSM_DIR_SIZE, 0, ODSM_ALLOC_ZERO, &cg);
	if (ret)
		return ret;
	if (odsm_addr_of(cg) != at) {	/* something was allocated first */
		odsm_free(cg);
		return -EEXIST;
	}
	return odsm_write(at, &magic, sizeof(magic));
}

/* Node 0 publishes the record; a record of an earlier run is reused. */
static int record(const char *name, unsigned int nodes, uint64_t end,
		  struct odsm_name *rec)
{
	uint64_t b;
	int ret;

	if (odsm_rt.info.node_id == 0) {
		ret = odsm_name_lookup(name, rec);
		if (ret != -ENOENT)
			goto found;
		ret = odsm_barrier_new(&b, nodes);
		if (ret)
			return ret;
		ret = odsm__name_publish_app(name, b);
		if (ret) {
			odsm_barrier_free(b);
			if (ret != -EEXIST)
				return ret;
		}
	}
	ret = end > odsm__sync_now_ms() ?
	      odsm_name_wait(name, end - odsm__sync_now_ms(), rec) : -ETIMEDOUT;
found:
	if (!ret && rec->kind != ODSM_NAME_APP)
		ret = -EEXIST;		/* the name is something else's */
	return ret;
}

int odsm_app_join(struct odsm_app *app, const char *name, unsigned int nodes,
		  unsigned int timeout_ms)
{
	uint64_t end = odsm__sync_now_ms() + timeout_ms, b, left, count;
	struct odsm_name rec;
	int ret;

	if (!app || !name)
		return -EINVAL;
	memset(app, 0, sizeof(*app));
	if (odsm_rt.fd < 0) {
		ret = odsm_init();
		if (ret)
			return ret;
	}
	if (!nodes)
		nodes = odsm_rt.info.nr_nodes;
	if (nodes != odsm_rt.info.nr_nodes)
		return -EINVAL;
	ret = peers_up(nodes, end);
	if (!ret)
		ret = dir_self();
	if (!ret)
		ret = odsm__dir_wait(0, end);
	if (!ret)
		ret = record(name, nodes, end, &rec);
	if (!ret)
		ret = odsm__name_app_barrier(rec.value, &b);
	if (!ret)
		ret = odsm_read(b + offsetof(struct odsm_barrier_obj, count),
				&count, sizeof(count));
	if (!ret && count != nodes)
		ret = -EINVAL;		/* an earlier run on more nodes */
	if (ret)
		return ret;
	left = odsm__sync_now_ms();
	left = end > left ? end - left : 1;
	ret = odsm_barrier_wait(b, (unsigned int)left);
	if (ret)
		return ret;
	app->self = odsm_rt.info.node_id;
	app->nodes = nodes;
	app->root = rec.value;
	app->barrier = b;
	return 0;
}
