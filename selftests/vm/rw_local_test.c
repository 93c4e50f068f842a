// SPDX-License-Identifier: GPL-2.0
/*
 * The data-plane ioctls on this node's own partition, no cluster needed:
 * ODSM_IOC_READ / ODSM_IOC_WRITE / ODSM_IOC_ATOMIC, the placement flags of
 * ODSM_IOC_ALLOC, and what a node that joined no cluster refuses.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include "odsm_vm.h"

static int t_rw(int fd, unsigned long cmd, uint64_t ga, void *buf, uint64_t len)
{
	struct odsm_rw r = { .gaddr = ga, .buf = (uintptr_t)buf, .len = len };

	return t_ioctl(fd, cmd, &r);
}

static int t_atomic(int fd, uint64_t ga, uint32_t op, uint64_t operand,
		    uint64_t compare, uint64_t *old)
{
	struct odsm_atomic a = { .gaddr = ga, .op = op, .operand = operand,
				 .compare = compare };
	int ret = t_ioctl(fd, ODSM_IOC_ATOMIC, &a);

	if (!ret && old)
		*old = a.old;
	return ret;
}

FIXTURE(rw)
{
	int fd;
	struct odsm_info in;
	uint8_t *base;
	struct t_objs objs;
};

FIXTURE_SETUP(rw)
{
	self->fd = t_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, t_info(self->fd, &self->in));
	self->base = t_map(self->fd, &self->in);
	ASSERT_NE(MAP_FAILED, (void *)self->base);
}

FIXTURE_TEARDOWN(rw)
{
	t_free_all(self->fd, &self->objs);
	munmap(self->base, self->in.heap_size);
	close(self->fd);
}

/* Bytes written with the ioctl are what the mapping shows, and back. */
TEST_F(rw, write_read_roundtrip)
{
	uint64_t sizes[] = { 1, 8, 4096, 40000, MiB(1) + 123 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i], cg, j;
		uint8_t *in = malloc(n), *out = malloc(n);

		ASSERT_NE(NULL, in);
		ASSERT_NE(NULL, out);
		T_ALLOC(self->fd, &self->objs, n, 0, 0, &cg, NULL);
		for (j = 0; j < n; j++)
			in[j] = (uint8_t)(j * 7 + i);
		/* the color is ignored */
		ASSERT_EQ(0, t_rw(self->fd, ODSM_IOC_WRITE, t_color(cg, 77), in, n));
		EXPECT_EQ(0, memcmp(t_p(cg), in, n));
		memset(t_p(cg), 0x5a, n / 2);
		ASSERT_EQ(0, t_rw(self->fd, ODSM_IOC_READ, cg, out, n));
		EXPECT_TRUE(t_all(out, n / 2, 0x5a));
		EXPECT_EQ(0, memcmp(out + n / 2, in + n / 2, n - n / 2));
		T_FREE(self->fd, &self->objs, cg);
		free(in);
		free(out);
	}
}

/* A read of a never-touched object reads zeros and allocates no page. */
TEST_F(rw, read_untouched_is_zero)
{
	struct t_stats s0, s1;
	uint8_t buf[4096];
	uint64_t cg;

	T_ALLOC(self->fd, &self->objs, KiB(64), 0, 0, &cg, NULL);
	memset(buf, 1, sizeof(buf));
	SNAP(s0);
	ASSERT_EQ(0, t_rw(self->fd, ODSM_IOC_READ, cg, buf, sizeof(buf)));
	SNAP(s1);
	EXPECT_TRUE(t_all(buf, sizeof(buf), 0));
	EXPECT_DELTA(s0, s1, "page_allocs", 0);
}

/*
 * A transfer of several 256 KiB pieces is checked as a whole before any
 * byte moves: a write that starts in a large object and runs on into
 * blocks that hold no object fails with EINVAL and leaves the object as it
 * was (it used to copy the first pieces, then fail); a read of that range
 * fails without filling the caller's buffer.
 */
