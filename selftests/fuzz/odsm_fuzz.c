// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-fuzz: random ioctl and mm sequences against /dev/odsm, from several
 * processes and threads at once, in a rig guest (tools/rig/scenarios/fuzz.sh).
 *
 * Every worker thread draws its operations from its own generator, seeded
 * from --seed and its index, so a run is a function of (seed, ops) up to
 * the interleaving of the threads: a problem is printed with the seed and
 * the operation number that found it, and "--seed S --ops N" replays every
 * worker's sequence up to that point.
 *
 * A problem is
 *   - an errno outside the class the operation documents
 *     (uapi/linux/odsm.h: EIO, EPROTO, ECONNRESET, ENOTTY... never);
 *   - a result that breaks the ABI (SET_CONFIG accepted while the heap is
 *     mapped, an ALLOC outside the partition asked for);
 *   - a crash of the fuzzer itself: a SIGSEGV or SIGBUS anywhere but in a
 *     touch of the heap it provoked (those are counted as "faults");
 *   - a worker that makes no progress for --hang-secs (a hung ioctl or
 *     fault: its kernel stack is printed);
 *   - a kernel report in /dev/kmsg while it ran (WARNING, BUG, Oops,
 *     KFENCE, slub_debug's "BUG <cache>", a hung task, a stall).
 *
 * Modes:
 *   (default)      P processes x T threads: ALLOC/FREE/MOVE/OBJ_INFO with
 *                  boundary sizes and colors, READ/WRITE/ATOMIC across
 *                  partition edges, BORROW/RETURN/BORROW_MUT/WRITE_BACK,
 *                  the same on cache slots, touches of the heap (lazy
 *                  faults), partial munmap and remap, fork, close of a file
 *                  holding borrows, SET_CONFIG (refused: the heap is
 *                  mapped), cache knobs (zero budget, drop_caches).  When
 *                  the node is in a cluster, the objects each node publishes
 *                  in a directory at the start of its partition are borrowed,
 *                  moved, read and written from the other nodes, and one
 *                  thread leaves and re-joins the cluster now and then
 *                  (--join-nodes, --key-file).
 *   --only OPS     draw only the operations named (the mix[] names, and
 *                  publish, knobs, set_config, leave): to narrow down what
 *                  a problem needs.
 *   --config-race  on a node that has no object and joined nothing:
 *                  SET_CONFIG against JOIN/LEAVE, mmap/munmap, ALLOC/FREE
 *                  and INFO/STATUS, then the configuration is restored.
 *
 * Output: FUZZ_* lines; the last ones are one FUZZ_OPS line per category
 * (tried, ok, err: refused with an allowed errno, faults: provoked
 * SIGSEGV/SIGBUS) and "FUZZ_RESULT ... problems=N".  Exit status 0 iff no
 * problem was found.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/odsm.h>
#include <linux/odsm_deleg.h>
#include "../vm/uring_raw.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define KiB(x)		((uint64_t)(x) << 10)
#define MiB(x)		((uint64_t)(x) << 20)

#define MAX_PROCS	8
#define MAX_THREADS	8
#define MAX_WORKERS	(MAX_PROCS * MAX_THREADS)
#define POOL		32	/* objects a worker owns at a time */
#define HELD		32	/* borrows a worker holds at a time */
#define REMOTE		16	/* published objects per node */
#define BUFSZ		MiB(1)	/* a worker's I/O buffer, a guard page after */
#define PLOG		32	/* problem lines kept for the summary */
#define SYSFS		"/sys/kernel/odsm"

/* The directory: a 4 KiB object at the start of each node's partition,
 * allocated first, never freed: word 0 the magic ^ node, word 1 a
 * generation, words 2.. the colored addresses of the published objects;
 * from word 64, two per worker, the delegation endpoint it serves and its
 * slot size (0: none).
 */
#define DIR_SIZE	KiB(4)
#define DIR_MAGIC	0x5a5a55464d53444fULL	/* "ODSMFUZZ" */
#define DIR_OBJS	2
#define DIR_EPS		64

enum cat {
	C_ALLOC, C_FREE, C_MOVE, C_OBJINFO, C_READ, C_WRITE, C_ATOMIC,
	C_BORROW, C_RETURN, C_BORROW_MUT, C_WRITE_BACK, C_READ_OWNER,
	C_DROP, C_STATUS, C_TOUCH, C_MUNMAP, C_REMAP, C_FORK, C_CLOSE,
	C_SETCONFIG, C_JOIN, C_LEAVE, C_KNOBS, C_PUBLISH, C_PEER,
	C_MMAP_RACE, C_WAIT, C_WAKE, C_PREFETCH, C_DBIND, C_DSERVE, C_DCALL,
	C_URING, C_URING_EXIT, NCAT
};

static const char *const cat_name[NCAT] = {
	"alloc", "free", "move", "obj_info", "read", "write", "atomic",
	"borrow", "return", "borrow_mut", "write_back", "read_owner",
	"drop_copies", "status", "touch", "munmap", "remap", "fork", "close",
	"set_config", "join", "leave", "knobs", "publish", "peer_dir",
	"mmap_race", "wait", "wake", "prefetch", "deleg_bind", "deleg_serve",
	"deleg_call", "uring_cmd", "uring_exit",
};

/* errnos each category may answer with (0-terminated); EINVAL and EFAULT
 * always: the fuzzer passes bad arguments and bad pointers everywhere
 */
#define NET	EHOSTDOWN, ETIMEDOUT, EINTR
static const int allowed[NCAT][12] = {
	[C_ALLOC]	= { ENOMEM, ENOSPC, NET },
	[C_FREE]	= { ESTALE, NET },
	[C_MOVE]	= { ESTALE, ENOMEM },
	[C_OBJINFO]	= { ESTALE },
	/* ESTALE: another worker freed or moved the object meanwhile, and
	 * the heap, which now copies long ranges in batches, says so
	 */
	[C_READ]	= { ESTALE, ENOMEM, NET },
	[C_WRITE]	= { ESTALE, ENOMEM, EBUSY, NET },
	[C_ATOMIC]	= { ESTALE, ENOMEM, NET },
	[C_BORROW]	= { ESTALE, ENOMEM, EOVERFLOW, NET },
	[C_RETURN]	= { ENOENT },
	[C_BORROW_MUT]	= { ESTALE, ENOMEM, EOVERFLOW, ENOENT, NET },
	[C_WRITE_BACK]	= { ESTALE, EBUSY, EEXIST, ENOMEM, NET },
	[C_READ_OWNER]	= { ESTALE, EBUSY, ENOMEM, NET },
	[C_PREFETCH]	= { ENOMEM },
	[C_SETCONFIG]	= { EBUSY },
	[C_JOIN]	= { EBUSY, EADDRINUSE, EADDRNOTAVAIL, ENOMEM },
	[C_REMAP]	= { EBUSY, ENOMEM },
	[C_MMAP_RACE]	= { EBUSY, ENOMEM, EEXIST },	/* EEXIST: the other
							 * thread's mapping
							 */
	[C_PUBLISH]	= { ESTALE, ENOMEM, NET },
	[C_PEER]	= { ENOMEM, NET },
	/* EAGAIN: the word did not hold expect; ETIMEDOUT: nobody woke it */
	[C_WAIT]	= { EAGAIN, ETIMEDOUT, EINTR },
	/* a peer's word is woken by its home: down, or not answering */
	[C_WAKE]	= { NET },
	/* EADDRINUSE: this file or that endpoint is bound already */
	[C_DBIND]	= { EADDRINUSE, ENOMEM },
	/* EAGAIN: no batch in time; EBADMSG: the answer was malformed */
	[C_DSERVE]	= { EAGAIN, EBADMSG, EBADF, EINTR, ENOMEM },
	[C_DCALL]	= { EBADMSG, ESRCH, EOWNERDEAD, EBUSY, EAGAIN,
			    EMSGSIZE, ENOMEM, NET },
	/* a command's own errors are judged as its ioctl's (uring_judge) */
	[C_URING]	= { ENOTTY, ENOMEM },
};

struct wstat {
	volatile uint64_t beat_ms;	/* last progress */
	volatile int cat;		/* what it is doing: -1 idle */
	volatile int tid;
	volatile uint64_t opno;
	volatile int done;
};

/* shared by every process of the run (MAP_SHARED | MAP_ANONYMOUS) */
struct shared {
	volatile int stop;
	uint64_t tried[NCAT], ok[NCAT], err[NCAT], faults[NCAT];
	uint64_t problems;
	uint32_t nplog;
	char plog[PLOG][240];
	struct wstat w[MAX_WORKERS];
	/* the delegation endpoint each worker serves (0: none) */
	volatile uint64_t ep[MAX_WORKERS];
	volatile uint32_t ep_slot[MAX_WORKERS];
};

struct obj {
	uint64_t cg;		/* colored address */
	uint64_t size;
};

struct bor {
	uint64_t cg;		/* what was borrowed */
	uint64_t addr;		/* where its bytes are */
	uint64_t size;
	int fdgen;		/* the file it belongs to */
	bool shared_fd;
};

struct worker {
	uint64_t rng;
	int wid, proc;
	int fd;			/* this thread's own open file */
	int fdgen;
	uint64_t opno;
	struct obj pool[POOL];
	int npool;
	struct bor held[HELD];
	int nheld;
	uint64_t remote[REMOTE * 2];
	int nremote;
	uint8_t *buf;
	bool chaos;		/* does SET_CONFIG, knobs, leave/join */
	bool publisher;
	/* delegation: the endpoint this worker serves, on a file of its own */
	int dfd;		/* -1: it serves none */
	uint64_t dep;
	uint32_t dslot;
	struct odsm_deleg_lanes dl;	/* dl.trustees 0: bound without */
	uint64_t dticket;	/* a batch taken and not answered yet */
	uint32_t dreq_len;	/* its bytes, in dreq */
	uint8_t *dreq, *dresp;	/* ODSM_DSLOT_SIZE_MAX bytes each */
	uint8_t *uresp;		/* the io_uring calls' answers land here */
	uint64_t reps[REMOTE];	/* endpoints other nodes publish */
	uint32_t reps_slot[REMOTE];
	int nreps;
	/* io_uring: a ring of its own, and its commands' arguments */
	struct t_ring ring;
	bool have_ring, no_uring;
	struct uarg *uargs;
	unsigned int abandoned;
};

/* ---- options and geometry ------------------------------------------------- */

static uint64_t opt_seed;
static uint64_t opt_ops = UINT64_MAX;	/* per worker */
static unsigned int opt_secs = 60;
static unsigned int opt_procs = 3, opt_threads = 2;
static unsigned int opt_hang = 120;
static bool opt_config_race;
static const char *opt_join_nodes;	/* "ip:port,ip:port,..." */
static const char *opt_key_file;
static unsigned int opt_transport = ODSM_TRANSPORT_TCP;
static unsigned int opt_hb = 250, opt_to = 5000;
static const char *opt_addr = "10.0.0.1";
static bool opt_no_leave;

static struct shared *S;
static struct odsm_info G;
static bool cluster;		/* joined at the start */
static uint64_t t0_ms;
static int pfd = -1;		/* the process's shared file */
static int pfdgen;
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t defaults_budget, defaults_lazy, defaults_ra;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Whether a worker whose last progress was at *beat has made none for
 * secs. The beat is read before the clock: a worker that beats between
 * the two reads would otherwise make now - beat wrap to a huge value and
 * a busy worker look stuck (a CI run's "stuck for 75 s" 40 s after boot).
 */
static bool stalled(const volatile uint64_t *beat, unsigned int secs)
{
	uint64_t b = *beat, now = now_ms();

	return b && now > b && now - b > (uint64_t)secs * 1000;
}

static uint64_t part_start(unsigned int node)
{
	return G.heap_base + (uint64_t)node * G.part_size;
}

static uint64_t addr_of(uint64_t cg)
{
	return cg & ODSM_ADDR_MASK;
}

static uint16_t color_of(uint64_t cg)
{
	return (uint16_t)(cg >> ODSM_COLOR_SHIFT);
}

static uint64_t with_color(uint64_t cg, uint16_t c)
{
	return addr_of(cg) | ((uint64_t)c << ODSM_COLOR_SHIFT);
}

/* ---- randomness ------------------------------------------------------------ */

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t rnd(struct worker *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545f4914f6cdd1dULL;
}

static uint64_t below(struct worker *w, uint64_t n)
{
	return n ? rnd(w) % n : 0;
}

static bool chance(struct worker *w, unsigned int pct)
{
	return below(w, 100) < pct;
}

#define PICK(w, arr)	((arr)[below((w), ARRAY_SIZE(arr))])

/* ---- accounting ------------------------------------------------------------ */

static void add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static __thread struct worker *cur;

static void problem(const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	uint32_t i;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	add(&S->problems, 1);
	if (cur)
		printf("FUZZ_PROBLEM seed=%" PRIu64 " worker=%d op=%" PRIu64
		       ": %s (replay: odsm-fuzz --seed %" PRIu64 " --ops %"
		       PRIu64 ")\n", opt_seed, cur->wid, cur->opno, msg,
		       opt_seed, cur->opno + 1);
	else
		printf("FUZZ_PROBLEM seed=%" PRIu64 ": %s\n", opt_seed, msg);
	fflush(stdout);
	i = __atomic_fetch_add(&S->nplog, 1, __ATOMIC_RELAXED);
	if (i < PLOG)
		snprintf(S->plog[i], sizeof(S->plog[i]), "worker=%d op=%" PRIu64
			 ": %s", cur ? cur->wid : -1, cur ? cur->opno : 0, msg);
}

/* The outcome of one operation of category c: ret is the ioctl's return
 * (-1 with errno set, or 0); returns true on success.
 */
static bool judge(int c, long ret, int err)
{
	const int *a;

	add(&S->tried[c], 1);
	if (ret >= 0) {
		add(&S->ok[c], 1);
		return true;
	}
	if (err == EINVAL || err == EFAULT) {
		add(&S->err[c], 1);
		return false;
	}
	for (a = allowed[c]; *a; a++) {
		if (*a == err) {
			add(&S->err[c], 1);
			return false;
		}
	}
	add(&S->err[c], 1);
	problem("%s: unexpected errno %d (%s)", cat_name[c], err,
		strerror(err));
	return false;
}

static bool ioc(int c, int fd, unsigned long cmd, void *arg)
{
	long ret = ioctl(fd, cmd, arg);

	return judge(c, ret, ret < 0 ? errno : 0);
}

/* ---- touches of the heap: the faults the fuzzer provokes -------------------- */

static __thread volatile int in_touch;
static __thread sigjmp_buf touch_jmp;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	char msg[160];
	int n;

	if (in_touch) {
		in_touch = 0;
		siglongjmp(touch_jmp, 1);
	}
	/* the fuzzer crashed: say where, and end this process */
	n = snprintf(msg, sizeof(msg),
		     "FUZZ_PROBLEM seed=%" PRIu64 ": the fuzzer crashed: signal %d at %p\n",
		     opt_seed, sig, si->si_addr);
	if (write(1, msg, n) < 0)
		_exit(99);
	add(&S->problems, 1);
	_exit(99);
}

/* Read (or write) the byte at addr; false if it faulted. */
static bool touch(uint64_t addr, bool wr, uint8_t v)
{
	volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)addr;

	if (sigsetjmp(touch_jmp, 1)) {
		add(&S->faults[C_TOUCH], 1);
		return false;
	}
	in_touch = 1;
	if (wr)
		*p = v;
	else
		(void)*p;
	in_touch = 0;
	return true;
}

