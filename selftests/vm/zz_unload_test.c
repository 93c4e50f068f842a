// SPDX-License-Identifier: GPL-2.0
/*
 * Unloading the module: refused while a file of /dev/odsm is open or the
 * heap is mapped anywhere, clean afterwards (even with objects and pages
 * left in the store), and a reload brings a fresh node back.  Module
 * parameters configure the node at load time.
 *
 * Named zz_ so it runs after every other program of the suite; every test
 * leaves the module loaded with its default parameters.
 */
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include "odsm_vm.h"

/* Is the module in /proc/modules? 1 yes, 0 no, -1 cannot tell. */
static int module_loaded(void)
{
	char line[256];
	FILE *f = fopen("/proc/modules", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "odsm ", 5))
			found = 1;
	fclose(f);
	return found;
}

static int rmmod(void)
{
	char *argv[] = { "rmmod", "odsm", NULL };

	return t_run(argv);
}

static int modprobe(const char *param1, const char *param2)
{
	char *argv[] = { "modprobe", "odsm", (char *)param1, (char *)param2,
			 NULL };

	return t_run(argv);
}

static int exists(const char *path)
{
	return access(path, F_OK) == 0;
}

FIXTURE(mod) {
	uint64_t node_id, nr_nodes;	/* as loaded before the test */
};

FIXTURE_SETUP(mod)
{
	ASSERT_EQ(1, module_loaded());
	ASSERT_TRUE(exists(ODSM_DEVICE_PATH));
	self->node_id = t_sysfs("node_id");
	self->nr_nodes = t_sysfs("nr_nodes");
}

/* Whatever a test did, the next one (and the next scenario) finds the
 * module loaded as it was.
 */
FIXTURE_TEARDOWN(mod)
{
	if (module_loaded() == 1 && (t_sysfs("node_id") != self->node_id ||
				     t_sysfs("nr_nodes") != self->nr_nodes)) {
		EXPECT_EQ(0, rmmod());
	}
	if (module_loaded() != 1) {
		EXPECT_EQ(0, modprobe(NULL, NULL));
	}
	EXPECT_TRUE(exists(ODSM_DEVICE_PATH));
}

TEST_F(mod, refused_while_open)
{
	int fd = t_open();

	ASSERT_LE(0, fd);
	EXPECT_NE(0, rmmod());
	EXPECT_EQ(1, module_loaded());
	errno = 0;
	EXPECT_EQ(-1, syscall(SYS_delete_module, "odsm", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_TRUE(exists(T_SYSFS "/abi_version"));
	close(fd);
}

TEST_F(mod, refused_while_mapped)
{
	struct odsm_info in;
	struct t_stats s;
	int fd = t_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &in));
	ASSERT_EQ((void *)(uintptr_t)in.heap_base, t_map(fd, &in));
	/* the mapping alone keeps the file, and so the module */
	ASSERT_EQ(0, close(fd));
	EXPECT_NE(0, rmmod());
	EXPECT_EQ(1, module_loaded());
	EXPECT_TRUE(exists(ODSM_DEVICE_PATH));
	EXPECT_TRUE(exists(T_SYSFS "/abi_version"));
	SNAP(s);
	EXPECT_EQ(1ULL, t_val(&s, "mappings"));
	EXPECT_EQ(0, munmap((void *)(uintptr_t)in.heap_base, in.heap_size));
}

/* A mapping in another process counts as well. */
TEST_F(mod, refused_while_child_maps)
{
	int to_parent[2], to_child[2];
	struct odsm_info in;
	pid_t pid;
	char c;
	int fd = t_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &in));
	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, pipe(to_child));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (t_map(fd, &in) != (void *)(uintptr_t)in.heap_base)
			_exit(2);
		close(fd);
		if (write(to_parent[1], "m", 1) != 1 ||
		    read(to_child[0], &c, 1) != 1)
			_exit(3);
		_exit(0);
	}
	close(fd);
	ASSERT_EQ(1, read(to_parent[0], &c, 1));
	EXPECT_NE(0, rmmod());
	EXPECT_EQ(1, module_loaded());
	ASSERT_EQ(1, write(to_child[1], "x", 1));
	ASSERT_EQ(0, t_wait(pid));
	close(to_parent[0]);
	close(to_parent[1]);
	close(to_child[0]);
	close(to_child[1]);
}

