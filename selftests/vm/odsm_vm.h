/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the in-VM kselftest programs (selftests/vm/NAME_test.c).
 * Header only: every .c file of selftests/vm builds into its own static program.
 *
 * The programs run as root in a rig guest, one after the other, with the
 * odsm module freshly loaded with its default parameters.  Every test
 * leaves the node as it found it: no object allocated, nothing mapped, the
 * original configuration; tests that change the configuration restore it
 * in their fixture's teardown, which also runs after a failed ASSERT.
 *
 * Counters are checked by exact deltas of /sys/kernel/odsm/stats/<name>
 * around the operation under test (nothing else touches the module while a
 * test runs).
 */
#ifndef _ODSM_VM_TEST_H
#define _ODSM_VM_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "odsm.h"		/* libodsm, and <linux/odsm.h> */
#include "kselftest_harness.h"

#define T_UNUSED	__attribute__((unused))

#define KiB(x)		((uint64_t)(x) << 10)
#define MiB(x)		((uint64_t)(x) << 20)
#define GiB(x)		((uint64_t)(x) << 30)

/* allocator geometry (kmod/odsm_sizeclass.h): not ABI, but what the tests
 * need to build exact situations (a fresh block, a full slab)
 */
#define T_BLOCK		KiB(64)
/* a color far above any an earlier test at an address can have reached */
#define T_FRESH_COLOR	0xf000
#define T_SLAB_MAX	KiB(32)

#define T_SYSFS		"/sys/kernel/odsm"
#define T_STATS		T_SYSFS "/stats"

#define T_PAGE		((uint64_t)sysconf(_SC_PAGESIZE))

/* ---- sysfs ---------------------------------------------------------- */

/* A number (decimal or 0x-hex) from a one-value file; UINT64_MAX on error. */
static T_UNUSED uint64_t t_read_u64(const char *path)
{
	char buf[64], *end;
	uint64_t v;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return UINT64_MAX;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (errno || end == buf || (*end && *end != '\n'))
		return UINT64_MAX;
	return v;
}

/* Write s to a one-value file (sysfs, cgroupfs): 0 or -errno. */
static T_UNUSED int t_write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -errno;
}

static T_UNUSED uint64_t t_sysfs(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), T_SYSFS "/%s", name);
	return t_read_u64(path);
}

/* Every file of stats/: the event counters, then the gauges. */
static const char *const t_stat_names[] T_UNUSED = {
	"allocs", "alloc_bytes", "alloc_einval", "alloc_enomem", "frees",
	"free_bytes", "bad_frees", "moves", "mmaps", "mmap_refused", "faults",
	"page_allocs", "page_frees", "sigbus_remote", "sigbus_unbacked",
	"fault_enomem", "bad_ioctls", "stale_refused", "store_enomem",
	"config_refused",
	"pages_in_use", "objects_in_use", "bytes_in_use", "free_blocks",
	"slots_retired", "blocks_retired", "mappings",
};
#define T_NR_STATS	(sizeof(t_stat_names) / sizeof(t_stat_names[0]))

struct t_stats {
	uint64_t v[T_NR_STATS];
};

/* Read every stats file; 0, or -1 if one is missing or unreadable. */
static T_UNUSED int t_snap(struct t_stats *s)
{
	char path[128];
	unsigned int i;

	for (i = 0; i < T_NR_STATS; i++) {
		snprintf(path, sizeof(path), T_STATS "/%s", t_stat_names[i]);
		s->v[i] = t_read_u64(path);
		if (s->v[i] == UINT64_MAX)
			return -1;
	}
	return 0;
}

/* after - before of one stats file (gauges may go down) */
static T_UNUSED int64_t t_delta(const struct t_stats *before,
				const struct t_stats *after, const char *name)
{
	unsigned int i;

	for (i = 0; i < T_NR_STATS; i++)
		if (!strcmp(t_stat_names[i], name))
			return (int64_t)(after->v[i] - before->v[i]);
	fprintf(stderr, "# no stats file '%s' in the test's list\n", name);
	abort();
}

static T_UNUSED uint64_t t_val(const struct t_stats *s, const char *name)
{
	unsigned int i;

	for (i = 0; i < T_NR_STATS; i++)
		if (!strcmp(t_stat_names[i], name))
			return s->v[i];
	fprintf(stderr, "# no stats file '%s' in the test's list\n", name);
	abort();
}

#define SNAP(s)		ASSERT_EQ(0, t_snap(&(s)))
/* the stats file `name` moved by exactly n between snapshots a and b */
#define ASSERT_DELTA(a, b, name, n) \
	ASSERT_EQ((int64_t)(n), t_delta(&(a), &(b), name))
#define EXPECT_DELTA(a, b, name, n) \
	EXPECT_EQ((int64_t)(n), t_delta(&(a), &(b), name))

/* ---- the device ------------------------------------------------------- */

static T_UNUSED int t_open(void)
{
	return open(ODSM_DEVICE_PATH, O_RDWR | O_CLOEXEC);
}