/* ---- the heap mapping ----------------------------------------------------- */

static int map_heap(int fd)
{
	void *p = mmap((void *)(uintptr_t)G.heap_base, G.heap_size,
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
		       fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	if ((uintptr_t)p != G.heap_base) {
		munmap(p, G.heap_size);
		return -EEXIST;
	}
	return 0;
}

/* ---- target selection ------------------------------------------------------ */

static uint16_t color_variant(struct worker *w, uint64_t cg)
{
	switch (below(w, 10)) {
	case 0:
		return 0;
	case 1:
		return color_of(cg) - 1;	/* one below the allocation's */
	case 2:
		return 0xffff;
	case 3:
		return (uint16_t)rnd(w);
	case 4:
		return color_of(cg) + 1;
	default:
		return color_of(cg);
	}
}

static uint64_t boundary_addr(struct worker *w)
{
	unsigned int peer = G.nr_nodes > 1 ?
		(G.node_id + 1 + below(w, G.nr_nodes - 1)) % G.nr_nodes :
		G.node_id;
	uint64_t ps = part_start(G.node_id), pe = ps + G.part_size;
	uint64_t he = G.heap_base + G.heap_size;
	const uint64_t a[] = {
		ps, ps + 16, ps + 8, ps + DIR_SIZE, pe - 16, pe - 8, pe,
		G.heap_base - 16, he - 8, he, part_start(peer),
		part_start(peer) + DIR_SIZE, part_start(peer) - 8, 0, ~0ULL,
		G.heap_base + (below(w, G.heap_size) & ~15ULL),
		ps + (below(w, MiB(64)) & ~15ULL),
		ps + KiB(64) * below(w, 1024),
		part_start(peer) + KiB(64) * below(w, 1024),
	};

	return with_color(PICK(w, a), (uint16_t)rnd(w));
}

/* A colored address to operate on: an object of this worker, one another
 * node published, a cached copy it borrowed, or an edge of the heap.
 */
static uint64_t pick_target(struct worker *w, uint64_t *size)
{
	unsigned int r = below(w, 100);
	uint64_t cg, sz = 16;

	if (r < 40 && w->npool) {
		struct obj *o = &w->pool[below(w, w->npool)];

		cg = o->cg;
		sz = o->size;
	} else if (r < 65 && w->nremote) {
		cg = w->remote[below(w, w->nremote)];
		sz = KiB(4);
	} else if (r < 80 && w->nheld) {
		struct bor *b = &w->held[below(w, w->nheld)];

		cg = chance(w, 50) ? b->cg : b->addr;
		sz = b->size;
	} else {
		cg = boundary_addr(w);
	}
	if (size)
		*size = sz;
	if (chance(w, 30))
		cg = with_color(cg, color_variant(w, cg));
	return cg;
}

/* Frees and moves never take a directory: the nodes find each other there */
static uint64_t not_dir(uint64_t cg)
{
	uint64_t a = addr_of(cg);

	if (a >= G.heap_base && a < G.heap_base + G.heap_size &&
	    (a - G.heap_base) % G.part_size == 0)
		return cg + 16;
	return cg;
}

static void pool_add(struct worker *w, uint64_t cg, uint64_t size)
{
	if (w->npool == POOL) {
		struct odsm_free f = { .gaddr = w->pool[0].cg };

		ioc(C_FREE, w->fd, ODSM_IOC_FREE, &f);
		w->pool[0] = w->pool[--w->npool];
	}
	w->pool[w->npool].cg = cg;
	w->pool[w->npool].size = size;
	w->npool++;
}

static void pool_del(struct worker *w, uint64_t cg)
{
	int i;

	for (i = 0; i < w->npool; i++) {
		if (addr_of(w->pool[i].cg) == addr_of(cg)) {
			w->pool[i] = w->pool[--w->npool];
			return;
		}
	}
}

/* the file a borrow goes through: the thread's own, or the process's one
 * that other threads close and reopen under it
 */
static int bfd(struct worker *w, bool *shared)
{
	*shared = chance(w, 25);
	return *shared ? pfd : w->fd;
}

/* ---- operations ------------------------------------------------------------ */

static const uint64_t sizes[] = {
	0, 1, 7, 8, 15, 16, 17, 100, 4095, 4096, 4097, KiB(32) - 1, KiB(32),
	KiB(32) + 1, KiB(64) - 1, KiB(64), KiB(64) + 1, KiB(256), KiB(256) + 1,
	MiB(1), MiB(1) + 4096, MiB(2), MiB(4),
};

static uint64_t pick_size(struct worker *w)
{
	switch (below(w, 20)) {
	case 0:
		return G.max_alloc;
	case 1:
		return G.max_alloc + 1;
	case 2:
		return G.part_size;
	case 3:
		return ~0ULL - below(w, 4);
	case 4:
		return 1 + below(w, KiB(128));
	default:
		return PICK(w, sizes);
	}
}

static void fill_alloc(struct worker *w, struct odsm_alloc *ap)
{
	static const uint32_t aligns[] = { 0, 1, 2, 3, 16, 64, 4096, 8192, 1U << 31 };
	struct odsm_alloc a = { 0 };
	uint64_t size = pick_size(w);
	unsigned int where;

	a.size = size;
	a.align = chance(w, 70) ? 0 : PICK(w, aligns);
	a.flags = chance(w, 50) ? ODSM_ALLOC_ZERO : 0;
	/* zeroing is only asked of objects the guest's memory can hold */
	if (size > MiB(4))
		a.flags = 0;
	where = below(w, 10);
	if (where == 0) {
		a.flags |= ODSM_ALLOC_ON_NODE;
		a.node = (uint32_t)below(w, G.nr_nodes + 2);
		/* what moves back here must fit */
		if (a.node != G.node_id && size > MiB(4) && chance(w, 95))
			a.size = 1 + below(w, MiB(4));
	} else if (where == 1) {
		a.flags |= ODSM_ALLOC_ANYWHERE;
	} else if (where == 2) {
		a.flags |= 1U << below(w, 32);
	}
	if (chance(w, 3))
		a.reserved = 1;
	if (chance(w, 2))
		a.reserved0 = 1;
	*ap = a;
}

/* What an ALLOC that succeeded answered: checked, and kept or given back. */
static void alloc_keep(struct worker *w, const struct odsm_alloc *ap)
{
	struct odsm_alloc a = *ap;

	if (a.reserved || a.reserved0)
		problem("alloc: accepted non-zero reserved fields");
	if (addr_of(a.gaddr) < G.heap_base ||
	    addr_of(a.gaddr) + a.usable > G.heap_base + G.heap_size ||
	    a.usable < a.size || (a.gaddr & (ODSM_MIN_ALIGN - 1)))
		problem("alloc: size %" PRIu64 " got gaddr 0x%" PRIx64
			" usable %" PRIu64, a.size, (uint64_t)a.gaddr,
			(uint64_t)a.usable);
	if ((a.flags & ODSM_ALLOC_ON_NODE) &&
	    (addr_of(a.gaddr) - G.heap_base) / G.part_size != a.node)
		problem("alloc: on node %u got 0x%" PRIx64, a.node,
			(uint64_t)a.gaddr);
	if ((addr_of(a.gaddr) - G.heap_base) / G.part_size == G.node_id) {
		pool_add(w, a.gaddr, a.size);
	} else {
		/* another node's: FREE is for this partition (EINVAL); a
		 * mutable borrow moves it here, freeing it at its home, so
		 * that no run fills the other partitions for good
		 */
		struct odsm_free f = { .gaddr = a.gaddr };
		struct odsm_borrow_mut m = { .gaddr = a.gaddr };

		if (chance(w, 20))
			ioc(C_FREE, w->fd, ODSM_IOC_FREE, &f);
		if (ioc(C_BORROW_MUT, w->fd, ODSM_IOC_BORROW_MUT, &m))
			pool_add(w, m.new_gaddr, m.size);
	}
}

static void op_alloc(struct worker *w)
{
	struct odsm_alloc a;

	fill_alloc(w, &a);
	if (ioc(C_ALLOC, w->fd, ODSM_IOC_ALLOC, &a))
		alloc_keep(w, &a);
}

static void op_free(struct worker *w)
{
	struct odsm_free f = { 0 };

	f.gaddr = not_dir(pick_target(w, NULL));
	if (chance(w, 3))
		f.reserved[below(w, 3)] = 1;
	if (ioc(C_FREE, w->fd, ODSM_IOC_FREE, &f))
		pool_del(w, f.gaddr);
}

static void op_move(struct worker *w)
{
	struct odsm_move m = { 0 };

	m.gaddr = not_dir(pick_target(w, NULL));
	if (chance(w, 3))
		m.reserved[below(w, 2)] = 1;
	if (ioc(C_MOVE, w->fd, ODSM_IOC_MOVE, &m)) {
		if (addr_of(m.new_gaddr) < part_start(G.node_id) ||
		    addr_of(m.new_gaddr) >= part_start(G.node_id) + G.part_size)
			problem("move: 0x%" PRIx64 " went to 0x%" PRIx64,
				(uint64_t)m.gaddr, (uint64_t)m.new_gaddr);
		pool_del(w, m.gaddr);
		pool_add(w, m.new_gaddr, 16);
	}
}

static void op_objinfo(struct worker *w)
{
	struct odsm_obj_info o = { 0 };

	o.gaddr = pick_target(w, NULL);
	if (chance(w, 3))
		o.reserved0 = 1;
	ioc(C_OBJINFO, w->fd, ODSM_IOC_OBJ_INFO, &o);
}

/* a user buffer for len bytes: mostly the worker's own (a guard page after
 * it stops a long copy with EFAULT), sometimes nothing, the kernel's, or
 * the heap itself (a fault of the heap inside the ioctl)
 */
static uint64_t pick_buf(struct worker *w, uint64_t len)
{
	switch (below(w, 20)) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return 0xffff888000000000ULL;
	case 3:
		if (w->npool) {
			struct obj *o = &w->pool[below(w, w->npool)];

			return addr_of(o->cg);
		}
		return G.heap_base + (below(w, G.heap_size) & ~4095ULL);
	default:
		if (len >= BUFSZ)
			return (uintptr_t)w->buf;
		return (uintptr_t)w->buf + BUFSZ - len - below(w, BUFSZ - len + 1) * chance(w, 50);
	}
}