/*
 * Nothing open, nothing mapped: rmmod works, even with objects allocated
 * and pages in the store, and takes the device and sysfs with it.  modprobe
 * brings a fresh node: default configuration, zeroed counters, no objects.
 */
TEST_F(mod, unload_then_reload)
{
	struct odsm_info in, again;
	struct t_stats s;
	uint64_t cg, cg2;
	unsigned int i;
	int fd = t_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &in));
	ASSERT_EQ((void *)(uintptr_t)in.heap_base, t_map(fd, &in));
	ASSERT_EQ(0, t_alloc(fd, KiB(200), 0, 0, &cg, NULL));
	ASSERT_EQ(0, t_alloc(fd, 100, 0, 0, &cg2, NULL));
	memset(t_p(cg), 0x55, KiB(200));
	memset(t_p(cg2), 0x66, 100);
	SNAP(s);
	EXPECT_LE(51ULL, t_val(&s, "pages_in_use"));
	ASSERT_EQ(0, munmap((void *)(uintptr_t)in.heap_base, in.heap_size));
	ASSERT_EQ(0, close(fd));

	ASSERT_EQ(0, rmmod());
	EXPECT_EQ(0, module_loaded());
	EXPECT_FALSE(exists(T_SYSFS));
	EXPECT_FALSE(exists(ODSM_DEVICE_PATH));
	EXPECT_FALSE(exists("/sys/class/misc/odsm"));
	EXPECT_EQ(-1, t_open());
	EXPECT_EQ(ENOENT, errno);

	ASSERT_EQ(0, modprobe(NULL, NULL));
	EXPECT_EQ(1, module_loaded());
	ASSERT_TRUE(exists(ODSM_DEVICE_PATH));
	EXPECT_EQ((uint64_t)ODSM_ABI_VERSION, t_sysfs("abi_version"));
	ASSERT_EQ(0, t_snap(&s));
	for (i = 0; i < T_NR_STATS; i++) {
		/* a fresh node: free_blocks is the only non-zero stat */
		if (!strcmp(t_stat_names[i], "free_blocks")) {
			EXPECT_EQ(in.part_size / T_BLOCK, s.v[i]);
		} else {
			EXPECT_EQ(0ULL, s.v[i]) {
				TH_LOG("%s is %" PRIu64 " after reload",
				       t_stat_names[i], s.v[i]);
			}
		}
	}

	fd = t_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &again));
	EXPECT_EQ(0, memcmp(&in, &again, sizeof(in)));
	ASSERT_EQ((void *)(uintptr_t)in.heap_base, t_map(fd, &again));
	ASSERT_EQ(0, t_alloc(fd, KiB(200), 0, 0, &cg, NULL));
	EXPECT_TRUE(t_all(t_p(cg), KiB(200), 0));
	EXPECT_EQ(0, t_free(fd, cg));
	munmap((void *)(uintptr_t)in.heap_base, in.heap_size);
	close(fd);
}

/* Module parameters configure the node at load time; a bad set is refused
 * and leaves nothing behind.
 */