/* ioctl: 0 or -errno */
static T_UNUSED int t_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static T_UNUSED int t_info(int fd, struct odsm_info *in)
{
	memset(in, 0, sizeof(*in));
	return t_ioctl(fd, ODSM_IOC_INFO, in);
}

static T_UNUSED int t_alloc(int fd, uint64_t size, uint32_t align,
			    uint32_t flags, uint64_t *cg, uint64_t *usable)
{
	struct odsm_alloc a = { .size = size, .align = align, .flags = flags };
	int ret = t_ioctl(fd, ODSM_IOC_ALLOC, &a);

	if (!ret) {
		*cg = a.gaddr;
		if (usable)
			*usable = a.usable;
	}
	return ret;
}

static T_UNUSED int t_free(int fd, uint64_t cg)
{
	struct odsm_free f = { .gaddr = cg };

	return t_ioctl(fd, ODSM_IOC_FREE, &f);
}

static T_UNUSED int t_move(int fd, uint64_t cg, uint64_t *new_cg)
{
	struct odsm_move m = { .gaddr = cg };
	int ret = t_ioctl(fd, ODSM_IOC_MOVE, &m);

	if (!ret)
		*new_cg = m.new_gaddr;
	return ret;
}

static T_UNUSED int t_obj_info(int fd, uint64_t cg, struct odsm_obj_info *oi)
{
	memset(oi, 0, sizeof(*oi));
	oi->gaddr = cg;
	return t_ioctl(fd, ODSM_IOC_OBJ_INFO, oi);
}

static T_UNUSED int t_set_config(int fd, uint32_t node_id, uint32_t nr_nodes,
				 uint64_t base, uint64_t part_size)
{
	struct odsm_config c = {
		.node_id = node_id, .nr_nodes = nr_nodes,
		.heap_base = base, .part_size = part_size,
	};

	return t_ioctl(fd, ODSM_IOC_SET_CONFIG, &c);
}

/* Map the whole heap at its base, as libodsm does; MAP_FAILED on error. */
static T_UNUSED void *t_map(int fd, const struct odsm_info *in)
{
	return mmap((void *)(uintptr_t)in->heap_base, in->heap_size,
		    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
		    fd, 0);
}

static T_UNUSED uint64_t t_local_lo(const struct odsm_info *in)
{
	return in->heap_base + (uint64_t)in->node_id * in->part_size;
}

static T_UNUSED uint64_t t_color(uint64_t cg, uint16_t color)
{
	return (cg & ODSM_ADDR_MASK) | ((uint64_t)color << ODSM_COLOR_SHIFT);
}

static T_UNUSED uint8_t *t_p(uint64_t cg)
{
	return (uint8_t *)(uintptr_t)(cg & ODSM_ADDR_MASK);
}

/* Are n bytes at p all equal to c? */
static T_UNUSED int t_all(const volatile uint8_t *p, uint64_t n, uint8_t c)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

/* ---- faults ------------------------------------------------------------- */

static sigjmp_buf t_jmp T_UNUSED;
static volatile sig_atomic_t t_signo T_UNUSED;
static void *volatile t_sigaddr T_UNUSED;

static T_UNUSED void t_on_fault(int sig, siginfo_t *si, void *uc)
{
	t_signo = sig;
	t_sigaddr = si->si_addr;
	siglongjmp(t_jmp, 1);
}

/*
 * Read (write == 0: into *val) or write (*val) one byte at p, catching
 * SIGBUS and SIGSEGV.  Returns 0, or the signal the access raised (its
 * si_addr in t_sigaddr).
 */
static T_UNUSED int t_touch(volatile uint8_t *p, int write, uint8_t *val)
{
	struct sigaction sa, old_bus, old_segv;
	volatile int sig = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = t_on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	t_signo = 0;
	t_sigaddr = NULL;
	if (sigsetjmp(t_jmp, 1) == 0) {
		if (write)
			*p = *val;
		else
			*val = *p;
	} else {
		sig = t_signo;
	}
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return sig;
}

/* ---- processes -------------------------------------------------------- */

/* Exit code of a child, or 128 + the signal that killed it; -1 on error. */
static T_UNUSED int t_wait(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

/* Run argv (searched in $PATH) and wait: its t_wait() code. */
static T_UNUSED int t_run(char *const argv[])
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	return t_wait(pid);
}

/* ---- objects a test owns: freed by its teardown if it bails out -------- */

#define T_MAX_OBJS	512

struct t_objs {
	int n;
	uint64_t cg[T_MAX_OBJS];
};

static T_UNUSED int t_keep(struct t_objs *o, uint64_t cg)
{
	if (o->n >= T_MAX_OBJS)
		return -1;
	o->cg[o->n++] = cg;
	return 0;
}

/* The object moved or got a new color: remember its new address. */
static T_UNUSED void t_rekeep(struct t_objs *o, uint64_t old, uint64_t cg)
{
	int i;

	for (i = 0; i < o->n; i++)
		if ((o->cg[i] & ODSM_ADDR_MASK) == (old & ODSM_ADDR_MASK)) {
			o->cg[i] = cg;
			return;
		}
}

