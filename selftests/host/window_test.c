// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of kmod/odsm_window.h: calls start in their slots, no
 * more than depth in flight, finish in the order started, every started
 * call is finished once, and the first error stops the starting and is
 * the run's.
 */
#include <stdbool.h>
#include "odsm_window.h"

#include "ksft_host.h"

#define MAXCALLS	64

/* A scripted run: what each start and finish returns, and what happened. */
struct script {
	unsigned int calls;		/* calls to start in all */
	unsigned int depth;
	int start_ret[MAXCALLS];	/* 0: start (1); else returned as is */
	int finish_ret[MAXCALLS];
	unsigned int not_now_once;	/* a 0 from start once, at this call */
	bool not_now_done;
	/* what happened */
	unsigned int started, finished, max_out, starts_after_error;
	unsigned int in_slot[MAXCALLS];	/* slot -> call it holds */
	int finished_call[MAXCALLS];	/* order of finishes */
	bool failed_seen[MAXCALLS];
	int errors;			/* an error returned so far */
};

static int s_start(void *ctx, unsigned int slot, unsigned int out)
{
	struct script *s = ctx;
	unsigned int c = s->started;
	int r;

	if (s->errors)
		s->starts_after_error++;
	if (out + 1 > s->max_out)
		s->max_out = out + 1;
	if (c == s->calls)
		return 0;
	if (s->not_now_once == c + 1 && !s->not_now_done && out) {
		s->not_now_done = true;
		return 0;
	}
	r = s->start_ret[c];
	if (r) {
		s->errors++;
		return r;
	}
	s->in_slot[slot] = c;
	s->started++;
	return 1;
}

static int s_finish(void *ctx, unsigned int slot, bool failed)
{
	struct script *s = ctx;
	unsigned int c = s->in_slot[slot];

	s->finished_call[s->finished++] = c;
	s->failed_seen[c] = failed;
	if (s->finish_ret[c] < 0)
		s->errors++;
	return s->finish_ret[c];
}

static const struct odsm_window_ops ops = {
	.start = s_start, .finish = s_finish,
};

static void order_ok(struct __test_metadata *_metadata, struct script *s)
{
	unsigned int i;

	ASSERT_EQ(s->started, s->finished);
	for (i = 0; i < s->finished; i++)
		ASSERT_EQ((int)i, s->finished_call[i]);
	ASSERT_LE(s->max_out, s->depth);
}

TEST(all_succeed_in_order)
{
	unsigned int depth;

	for (depth = 1; depth <= 9; depth++) {
		struct script s = { .calls = 20, .depth = depth };

		ASSERT_EQ(0, odsm_window_run(&ops, &s, depth));
		ASSERT_EQ(20U, s.started);
		order_ok(_metadata, &s);
		ASSERT_EQ(depth, s.max_out);
	}
}

TEST(nothing_to_start)
{
	struct script s = { .calls = 0, .depth = 4 };

	ASSERT_EQ(0, odsm_window_run(&ops, &s, 4));
	ASSERT_EQ(0U, s.started);
	ASSERT_EQ(0U, s.finished);
}

TEST(zero_depth_refused)
{
	struct script s = { .calls = 3, .depth = 0 };

	ASSERT_EQ(-EINVAL, odsm_window_run(&ops, &s, 0));
	ASSERT_EQ(0U, s.started);
}

/* a 0 while some are out waits for one to finish, then starts the rest */
TEST(not_now_resumes_after_a_finish)
{
	struct script s = { .calls = 10, .depth = 4, .not_now_once = 3 };

	ASSERT_EQ(0, odsm_window_run(&ops, &s, 4));
	ASSERT_TRUE(s.not_now_done);
	ASSERT_EQ(10U, s.started);
	order_ok(_metadata, &s);
}

/* a start's error stops the starting; the calls out are still finished */
TEST(start_error_drains)
{
	struct script s = { .calls = 10, .depth = 4 };

	s.start_ret[6] = -EIO;
	ASSERT_EQ(-EIO, odsm_window_run(&ops, &s, 4));
	ASSERT_EQ(6U, s.started);
	order_ok(_metadata, &s);
	ASSERT_EQ(0U, s.starts_after_error);
	/* those finished after the error are told so */
	ASSERT_TRUE(s.failed_seen[5]);
	ASSERT_FALSE(s.failed_seen[0]);
}

/* the first finish error is the run's; later ones do not replace it */
TEST(finish_error_first_wins)
{
	struct script s = { .calls = 12, .depth = 3 };

	s.finish_ret[4] = -EPROTO;
	s.finish_ret[5] = -ENOMEM;
	ASSERT_EQ(-EPROTO, odsm_window_run(&ops, &s, 3));
	order_ok(_metadata, &s);
	/* calls 5 and 6 were out when 4 failed: finished, none started after */
	ASSERT_EQ(7U, s.started);
	ASSERT_EQ(0U, s.starts_after_error);
	ASSERT_TRUE(s.failed_seen[5]);
	ASSERT_FALSE(s.failed_seen[4]);
}

/* positive finishes (counts) are not errors */
TEST(positive_finish_is_no_error)
{
	struct script s = { .calls = 5, .depth = 2 };
	unsigned int i;

	for (i = 0; i < 5; i++)
		s.finish_ret[i] = 7;
	ASSERT_EQ(0, odsm_window_run(&ops, &s, 2));
	order_ok(_metadata, &s);
}

TEST_HARNESS_MAIN