TEST_F(mod, load_parameters)
{
	struct odsm_info in;
	int fd;

	ASSERT_EQ(0, rmmod());
	ASSERT_EQ(0, module_loaded());

	EXPECT_NE(0, modprobe("part_size=12345", NULL));
	EXPECT_EQ(0, module_loaded());
	EXPECT_NE(0, modprobe("node_id=2", "nr_nodes=2"));
	EXPECT_EQ(0, module_loaded());
	EXPECT_FALSE(exists(T_SYSFS));
	EXPECT_FALSE(exists(ODSM_DEVICE_PATH));

	ASSERT_EQ(0, modprobe("node_id=1", "nr_nodes=3"));
	fd = t_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &in));
	EXPECT_EQ(1U, in.node_id);
	EXPECT_EQ(3U, in.nr_nodes);
	EXPECT_EQ(1ULL, t_sysfs("node_id"));
	EXPECT_EQ(3ULL, t_sysfs("nr_nodes"));
	EXPECT_EQ(3 * in.part_size, in.heap_size);
	close(fd);

	/* back to the defaults for whatever runs next */
	ASSERT_EQ(0, rmmod());
	ASSERT_EQ(0, modprobe(NULL, NULL));
	EXPECT_EQ(0ULL, t_sysfs("node_id"));
	EXPECT_EQ(1ULL, t_sysfs("nr_nodes"));
}

/*
 * The unload drops every page of the store in one loop (store_drop_all()
 * in kmod/odsm_heap.c), as long as the partition holds pages: up to
 * part_size of them.  Nothing in its body sleeps, and Debian's kernels
 * preempt no kernel code that does not offer to (PREEMPT_VOLUNTARY), so
 * without its cond_resched() every other task of that CPU waits for the
 * whole loop (and a big enough store is a soft lockup: issue 12, 12c).
 * A probe thread sleeps 200 us at a time during the rmmod and notes its
 * longest wait: it must be a small part of the rmmod, which on the
 * guest's one CPU it would otherwise be nearly all of.
 */
#define UNLOAD_STORE	MiB(160)

struct probe {
	volatile int started, stop;
	uint64_t worst_ns, rounds;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void *probe_fn(void *arg)
{
	struct timespec nap = { .tv_nsec = 200000 };
	struct probe *p = arg;
	uint64_t t0, dt;

	p->started = 1;
	while (!p->stop) {
		t0 = mono_ns();
		nanosleep(&nap, NULL);
		dt = mono_ns() - t0;
		if (dt > p->worst_ns)
			p->worst_ns = dt;
		p->rounds++;
	}
	return NULL;
}

TEST_F(mod, unload_lets_others_run)
{
	struct probe pr = { 0 };
	struct odsm_info in;
	struct t_stats s;
	pthread_t th;
	uint64_t cg, pages, t0, took;
	int fd = t_open(), ret;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &in));
	ASSERT_EQ((void *)(uintptr_t)in.heap_base, t_map(fd, &in));
	ASSERT_EQ(0, t_alloc(fd, UNLOAD_STORE, 0, 0, &cg, NULL));
	memset(t_p(cg), 0x5a, UNLOAD_STORE);
	SNAP(s);
	pages = t_val(&s, "pages_in_use");
	EXPECT_LE(UNLOAD_STORE / 4096, pages);
	ASSERT_EQ(0, munmap((void *)(uintptr_t)in.heap_base, in.heap_size));
	ASSERT_EQ(0, close(fd));

	ASSERT_EQ(0, pthread_create(&th, NULL, probe_fn, &pr));
	while (!pr.started)
		usleep(1000);
	usleep(20000);
	pr.worst_ns = 0;
	t0 = mono_ns();
	ret = syscall(SYS_delete_module, "odsm", O_NONBLOCK) ? -errno : 0;
	took = mono_ns() - t0;
	pr.stop = 1;
	pthread_join(th, NULL);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(0, module_loaded());
	TH_LOG("rmmod with %" PRIu64 " pages in the store: %" PRIu64 " us; the probe's longest wait %" PRIu64 " us over %" PRIu64 " rounds",
	       pages, took / 1000, pr.worst_ns / 1000, pr.rounds);
	/* the drop must be long enough to tell: over 20 ms under TCG */
	EXPECT_LE(20000000ULL, took);
	EXPECT_GT(took / 4, pr.worst_ns) {
		TH_LOG("the unload kept the CPU from the probe for %" PRIu64 " of its %" PRIu64 " us",
		       pr.worst_ns / 1000, took / 1000);
	}
}

TEST_HARNESS_MAIN