static void fill_rw(struct worker *w, struct odsm_rw *rp)
{
	struct odsm_rw r = { 0 };
	uint64_t size, a, pe, lens[9];

	r.gaddr = pick_target(w, &size);
	a = addr_of(r.gaddr);
	if (chance(w, 30))
		a += below(w, size + 16);
	r.gaddr = with_color(a, color_of(r.gaddr));
	pe = G.heap_base + ((a - G.heap_base) / G.part_size + 1) * G.part_size;
	lens[0] = 0;
	lens[1] = 1 + below(w, 64);
	lens[2] = size;
	lens[3] = size + 1;
	lens[4] = KiB(256);
	lens[5] = KiB(256) + 1;
	lens[6] = pe - a;		/* to the partition's end */
	lens[7] = pe - a + 1;		/* one byte across it */
	lens[8] = 1 + below(w, KiB(600));
	r.len = PICK(w, lens);
	if (r.len > MiB(64) && chance(w, 80))
		r.len = MiB(1) + below(w, 4096);
	r.buf = pick_buf(w, r.len);
	if (chance(w, 3))
		r.reserved[below(w, 2)] = 1;
	*rp = r;
}

static void op_rw(struct worker *w, bool wr)
{
	struct odsm_rw r;

	fill_rw(w, &r);
	ioc(wr ? C_WRITE : C_READ, w->fd, wr ? ODSM_IOC_WRITE : ODSM_IOC_READ,
	    &r);
}

static void fill_atomic(struct worker *w, struct odsm_atomic *ap)
{
	struct odsm_atomic at = { 0 };
	uint64_t size, a;

	a = addr_of(pick_target(w, &size));
	if (chance(w, 80))
		a += below(w, size / 8 + 1) * 8;
	else
		a += below(w, 8);
	at.gaddr = a | ((uint64_t)below(w, 0x10000) << ODSM_COLOR_SHIFT);
	at.op = chance(w, 90) ? 1 + below(w, 2) : (uint32_t)below(w, 5);
	at.flags = chance(w, 70) ? 0 : (chance(w, 80) ? ODSM_ATOMIC_F_NIC :
					 (uint32_t)rnd(w));
	at.operand = rnd(w);
	at.compare = chance(w, 50) ? 0 : rnd(w);
	if (chance(w, 3))
		at.reserved[below(w, 2)] = 1;
	*ap = at;
}

static void op_atomic(struct worker *w)
{
	struct odsm_atomic at;

	fill_atomic(w, &at);
	ioc(C_ATOMIC, w->fd, ODSM_IOC_ATOMIC, &at);
}

/*
 * ODSM_IOC_WAIT and ODSM_IOC_WAKE on words of a target, aligned or not,
 * of every size, with bad fields now and then.  A wait always has a
 * timeout (at most 1 ms): a word nobody stores to would hold the worker
 * for good.
 */
static void op_wait(struct worker *w)
{
	struct odsm_wait wt = { 0 };
	struct odsm_wake wk = { 0 };
	uint64_t size, a;

	a = addr_of(pick_target(w, &size));
	if (chance(w, 80))
		a += below(w, size / 4 + 1) * 4;
	else
		a += below(w, 8);
	a |= (uint64_t)below(w, 0x10000) << ODSM_COLOR_SHIFT;
	if (chance(w, 40)) {
		wk.gaddr = a;
		wk.nr = chance(w, 90) ? (uint32_t)below(w, 4) : (uint32_t)rnd(w);
		if (chance(w, 3))
			wk.flags = (uint32_t)rnd(w);
		if (chance(w, 3))
			wk.reserved[below(w, 2)] = 1;
		ioc(C_WAKE, w->fd, ODSM_IOC_WAKE, &wk);
		return;
	}
	wt.gaddr = a;
	wt.size = chance(w, 90) ? (chance(w, 50) ? 4 : 8) :
				  (uint32_t)below(w, 17);
	wt.expect = chance(w, 70) ? 0 : rnd(w);
	wt.timeout_ns = 1 + below(w, 1000000);
	if (chance(w, 3))
		wt.flags = (uint32_t)rnd(w);
	if (chance(w, 3))
		wt.reserved[below(w, 2)] = 1;
	ioc(C_WAIT, w->fd, ODSM_IOC_WAIT, &wt);
}

static void fill_borrow(struct worker *w, struct odsm_borrow *b)
{
	memset(b, 0, sizeof(*b));
	b->gaddr = pick_target(w, NULL);
	if (chance(w, 3))
		b->flags = 1U << below(w, 32);
	if (chance(w, 3))
		b->reserved[below(w, 2)] = 1;
}

/* A BORROW that succeeded through fd (the process's own when sh). */
static void borrow_keep(struct worker *w, const struct odsm_borrow *bp,
			bool sh)
{
	struct odsm_borrow b = *bp;

	if (b.result > ODSM_BORROWED_MISS)
		problem("borrow: result %u", b.result);
	if (b.result == ODSM_BORROWED_LOCAL || w->nheld == HELD)
		return;
	w->held[w->nheld++] = (struct bor){ b.gaddr, b.addr, b.size,
					    sh ? pfdgen : w->fdgen, sh };
}

static void op_borrow(struct worker *w)
{
	struct odsm_borrow b;
	bool sh;
	int fd = bfd(w, &sh);

	fill_borrow(w, &b);
	if (ioc(C_BORROW, fd, ODSM_IOC_BORROW, &b))
		borrow_keep(w, &b, sh);
}

static void op_return(struct worker *w)
{
	struct odsm_borrow b = { 0 };
	int fd = w->fd, i = -1;

	if (w->nheld && chance(w, 85)) {
		i = (int)below(w, w->nheld);
		b.gaddr = w->held[i].cg;
		if (w->held[i].shared_fd)
			fd = pfd;
	} else {
		b.gaddr = pick_target(w, NULL);
	}
	ioc(C_RETURN, fd, ODSM_IOC_RETURN, &b);
	if (i >= 0)
		w->held[i] = w->held[--w->nheld];
}

static void op_borrow_mut(struct worker *w)
{
	struct odsm_borrow_mut m = { 0 };
	int i = -1, fd = w->fd;
	unsigned int r;

	if (w->nheld && chance(w, 30)) {
		i = (int)below(w, w->nheld);
		m.gaddr = w->held[i].cg;
		m.flags = ODSM_MUT_HELD_REF;
		/* the copy named, mostly, as libodsm does; or any (0), or
		 * one it does not hold (-EINVAL, nothing consumed)
		 */
		r = below(w, 100);
		if (r < 80)
			m.addr = w->held[i].addr;
		else if (r < 85)
			m.addr = w->held[i].addr + 64;
		if (w->held[i].shared_fd)
			fd = pfd;
	} else {
		m.gaddr = pick_target(w, NULL);
		if (chance(w, 5))
			m.flags = ODSM_MUT_HELD_REF;
	}
	m.gaddr = not_dir(m.gaddr);
	if (chance(w, 3))
		m.flags |= 1U << below(w, 32);
	if (!ioc(C_BORROW_MUT, fd, ODSM_IOC_BORROW_MUT, &m))
		return;
	if (m.result != ODSM_BORROWED_LOCAL && m.result != ODSM_BORROWED_MOVED &&
	    m.result != ODSM_BORROWED_TAKEN)
		problem("borrow_mut: result %u", m.result);
	if (addr_of(m.new_gaddr) < part_start(G.node_id) ||
	    addr_of(m.new_gaddr) >= part_start(G.node_id) + G.part_size)
		problem("borrow_mut: 0x%" PRIx64 " is not local", (uint64_t)m.new_gaddr);
	if (i >= 0 && (m.flags & ODSM_MUT_HELD_REF))
		w->held[i] = w->held[--w->nheld];
	if (m.result != ODSM_BORROWED_LOCAL)
		pool_add(w, m.new_gaddr, m.size);
}

static void fill_owner(struct worker *w, struct odsm_write_back *bp)
{
	struct odsm_write_back b = { 0 };
	uint64_t size, a = addr_of(pick_target(w, &size));

	if (chance(w, 80))
		a += below(w, size / 16 + 1) * 16;
	else
		a += below(w, 16);
	b.owner = a;
	b.g = chance(w, 50) ? pick_target(w, NULL) : 0;
	b.ext = rnd(w);
	b.flags = chance(w, 70) ? 0 : (chance(w, 80) ? ODSM_WB_IF_EMPTY :
					(uint32_t)rnd(w));
	if (chance(w, 3))
		b.reserved = 1;
	*bp = b;
}

static void op_owner(struct worker *w, bool wr)
{
	struct odsm_write_back b;

	fill_owner(w, &b);
	if (wr)
		ioc(C_WRITE_BACK, w->fd, ODSM_IOC_WRITE_BACK, &b);
	else
		ioc(C_READ_OWNER, w->fd, ODSM_IOC_READ_OWNER, &b);
}

/* ODSM_IOC_PREFETCH of targets (any node's), bad counts, bad pointers */
static void op_prefetch(struct worker *w)
{
	struct odsm_prefetch pf = { 0 };
	uint64_t g[64];
	unsigned int i, n = 1 + (unsigned int)below(w, 64);

	for (i = 0; i < n; i++)
		g[i] = chance(w, 90) ? pick_target(w, NULL) : rnd(w);
	pf.gaddrs = chance(w, 95) ? (uintptr_t)g : (uintptr_t)8;
	pf.n = chance(w, 95) ? n : (chance(w, 50) ? 0 : ODSM_PREFETCH_MAX + 1);
	if (chance(w, 3))
		pf.flags = 1;
	if (chance(w, 3))
		pf.reserved[1] = 1;
	ioc(C_PREFETCH, w->fd, ODSM_IOC_PREFETCH, &pf);
}

static void op_misc(struct worker *w)
{
	if (chance(w, 20)) {
		op_prefetch(w);
	} else if (chance(w, 50)) {
		struct odsm_drop_copies d = { 0 };

		if (chance(w, 5))
			d.reserved[0] = 1;
		ioc(C_DROP, w->fd, ODSM_IOC_DROP_COPIES, &d);
	} else {
		struct odsm_peer_info p[4];
		struct odsm_status st = { 0 };

		st.nr = (uint32_t)below(w, 5);
		st.peers = chance(w, 90) ? (uintptr_t)p : 8;
		if (st.nr > 4)
			st.nr = 1000;
		if (chance(w, 3))
			st.reserved[0] = 1;
		ioc(C_STATUS, w->fd, ODSM_IOC_STATUS, &st);
	}
}

static void op_touch(struct worker *w)
{
	uint64_t size, a;
	bool wr = false;
	unsigned int r = below(w, 10);

	if (r < 4 && w->npool) {
		struct obj *o = &w->pool[below(w, w->npool)];

		a = addr_of(o->cg) + below(w, o->size ? o->size : 1);
		wr = chance(w, 60);
	} else if (r < 8 && w->nheld) {
		struct bor *b = &w->held[below(w, w->nheld)];

		/* a lazy copy's page comes from its home now */
		a = b->addr + below(w, b->size ? b->size : 1);
		wr = chance(w, 5);
	} else {
		a = addr_of(pick_target(w, &size)) + below(w, KiB(64));
		wr = chance(w, 30);
	}
	add(&S->tried[C_TOUCH], 1);
	if (touch(a, wr, (uint8_t)rnd(w)))
		add(&S->ok[C_TOUCH], 1);
}

