// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of kmod/odsm_hist.h: the log2 bucket of a latency in ns
 * that the module's histograms (/sys/kernel/odsm/latency/) count it in.
 */
#include "odsm_hist.h"

#include "ksft_host.h"

TEST(small_values)
{
	ASSERT_EQ(0U, odsm_hist_bucket(0));
	ASSERT_EQ(0U, odsm_hist_bucket(1));
	ASSERT_EQ(1U, odsm_hist_bucket(2));
	ASSERT_EQ(1U, odsm_hist_bucket(3));
	ASSERT_EQ(2U, odsm_hist_bucket(4));
	ASSERT_EQ(9U, odsm_hist_bucket(1000));		/* 1 us: [512, 1024) */
	ASSERT_EQ(19U, odsm_hist_bucket(1000000));	/* 1 ms */
}

/* every power of two and its neighbours land where the floors say */
TEST(powers_of_two)
{
	unsigned int b;

	for (b = 1; b < ODSM_HIST_BUCKETS - 1; b++) {
		u64 lo = 1ULL << b;

		ASSERT_EQ(b, odsm_hist_bucket(lo));
		ASSERT_EQ(b - 1, odsm_hist_bucket(lo - 1));
		ASSERT_EQ(b, odsm_hist_bucket(2 * lo - 1));
		ASSERT_EQ(lo, odsm_hist_floor(b));
	}
	ASSERT_EQ(0ULL, odsm_hist_floor(0));
}

/* the last bucket takes everything from 2^31 ns on, up to U64_MAX */
TEST(saturates)
{
	unsigned int last = ODSM_HIST_BUCKETS - 1;

	ASSERT_EQ(last, odsm_hist_bucket(1ULL << last));
	ASSERT_EQ(last, odsm_hist_bucket((1ULL << last) + 12345));
	ASSERT_EQ(last, odsm_hist_bucket(1ULL << 40));
	ASSERT_EQ(last, odsm_hist_bucket(~0ULL));
	ASSERT_EQ(1ULL << last, odsm_hist_floor(last));
}

/* buckets never go down as the latency grows (sampled over 2^0 .. 2^64) */
TEST(monotonic)
{
	unsigned int prev = 0, b, s;
	u64 ns, step;

	for (s = 0; s < 64; s++) {
		step = (1ULL << s) / 7 + 1;
		for (ns = 1ULL << s; s == 63 || ns < 2ULL << s; ns += step) {
			b = odsm_hist_bucket(ns);
			ASSERT_LE(prev, b);
			ASSERT_GT((unsigned int)ODSM_HIST_BUCKETS, b);
			ASSERT_LE(odsm_hist_floor(b), ns);
			prev = b;
			if (ns > ~0ULL - step)
				break;		/* the next would wrap */
		}
	}
}

TEST_HARNESS_MAIN
