// SPDX-License-Identifier: GPL-2.0
/*
 * Two-way load over one connection (issue 12, suspected): nodes 0 and 1
 * read each other's 1 MiB objects in 256 KiB reads from TW_THREADS
 * threads each, both ways at once, for TW_SECS seconds.  Big replies
 * (14 MiB in flight each way, past the autotuned socket buffers) fill
 * both directions' buffers while heartbeats go both ways; a
 * receiver that waited for its send lock to answer a PING (held by a
 * worker sending a big reply into a full buffer) would stop reading, and
 * the two nodes would wait for each other until the send timeout killed
 * the connection.  Every read must succeed with the right bytes, and
 * neither node may see the other go down or a call time out.
 */
#include <pthread.h>
#include "odsm_cluster.h"

#define TW_THREADS	56
#define TW_SECS		15
#define TW_OBJ		MiB(1)
#define TW_READ		KiB(256)

FIXTURE(cl)
{
	int unused;
};

FIXTURE_SETUP(cl)
{
}

FIXTURE_TEARDOWN(cl)
{
}

struct tw {
	uint64_t obj;		/* the other node's object */
	unsigned int other;
	uint64_t end_ms;
	unsigned long reads, errors, wrong;
	int first_err;
};

static void *reader(void *arg)
{
	struct tw *t = arg;
	uint8_t *buf = malloc(TW_READ);
	uint64_t off = 0;
	int ret;

	if (!buf)
		return NULL;
	while (c_now_ms() < t->end_ms) {
		ret = odsm_read(t->obj + off, buf, TW_READ);
		if (ret) {
			__atomic_add_fetch(&t->errors, 1, __ATOMIC_RELAXED);
			t->first_err = ret;
		} else {
			if (c_check(buf, TW_READ, t->other, 7) >= 0 && off == 0)
				__atomic_add_fetch(&t->wrong, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&t->reads, 1, __ATOMIC_RELAXED);
		}
		off = (off + TW_READ) % TW_OBJ;
	}
	free(buf);
	return NULL;
}

TEST_F_TIMEOUT(cl, two_way_load, 300)
{
	pthread_t th[TW_THREADS];
	uint64_t cg, down0, to0, v;
	uint8_t *pat;
	struct tw t = { 0 };
	unsigned int i;
	int ret;

	C_BEGIN();
	if (C.self > 1)
		SKIP(return, "only nodes 0 and 1 take part");
	ASSERT_EQ(0, c_dir_wait(0, 120));
	ASSERT_EQ(0, c_dir_wait(1, 120));
	pat = malloc(TW_OBJ);
	ASSERT_NE(NULL, pat);
	c_fill(pat, TW_READ, C.self, 7);
	ret = odsm_alloc(TW_OBJ, 0, ODSM_ALLOC_ZERO, &cg);
	ASSERT_EQ(0, ret) TH_LOG("alloc: %s", odsm_strerror(ret));
	ASSERT_EQ(0, odsm_write(cg, pat, TW_READ));
	free(pat);
	ASSERT_EQ(0, c_put(C.self, W_TW_OBJ, cg));
	t.other = 1 - C.self;
	ASSERT_EQ(0, c_poll(t.other, W_TW_OBJ, 0, 120, &t.obj));
	down0 = c_stat("peers_down");
	to0 = c_stat("rpc_timeouts");
	/* start together: each waits for the other's word to be set */
	ASSERT_EQ(0, c_put(C.self, W_TW_OBJ + 1, 1));
	ASSERT_EQ(0, c_poll(t.other, W_TW_OBJ + 1, 1, 120, &v));
	t.end_ms = c_now_ms() + TW_SECS * 1000;
	for (i = 0; i < TW_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, reader, &t));
	for (i = 0; i < TW_THREADS; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%lu reads of 256 KiB in %d s, %lu failed (first: %s), %lu wrong; peers_down +%" PRIu64 ", rpc_timeouts +%" PRIu64,
	       t.reads, TW_SECS, t.errors,
	       t.errors ? odsm_strerror(t.first_err) : "none", t.wrong,
	       c_stat("peers_down") - down0, c_stat("rpc_timeouts") - to0);
	EXPECT_EQ(0UL, t.errors);
	EXPECT_EQ(0UL, t.wrong);
	EXPECT_LT(0UL, t.reads);
	EXPECT_EQ(down0, c_stat("peers_down"));
	EXPECT_EQ(to0, c_stat("rpc_timeouts"));
	/* both done before either frees what the other reads */
	ASSERT_EQ(0, c_put(C.self, W_TW_OBJ + 2, 1));
	ASSERT_EQ(0, c_poll(t.other, W_TW_OBJ + 2, 1, 120, &v));
	EXPECT_EQ(0, odsm_free(cg));
}

TEST_HARNESS_MAIN