TEST_F(rw, multi_piece_range_checked_first)
{
	uint64_t cg, usable, n, j;
	uint8_t *in, *out, probe[8];

	T_ALLOC(self->fd, &self->objs, KiB(640), 0, 0, &cg, &usable);
	ASSERT_LE(KiB(640), usable);
	/* what follows the object holds none */
	ASSERT_EQ(-EINVAL, t_rw(self->fd, ODSM_IOC_READ, cg + usable, probe, 8));
	n = usable + KiB(64);		/* 3 pieces in, the last one out */
	in = malloc(n);
	out = malloc(n);
	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	for (j = 0; j < usable; j++)
		t_p(cg)[j] = (uint8_t)(j * 13 + 5);
	memset(in, 0xc3, n);
	EXPECT_EQ(-EINVAL, t_rw(self->fd, ODSM_IOC_WRITE, cg, in, n));
	for (j = 0; j < usable; j++) {
		ASSERT_EQ((uint8_t)(j * 13 + 5), t_p(cg)[j]) {
			TH_LOG("byte %" PRIu64 " of the object changed by a failed write",
			       j);
		}
	}
	memset(out, 0xee, n);
	EXPECT_EQ(-EINVAL, t_rw(self->fd, ODSM_IOC_READ, cg, out, n));
	EXPECT_TRUE(t_all(out, n, 0xee));
	/* the object alone still moves whole */
	ASSERT_EQ(0, t_rw(self->fd, ODSM_IOC_WRITE, cg, in, usable));
	EXPECT_TRUE(t_all(t_p(cg), usable, 0xc3));
	T_FREE(self->fd, &self->objs, cg);
	free(in);
	free(out);
}

/* Ranges outside live blocks, the heap, or one partition are refused. */
TEST_F(rw, bad_ranges)
{
	uint64_t lo = t_local_lo(&self->in), cg;
	uint8_t buf[16];

	T_ALLOC(self->fd, &self->objs, KiB(64), 0, 0, &cg, NULL);
	/* a block that holds no object */
	EXPECT_EQ(-EINVAL, t_rw(self->fd, ODSM_IOC_READ, lo + MiB(512), buf, 8));
	EXPECT_EQ(-EINVAL, t_rw(self->fd, ODSM_IOC_WRITE, lo + MiB(512), buf, 8));
	/* running off the end of the object's block into a free one */
	EXPECT_EQ(-EINVAL, t_rw(self->fd, ODSM_IOC_READ,
				(cg & ODSM_ADDR_MASK) + KiB(64) - 8, buf, 16));
	/* outside the heap */
	EXPECT_EQ(-EINVAL, t_rw(self->fd, ODSM_IOC_READ, 4096, buf, 8));
	EXPECT_EQ(-EINVAL, t_rw(self->fd, ODSM_IOC_READ,
				self->in.heap_base + self->in.heap_size, buf, 8));
	/* a bad user buffer */
	EXPECT_EQ(-EFAULT, t_rw(self->fd, ODSM_IOC_READ, cg, (void *)8, 8));
	/* length 0 is a no-op */
	EXPECT_EQ(0, t_rw(self->fd, ODSM_IOC_READ, lo + MiB(512), buf, 0));
}

struct adder {
	int fd;
	uint64_t ga;
	int n;
};

static void *add_loop(void *arg)
{
	struct adder *a = arg;
	int i;

	for (i = 0; i < a->n; i++)
		if (t_atomic(a->fd, a->ga, ODSM_ATOMIC_FETCH_ADD, 1, 0, NULL))
			return (void *)1;
	return NULL;
}

/* Fetch-add from threads and CPU atomics through the mapping agree. */
TEST_F(rw, atomics)
{
	uint64_t cg, old = 0, *word;
	struct adder a;
	pthread_t t[3];
	int i;

	T_ALLOC(self->fd, &self->objs, 64, 0, ODSM_ALLOC_ZERO, &cg, NULL);
	word = (uint64_t *)t_p(cg);
	a.fd = self->fd;
	a.ga = cg + 8;
	a.n = 2000;
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, add_loop, &a));
	for (i = 0; i < 2000; i++)
		__atomic_fetch_add(&word[1], 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 3; i++) {
		void *r;

		ASSERT_EQ(0, pthread_join(t[i], &r));
		EXPECT_EQ(NULL, r);
	}
	EXPECT_EQ(8000ULL, word[1]);

	/* compare-and-swap: succeeds on a match, reports the old value */
	ASSERT_EQ(0, t_atomic(self->fd, cg + 8, ODSM_ATOMIC_CMP_SWAP, 5, 8000, &old));
	EXPECT_EQ(8000ULL, old);
	EXPECT_EQ(5ULL, word[1]);
	ASSERT_EQ(0, t_atomic(self->fd, cg + 8, ODSM_ATOMIC_CMP_SWAP, 9, 8000, &old));
	EXPECT_EQ(5ULL, old);
	EXPECT_EQ(5ULL, word[1]);

	/* misaligned, unknown op, unbacked word */
	EXPECT_EQ(-EINVAL, t_atomic(self->fd, cg + 4, ODSM_ATOMIC_FETCH_ADD, 1, 0, NULL));
	EXPECT_EQ(-EINVAL, t_atomic(self->fd, cg, 3, 1, 0, NULL));
	EXPECT_EQ(-EINVAL, t_atomic(self->fd, t_local_lo(&self->in) + MiB(512),
				    ODSM_ATOMIC_FETCH_ADD, 1, 0, NULL));
}

