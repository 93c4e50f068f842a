/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What libodsm's checking mode reports, caught for the tests of it: on the
 * host against the fake device (selftests/lib/borrowck_test.c) and in a
 * guest against the module (selftests/vm/check_test.c).  Include after
 * kselftest_harness.h and odsm.h, with ODSM_CHECK defined.
 *
 * The checker writes to stderr, so a fixture points fd 2 at a temporary
 * file for the test (ck_capture_start) and reads back what was printed
 * since the last look (printed); EXPECT_REPORT reads the fixture's
 * self->err.
 */
#ifndef _ODSM_CHECK_CAPTURE_H
#define _ODSM_CHECK_CAPTURE_H

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CK_UNUSED	__attribute__((unused))

/* fd 2 into a fresh temporary file; the real one kept in *saved */
static CK_UNUSED int ck_capture_start(FILE **err, int *saved)
{
	*err = tmpfile();
	if (!*err)
		return -1;
	fflush(stderr);
	*saved = dup(2);
	if (*saved < 0 || dup2(fileno(*err), 2) != 2) {
		fclose(*err);
		return -1;
	}
	return 0;
}

static CK_UNUSED void ck_capture_stop(FILE *err, int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	fclose(err);
}

/* what the checker printed since the last call, as one string */
static CK_UNUSED const char *printed(FILE *f)
{
	static char buf[4096];
	size_t n;

	fflush(stderr);
	fseek(f, 0, SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	if (ftruncate(fileno(f), 0))
		buf[0] = 0;
	fseek(f, 0, SEEK_SET);
	return buf;
}

static CK_UNUSED uint64_t violations(void)
{
	struct odsm_lib_stats st;

	odsm_lib_stats(&st);
	return st.violations;
}

/* one report: "odsm: borrow check: <op> of object 0x<addr>: <why>" */
#define EXPECT_REPORT(op, g, why) do {					\
	char __want[512];						\
	const char *__m = printed(self->err);				\
	snprintf(__want, sizeof(__want),				\
		 "odsm: borrow check: %s of object 0x%llx: %s\n", op,	\
		 (unsigned long long)odsm_addr_of(g), why);		\
	EXPECT_STREQ(__want, __m);					\
} while (0)

/*
 * ODSM_CHECK_ABORT: the first misuse (a double return of a borrow of *b)
 * aborts the program, after saying why.
 */
static CK_UNUSED void ck_expect_abort(struct __test_metadata *_metadata,
				      odsm_box *b, FILE *err)
{
	const void *p;
	int status;
	odsm_ref r;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		setenv("ODSM_CHECK_ABORT", "1", 1);
		if (odsm_borrow(b, &r, &p) || odsm_return(&r))
			_exit(2);
		odsm_return(&r);	/* double: aborts */
		_exit(3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGABRT, WTERMSIG(status));
	EXPECT_NE(NULL, strstr(printed(err), "return of object"));
}

#endif /* _ODSM_CHECK_CAPTURE_H */
