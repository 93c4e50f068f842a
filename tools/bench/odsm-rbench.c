// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-rbench: latency of remote reads, writes and atomics of 8 B, 4 KiB
 * and 1 MiB, and 1 MiB read bandwidth, against objects this program places
 * on another node (ODSM_ALLOC_ON_NODE); the same on a local object as the
 * cost of the ioctl path itself.  Prints ODSM_BENCH lines; judges nothing.
 *
 *   odsm-rbench NODE [ITERATIONS [LABEL]]
 *
 * With LABEL, only the remote figures, tagged LABEL instead of "remote"
 * (e.g. one run per transport), an ODSM_ATOMIC_F_NIC fetch-add on a word
 * of this node (over RDMA its own device runs it, through the loopback
 * pair), and the node's one-sided counters moved during the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/odsm.h>
#include "bench.h"

static int fd;

static unsigned long long alloc_on(unsigned int node, unsigned long long size)
{
	struct odsm_alloc a = { .size = size, .flags = ODSM_ALLOC_ON_NODE |
				ODSM_ALLOC_ZERO, .node = node };

	if (ioctl(fd, ODSM_IOC_ALLOC, &a)) {
		int err = -errno;
		char what[64];

		snprintf(what, sizeof(what), "alloc %llu on node %u", size, node);
		die(what, err);
	}
	return a.gaddr;
}

static void free_obj(unsigned long long cg)
{
	struct odsm_free f = { .gaddr = cg };

	ioctl(fd, ODSM_IOC_FREE, &f);
}

/* Median latency in µs of n calls of ioctl(fd, cmd, arg). */
static double ioctl_median(unsigned long cmd, void *arg, const char *what,
			   int n)
{
	double *t = calloc(n, sizeof(*t)), m;
	int i;

	if (!t)
		errx(1, "out of memory");
	for (i = 0; i < n; i++) {
		double t0 = now_us();

		if (ioctl(fd, cmd, arg))
			die(what, -errno);
		t[i] = now_us() - t0;
	}
	stats(t, n, &m, NULL);
	free(t);
	return m;
}

/* one read or write of len bytes */
static double rw_median(unsigned long long ga, void *buf, size_t len,
			unsigned long cmd, int n)
{
	struct odsm_rw r = { .gaddr = ga, .buf = (unsigned long)buf, .len = len };

	return ioctl_median(cmd, &r, "rw", n);
}

/* fetch-adds of 1 on ga, with flags (0 or ODSM_ATOMIC_F_NIC) */
static double atomic_median(unsigned long long ga, unsigned int flags, int n)
{
	struct odsm_atomic a = { .gaddr = ga, .op = ODSM_ATOMIC_FETCH_ADD,
				 .flags = flags, .operand = 1 };

	return ioctl_median(ODSM_IOC_ATOMIC, &a, "atomic", n);
}

static void run(const char *where, unsigned int node, int iters)
{
	static const size_t sizes[] = { 8, 4096, 1 << 20 };
	char *buf = malloc(1 << 20);
	unsigned long long obj[3];
	double t0, secs;
	int i, n;

	memset(buf, 0x5a, 1 << 20);
	for (i = 0; i < 3; i++)
		obj[i] = alloc_on(node, sizes[i]);
	for (i = 0; i < 3; i++) {
		n = sizes[i] >= (1 << 20) ? iters / 10 + 1 : iters;
		row("%s read_%zu_us=%.1f write_%zu_us=%.1f", where,
		    sizes[i], rw_median(obj[i], buf, sizes[i], ODSM_IOC_READ, n),
		    sizes[i], rw_median(obj[i], buf, sizes[i], ODSM_IOC_WRITE, n));
	}
	row("%s fetch_add_us=%.1f fetch_add_nic_us=%.1f", where,
	    atomic_median(obj[0] & ODSM_ADDR_MASK, 0, iters),
	    atomic_median((obj[1] & ODSM_ADDR_MASK) + 8, ODSM_ATOMIC_F_NIC,
			  iters));
	n = iters / 10 + 2;
	t0 = now_us();
	for (i = 0; i < n; i++) {
		struct odsm_rw r = { .gaddr = obj[2], .buf = (unsigned long)buf,
				     .len = 1 << 20 };

		if (ioctl(fd, ODSM_IOC_READ, &r))
			exit(1);
	}
	secs = (now_us() - t0) / 1e6;
	row("%s read_bw_MiB_s=%.1f", where, n / secs);
	for (i = 0; i < 3; i++)
		free_obj(obj[i]);
	free(buf);
}

int main(int argc, char **argv)
{
	struct odsm_info in;
	unsigned int node;
	int iters;

	if (argc < 2) {
		fprintf(stderr, "usage: odsm-rbench NODE [ITERATIONS [LABEL]]\n");
		return 2;
	}
	node = arg_num(argc, argv, 1, 0);
	iters = arg_num(argc, argv, 2, 200);
	fd = open(ODSM_DEVICE_PATH, O_RDWR);
	if (fd < 0 || ioctl(fd, ODSM_IOC_INFO, &in))
		die("/dev/odsm", -errno);
	if (argc > 3) {
		unsigned long long r0 = stat_of("onesided_reads"),
				   w0 = stat_of("onesided_writes"),
				   a0 = stat_of("onesided_atomics"),
				   f0 = stat_of("onesided_fallbacks");

		unsigned long long l0 = stat_of("loop_atomics"), mine;

		run(argv[3], node, iters);
		/* this node's own flagged word: its device runs it (loopback) */
		mine = alloc_on(in.node_id, 8);
		row("%s home_fetch_add_nic_us=%.1f", argv[3],
		    atomic_median(mine & ODSM_ADDR_MASK, ODSM_ATOMIC_F_NIC,
				  iters));
		free_obj(mine);
		row("%s counters: onesided_reads +%llu onesided_writes +%llu onesided_atomics +%llu loop_atomics +%llu onesided_fallbacks +%llu",
		    argv[3], stat_of("onesided_reads") - r0,
		    stat_of("onesided_writes") - w0,
		    stat_of("onesided_atomics") - a0,
		    stat_of("loop_atomics") - l0,
		    stat_of("onesided_fallbacks") - f0);
		return 0;
	}
	row("remote ops from node %u to node %u, median of %d (1 MiB: %d)",
	    in.node_id, node, iters, iters / 10 + 1);
	run("local", in.node_id, iters);
	run("remote", node, iters);
	return 0;
}