/* The test freed it itself. */
static T_UNUSED void t_forget(struct t_objs *o, uint64_t cg)
{
	int i;

	for (i = 0; i < o->n; i++)
		if ((o->cg[i] & ODSM_ADDR_MASK) == (cg & ODSM_ADDR_MASK)) {
			o->cg[i] = o->cg[--o->n];
			return;
		}
}

/* Free what is left, each with its allocation color (a free accepts any
 * color the object carried, and its allocation color never retires it).
 */
static T_UNUSED void t_free_all(int fd, struct t_objs *o)
{
	struct odsm_obj_info oi;

	while (o->n > 0) {
		uint64_t cg = o->cg[--o->n];

		if (t_obj_info(fd, cg, &oi) == 0)
			t_free(fd, oi.gaddr);
	}
}

/* Allocate and keep; ASSERTs on failure (for use inside a TEST body). */
#define T_ALLOC(fd, objs, size, align, flags, cgp, usablep) do { \
	ASSERT_EQ(0, t_alloc(fd, size, align, flags, cgp, usablep)); \
	ASSERT_EQ(0, t_keep(objs, *(cgp))); \
} while (0)

#define T_FREE(fd, objs, cg) do { \
	ASSERT_EQ(0, t_free(fd, cg)); \
	t_forget(objs, cg); \
} while (0)

/* ---- a reconfigured node ----------------------------------------------- */

/*
 * For tests that change the configuration with ODSM_IOC_SET_CONFIG: a
 * fixture holding a struct t_reconf calls t_reconf_setup() and
 * t_reconf_teardown(); the teardown frees what the test kept, unmaps and
 * restores the original configuration, whatever happened.
 */
struct t_reconf {
	int fd;
	struct odsm_info orig;	/* configuration before the test */
	struct odsm_info in;	/* the current one */
	uint8_t *base;
	int mapped;
	struct t_objs objs;
};

static T_UNUSED void t_reconf_setup(struct __test_metadata *_metadata,
				    struct t_reconf *r)
{
	struct t_stats s;

	r->fd = t_open();
	ASSERT_LE(0, r->fd);
	ASSERT_EQ(0, t_info(r->fd, &r->orig));
	r->in = r->orig;
	r->base = (uint8_t *)(uintptr_t)r->orig.heap_base;
	/* SET_CONFIG needs a node with nothing mapped and nothing allocated */
	SNAP(s);
	ASSERT_EQ(0ULL, t_val(&s, "objects_in_use"));
	ASSERT_EQ(0ULL, t_val(&s, "mappings"));
}

static T_UNUSED void t_reconf_teardown(struct __test_metadata *_metadata,
				       struct t_reconf *r)
{
	const struct odsm_info *o = &r->orig;
	struct odsm_info now;

	t_free_all(r->fd, &r->objs);
	if (r->mapped)
		munmap(r->base, r->in.heap_size);
	r->mapped = 0;
	EXPECT_EQ(0, t_set_config(r->fd, o->node_id, o->nr_nodes,
				  o->heap_base, o->part_size));
	EXPECT_EQ(0, t_info(r->fd, &now));
	EXPECT_EQ(0, memcmp(&now, o, sizeof(now)));
	close(r->fd);
}

/* Reconfigure (same base), check INFO and sysfs follow. */
static T_UNUSED void t_reconf_set(struct __test_metadata *_metadata,
				  struct t_reconf *r, uint32_t node_id,
				  uint32_t nr_nodes, uint64_t part_size)
{
	uint64_t base = r->orig.heap_base;

	ASSERT_EQ(0, t_set_config(r->fd, node_id, nr_nodes, base, part_size));
	ASSERT_EQ(0, t_info(r->fd, &r->in));
	EXPECT_EQ(node_id, r->in.node_id);
	EXPECT_EQ(nr_nodes, r->in.nr_nodes);
	EXPECT_EQ(base, r->in.heap_base);
	EXPECT_EQ(part_size, r->in.part_size);
	EXPECT_EQ(nr_nodes * part_size, r->in.heap_size);
	EXPECT_EQ((uint64_t)node_id, t_sysfs("node_id"));
	EXPECT_EQ((uint64_t)nr_nodes, t_sysfs("nr_nodes"));
	EXPECT_EQ(part_size, t_sysfs("part_size"));
	EXPECT_EQ(nr_nodes * part_size, t_sysfs("heap_size"));
}

/* ... and map the new heap. */
static T_UNUSED void t_reconf_map(struct __test_metadata *_metadata,
				  struct t_reconf *r, uint32_t node_id,
				  uint32_t nr_nodes, uint64_t part_size)
{
	t_reconf_set(_metadata, r, node_id, nr_nodes, part_size);
	ASSERT_EQ((void *)r->base, t_map(r->fd, &r->in));
	r->mapped = 1;
}

#endif /* _ODSM_VM_TEST_H */