static void op_munmap(struct worker *w)
{
	uint64_t pages = G.heap_size / G.page_size;
	uint64_t first = below(w, pages), n = 1 + below(w, 1024);
	int ret;

	if (chance(w, 70))	/* mostly inside this partition */
		first = (part_start(G.node_id) - G.heap_base) / G.page_size +
			below(w, MiB(64) / G.page_size);
	if (first + n > pages)
		n = pages - first;
	pthread_mutex_lock(&map_lock);
	ret = munmap((void *)(uintptr_t)(G.heap_base + first * G.page_size),
		     n * G.page_size);
	judge(C_MUNMAP, ret, errno);	/* errno read after the call */
	pthread_mutex_unlock(&map_lock);
}

static void op_remap(struct worker *w)
{
	int ret;

	pthread_mutex_lock(&map_lock);
	munmap((void *)(uintptr_t)G.heap_base, G.heap_size);
	ret = map_heap(chance(w, 50) ? pfd : w->fd);
	judge(C_REMAP, ret, -ret);
	pthread_mutex_unlock(&map_lock);
}

static void op_close(struct worker *w)
{
	int fd = open(ODSM_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		add(&S->tried[C_CLOSE], 1);
		problem("open %s: %s", ODSM_DEVICE_PATH, strerror(errno));
		return;
	}
	if (chance(w, 50)) {
		/* the thread's file, with the borrows it holds */
		close(w->fd);
		w->fd = fd;
		w->fdgen++;
	} else {
		/* the process's file, while other threads use it: dup2
		 * closes the old one once their ioctls on it are done
		 */
		dup2(fd, pfd);
		close(fd);
		__atomic_fetch_add(&pfdgen, 1, __ATOMIC_RELAXED);
	}
	judge(C_CLOSE, 0, 0);
	/* their references went with the file (or will: ENOENT is fine) */
	w->nheld = 0;
}

static void run_op(struct worker *w, bool child);

