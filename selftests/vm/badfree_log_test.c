// SPDX-License-Identifier: GPL-2.0
/*
 * A user's bad frees are counted, never logged (issue 12): any user may
 * make them at any rate, and even rate-limited lines let one user fill
 * the kernel log with noise that hides what matters.  Frees a gone object
 * 200 times and checks that bad_frees counts each while the kernel log
 * gains no line about a refused free.
 */
#include <sys/klog.h>
#include "odsm_vm.h"

#define BAD_FREES	200

/* Lines of the kernel log buffer that mention a refused free. */
static int refused_free_lines(void)
{
	int size = klogctl(10, NULL, 0), n, count = 0;	/* SIZE_BUFFER */
	char *buf, *p;

	if (size <= 0)
		return -1;
	buf = malloc((size_t)size + 1);
	if (!buf)
		return -1;
	n = klogctl(3, buf, size);			/* READ_ALL */
	if (n < 0) {
		free(buf);
		return -1;
	}
	buf[n] = 0;
	for (p = buf; (p = strstr(p, " refused: ")); p++)
		count++;
	free(buf);
	return count;
}

TEST(bad_frees_are_counted_not_logged)
{
	struct t_stats s0, s1;
	int fd = t_open(), before, after, i;
	uint64_t cg;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_alloc(fd, 64, 0, 0, &cg, NULL));
	ASSERT_EQ(0, t_free(fd, cg));
	before = refused_free_lines();
	ASSERT_LE(0, before);
	SNAP(s0);
	for (i = 0; i < BAD_FREES; i++)
		EXPECT_GT(0, t_free(fd, cg));
	SNAP(s1);
	after = refused_free_lines();
	EXPECT_DELTA(s0, s1, "bad_frees", BAD_FREES);
	EXPECT_EQ(before, after) {
		TH_LOG("%d kernel log lines about refused frees for %d bad frees",
		       after - before, BAD_FREES);
	}
	close(fd);
}

TEST_HARNESS_MAIN
