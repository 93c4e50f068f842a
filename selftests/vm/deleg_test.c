// SPDX-License-Identifier: GPL-2.0
/*
 * Delegation across the processes of one node, over the module's heap:
 * the runtime's slots live in this node's partition, which every process
 * maps at the same address.  One process runs the trustee and publishes
 * the runtime's address in a heap object; two others, forked before the
 * runtime exists and each with its own open /dev/odsm and mapping, find
 * it there, attach, and increment an entrusted counter with no system
 * call on the request path.  The total must be exact, and the test must
 * leave no object allocated.
 */
#include "odsm_vm.h"

#define CLIENTS		2
#define PER_PROC	20000

static uint64_t OP_INC, OP_GET;

static int op_inc(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	(*(uint64_t *)obj)++;
	*rl = 0;
	return 0;
}

static int op_get(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	memcpy(ret, obj, 8);
	*rl = 8;
	return 0;
}

/* PER_PROC increments of t, half of them batched (apply_then). */
static int hammer(struct odsm_deleg *d, const odsm_trust *t)
{
	int i, r;

	for (i = 0; i < PER_PROC; i++) {
		if (i % 2)
			r = odsm_deleg_apply(t, OP_INC, NULL, 0, NULL, NULL);
		else
			r = odsm_deleg_apply_then(t, OP_INC, NULL, 0, NULL, 0,
						  NULL, NULL, NULL, 0);
		if (r)
			return r;
	}
	return odsm_deleg_drain(d);
}

/* What the owner publishes: the runtime's address and the handle. */
struct rendezvous {
	uint64_t arena;
	odsm_trust t;
};

static int client(uint64_t rdv, int go)
{
	struct odsm_deleg_arena a;
	struct rendezvous r;
	struct odsm_deleg *d;
	char c;
	int ret;

	/* a process of its own: its own file and mapping of the heap */
	odsm_fini();
	if (odsm_init())
		return 10;
	if (read(go, &c, 1) != 1)
		return 11;
	if (odsm_read(rdv, &r, sizeof(r)))
		return 12;
	if (odsm_deleg_arena_at(&a, r.arena) || odsm_deleg_attach(&a, &d))
		return 13;
	ret = hammer(d, &r.t);
	odsm_deleg_stop(d);
	return ret ? 14 : 0;
}

TEST(three_processes_increment_an_entrusted_counter)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 8 };
	struct odsm_deleg_stats st;
	struct odsm_deleg_arena a;
	struct odsm_deleg *d;
	struct rendezvous r;
	uint64_t rdv, v = 0;
	pid_t pid[CLIENTS];
	int i, status, go[2];
	size_t l = 8;
	odsm_box b;

	ASSERT_EQ(0, odsm_init());
	ASSERT_EQ(0, odsm_deleg_register("vm.inc", op_inc, &OP_INC));
	ASSERT_EQ(0, odsm_deleg_register("vm.get", op_get, &OP_GET));
	ASSERT_EQ(0, odsm_alloc(sizeof(r), 16, ODSM_ALLOC_ZERO, &rdv));
	ASSERT_EQ(0, pipe(go));
	for (i = 0; i < CLIENTS; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i])
			_exit(client(rdv, go[0]));
	}
	ASSERT_EQ(0, odsm_deleg_arena_heap(&a, odsm_deleg_arena_size(&c)));
	ASSERT_TRUE(odsm_is_local(a.cg));
	ASSERT_EQ(0, odsm_deleg_start(&a, &c, &d));
	ASSERT_EQ(0, odsm_box_new(&b, 8, ODSM_ALLOC_ZERO));
	r.arena = odsm_deleg_addr(d);
	ASSERT_EQ(0, odsm_deleg_entrust(d, 0, &b, 0, &r.t));
	ASSERT_EQ(0, odsm_write(rdv, &r, sizeof(r)));
	ASSERT_EQ(CLIENTS, write(go[1], "gg", CLIENTS));

	ASSERT_EQ(0, hammer(d, &r.t));
	for (i = 0; i < CLIENTS; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	ASSERT_EQ(0, odsm_deleg_apply(&r.t, OP_GET, NULL, 0, &v, &l));
	EXPECT_EQ((uint64_t)(CLIENTS + 1) * PER_PROC, v);
	odsm_deleg_stats(d, &st);
	TH_LOG("%llu requests in %llu batches, %llu trustee sleeps",
	       (unsigned long long)st.requests, (unsigned long long)st.batches,
	       (unsigned long long)st.sleeps);
	EXPECT_EQ(0U, st.malformed + st.stale + st.unknown_op + st.dead);

	/* the last reference frees the counter; then the arena and all */
	ASSERT_EQ(0, odsm_trust_drop(&r.t));
	odsm_deleg_stop(d);
	EXPECT_EQ(0, odsm_deleg_arena_heap_free(&a));
	EXPECT_EQ(0, odsm_free(rdv));
	odsm_fini();
}

TEST_HARNESS_MAIN