/* ON_NODE self is a local allocation; ANYWHERE is local while there is room. */
TEST_F(rw, placement_flags)
{
	struct odsm_alloc a;
	uint64_t lo = t_local_lo(&self->in);

	memset(&a, 0, sizeof(a));
	a.size = 100;
	a.flags = ODSM_ALLOC_ON_NODE;
	a.node = self->in.node_id;
	ASSERT_EQ(0, t_ioctl(self->fd, ODSM_IOC_ALLOC, &a));
	t_keep(&self->objs, a.gaddr);
	EXPECT_GE(a.gaddr & ODSM_ADDR_MASK, lo);
	EXPECT_LT(a.gaddr & ODSM_ADDR_MASK, lo + self->in.part_size);

	memset(&a, 0, sizeof(a));
	a.size = 100;
	a.flags = ODSM_ALLOC_ANYWHERE;
	ASSERT_EQ(0, t_ioctl(self->fd, ODSM_IOC_ALLOC, &a));
	t_keep(&self->objs, a.gaddr);
	EXPECT_GE(a.gaddr & ODSM_ADDR_MASK, lo);

	/* a node that does not exist */
	memset(&a, 0, sizeof(a));
	a.size = 100;
	a.flags = ODSM_ALLOC_ON_NODE;
	a.node = self->in.nr_nodes;
	EXPECT_EQ(-EINVAL, t_ioctl(self->fd, ODSM_IOC_ALLOC, &a));
}

/* Without a cluster, other partitions cannot be reached: EINVAL, no hang. */
TEST(no_cluster_no_remote)
{
	struct t_reconf r;
	struct odsm_alloc a;
	struct odsm_status st = { 0 };
	uint8_t buf[8];
	struct __test_metadata *m = _metadata;

	memset(&r, 0, sizeof(r));
	t_reconf_setup(m, &r);
	t_reconf_set(m, &r, 0, 2, MiB(64));
	memset(&a, 0, sizeof(a));
	a.size = 64;
	a.flags = ODSM_ALLOC_ON_NODE;
	a.node = 1;
	EXPECT_EQ(-EINVAL, t_ioctl(r.fd, ODSM_IOC_ALLOC, &a));
	EXPECT_EQ(-EINVAL, t_rw(r.fd, ODSM_IOC_READ,
				r.in.heap_base + MiB(64), buf, 8));
	EXPECT_EQ(0, t_ioctl(r.fd, ODSM_IOC_STATUS, &st));
	EXPECT_EQ(0U, st.nr);
	EXPECT_EQ(0U, st.transport);
	t_reconf_teardown(m, &r);
}

/* JOIN checks its table: transport, node count, addresses. */
TEST(join_refuses_bad_tables)
{
	struct odsm_node_addr nodes[2] = {
		{ .ipv4 = htonl(0x0a000001), .port = 7100 },
		{ .ipv4 = htonl(0x0a000002), .port = 7100 },
	};
	static const char key[ODSM_KEY_MAX + 1] = "0123456789abcdef0123456789abcdef";
	struct odsm_join j = { .transport = ODSM_TRANSPORT_TCP, .nr_nodes = 2,
			       .nodes = (uintptr_t)nodes };
	int fd = t_open();

	ASSERT_LE(0, fd);
	/* no key: refused before anything else is looked at */
	EXPECT_EQ(-ENOKEY, t_ioctl(fd, ODSM_IOC_JOIN, &j));
	j.key = (uintptr_t)key;
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_JOIN, &j));	/* length 0 */
	j.key_len = ODSM_KEY_MIN - 1;
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_JOIN, &j));
	j.key_len = ODSM_KEY_MAX + 1;
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_JOIN, &j));
	j.key_len = 32;
	j.reserved = 1;
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_JOIN, &j));
	j.reserved = 0;
	j.key = 8;
	EXPECT_EQ(-EFAULT, t_ioctl(fd, ODSM_IOC_JOIN, &j));
	j.key = (uintptr_t)key;
	/* the node is configured for 1 node: a table of 2 does not fit */
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_JOIN, &j));
	j.transport = 9;
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_JOIN, &j));
	j.transport = ODSM_TRANSPORT_TCP;
	j.nr_nodes = 1;
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_JOIN, &j));
	j.nr_nodes = 2;
	j.nodes = 8;
	EXPECT_EQ(-EFAULT, t_ioctl(fd, ODSM_IOC_JOIN, &j));
	close(fd);
}

TEST_HARNESS_MAIN
