/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the programs that run with faults (cluster_fault_test,
 * cluster_movedown_test; scenario cluster-faults): the injector's knobs,
 * and a barrier that survives them.
 *
 * Words of the directories they use (beyond cluster_coherence_test's
 * 420..432): 460..479.
 */
#ifndef _ODSM_FAULTS_TEST_H
#define _ODSM_FAULTS_TEST_H

#include "odsm_cluster.h"

enum {
	W_F_PHASE = 460,	/* this node's last phase reached (fbarrier) */
	W_F_COUNT,		/* replay_served_once: the neighbour's adds */
	W_F_WORD,		/* drops: the neighbour's writes */
	W_F_ADD,		/* drops: the neighbour's fetch-and-adds */
	W_F_ADDS_OK,		/* drops: this node's acknowledged adds */
	W_F_ADDS_UNKNOWN,	/* ... and those that failed */
	W_F_FIRE = 466,		/* 466 .. 468: the fire's table, locks, versions */
	W_MD_TABLE = 470,	/* movedown: the owner boxes */
	W_MD_TURN,		/* ... whose turn it is to move each object */
	W_MD_VER,		/* ... the last version written back of each */
	W_MD_READY,		/* ... 1 when the above are published */
	W_F_DRT = 474,		/* deleg: this node's runtime's address */
	W_F_DCTR,		/* ... its counter's handle (cell | gen << 32) */
};

/* message types (kmod/odsm_wire.h) */
#define F_WRITE		6
#define F_ALLOC		8
#define F_FREE		10
#define F_ATOMIC	12
#define F_DELEG		19
#define F_DELEG_REPLY	20
#define F_ALL		0x7fbfff0U	/* every call's request and reply */

static C_UNUSED int f_param(const char *name, unsigned long long v)
{
	char val[24];

	snprintf(val, sizeof(val), "%llu\n", v);
	return c_sysfs_write("/sys/module/odsm/parameters", name, val);
}

/* Arm this node's injector (all 0: disarm); 0 or -errno. */
static C_UNUSED int f_faults(unsigned int drop, unsigned int delay,
			     unsigned int dup, unsigned int types,
			     unsigned long long seed)
{
	int ret = f_param("fault_drop", 0);

	ret = ret ?: f_param("fault_delay", 0);
	ret = ret ?: f_param("fault_dup", 0);
	ret = ret ?: f_param("fault_types", types);
	ret = ret ?: f_param("fault_delay_ms", 20);
	ret = ret ?: f_param("fault_seed", seed);
	ret = ret ?: f_param("fault_drop", drop);
	ret = ret ?: f_param("fault_delay", delay);
	ret = ret ?: f_param("fault_dup", dup);
	return ret;
}

/*
 * Wait until every node but skip (-1: none) reached phase: each node
 * writes the phase into its own directory (a local write, which no fault
 * touches) and reads the others', reads that fail being tried again.  So
 * no node's injector, still on, can make a barrier fail or count twice.
 * 0, or -ETIMEDOUT after secs.
 */
static C_UNUSED int f_barrier(uint64_t phase, int skip, unsigned int secs)
{
	uint64_t end = c_now_ms() + secs * 1000ULL, v;
	unsigned int k;
	int ret;

	ret = c_put(C.self, W_F_PHASE, phase);
	if (ret)
		return ret;
	for (k = 0; k < C.nodes; k++) {
		if ((int)k == skip || k == C.self)
			continue;
		for (;;) {
			v = 0;
			ret = c_get(k, W_F_PHASE, &v);
			if (!ret && v >= phase)
				break;
			if (c_now_ms() > end) {
				fprintf(stderr, "# f_barrier %" PRIu64 ": node %u at %" PRIu64 " (%s)\n",
					phase, k, v, odsm_strerror(ret));
				return -ETIMEDOUT;
			}
			c_sleep_ms(20);
		}
	}
	return 0;
}

#endif /* _ODSM_FAULTS_TEST_H */
