// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm delegation: the table of registered operations.  An id is the
 * 64-bit FNV-1a hash of the name: the same in every process of the
 * application on every node whatever ASLR did, and a code pointer never
 * leaves the process.  Lookups (every request a trustee runs) take no
 * lock: an entry is written first and its id published last (release),
 * and entries are never removed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "odsm_deleg_int.h"

#define DG_OPS		1024		/* a power of 2 */

struct dg_op {
	uint64_t id;			/* 0: free */
	odsm_deleg_fn fn;
	const char *name;
};

static struct dg_op dg_ops[DG_OPS];
static unsigned int dg_nops;
static pthread_mutex_t dg_ops_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t odsm_deleg_op_id(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*name) {
		h ^= (unsigned char)*name++;
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;		/* 0 means "no operation" */
}

uint64_t dg_op_move_id(void)
{
	return odsm_deleg_op_id(DG_OP_NAME_MOVE);
}

int odsm_deleg_register(const char *name, odsm_deleg_fn fn, uint64_t *id)
{
	uint64_t h = odsm_deleg_op_id(name);
	unsigned int i, n;
	int ret = 0;

	if (!fn || !*name)
		return -EINVAL;
	if (h == dg_op_move_id())
		return -EEXIST;		/* the gateway's own */
	pthread_mutex_lock(&dg_ops_lock);
	for (n = 0, i = h & (DG_OPS - 1); n < DG_OPS;
	     n++, i = (i + 1) & (DG_OPS - 1)) {
		struct dg_op *o = &dg_ops[i];

		if (o->id == h) {
			/* the same registration again, or a collision */
			if (strcmp(o->name, name) || o->fn != fn)
				ret = -EEXIST;
			goto out;
		}
		if (!o->id)
			break;
	}
	/* keep the table at most half full: probes stay short */
	if (n == DG_OPS || dg_nops >= DG_OPS / 2) {
		ret = -ENOSPC;
		goto out;
	}
	dg_ops[i].fn = fn;
	dg_ops[i].name = strdup(name);
	if (!dg_ops[i].name) {
		ret = -ENOMEM;
		goto out;
	}
	dg_nops++;
	__atomic_store_n(&dg_ops[i].id, h, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&dg_ops_lock);
	if (!ret && id)
		*id = h;
	return ret;
}

odsm_deleg_fn dg_op_lookup(uint64_t id)
{
	unsigned int i, n;
	uint64_t v;

	for (n = 0, i = id & (DG_OPS - 1); n < DG_OPS;
	     n++, i = (i + 1) & (DG_OPS - 1)) {
		v = __atomic_load_n(&dg_ops[i].id, __ATOMIC_ACQUIRE);
		if (v == id)
			return dg_ops[i].fn;
		if (!v)
			return NULL;
	}
	return NULL;
}