static void op_fork(struct worker *w)
{
	pid_t pid;
	int st, i, n;

	pid = fork();
	if (pid < 0) {
		judge(C_FORK, -1, errno == EAGAIN ? ENOMEM : errno);
		return;
	}
	if (!pid) {
		/* the child: a few operations on the inherited files and
		 * mapping, then exit holding whatever borrows it holds
		 */
		struct obj had[POOL];
		int nhad = w->npool, j;

		memcpy(had, w->pool, sizeof(had));
		w->rng = splitmix(w->rng);
		/* the parent's ring is not the child's to submit on; and a
		 * ring it closed with ALLOCs in flight would leave objects
		 * nobody frees
		 */
		w->have_ring = false;
		w->uargs = NULL;
		w->abandoned = UINT_MAX;
		n = 1 + (int)below(w, 16);
		for (i = 0; i < n; i++)
			run_op(w, true);
		/*
		 * Objects outlive the process that allocated them: what the
		 * child allocated goes with it, or a long run fills the heap
		 * with objects nobody knows of
		 */
		for (i = 0; i < w->npool; i++) {
			struct odsm_free f = { .gaddr = w->pool[i].cg };

			/* colored: the child may have freed one of its
			 * parent's and been given the same address back
			 */
			for (j = 0; j < nhad; j++)
				if (had[j].cg == f.gaddr)
					break;
			if (j == nhad)
				ioctl(w->fd, ODSM_IOC_FREE, &f);
		}
		if (chance(w, 30))
			munmap((void *)(uintptr_t)G.heap_base, G.heap_size);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	add(&S->tried[C_FORK], 1);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		add(&S->ok[C_FORK], 1);
	else if (!(WIFEXITED(st) && WEXITSTATUS(st) == 99))	/* 99: said why */
		problem("fork: the child ended with status 0x%x", st);
}

static const struct odsm_config bogus_cfg[] = {
	{ .node_id = 0, .nr_nodes = 0 },
	{ .node_id = 0, .nr_nodes = ODSM_MAX_NODES + 1 },
	{ .node_id = 8, .nr_nodes = 8 },
	{ .node_id = 0, .nr_nodes = 1, .heap_base = 0x100000001000ULL, .part_size = MiB(2) },
	{ .node_id = 0, .nr_nodes = 1, .heap_base = 0x100000000000ULL, .part_size = 0 },
	{ .node_id = 0, .nr_nodes = 256, .heap_base = 0x100000000000ULL, .part_size = ODSM_MAX_PART_SIZE },
	{ .node_id = 0, .nr_nodes = 1, .heap_base = ~0ULL << 21, .part_size = MiB(2) },
	{ .node_id = 0, .nr_nodes = 1, .heap_base = 0x100000000000ULL, .part_size = MiB(2), .reserved = { 1 } },
};

static void op_setconfig(struct worker *w)
{
	struct odsm_config c;

	if (chance(w, 50)) {
		c = bogus_cfg[below(w, ARRAY_SIZE(bogus_cfg))];
	} else {
		/* a valid geometry: this one, or 8 nodes of which this is
		 * the last
		 */
		memset(&c, 0, sizeof(c));
		c.heap_base = G.heap_base;
		c.part_size = G.part_size;
		c.nr_nodes = chance(w, 50) ? G.nr_nodes : 8;
		c.node_id = c.nr_nodes == 8 ? 7 : G.node_id;
	}
	if (ioc(C_SETCONFIG, w->fd, ODSM_IOC_SET_CONFIG, &c))
		/* the directory is allocated and the heap mapped here */
		problem("set_config: accepted (%u nodes, node %u) with objects allocated and the heap mapped",
			c.nr_nodes, c.node_id);
}

/* ---- the cluster: joining ------------------------------------------------- */

static int parse_nodes(struct odsm_node_addr *t, unsigned int max)
{
	char *s = strdup(opt_join_nodes), *tok, *save = NULL, *colon;
	unsigned int n = 0;

	for (tok = strtok_r(s, ",", &save); tok && n < max;
	     tok = strtok_r(NULL, ",", &save)) {
		struct in_addr ia;

		memset(&t[n], 0, sizeof(t[n]));
		colon = strchr(tok, ':');
		t[n].port = colon ? (uint16_t)atoi(colon + 1) : 7100;
		if (colon)
			*colon = 0;
		if (inet_pton(AF_INET, tok, &ia) != 1)
			break;
		t[n].ipv4 = ia.s_addr;
		n++;
	}
	free(s);
	return (int)n;
}

static int read_key(uint8_t *key, unsigned int max)
{
	int fd, n;

	if (!opt_key_file)
		return -1;
	fd = open(opt_key_file, O_RDONLY);
	if (fd < 0)
		return -1;
	n = (int)read(fd, key, max);
	close(fd);
	return n;
}

static int do_join(int fd, struct odsm_node_addr *t, unsigned int n,
		   const uint8_t *key, unsigned int klen)
{
	struct odsm_join j = { 0 };

	j.transport = opt_transport;
	j.nr_nodes = n;
	j.nodes = (uintptr_t)t;
	j.heartbeat_ms = opt_hb;
	j.timeout_ms = opt_to;
	j.key = (uintptr_t)key;
	j.key_len = klen;
	return ioctl(fd, ODSM_IOC_JOIN, &j) ? -errno : 0;
}

/* LEAVE, a pause, JOIN again: the other nodes see this one go down and
 * come back while their operations on it run
 */
static void op_leave_join(struct worker *w)
{
	struct odsm_node_addr t[ODSM_MAX_NODES];
	uint8_t key[ODSM_KEY_MAX];
	int n, klen, ret, i;

	if (!opt_join_nodes)
		return;
	n = parse_nodes(t, ODSM_MAX_NODES);
	klen = read_key(key, sizeof(key));
	if (n <= 0 || klen <= 0) {
		add(&S->tried[C_JOIN], 1);
		problem("join: cannot read --join-nodes or --key-file");
		return;
	}
	ioc(C_LEAVE, w->fd, ODSM_IOC_LEAVE, NULL);
	usleep((useconds_t)below(w, 500000));
	/* the port may be held a moment after the leave */
	for (i = 0; i < 50; i++) {
		ret = do_join(w->fd, t, (unsigned int)n, key, (unsigned int)klen);
		if (ret != -EADDRINUSE)
			break;
		usleep(100000);
	}
	judge(C_JOIN, ret, -ret);
	if (ret && ret != -EBUSY)
		problem("join: the re-join failed: %s", strerror(-ret));
}

/* ---- knobs ----------------------------------------------------------------- */

static int write_file(const char *path, uint64_t v)
{
	char s[32];
	int fd = open(path, O_WRONLY), n, ret = 0;

	if (fd < 0)
		return -errno;
	n = snprintf(s, sizeof(s), "%" PRIu64 "\n", v);
	if (write(fd, s, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

static uint64_t read_file(const char *path)
{
	char s[32] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return 0;
	if (read(fd, s, sizeof(s) - 1) < 0)
		s[0] = 0;
	close(fd);
	return strtoull(s, NULL, 0);
}

static void op_knobs(struct worker *w)
{
	int ret = 0;

	switch (below(w, 5)) {
	case 0:	/* no room for copies at all, or the default */
		ret = write_file(SYSFS "/cache_budget_bytes",
				 chance(w, 60) ? 0 : (chance(w, 50) ? 4096 : defaults_budget));
		break;
	case 1:
		ret = write_file(SYSFS "/lazy_threshold",
				 chance(w, 60) ? KiB(64) : defaults_lazy);
		break;
	case 2:
		ret = write_file(SYSFS "/readahead_pages",
				 chance(w, 50) ? 1 : defaults_ra);
		break;
	default:	/* the shrinker */
		ret = write_file("/proc/sys/vm/drop_caches", 3);
		break;
	}
	judge(C_KNOBS, ret, -ret);
}

/* ---- the directory --------------------------------------------------------- */

static int rw_local(int fd, unsigned long cmd, uint64_t gaddr, void *buf,
		    uint64_t len)
{
	struct odsm_rw r = { .gaddr = gaddr, .buf = (uintptr_t)buf, .len = len };

	return ioctl(fd, cmd, &r) ? -errno : 0;
}

/* replace one published object of this node with a fresh one */
static void op_publish(struct worker *w)
{
	static const uint64_t psz[] = {
		16, 100, 4096, KiB(64), KiB(64) + 16, KiB(300), MiB(1), MiB(1) + KiB(68),
	};
	uint64_t slot = below(w, REMOTE), old = 0, dir = part_start(G.node_id);
	struct odsm_alloc a = { 0 };
	struct odsm_free f = { 0 };
	uint64_t magic = DIR_MAGIC ^ G.node_id;

	a.size = PICK(w, psz);
	a.flags = ODSM_ALLOC_ZERO;
	if (!ioc(C_PUBLISH, w->fd, ODSM_IOC_ALLOC, &a))
		return;
	/* something the other nodes can check the bytes of */
	memset(w->buf, (int)(slot + 1), a.size < BUFSZ ? a.size : BUFSZ);
	rw_local(w->fd, ODSM_IOC_WRITE, a.gaddr, w->buf, a.size < BUFSZ ? a.size : BUFSZ);
	rw_local(w->fd, ODSM_IOC_READ, dir + 8 * (DIR_OBJS + slot), &old, 8);
	if (rw_local(w->fd, ODSM_IOC_WRITE, dir + 8 * (DIR_OBJS + slot), &a.gaddr, 8) ||
	    rw_local(w->fd, ODSM_IOC_WRITE, dir, &magic, 8)) {
		/* the fuzzer's own directory is gone or moved: the other
		 * nodes lose their targets, nothing worse
		 */
		f.gaddr = a.gaddr;
		ioc(C_FREE, w->fd, ODSM_IOC_FREE, &f);
		return;
	}
	if (old) {
		/* may have moved to a borrower already: ESTALE */
		f.gaddr = old;
		ioc(C_FREE, w->fd, ODSM_IOC_FREE, &f);
	}
}

/* read the directory of a node (another one when there is one) */
static void op_peer(struct worker *w)
{
	unsigned int node = G.nr_nodes > 1 && cluster ?
		(G.node_id + 1 + below(w, G.nr_nodes - 1)) % G.nr_nodes : G.node_id;
	uint64_t words[DIR_EPS + 2 * MAX_WORKERS];
	struct odsm_rw r = { 0 };
	int i;

	r.gaddr = part_start(node);
	r.buf = (uintptr_t)words;
	r.len = sizeof(words);
	if (!ioc(C_PEER, w->fd, ODSM_IOC_READ, &r))
		return;
	if (words[0] != (DIR_MAGIC ^ node))
		return;		/* not published yet, or scribbled on */
	w->nremote = 0;
	for (i = 0; i < REMOTE; i++)
		if (words[DIR_OBJS + i])
			w->remote[w->nremote++] = words[DIR_OBJS + i];
	if (node == G.node_id)
		return;
	w->nreps = 0;
	for (i = 0; i < MAX_WORKERS && w->nreps < REMOTE; i++) {
		if (!words[DIR_EPS + 2 * i])
			continue;
		w->reps[w->nreps] = words[DIR_EPS + 2 * i];
		w->reps_slot[w->nreps++] = (uint32_t)words[DIR_EPS + 2 * i + 1];
	}
}

/* ---- delegation: BIND, SERVE and CALL ------------------------------------- */

static const uint32_t dslots[] = { 256, 512, 1024, 4096, 65536 };

static uint32_t pick_dslot(struct worker *w)
{
	static const uint32_t bad[] = { 0, 8, 255, 257, 3000, 131072, ~0U };

	return chance(w, 90) ? PICK(w, dslots) : PICK(w, bad);
}

/*
 * A request batch for a slot of slot bytes at buf: mostly well formed
 * (records of every kind, inline arguments, apply_with and entrust
 * arguments naming targets), sometimes lying in its counts, lengths,
 * kinds or flags, or random bytes.  Returns the bytes to send.
 */
static uint32_t gen_batch(struct worker *w, uint8_t *buf, uint32_t slot)
{
	struct odsm_dslot_hdr h = { 0 };
	uint32_t off = sizeof(h), n, i, room;

	if (slot < sizeof(h) || slot > ODSM_DSLOT_SIZE_MAX)
		slot = 256;
	memset(buf, 0, slot);
	if (chance(w, 5)) {
		for (i = 0; i < slot; i++)
			buf[i] = (uint8_t)rnd(w);
		return sizeof(h) + (uint32_t)below(w, slot - sizeof(h) + 1);
	}
	n = chance(w, 90) ? (uint32_t)below(w, 5) : (uint32_t)below(w, 70000);
	for (i = 0; i < n; i++) {
		struct odsm_dreq r = { 0 };
		uint32_t arg = 0;

		r.op = chance(w, 95) ? 1 + below(w, 8) : rnd(w) * chance(w, 50);
		r.obj = chance(w, 80) ? below(w, 4096) : rnd(w);
		r.kind = chance(w, 90) ? 1 + (uint16_t)below(w, 5) :
					 (uint16_t)rnd(w);
		if (r.kind == ODSM_DREQ_APPLY_WITH)
			arg = sizeof(struct odsm_dwith);
		else if (r.kind == ODSM_DREQ_ENTRUST)
			arg = sizeof(struct odsm_dentrust);
		else if (r.kind == ODSM_DREQ_APPLY || r.kind == ODSM_DREQ_LAUNCH)
			arg = (uint32_t)below(w, 48);
		r.arg_len = chance(w, 95) ? arg : (uint32_t)rnd(w);
		r.ret_max = chance(w, 90) ? (uint32_t)below(w, 64) : (uint32_t)rnd(w);
		r.flags = chance(w, 97) ? 0 : (uint16_t)rnd(w);
		r.tag = i;
		room = (arg + 7) & ~7u;
		if (off + sizeof(r) + room > slot)
			break;
		memcpy(buf + off, &r, sizeof(r));
		if (r.kind == ODSM_DREQ_APPLY_WITH) {
			struct odsm_dwith a = { pick_target(w, NULL),
						1 + below(w, KiB(8)) };

			memcpy(buf + off + sizeof(r), &a, sizeof(a));
		} else if (r.kind == ODSM_DREQ_ENTRUST) {
			struct odsm_dentrust e = { pick_target(w, NULL),
						   below(w, 3) };

			memcpy(buf + off + sizeof(r), &e, sizeof(e));
		} else {
			memset(buf + off + sizeof(r), (int)i, arg);
		}
		off += sizeof(r) + room;
	}
	h.seq = (uint32_t)rnd(w);
	h.count = chance(w, 95) ? (uint16_t)i : (uint16_t)rnd(w);
	h.flags = chance(w, 80) ? 0 : (chance(w, 80) ? ODSM_DSLOT_F_GATEWAY :
					(uint16_t)rnd(w));
	h.len = chance(w, 95) ? off - sizeof(h) : (uint32_t)rnd(w);
	h.status = chance(w, 97) ? 0 : (int32_t)rnd(w);
	memcpy(buf, &h, sizeof(h));
	if (chance(w, 5))	/* a byte of it flipped */
		buf[below(w, off)] ^= (uint8_t)(1 + below(w, 255));
	return chance(w, 95) ? off : (uint32_t)below(w, slot + 64);
}

/*
 * The answer to the request batch req (req_len bytes) in resp: a record
 * per request with its tag, results within its ret_max; sometimes a
 * status for the whole batch, or lies.  Returns the answer's length.
 */
static uint32_t gen_answer(struct worker *w, const uint8_t *req,
			   uint32_t req_len, uint8_t *resp, uint32_t slot)
{
	struct odsm_dslot_hdr q, h = { 0 };
	uint32_t off = sizeof(h), roff = sizeof(q), i;

	memset(resp, 0, slot);
	if (req_len < sizeof(q))
		return sizeof(h);
	memcpy(&q, req, sizeof(q));
	h.seq = q.seq;
	h.count = q.count;
	if (chance(w, 10)) {
		h.count = 0;
		h.status = -(int32_t)(1 + below(w, 130));
	}
	for (i = 0; i < h.count; i++) {
		struct odsm_dresp a = { 0 };
		struct odsm_dreq r;
		uint32_t rl;

		if (roff + sizeof(r) > req_len)
			break;
		memcpy(&r, req + roff, sizeof(r));
		roff += sizeof(r) + ((r.arg_len + 7) & ~7u);
		rl = r.ret_max < 32 ? r.ret_max : 32;
		a.status = chance(w, 80) ? 0 : -(int32_t)below(w, 130);
		a.ret_len = chance(w, 95) ? (uint32_t)below(w, rl + 1) :
					    (uint32_t)rnd(w);
		a.tag = chance(w, 97) ? r.tag : (uint32_t)rnd(w);
		if (off + sizeof(a) + ((rl + 7) & ~7u) > slot)
			break;
		memcpy(resp + off, &a, sizeof(a));
		off += sizeof(a) + ((a.ret_len < rl ? a.ret_len : rl) + 7) / 8 * 8;
	}
	h.len = off - sizeof(h);
	memcpy(resp, &h, sizeof(h));
	if (chance(w, 5))
		resp[below(w, off)] ^= (uint8_t)(1 + below(w, 255));
	return chance(w, 95) ? off : (uint32_t)below(w, slot + 64);
}

/* Publish (or clear) the endpoint this worker serves in its directory. */
static void dir_endpoint(struct worker *w)
{
	uint64_t v[2] = { w->dfd >= 0 ? w->dep : 0, w->dfd >= 0 ? w->dslot : 0 };

	S->ep_slot[w->wid] = (uint32_t)v[1];
	S->ep[w->wid] = v[0];
	rw_local(w->fd, ODSM_IOC_WRITE,
			 part_start(G.node_id) + 8 * (DIR_EPS + 2 * w->wid), v,
			 sizeof(v));
}

/*
 * Lanes for an endpoint: request/response slot pairs in an object of the
 * worker's (which it may free under them later), a wake word beside
 * them, and now and then a geometry that lies.
 */
static void gen_lanes(struct worker *w, struct odsm_deleg_lanes *l,
		      uint32_t slot)
{
	uint64_t base = w->npool ? addr_of(w->pool[below(w, w->npool)].cg) :
				   addr_of(boundary_addr(w));

	memset(l, 0, sizeof(*l));
	l->trustees = chance(w, 95) ? 1 + (uint32_t)below(w, 2) :
				      (uint32_t)below(w, 100);
	l->lanes = chance(w, 95) ? 1 + (uint32_t)below(w, 2) :
				   (uint32_t)below(w, 20);
	l->slots = base;
	l->trustee_stride = chance(w, 90) ? (uint64_t)l->lanes * 2 * slot :
					    rnd(w) & 0xffffff;
	l->wake = base + (uint64_t)l->trustees * l->trustee_stride;
	l->wake_stride = chance(w, 90) ? 4 : (uint32_t)rnd(w);
	l->cells = chance(w, 95) ? 1 + (uint32_t)below(w, 2048) :
				   (uint32_t)rnd(w) * chance(w, 50);
	if (chance(w, 3))
		l->reserved[below(w, 2)] = 1;
	if (chance(w, 5))
		l->slots = boundary_addr(w);
}

static void op_dbind(struct worker *w)
{
	struct odsm_deleg_bind b = { 0 };
	struct odsm_deleg_lanes l;
	int fd;

	/* the endpoint that was: its queued and taken batches fail */
	if (w->dfd >= 0 && chance(w, 70)) {
		close(w->dfd);
		w->dfd = -1;
		w->dticket = 0;
		dir_endpoint(w);
	}
	fd = w->dfd >= 0 ? w->dfd : open(ODSM_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		problem("open %s: %s", ODSM_DEVICE_PATH, strerror(errno));
		return;
	}
	switch (below(w, 10)) {
	case 0:
		b.endpoint = boundary_addr(w);
		break;
	case 1:
		b.endpoint = part_start(G.node_id) + (below(w, MiB(64)) & ~7ULL);
		break;
	default:
		b.endpoint = w->npool ? w->pool[below(w, w->npool)].cg :
					boundary_addr(w);
	}
	b.slot_size = pick_dslot(w);
	if (chance(w, 25)) {
		b.flags = ODSM_DELEG_BIND_LANES;
		gen_lanes(w, &l, b.slot_size);
		b.lanes = chance(w, 95) ? (uintptr_t)&l : 8;
	} else if (chance(w, 4)) {
		b.flags = (uint32_t)rnd(w);
		b.lanes = rnd(w);
	}
	if (chance(w, 3))
		b.reserved = 1;
	if (!ioc(C_DBIND, fd, ODSM_IOC_DELEG_BIND, &b)) {
		if (fd != w->dfd)
			close(fd);
		return;
	}
	if (fd == w->dfd) {
		problem("deleg_bind: a second endpoint on one file");
		return;
	}
	w->dfd = fd;
	w->dep = b.endpoint;
	w->dslot = b.slot_size;
	w->dticket = 0;
	if (b.flags & ODSM_DELEG_BIND_LANES)
		w->dl = l;
	else
		w->dl.trustees = 0;
	dir_endpoint(w);
}

/*
 * Answer what the module published in this worker's lanes, as a trustee
 * would: the response's records, then its seq, then a wake of the word.
 * Through READ and WRITE, which say when the object under them went.
 */
static void answer_lanes(struct worker *w)
{
	struct odsm_deleg_lanes *l = &w->dl;
	uint8_t *lreq = w->buf + KiB(256), *lresp = w->buf + KiB(384);
	struct odsm_dslot_hdr q, r;
	struct odsm_wake wk = { 0 };
	uint32_t t, i, len, n;
	uint64_t req;

	if (l->trustees > 4 || l->lanes > 4 || w->dslot > ODSM_DSLOT_SIZE_MAX)
		return;
	for (t = 0; t < l->trustees; t++) {
		for (i = 0; i < l->lanes; i++) {
			req = l->slots + t * l->trustee_stride +
			      (uint64_t)i * 2 * w->dslot;
			if (rw_local(w->fd, ODSM_IOC_READ, req, &q, sizeof(q)) ||
			    rw_local(w->fd, ODSM_IOC_READ, req + w->dslot, &r,
				     sizeof(r)) || q.seq == r.seq)
				continue;
			len = sizeof(q) + (q.len < w->dslot - sizeof(q) ?
					   q.len : w->dslot - sizeof(q));
			if (rw_local(w->fd, ODSM_IOC_READ, req, lreq, len))
				continue;
			n = gen_answer(w, lreq, len, lresp, w->dslot);
			if (n < sizeof(r) || n > w->dslot)
				n = sizeof(r);
			/* the records, then the header with the seq last */
			rw_local(w->fd, ODSM_IOC_WRITE, req + w->dslot + 4,
				 lresp + 4, n - 4);
			rw_local(w->fd, ODSM_IOC_WRITE, req + w->dslot,
				 lresp, 4);
			wk.gaddr = req + w->dslot;
			ioc(C_WAKE, w->fd, ODSM_IOC_WAKE, &wk);
		}
	}
}

static void op_dserve(struct worker *w)
{
	struct odsm_deleg_serve s = { 0 };
	int fd = w->dfd >= 0 ? w->dfd : w->fd;	/* w->fd: EBADF */

	if (w->dfd >= 0 && w->dl.trustees)
		answer_lanes(w);
	if (w->dticket) {
		s.done = chance(w, 95) ? w->dticket : rnd(w);
		s.resp_len = gen_answer(w, w->dreq, w->dreq_len, w->dresp,
					w->dslot);
		s.resp = chance(w, 97) ? (uintptr_t)w->dresp : 8;
	} else if (chance(w, 5)) {
		s.done = rnd(w);
		s.resp = (uintptr_t)w->dresp;
		s.resp_len = (uint32_t)below(w, 512);
	}
	s.req = chance(w, 97) ? (uintptr_t)w->dreq : (chance(w, 50) ? 8 :
		(uintptr_t)w->buf + BUFSZ - below(w, 64));
	s.timeout_ms = 1 + (uint32_t)below(w, 30);	/* 0 would wait for good */
	if (chance(w, 3))
		s.reserved[below(w, 2)] = 1;
	w->dticket = 0;
	if (ioc(C_DSERVE, fd, ODSM_IOC_DELEG_SERVE, &s)) {
		if (!s.ticket || s.req_len < sizeof(struct odsm_dslot_hdr) ||
		    s.req_len > w->dslot)
			problem("deleg_serve: ticket %" PRIu64 " of %u bytes",
				(uint64_t)s.ticket, s.req_len);
		w->dticket = s.ticket;
		w->dreq_len = s.req_len;
	}
}

/* An endpoint to call: a live one of this node or another, or any word. */
static void pick_endpoint(struct worker *w, uint64_t *ep, uint32_t *slot)
{
	unsigned int r = below(w, 10), i;

	*slot = pick_dslot(w);
	if (r < 4) {
		/* one served on this node, by any worker of any process */
		i = (unsigned int)below(w, opt_procs * opt_threads);
		*ep = S->ep[i];
		if (*ep && chance(w, 90))
			*slot = S->ep_slot[i];
		if (*ep)
			return;
	}
	if (r < 7 && w->nreps) {
		i = (unsigned int)below(w, w->nreps);
		*ep = w->reps[i];
		if (chance(w, 90))
			*slot = w->reps_slot[i];
		return;
	}
	*ep = pick_target(w, NULL);
}

/* The arguments of a DELEG_CALL, its batch in buf (slot_size bytes). */
static void fill_call(struct worker *w, struct odsm_deleg_call *c,
		      uint8_t *buf, uint32_t cap, uint8_t *resp)
{
	uint64_t ep;
	uint32_t slot;

	memset(c, 0, sizeof(*c));
	pick_endpoint(w, &ep, &slot);
	c->endpoint = ep;
	c->slot_size = slot;
	c->req_len = gen_batch(w, buf, c->slot_size <= cap ? c->slot_size :
				       cap);
	c->req = chance(w, 97) ? (uintptr_t)buf : 8;
	c->resp = chance(w, 97) ? (uintptr_t)resp : 8;
	c->resp_cap = chance(w, 90) ? ODSM_DSLOT_SIZE_MAX :
				      (uint32_t)below(w, 70000);
	if (chance(w, 3))
		c->reserved[below(w, 2)] = 1;
}

/*
 * A call waits for its answer for up to 3/4 of the cluster's timeout:
 * one to an endpoint of this very worker goes through io_uring instead
 * (op_uring), which this thread then serves.
 */
static void op_dcall(struct worker *w)
{
	struct odsm_deleg_call c;

	fill_call(w, &c, w->buf, ODSM_DSLOT_SIZE_MAX, w->buf + KiB(128));
	if (w->dfd >= 0 && addr_of(c.endpoint) == addr_of(w->dep))
		c.endpoint = pick_target(w, NULL);
	ioc(C_DCALL, w->fd, ODSM_IOC_DELEG_CALL, &c);
}

static void op_deleg(struct worker *w)
{
	unsigned int r = below(w, 100);

	if (r < 15 || (w->dfd < 0 && r < 40))
		op_dbind(w);
	else if (r < 55)
		op_dserve(w);
	else
		op_dcall(w);
}

/* ---- io_uring: the same operations, many in flight ------------------------- */

#define UBATCH	8	/* commands a worker submits at once */

struct uarg {
	union {
		struct odsm_rw rw;
		struct odsm_atomic at;
		struct odsm_alloc al;
		struct odsm_free fr;
		struct odsm_borrow bo;
		struct odsm_borrow_mut bm;
		struct odsm_write_back wb;
		struct odsm_deleg_call dc;
		struct odsm_prefetch pf;
	} u;
	uint64_t g[8];		/* a PREFETCH's addresses */
	uint8_t req[KiB(16)];	/* a DELEG_CALL's batch: at most this long */
	uint32_t op;		/* cmd_op */
	int cat;		/* whose errnos it may answer with */
	bool sh;		/* sent on the process's file, not the thread's */
	bool done;
};

/* Fill command i of a batch: any command io_uring takes, or one it refuses. */
static void fill_ucmd(struct worker *w, struct uarg *u)
{
	static const uint32_t refused[] = {
		ODSM_IOC_INFO, ODSM_IOC_SET_CONFIG, ODSM_IOC_MOVE, ODSM_IOC_LEAVE,
		ODSM_IOC_JOIN, ODSM_IOC_DELEG_SERVE, ODSM_IOC_WAIT, 0, 0x1234,
	};
	unsigned int i, n;

	memset(&u->u, 0, sizeof(u->u));
	u->done = false;
	switch (below(w, 13)) {
	case 0:
	case 1:
		fill_rw(w, &u->u.rw);
		u->op = chance(w, 50) ? ODSM_IOC_READ : ODSM_IOC_WRITE;
		u->cat = u->op == ODSM_IOC_READ ? C_READ : C_WRITE;
		break;
	case 2:
		fill_atomic(w, &u->u.at);
		u->op = ODSM_IOC_ATOMIC;
		u->cat = C_ATOMIC;
		break;
	case 3:
		fill_alloc(w, &u->u.al);
		/* small: a ring closed under it leaves it allocated */
		if (u->u.al.size > KiB(64))
			u->u.al.size = 1 + below(w, KiB(64));
		u->op = ODSM_IOC_ALLOC;
		u->cat = C_ALLOC;
		break;
	case 4:
		u->u.fr.gaddr = not_dir(pick_target(w, NULL));
		u->op = ODSM_IOC_FREE;
		u->cat = C_FREE;
		break;
	case 5:
	case 6:
		fill_borrow(w, &u->u.bo);
		u->op = chance(w, 80) ? ODSM_IOC_BORROW : ODSM_IOC_RETURN;
		u->cat = u->op == ODSM_IOC_BORROW ? C_BORROW : C_RETURN;
		break;
	case 7:
		u->u.bm.gaddr = not_dir(pick_target(w, NULL));
		if (chance(w, 5))
			u->u.bm.flags = 1U << below(w, 32);
		u->op = ODSM_IOC_BORROW_MUT;
		u->cat = C_BORROW_MUT;
		break;
	case 8:
		fill_owner(w, &u->u.wb);
		u->op = chance(w, 50) ? ODSM_IOC_WRITE_BACK : ODSM_IOC_READ_OWNER;
		u->cat = u->op == ODSM_IOC_WRITE_BACK ? C_WRITE_BACK :
							C_READ_OWNER;
		break;
	case 9:
		n = 1 + (unsigned int)below(w, 8);
		for (i = 0; i < n; i++)
			u->g[i] = pick_target(w, NULL);
		u->u.pf.gaddrs = (uintptr_t)u->g;
		u->u.pf.n = chance(w, 95) ? n : ODSM_PREFETCH_MAX + 1;
		u->op = ODSM_IOC_PREFETCH;
		u->cat = C_PREFETCH;
		break;
	case 10:
	case 11:
		fill_call(w, &u->u.dc, u->req, sizeof(u->req), w->uresp);
		/* now and then the endpoint this worker serves itself */
		if (w->dfd >= 0 && chance(w, 50)) {
			u->u.dc.endpoint = w->dep;
			u->u.dc.slot_size = w->dslot;
			u->u.dc.req_len = gen_batch(w, u->req,
						    w->dslot < sizeof(u->req) ?
						    w->dslot : sizeof(u->req));
		}
		u->op = ODSM_IOC_DELEG_CALL;
		u->cat = C_DCALL;
		break;
	default:
		u->op = PICK(w, refused);
		u->cat = C_URING;	/* ENOTTY */
	}
}

/* The CQE of a command: judged as its ioctl would be, then kept. */
static void uring_judge(struct worker *w, struct uarg *u, int res)
{
	const int *a;

	add(&S->tried[C_URING], 1);
	if (res >= 0) {
		add(&S->ok[C_URING], 1);
		if (u->cat == C_URING)
			problem("uring_cmd: cmd_op 0x%x accepted", u->op);
		else if (u->op == ODSM_IOC_ALLOC)
			alloc_keep(w, &u->u.al);
		else if (u->op == ODSM_IOC_FREE)
			pool_del(w, u->u.fr.gaddr);
		else if (u->op == ODSM_IOC_BORROW)
			borrow_keep(w, &u->u.bo, u->sh);
		else if (u->op == ODSM_IOC_BORROW_MUT &&
			 u->u.bm.result != ODSM_BORROWED_LOCAL)
			pool_add(w, u->u.bm.new_gaddr, u->u.bm.size);
		return;
	}
	add(&S->err[C_URING], 1);
	if (res == -EINVAL || res == -EFAULT || res == -ENOMEM)
		return;
	for (a = allowed[u->cat]; *a; a++)
		if (-res == *a)
			return;
	problem("uring_cmd: cmd_op 0x%x (%s): unexpected errno %d (%s)",
		u->op, cat_name[u->cat], -res, strerror(-res));
}

/*
 * Up to UBATCH commands submitted at once, a few with a bad command area;
 * a call to this worker's own endpoint is served meanwhile.  Then every
 * CQE is reaped, each command's exactly once -- or, now and then, the
 * ring is closed with the commands in flight, which must end them
 * anyway (their arguments are left to them: a new set is allocated).
 */
static void op_uring(struct worker *w)
{
	struct uarg *u;
	unsigned int n = 1 + (unsigned int)below(w, UBATCH), i, got = 0;
	uint64_t batch = w->opno << 8, tag;
	int ret, res, serves = 0;
	bool self = false;

	if (w->no_uring)
		return;
	if (!w->uargs) {
		w->uargs = calloc(UBATCH, sizeof(*w->uargs));
		if (!w->uargs)
			return;
	}
	if (!w->have_ring) {
		ret = t_ring_init(&w->ring, 16, 0);
		if (ret) {
			/* a kernel without io_uring for us: say so once */
			printf("FUZZ_NOTE worker=%d: io_uring_setup: %s\n",
			       w->wid, strerror(-ret));
			w->no_uring = true;
			return;
		}
		w->have_ring = true;
	}
	for (i = 0; i < n; i++) {
		uint32_t flags = 0, reserved = 0;
		uint64_t arg;

		u = &w->uargs[i];
		fill_ucmd(w, u);
		arg = (uintptr_t)&u->u;
		if (u->op == ODSM_IOC_DELEG_CALL && w->dfd >= 0 &&
		    addr_of(u->u.dc.endpoint) == addr_of(w->dep))
			self = true;
		if (chance(w, 3))
			flags = (uint32_t)rnd(w) | 1;
		if (chance(w, 3))
			reserved = (uint32_t)rnd(w) | 1;
		if (chance(w, 3))
			arg = chance(w, 50) ? 0 : 0xffff888000000000ULL;
		u->sh = chance(w, 10);
		t_ring_cmd(&w->ring, u->sh ? pfd : w->fd, u->op, arg, flags,
			   reserved, batch | i);
		t_ring_push(&w->ring);
	}
	ret = t_ring_enter(&w->ring, n, 0);
	if (ret != (int)n) {
		problem("uring: io_uring_enter submitted %d of %u", ret, n);
		return;
	}
	if (chance(w, 5) && w->abandoned < 4) {
		/* (ALLOCs among them stay allocated: at most 4 x UBATCH) */
		/* gone with its commands in flight */
		t_ring_exit(&w->ring);
		w->have_ring = false;
		w->uargs = NULL;	/* theirs until they end */
		w->abandoned++;
		judge(C_URING_EXIT, 0, 0);
		return;
	}
	while (got < n) {
		if (!t_ring_cqe(&w->ring, &tag, &res)) {
			/* a call to our own endpoint waits for us */
			if (self && w->dfd >= 0 && serves < 2 * UBATCH) {
				serves++;
				op_dserve(w);
				continue;
			}
			ret = t_ring_enter(&w->ring, 0, 1);
			if (ret < 0 && ret != -EINTR) {
				problem("uring: io_uring_enter to wait: %s",
					strerror(-ret));
				return;
			}
			continue;
		}
		i = (unsigned int)(tag & 0xff);
		if ((tag & ~0xffULL) != batch || i >= n || w->uargs[i].done) {
			problem("uring: CQE with tag 0x%" PRIx64 " (batch 0x%"
				PRIx64 " of %u)", tag, batch, n);
			continue;
		}
		w->uargs[i].done = true;
		got++;
		uring_judge(w, &w->uargs[i], res);
	}
	/* the module has no more CQEs for these: one would be a double */
	if (t_ring_cqe(&w->ring, &tag, &res))
		problem("uring: a CQE after the batch: tag 0x%" PRIx64, tag);
}

/* ---- the worker loop ------------------------------------------------------- */

static void op_read(struct worker *w)
{
	op_rw(w, false);
}

static void op_write(struct worker *w)
{
	op_rw(w, true);
}

static void op_write_back(struct worker *w)
{
	op_owner(w, true);
}

static void op_read_owner(struct worker *w)
{
	op_owner(w, false);
}

/*
 * The mix: each operation's share of 1000 draws, in this order.  A
 * child of op_fork() takes no parent-only one: it closes a file
 * instead.
 */
static const struct mix {
	const char *name;
	unsigned int weight;
	void (*fn)(struct worker *w);
	bool parent_only;
} mix[] = {
	{ "alloc", 90, op_alloc, false }, { "free", 60, op_free, false },
	{ "move", 30, op_move, false }, { "obj_info", 40, op_objinfo, false },
	{ "read", 80, op_read, false }, { "write", 70, op_write, false },
	{ "atomic", 60, op_atomic, false }, { "borrow", 130, op_borrow, false },
	{ "return", 80, op_return, false }, { "borrow_mut", 50, op_borrow_mut, false },
	{ "write_back", 30, op_write_back, false }, { "read_owner", 20, op_read_owner, false },
	{ "misc", 20, op_misc, false }, { "touch", 130, op_touch, false },
	{ "peer_dir", 40, op_peer, false }, { "munmap", 10, op_munmap, true },
	{ "remap", 15, op_remap, true }, { "fork", 7, op_fork, true },
	{ "close", 10, op_close, false }, { "wait", 13, op_wait, false },
	{ "deleg", 8, op_deleg, false }, { "uring", 7, op_uring, false },
};

#define MIX_CLOSE	18	/* mix[] index of "close" */

/* --only: the operations drawn (bit i: mix[i]; the special ones above) */
static uint64_t only = ~0ULL;
#define ONLY_PUBLISH	(1ULL << 40)
#define ONLY_KNOBS	(1ULL << 41)
#define ONLY_SET_CONFIG	(1ULL << 42)
#define ONLY_LEAVE	(1ULL << 43)

static void run_op(struct worker *w, bool child)
{
	unsigned int r = below(w, 1000), i, total = 0;

	if (w->publisher && r < 15 && (only & ONLY_PUBLISH)) {
		op_publish(w);
		return;
	}
	if (w->chaos && !child) {
		if (r >= 15 && r < 25 && (only & ONLY_KNOBS)) {
			op_knobs(w);
			return;
		}
		if (r >= 25 && r < 28 && (only & ONLY_SET_CONFIG)) {
			op_setconfig(w);
			return;
		}
		if (r == 28 && cluster && opt_join_nodes && !opt_no_leave &&
		    (only & ONLY_LEAVE)) {
			op_leave_join(w);
			return;
		}
	}
	for (i = 0; i < ARRAY_SIZE(mix); i++)
		if (only & (1ULL << i))
			total += mix[i].weight;
	if (!total)
		return;
	r = below(w, total);
	for (i = 0; r >= mix[i].weight || !(only & (1ULL << i)); i++)
		if (only & (1ULL << i))
			r -= mix[i].weight;
	if (child && mix[i].parent_only)
		i = MIX_CLOSE;
	mix[i].fn(w);
}

/* "--only alloc,free,...": 0, or -1 for a name not in the mix */
static int parse_only(char *list)
{
	static const char *const special[] = {
		"publish", "knobs", "set_config", "leave",
	};
	char *name, *save = NULL;
	unsigned int i;

	only = 0;
	for (name = strtok_r(list, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < ARRAY_SIZE(mix); i++)
			if (!strcmp(name, mix[i].name))
				break;
		if (i < ARRAY_SIZE(mix)) {
			only |= 1ULL << i;
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(special); i++)
			if (!strcmp(name, special[i]))
				break;
		if (i == ARRAY_SIZE(special))
			return -1;
		only |= ONLY_PUBLISH << i;
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct wstat *ws = &S->w[w->wid];

	cur = w;
	ws->tid = (int)syscall(SYS_gettid);
	w->buf = mmap(NULL, BUFSZ + 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w->buf == MAP_FAILED) {
		problem("mmap of a buffer: %s", strerror(errno));
		ws->done = 1;
		return NULL;
	}
	mprotect(w->buf + BUFSZ, 4096, PROT_NONE);
	w->fd = open(ODSM_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (w->fd < 0) {
		problem("open %s: %s", ODSM_DEVICE_PATH, strerror(errno));
		ws->done = 1;
		return NULL;
	}
	for (w->opno = 0; w->opno < opt_ops && !S->stop; w->opno++) {
		ws->opno = w->opno;
		ws->beat_ms = now_ms();
		run_op(w, false);
	}
	/* leave the node clean for the next run: free what is ours */
	while (w->npool) {
		struct odsm_free f = { .gaddr = w->pool[--w->npool].cg };

		ioctl(w->fd, ODSM_IOC_FREE, &f);
	}
	if (w->dfd >= 0) {
		close(w->dfd);
		w->dfd = -1;
		dir_endpoint(w);
	}
	if (w->have_ring)
		t_ring_exit(&w->ring);	/* every command was reaped */
	close(w->fd);
	ws->beat_ms = now_ms();
	ws->done = 1;
	return NULL;
}

static void proc_main(int p)
{
	pthread_t th[MAX_THREADS];
	struct worker *ws;
	struct sigaction sa;
	unsigned int t;
	int ret;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	pfd = open(ODSM_DEVICE_PATH, O_RDWR);
	if (pfd < 0) {
		problem("open %s: %s", ODSM_DEVICE_PATH, strerror(errno));
		_exit(1);
	}
	ret = map_heap(pfd);
	if (ret) {
		problem("mmap of the heap: %s", strerror(-ret));
		_exit(1);
	}
	ws = calloc(opt_threads, sizeof(*ws));
	for (t = 0; t < opt_threads; t++) {
		struct worker *w = &ws[t];

		w->wid = p * (int)opt_threads + (int)t;
		w->proc = p;
		w->rng = splitmix(opt_seed ^ splitmix((uint64_t)w->wid + 1)) | 1;
		w->chaos = p == 0 && t == 0;
		w->publisher = p == 0 && t == (opt_threads > 1 ? 1 : 0);
		w->dfd = -1;
		w->dreq = malloc(ODSM_DSLOT_SIZE_MAX);
		w->dresp = malloc(ODSM_DSLOT_SIZE_MAX);
		w->uresp = malloc(ODSM_DSLOT_SIZE_MAX);
		if (!w->dreq || !w->dresp || !w->uresp) {
			problem("malloc of a worker's slots");
			_exit(99);
		}
		pthread_create(&th[t], NULL, worker_main, w);
	}
	for (t = 0; t < opt_threads; t++)
		pthread_join(th[t], NULL);
	_exit(0);
}

/* ---- kernel reports -------------------------------------------------------- */

/* the first line of each report (the slab's is "BUG <cache> (...): what",
 * KFENCE's "BUG: KFENCE: ..."), so that a report counts once, not once
 * per line of its dump
 */
static const char *const kpat[] = {
	"WARNING:", "BUG:", "BUG ", "Oops", "KFENCE:", "general protection",
	"blocked for more than", "soft lockup", "self-detected stall",
	"rcu: INFO", "UBSAN", "KASAN", "list_add corruption",
	"list_del corruption",
};

static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

static void kmsg_scan(int fd)
{
	char rec[2048];
	ssize_t n;
	size_t i;

	if (fd < 0)
		return;
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: read on */
		if (n <= 0)
			break;
		rec[n] = 0;
		for (i = 0; i < ARRAY_SIZE(kpat); i++) {
			if (strstr(rec, kpat[i])) {
				char *msg = strchr(rec, ';');

				rec[strcspn(rec, "\n")] = 0;
				problem("kernel report: %s", msg ? msg + 1 : rec);
				break;
			}
		}
	}
}

/* ---- the watchdog: hung workers --------------------------------------------- */

static void dump_stack_of(int tid)
{
	char path[64], buf[4096];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stack", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		printf("FUZZ_STACK tid=%d:\n%s", tid, buf);
	}
}

/* ---- the configuration race ------------------------------------------------ */

static volatile int race_stop;
static struct odsm_config race_orig;

static void *race_config(void *arg)
{
	struct worker *w = arg;
	/* 2 nodes and 8 (this node the last): a JOIN that checked a table
	 * of 2 must never see node 7 (issue 12, finding 14)
	 */
	static const uint32_t nrs[] = { 2, 8, 2, 8, 1 };
	struct odsm_config c;
	int i = 0;

	cur = w;
	while (!race_stop) {
		w->opno++;
		S->w[w->wid].beat_ms = now_ms();
		memset(&c, 0, sizeof(c));
		c.heap_base = race_orig.heap_base;
		c.part_size = MiB(64);
		c.nr_nodes = nrs[i++ % ARRAY_SIZE(nrs)];
		c.node_id = c.nr_nodes == 2 ? (uint32_t)below(w, 2) : c.nr_nodes - 1;
		if (chance(w, 10))
			c = bogus_cfg[below(w, ARRAY_SIZE(bogus_cfg))];
		ioc(C_SETCONFIG, w->fd, ODSM_IOC_SET_CONFIG, &c);
	}
	return NULL;
}

static void *race_join(void *arg)
{
	struct worker *w = arg;
	struct odsm_node_addr t[8];
	uint8_t key[32];
	struct odsm_info in;
	struct in_addr ia;
	unsigned int n, i;
	int ret;

	cur = w;
	memset(key, 0x5a, sizeof(key));
	inet_pton(AF_INET, opt_addr, &ia);
	while (!race_stop) {
		w->opno++;
		S->w[w->wid].beat_ms = now_ms();
		if (ioctl(w->fd, ODSM_IOC_INFO, &in))
			continue;
		/* a table for the configuration read just now: it may
		 * change before the JOIN looks at it
		 */
		n = chance(w, 80) ? 2 : (in.nr_nodes > 8 ? 8 : in.nr_nodes);
		if (n < 2)
			n = 2;
		memset(t, 0, sizeof(t));
		/* the others on the loopback, where nothing listens: their
		 * dialers are refused at once and a LEAVE waits for nothing
		 */
		for (i = 0; i < n; i++) {
			t[i].ipv4 = htonl(INADDR_LOOPBACK);
			t[i].port = (uint16_t)(7201 + i);
		}
		if (in.node_id < n)
			t[in.node_id].ipv4 = ia.s_addr;
		ret = do_join(w->fd, t, n, key, sizeof(key));
		judge(C_JOIN, ret, -ret == EINVAL || -ret == EADDRNOTAVAIL ? EINVAL : -ret);
		usleep((useconds_t)below(w, 3000));
		ioc(C_LEAVE, w->fd, ODSM_IOC_LEAVE, NULL);
	}
	return NULL;
}

static void *race_alloc(void *arg)
{
	struct worker *w = arg;
	struct odsm_alloc a;
	struct odsm_free f;
	struct odsm_info in;
	struct odsm_status st;
	void *p;

	cur = w;
	while (!race_stop) {
		w->opno++;
		S->w[w->wid].beat_ms = now_ms();
		/* gaps with nothing allocated or mapped, when SET_CONFIG
		 * can succeed
		 */
		if (chance(w, 50))
			usleep(500);
		switch (below(w, 8)) {
		case 0:
		case 1:
		case 2:
		case 3:
		case 4:
			memset(&a, 0, sizeof(a));
			a.size = PICK(w, sizes);
			a.flags = chance(w, 50) ? ODSM_ALLOC_ZERO : 0;
			if (ioc(C_ALLOC, w->fd, ODSM_IOC_ALLOC, &a)) {
				memset(&f, 0, sizeof(f));
				f.gaddr = a.gaddr;
				if (!ioc(C_FREE, w->fd, ODSM_IOC_FREE, &f))
					problem("race: the object just allocated at 0x%" PRIx64
						" could not be freed", (uint64_t)a.gaddr);
			}
			break;
		case 5:
		case 6:
			ioc(C_STATUS, w->fd, ODSM_IOC_INFO, &in);
			memset(&st, 0, sizeof(st));
			ioc(C_STATUS, w->fd, ODSM_IOC_STATUS, &st);
			break;
		default:
			if (ioctl(w->fd, ODSM_IOC_INFO, &in))
				break;
			p = mmap((void *)(uintptr_t)in.heap_base, in.heap_size,
				 PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED_NOREPLACE, w->fd, 0);
			/* EINVAL: the geometry changed since INFO */
			judge(C_MMAP_RACE, p == MAP_FAILED ? -1 : 0, errno);
			if (p != MAP_FAILED) {
				usleep((useconds_t)below(w, 2000));
				munmap(p, in.heap_size);
			}
			break;
		}
	}
	return NULL;
}

static int config_race(void)
{
	void *(*fn[])(void *) = { race_config, race_join, race_join, race_alloc };
	struct worker ws[ARRAY_SIZE(fn)];
	pthread_t th[ARRAY_SIZE(fn)];
	struct odsm_status st = { 0 };
	uint64_t end;
	unsigned int i;
	int fd, kfd, ret;

	fd = open(ODSM_DEVICE_PATH, O_RDWR);
	if (fd < 0 || ioctl(fd, ODSM_IOC_INFO, &G) || ioctl(fd, ODSM_IOC_STATUS, &st)) {
		printf("FUZZ_RESULT mode=config-race seed=%" PRIu64 " problems=1 (no %s)\n",
		       opt_seed, ODSM_DEVICE_PATH);
		return 1;
	}
	if (st.transport) {
		printf("odsm-fuzz: --config-race needs a node that joined nothing\n");
		return 2;
	}
	race_orig.node_id = G.node_id;
	race_orig.nr_nodes = G.nr_nodes;
	race_orig.heap_base = G.heap_base;
	race_orig.part_size = G.part_size;
	kfd = kmsg_open();
	memset(ws, 0, sizeof(ws));
	for (i = 0; i < ARRAY_SIZE(fn); i++) {
		ws[i].wid = (int)i;
		ws[i].rng = splitmix(opt_seed ^ splitmix(i + 1)) | 1;
		ws[i].fd = open(ODSM_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		pthread_create(&th[i], NULL, fn[i], &ws[i]);
	}
	end = now_ms() + (uint64_t)opt_secs * 1000;
	while (now_ms() < end) {
		usleep(200000);
		kmsg_scan(kfd);
		for (i = 0; i < ARRAY_SIZE(fn); i++) {
			if (stalled(&S->w[i].beat_ms, opt_hang)) {
				problem("race: thread %u stuck for %u s", i, opt_hang);
				goto out;
			}
		}
	}
	race_stop = 1;
	for (i = 0; i < ARRAY_SIZE(fn); i++)
		pthread_join(th[i], NULL);
	ioctl(fd, ODSM_IOC_LEAVE);
	ret = ioctl(fd, ODSM_IOC_SET_CONFIG, &race_orig);
	if (ret)
		problem("race: the configuration cannot be restored: %s", strerror(errno));
	kmsg_scan(kfd);
out:
	return 0;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(int rc)
{
	printf("usage: odsm-fuzz [--seed S] [--ops N] [--secs T] [--procs P] [--threads T]\n"
	       "                 [--hang-secs H] [--join-nodes IP:PORT,...] [--key-file F]\n"
	       "                 [--transport tcp|rdma] [--heartbeat-ms N] [--timeout-ms N]\n"
	       "                 [--no-leave] [--only OP,...] [--config-race [--addr IP]]\n"
	       "  --only: draw only these operations (alloc, free, move, obj_info, read,\n"
	       "          write, atomic, borrow, return, borrow_mut, write_back, read_owner,\n"
	       "          misc, touch, peer_dir, munmap, remap, fork, close, wait, deleg,\n"
	       "          uring, publish, knobs, set_config, leave)\n");
	exit(rc);
}

static void summary(const char *mode, uint64_t secs)
{
	uint64_t tot = 0;
	int c;

	for (c = 0; c < NCAT; c++) {
		tot += S->tried[c];
		if (!S->tried[c])
			continue;
		printf("FUZZ_OPS %-12s tried=%" PRIu64 " ok=%" PRIu64 " err=%" PRIu64
		       " faults=%" PRIu64 "\n", cat_name[c], S->tried[c], S->ok[c],
		       S->err[c], S->faults[c]);
	}
	printf("FUZZ_RESULT mode=%s seed=%" PRIu64 " secs=%" PRIu64 " workers=%u ops=%" PRIu64
	       " problems=%" PRIu64 "\n", mode, opt_seed, secs,
	       opt_config_race ? 4 : opt_procs * opt_threads, tot, S->problems);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", 1, NULL, 's' }, { "ops", 1, NULL, 'n' },
		{ "secs", 1, NULL, 't' }, { "procs", 1, NULL, 'p' },
		{ "threads", 1, NULL, 'T' }, { "hang-secs", 1, NULL, 'H' },
		{ "join-nodes", 1, NULL, 'j' }, { "key-file", 1, NULL, 'k' },
		{ "transport", 1, NULL, 'x' }, { "heartbeat-ms", 1, NULL, 'b' },
		{ "timeout-ms", 1, NULL, 'o' }, { "config-race", 0, NULL, 'C' },
		{ "addr", 1, NULL, 'a' }, { "no-leave", 0, NULL, 'L' },
		{ "only", 1, NULL, 'O' },
		{ "help", 0, NULL, 'h' }, { 0 }
	};
	struct odsm_status st = { 0 };
	struct odsm_alloc a = { 0 };
	pid_t pids[MAX_PROCS];
	uint64_t end, start;
	unsigned int p, i;
	int fd, kfd, o, status, stuck = 0;
	bool have_seed = false;

	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case 's': opt_seed = strtoull(optarg, NULL, 0); have_seed = true; break;
		case 'n': opt_ops = strtoull(optarg, NULL, 0); opt_secs = 100000; break;
		case 't': opt_secs = (unsigned int)atoi(optarg); break;
		case 'p': opt_procs = (unsigned int)atoi(optarg); break;
		case 'T': opt_threads = (unsigned int)atoi(optarg); break;
		case 'H': opt_hang = (unsigned int)atoi(optarg); break;
		case 'j': opt_join_nodes = optarg; break;
		case 'k': opt_key_file = optarg; break;
		case 'x': opt_transport = strcmp(optarg, "rdma") ? ODSM_TRANSPORT_TCP :
					  ODSM_TRANSPORT_RDMA; break;
		case 'b': opt_hb = (unsigned int)atoi(optarg); break;
		case 'o': opt_to = (unsigned int)atoi(optarg); break;
		case 'C': opt_config_race = true; break;
		case 'a': opt_addr = optarg; break;
		case 'L': opt_no_leave = true; break;
		case 'O': if (parse_only(optarg)) usage(2); break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (!opt_procs || opt_procs > MAX_PROCS || !opt_threads ||
	    opt_threads > MAX_THREADS)
		usage(2);
	if (!have_seed)
		opt_seed = splitmix((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32));
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	t0_ms = now_ms();
	printf("FUZZ_START mode=%s seed=%" PRIu64 " secs=%u ops=%" PRIu64 " (replay: odsm-fuzz --seed %"
	       PRIu64 "%s ...)\n", opt_config_race ? "config-race" : "ops", opt_seed,
	       opt_secs, opt_ops, opt_seed, opt_config_race ? " --config-race" : "");
	if (opt_config_race) {
		o = config_race();
		summary("config-race", (now_ms() - t0_ms) / 1000);
		return o ? o : S->problems != 0;
	}

	fd = open(ODSM_DEVICE_PATH, O_RDWR);
	if (fd < 0 || ioctl(fd, ODSM_IOC_INFO, &G)) {
		printf("odsm-fuzz: %s: %s\n", ODSM_DEVICE_PATH, strerror(errno));
		return 1;
	}
	if (ioctl(fd, ODSM_IOC_STATUS, &st) == 0)
		cluster = st.transport != 0;
	printf("FUZZ_GEOMETRY node=%u nodes=%u base=0x%" PRIx64 " part=0x%" PRIx64
	       " max_alloc=%" PRIu64 " cluster=%d\n", G.node_id, G.nr_nodes,
	       (uint64_t)G.heap_base, (uint64_t)G.part_size, (uint64_t)G.max_alloc,
	       cluster);
	/* the directory: the first object of a fresh partition is at its
	 * start; on a node that fuzzed before it is there already
	 */
	{
		struct odsm_obj_info oi = { .gaddr = part_start(G.node_id) };

		if (ioctl(fd, ODSM_IOC_OBJ_INFO, &oi)) {
			a.size = DIR_SIZE;
			a.flags = ODSM_ALLOC_ZERO;
			if (ioctl(fd, ODSM_IOC_ALLOC, &a) ||
			    addr_of(a.gaddr) != part_start(G.node_id))
				printf("odsm-fuzz: no directory at the partition's start (0x%" PRIx64
				       "): the other nodes find nothing to borrow\n",
				       (uint64_t)a.gaddr);
		}
	}
	defaults_budget = read_file(SYSFS "/cache_budget_bytes");
	defaults_lazy = read_file(SYSFS "/lazy_threshold");
	defaults_ra = read_file(SYSFS "/readahead_pages");
	kfd = kmsg_open();
	start = now_ms();
	end = start + (uint64_t)opt_secs * 1000;
	for (p = 0; p < opt_procs; p++) {
		pids[p] = fork();
		if (!pids[p])
			proc_main((int)p);
	}
	/* watch: the time, hung workers, the kernel log */
	for (;;) {
		bool all_done = true;

		usleep(250000);
		kmsg_scan(kfd);
		if (now_ms() >= end)
			S->stop = 1;
		for (i = 0; i < opt_procs * opt_threads; i++) {
			struct wstat *ws = &S->w[i];

			if (ws->done)
				continue;
			all_done = false;
			if (stalled(&ws->beat_ms, opt_hang) && !stuck) {
				problem("worker %u made no progress for %u s at op %" PRIu64,
					i, opt_hang, ws->opno);
				dump_stack_of(ws->tid);
				stuck = 1;
				S->stop = 1;
			}
		}
		for (p = 0; p < opt_procs; p++) {
			if (pids[p] > 0 && waitpid(pids[p], &status, WNOHANG) == pids[p]) {
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					if (!(WIFEXITED(status) && WEXITSTATUS(status) == 99))
						problem("process %u ended with status 0x%x", p, status);
				pids[p] = 0;
				for (i = 0; i < opt_threads; i++)
					S->w[p * opt_threads + i].done = 1;
			}
		}
		if (all_done)
			break;
		if (stuck && now_ms() > end + (uint64_t)opt_hang * 1000)
			break;	/* stuck in the kernel: leave them */
	}
	for (p = 0; p < opt_procs; p++)
		if (pids[p] > 0 && !stuck)
			waitpid(pids[p], &status, 0);
	/* the knobs back as they were */
	write_file(SYSFS "/cache_budget_bytes", defaults_budget);
	write_file(SYSFS "/lazy_threshold", defaults_lazy);
	write_file(SYSFS "/readahead_pages", defaults_ra);
	if (cluster && opt_join_nodes) {
		/* end joined, as the run began */
		memset(&st, 0, sizeof(st));
		if (ioctl(fd, ODSM_IOC_STATUS, &st) || !st.transport)
			problem("the node is not joined after the run");
	}
	kmsg_scan(kfd);
	summary("ops", (now_ms() - start) / 1000);
	for (i = 0; i < S->nplog && i < PLOG; i++)
		printf("FUZZ_PROBLEMS %u: %s\n", i, S->plog[i]);
	return S->problems != 0;
}
