// SPDX-License-Identifier: GPL-2.0
/*
 * The example application of `make demo`, odsm-workq
 * (tools/examples/odsm-workq.c), run on every node at once so that it
 * cannot rot unnoticed: the very binary the demo runs, under an app name
 * of its own ("workq-check": its names do not meet the demo's).
 *
 * odsm-workq checks itself (node 0: every task ran exactly once, on the
 * node of its data, and the total is right; every node: each spawn and
 * channel call succeeded) and exits 0 only then.  Here, on every node:
 * it exits 0 within its time, each task line it printed says the task
 * ran on its data's node, and node 0's summary says all was well with
 * every task counted.  Its output goes to the log as TAP diagnostics.
 *
 * It meets the other nodes through libodsm (odsm_app_join and its
 * barrier), never through directory words or rig barrier ids.
 */
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include "odsm_cluster.h"

#define APP		"workq-check"
#define PER_NODE	6		/* tasks each node produces */
#define SECS		150

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

/* odsm-workq next to this program (the guest's /rig/bin), or the tree's. */
static int find_workq(char *path, size_t n)
{
	static const char *const rel[] = { "odsm-workq", "../../bin/odsm-workq" };
	char self[PATH_MAX];
	const char *dir;
	ssize_t len;
	unsigned int i;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		return -errno;
	self[len] = '\0';
	dir = dirname(self);
	for (i = 0; i < ARRAY_SIZE(rel); i++) {
		snprintf(path, n, "%s/%s", dir, rel[i]);
		if (access(path, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

struct counts {
	unsigned int lines;	/* "task T from node P ran on node N (data on node H)" */
	unsigned int here;	/* ... with N == H */
	unsigned int ok;	/* node 0's summary said all was well */
	unsigned int tasks;	/* node 0's summary: tasks counted */
};

static void scan(const char *line, struct counts *c)
{
	unsigned int w, t, p, n, h, tasks, nodes, each;

	if (sscanf(line, "node %u: task %u from node %u ran on node %u (data on node %u)",
		   &w, &t, &p, &n, &h) == 5) {
		c->lines++;
		c->here += n == h;
	} else if (sscanf(line, "workq: %u tasks from %u nodes (%u each)",
			  &tasks, &nodes, &each) == 3) {
		c->tasks = tasks;
	} else if (!strcmp(line, "workq: every task ran exactly once, on its data's node\n")) {
		c->ok = 1;
	}
}

TEST_F_TIMEOUT(cl, workq_example, SECS + 30)
{
	char path[PATH_MAX], arg[16], line[256];
	struct counts c = { 0 };
	int fds[2], status = 0;
	uint64_t t0;
	FILE *out;
	pid_t pid;

	C_BEGIN();
	ASSERT_EQ(0, find_workq(path, sizeof(path)))
		TH_LOG("no odsm-workq next to this program");
	snprintf(arg, sizeof(arg), "%u", PER_NODE);
	ASSERT_EQ(0, pipe(fds));
	t0 = c_now_ms();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		close(fds[1]);
		alarm(SECS);		/* a hung node fails, never blocks */
		execl(path, "odsm-workq", "-a", APP, arg, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	ASSERT_NE(NULL, out);
	while (fgets(line, sizeof(line), out)) {
		printf("# %s", line);
		scan(line, &c);
	}
	fclose(out);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	TH_LOG("odsm-workq: %u task lines in %" PRIu64 " ms", c.lines,
	       c_now_ms() - t0);
	ASSERT_TRUE(WIFEXITED(status))
		TH_LOG("odsm-workq killed by signal %d", WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* every task this node took ran where its data lives */
	EXPECT_LT(0U, c.lines);
	EXPECT_EQ(c.lines, c.here);
	if (C.self == 0) {
		EXPECT_EQ(1U, c.ok);
		EXPECT_EQ(C.nodes * PER_NODE, c.tasks);
	}
}

TEST_HARNESS_MAIN
