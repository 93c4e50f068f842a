// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-kvs: a key-value table spread over every node of the cluster, built
 * by all nodes at once with the remote primitives (DRust's dalloc, dread,
 * dwrite, and atomics).  Run it on every node at the same time.
 *
 * Node 0's first object is a directory; each node allocates its share of
 * the table in its own partition and publishes it there.  Then every node
 * inserts its keys: a key hashes to a slot anywhere in the cluster, claimed
 * with a remote compare-and-swap (linear probing on a collision), its value
 * written with a remote write, and a cluster-wide counter bumped with a
 * remote fetch-and-add.  When the counter says every node is done, each
 * node looks every key of every node up again and checks its value.
 *
 *   odsm-kvs KEYS_PER_NODE
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/odsm.h>

#define SLOTS_PER_NODE	4096		/* 16-byte slots: 64 KiB per node */
#define DIR_COUNTER	(ODSM_MAX_NODES)	/* directory word: keys inserted */

static int fd;
static struct odsm_info in;
static uint64_t remote_ops, local_ops;

static void die(const char *what)
{
	fprintf(stderr, "odsm-kvs (node %u): %s: %s\n", in.node_id, what,
		strerror(errno));
	exit(1);
}

static void count(uint64_t ga)
{
	if ((ga - in.heap_base) / in.part_size == in.node_id)
		local_ops++;
	else
		remote_ops++;
}

static void rd(uint64_t ga, void *buf, uint64_t len)
{
	struct odsm_rw r = { .gaddr = ga, .buf = (uintptr_t)buf, .len = len };

	count(ga);
	if (ioctl(fd, ODSM_IOC_READ, &r))
		die("read");
}

static void wr(uint64_t ga, const void *buf, uint64_t len)
{
	struct odsm_rw r = { .gaddr = ga, .buf = (uintptr_t)buf, .len = len };

	count(ga);
	if (ioctl(fd, ODSM_IOC_WRITE, &r))
		die("write");
}

static uint64_t atomic(uint64_t ga, uint32_t op, uint64_t operand,
		       uint64_t compare)
{
	struct odsm_atomic a = { .gaddr = ga, .op = op, .operand = operand,
				 .compare = compare };

	count(ga);
	if (ioctl(fd, ODSM_IOC_ATOMIC, &a))
		die("atomic");
	return a.old;
}

static uint64_t hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

static double secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint64_t keys = argc > 1 ? strtoull(argv[1], NULL, 0) : 200;
	uint64_t dir, part[ODSM_MAX_NODES], total, probes = 0, i, n, w;
	struct odsm_alloc a = { 0 };
	double t0, t_insert, t_lookup;
	unsigned int k;

	fd = open(ODSM_DEVICE_PATH, O_RDWR);
	if (fd < 0 || ioctl(fd, ODSM_IOC_INFO, &in))
		die(ODSM_DEVICE_PATH);
	n = in.nr_nodes;
	total = n * SLOTS_PER_NODE;
	dir = in.heap_base;	/* node 0's first object */

	/* node 0 makes the directory first: every node finds it there */
	if (in.node_id == 0) {
		a.size = (ODSM_MAX_NODES + 1) * 8;
		a.flags = ODSM_ALLOC_ZERO;
		if (ioctl(fd, ODSM_IOC_ALLOC, &a))
			die("alloc directory");
		if ((a.gaddr & ODSM_ADDR_MASK) != dir) {
			fprintf(stderr, "odsm-kvs: node 0's module is not fresh: the directory is not its first object\n");
			return 1;
		}
	}
	/* my share of the table, in my own partition */
	memset(&a, 0, sizeof(a));
	a.size = SLOTS_PER_NODE * 16;
	a.flags = ODSM_ALLOC_ZERO;
	if (ioctl(fd, ODSM_IOC_ALLOC, &a))
		die("alloc table");
	part[in.node_id] = a.gaddr & ODSM_ADDR_MASK;
	printf("node %u: my share of the table is %u slots at 0x%" PRIx64 "\n",
	       in.node_id, SLOTS_PER_NODE, part[in.node_id]);

	/* publish it, then learn everyone's (the directory may not exist yet) */
	t0 = secs();
	for (;;) {
		struct odsm_rw r = { .gaddr = dir + 8 * in.node_id,
				     .buf = (uintptr_t)&part[in.node_id], .len = 8 };

		if (!ioctl(fd, ODSM_IOC_WRITE, &r))
			break;
		if (secs() - t0 > 60)
			die("publish");
		usleep(100000);
	}
	for (k = 0; k < n; k++) {
		t0 = secs();
		do {
			rd(dir + 8 * k, &part[k], 8);
			if (!part[k])
				usleep(50000);
		} while (!part[k] && secs() - t0 < 60);
		if (!part[k]) {
			fprintf(stderr, "odsm-kvs: node %u never published its share\n", k);
			return 1;
		}
	}

	/* insert my keys anywhere in the cluster */
	t0 = secs();
	for (i = 0; i < keys; i++) {
		uint64_t key = ((uint64_t)(in.node_id + 1) << 32) | (i + 1);
		uint64_t val = key * 3, s = hash(key) % total;

		for (;;) {
			uint64_t ga = part[s / SLOTS_PER_NODE] + 16 * (s % SLOTS_PER_NODE);

			if (atomic(ga, ODSM_ATOMIC_CMP_SWAP, key, 0) == 0) {
				wr(ga + 8, &val, 8);
				break;
			}
			probes++;
			s = (s + 1) % total;
		}
		atomic(dir + 8 * DIR_COUNTER, ODSM_ATOMIC_FETCH_ADD, 1, 0);
	}
	t_insert = secs() - t0;
	printf("node %u: inserted %" PRIu64 " keys in %.2f s (%" PRIu64 " collisions probed on)\n",
	       in.node_id, keys, t_insert, probes);

	/* wait for every node's inserts: the cluster-wide counter */
	t0 = secs();
	do {
		rd(dir + 8 * DIR_COUNTER, &w, 8);
		if (w < n * keys)
			usleep(50000);
	} while (w < n * keys && secs() - t0 < 120);
	if (w != n * keys) {
		fprintf(stderr, "odsm-kvs: the counter says %" PRIu64 " keys, expected %" PRIu64 "\n",
			w, n * keys);
		return 1;
	}

	/* every key of every node, looked up and checked */
	t0 = secs();
	for (k = 0; k < n; k++) {
		for (i = 0; i < keys; i++) {
			uint64_t key = ((uint64_t)(k + 1) << 32) | (i + 1);
			uint64_t s = hash(key) % total, slot[2];

			for (;;) {
				rd(part[s / SLOTS_PER_NODE] + 16 * (s % SLOTS_PER_NODE),
				   slot, 16);
				if (slot[0] == key || slot[0] == 0)
					break;
				s = (s + 1) % total;
			}
			if (slot[0] != key || slot[1] != key * 3) {
				fprintf(stderr, "odsm-kvs: key %#" PRIx64 " lost or wrong (slot %" PRIu64 ": %#" PRIx64 " = %" PRIu64 ")\n",
					key, s, slot[0], slot[1]);
				return 1;
			}
		}
	}
	t_lookup = secs() - t0;
	printf("node %u: looked up all %" PRIu64 " keys of all %u nodes in %.2f s: every value right\n",
	       in.node_id, n * keys, in.nr_nodes, t_lookup);
	printf("node %u: %" PRIu64 " remote and %" PRIu64 " local operations\n",
	       in.node_id, remote_ops, local_ops);
	return 0;
}
