// SPDX-License-Identifier: GPL-2.0
/*
 * ODSM_IOC_WAIT / ODSM_IOC_WAKE: a futex for words of this node's
 * partition.  A waiter wakes after a store and a wake, within bounds, in
 * another thread and in another process; it times out when nobody wakes
 * it; a signal ends it (-EINTR); a word that changed already is -EAGAIN;
 * bad words and fields are refused, counted; the module's own writes
 * (WRITE, ATOMIC) wake the words they touch; a wake takes only the
 * waiters of its word, at most nr of them, with many waiters on many
 * words sharing the table's buckets.  Last, the difference it makes to
 * delegation: the latency of an apply to an idle trustee and the CPU an
 * idle runtime burns, with the module's wait and with the naps libodsm
 * falls back to (ODSM_WAIT_NAP), printed side by side.
 */
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include "odsm_vm.h"

#define WORDS		64	/* words of the many-waiters test */
#define PER_WORD	3	/* waiters on each of them */
#define SEC		1000000000ULL
/* how late a woken waiter may be under TCG, generously */
#define WAKE_BOUND_NS	(2 * SEC)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static int w_wait(int fd, uint64_t g, uint32_t size, uint64_t expect,
		  uint64_t timeout_ns)
{
	struct odsm_wait w = { .gaddr = g, .expect = expect,
			       .timeout_ns = timeout_ns, .size = size };

	return t_ioctl(fd, ODSM_IOC_WAIT, &w);
}

/* the number woken, or -errno */
static int w_wake(int fd, uint64_t g, uint32_t nr)
{
	struct odsm_wake w = { .gaddr = g, .nr = nr };
	int n = ioctl(fd, ODSM_IOC_WAKE, &w);

	return n < 0 ? -errno : n;
}

static uint64_t stat_of(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), T_STATS "/%s", name);
	return t_read_u64(path);
}

/*
 * Until wait_sleeps reached n: a waiter counted there is queued and saw
 * its word hold the value, so a wake from then on finds it.
 */
static int sleeps_reach(uint64_t n)
{
	uint64_t end = now_ns() + 30 * SEC;

	while (stat_of("wait_sleeps") < n)
		if (now_ns() > end)
			return -1;
		else
			usleep(1000);
	return 0;
}

struct waiter {
	pthread_t th;
	int fd;
	uint64_t g;
	uint32_t size;
	uint64_t expect, timeout_ns;
	int ret;
	uint64_t end_ns;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = w_wait(w->fd, w->g, w->size, w->expect, w->timeout_ns);
	w->end_ns = now_ns();
	return NULL;
}

static int start(struct waiter *w, int fd, uint64_t g, uint32_t size,
		 uint64_t expect, uint64_t timeout_ns)
{
	w->fd = fd;
	w->g = g;
	w->size = size;
	w->expect = expect;
	w->timeout_ns = timeout_ns;
	w->ret = 1;
	return pthread_create(&w->th, NULL, waiter_main, w);
}

static void on_usr1(int sig)
{
}

FIXTURE(word) {
	struct odsm_info in;
	int fd;
	void *heap;
	uint64_t g;		/* an object of 4 KiB, zeroed */
	volatile uint32_t *w32;
};

FIXTURE_SETUP(word)
{
	self->fd = t_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, t_info(self->fd, &self->in));
	self->heap = t_map(self->fd, &self->in);
	ASSERT_NE(MAP_FAILED, self->heap);
	ASSERT_EQ(0, t_alloc(self->fd, KiB(4), 0, ODSM_ALLOC_ZERO, &self->g,
			     NULL));
	self->w32 = (volatile uint32_t *)t_p(self->g);
}

FIXTURE_TEARDOWN(word)
{
	EXPECT_EQ(0, t_free(self->fd, self->g));
	munmap(self->heap, self->in.heap_size);
	close(self->fd);
}

/* another thread's store and wake end the wait, within bounds */
TEST_F(word, wakes_after_store_and_wake)
{
	uint64_t c0 = stat_of("wait_sleeps"), w0 = stat_of("wait_woken");
	struct waiter w;
	uint64_t t0;

	ASSERT_EQ(0, start(&w, self->fd, self->g, 4, 0, 30 * SEC));
	ASSERT_EQ(0, sleeps_reach(c0 + 1));
	EXPECT_EQ(1, w.ret);		/* still asleep */
	self->w32[0] = 7;
	t0 = now_ns();
	EXPECT_EQ(1, w_wake(self->fd, self->g, 1));
	ASSERT_EQ(0, pthread_join(w.th, NULL));
	EXPECT_EQ(0, w.ret);
	EXPECT_GT(WAKE_BOUND_NS, w.end_ns - t0);
	EXPECT_EQ(w0 + 1, stat_of("wait_woken"));
	TH_LOG("woken %llu us after the wake",
	       (unsigned long long)(w.end_ns - t0) / 1000);
}

/* a process of its own, with its own file and mapping, is woken too */
TEST_F(word, wakes_another_process)
{
	uint64_t c0 = stat_of("wait_sleeps");
	int status;
	pid_t pid;

	self->w32[1] = 5;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd;

		/* not the parent's mapping and file: its own */
		munmap(self->heap, self->in.heap_size);
		fd = t_open();
		if (fd < 0 || t_map(fd, &self->in) == MAP_FAILED)
			_exit(10);
		_exit(w_wait(fd, self->g + 4, 4, 5, 30 * SEC) ? 11 : 0);
	}
	ASSERT_EQ(0, sleeps_reach(c0 + 1));
	self->w32[1] = 6;
	EXPECT_EQ(1, w_wake(self->fd, self->g + 4, 0));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* nobody wakes: -ETIMEDOUT after the timeout, not long after */
TEST_F(word, times_out)
{
	uint64_t t0 = now_ns(), dt, to0 = stat_of("wait_timeouts");

	EXPECT_EQ(-ETIMEDOUT, w_wait(self->fd, self->g, 4, 0, 50000000));
	dt = now_ns() - t0;
	EXPECT_LE(50000000ULL, dt);
	EXPECT_GT(50000000ULL + WAKE_BOUND_NS, dt);
	EXPECT_EQ(to0 + 1, stat_of("wait_timeouts"));
	/* 8-byte words too */
	EXPECT_EQ(-ETIMEDOUT, w_wait(self->fd, self->g + 8, 8, 0, 1000000));
}

/* a word that does not hold the value: -EAGAIN at once, 4 and 8 bytes */
TEST_F(word, changed_word_is_eagain)
{
	uint64_t a0 = stat_of("wait_changed");

	self->w32[0] = 3;
	EXPECT_EQ(-EAGAIN, w_wait(self->fd, self->g, 4, 2, 0));
	*(volatile uint64_t *)t_p(self->g + 8) = 1ULL << 40;
	EXPECT_EQ(-EAGAIN, w_wait(self->fd, self->g + 8, 8, 0, 0));
	/* the 4-byte half that is zero still waits */
	EXPECT_EQ(-ETIMEDOUT, w_wait(self->fd, self->g + 8, 4, 0, 1000000));
	EXPECT_EQ(a0 + 2, stat_of("wait_changed"));
}

/* a signal ends a timed wait with -EINTR; an untimed one restarts */
TEST_F(word, signal_interrupts)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	uint64_t c0 = stat_of("wait_sleeps"), i0 = stat_of("wait_interrupted");
	struct waiter w;

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));	/* no SA_RESTART */
	ASSERT_EQ(0, start(&w, self->fd, self->g, 4, 0, 30 * SEC));
	ASSERT_EQ(0, sleeps_reach(c0 + 1));
	ASSERT_EQ(0, pthread_kill(w.th, SIGUSR1));
	ASSERT_EQ(0, pthread_join(w.th, NULL));
	EXPECT_EQ(-EINTR, w.ret);
	EXPECT_EQ(i0 + 1, stat_of("wait_interrupted"));

	/* SA_RESTART, no timeout: the handler runs, the wait goes on */
	sa.sa_flags = SA_RESTART;
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, start(&w, self->fd, self->g, 4, 0, 0));
	ASSERT_EQ(0, sleeps_reach(c0 + 2));
	ASSERT_EQ(0, pthread_kill(w.th, SIGUSR1));
	/* the wait restarted whole: asleep again, the same value */
	ASSERT_EQ(0, sleeps_reach(c0 + 3));
	EXPECT_EQ(1, w.ret);
	self->w32[0] = 1;
	EXPECT_EQ(1, w_wake(self->fd, self->g, 0));
	ASSERT_EQ(0, pthread_join(w.th, NULL));
	EXPECT_EQ(0, w.ret);
	signal(SIGUSR1, SIG_DFL);
}

/* bad words and fields: -EINVAL, each counted in wait_refused */
TEST_F(word, bad_words_refused)
{
	uint64_t r0 = stat_of("wait_refused"), out, lo = t_local_lo(&self->in);
	struct odsm_wait w = { .gaddr = self->g, .size = 4, .timeout_ns = 1 };
	struct odsm_wake k = { .gaddr = self->g };

	out = self->in.heap_base + self->in.heap_size;
	EXPECT_EQ(-EINVAL, w_wait(self->fd, self->g + 2, 4, 0, 1));
	EXPECT_EQ(-EINVAL, w_wait(self->fd, self->g + 4, 8, 0, 1));
	EXPECT_EQ(-EINVAL, w_wait(self->fd, self->g, 2, 0, 1));
	EXPECT_EQ(-EINVAL, w_wait(self->fd, self->g, 16, 0, 1));
	EXPECT_EQ(-EINVAL, w_wait(self->fd, self->g, 4, 1ULL << 32, 1));
	EXPECT_EQ(-EINVAL, w_wait(self->fd, out, 4, 0, 1));
	EXPECT_EQ(-EINVAL, w_wait(self->fd, 0x1000, 4, 0, 1));
	/* in the partition, but in no block that holds an object */
	EXPECT_EQ(-EINVAL, w_wait(self->fd, lo + self->in.part_size - 64,
				  4, 0, 1));
	w.flags = 1;
	EXPECT_EQ(-EINVAL, t_ioctl(self->fd, ODSM_IOC_WAIT, &w));
	w.flags = 0;
	w.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, t_ioctl(self->fd, ODSM_IOC_WAIT, &w));
	EXPECT_EQ(-EINVAL, w_wake(self->fd, self->g + 2, 0));
	EXPECT_EQ(-EINVAL, w_wake(self->fd, out, 0));
	EXPECT_EQ(-EINVAL, w_wake(self->fd, 0x1000, 0));
	k.nr = 0x80000000u;
	EXPECT_EQ(-1, ioctl(self->fd, ODSM_IOC_WAKE, &k));
	k.nr = 0;
	k.reserved[0] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ODSM_IOC_WAKE, &k));
	EXPECT_EQ(15u, stat_of("wait_refused") - r0);
	/* a wake of a good word with nobody on it wakes nobody */
	EXPECT_EQ(0, w_wake(self->fd, self->g, 0));
}

/* nr bounds a wake; only the waiters of its word wake */
TEST_F(word, wake_takes_at_most_nr)
{
	uint64_t c0 = stat_of("wait_sleeps");
	struct waiter w[4];
	int i;

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, start(&w[i], self->fd, self->g, 4, 0, 30 * SEC));
	/* an 8-byte waiter at the same address shares the key */
	ASSERT_EQ(0, start(&w[3], self->fd, self->g + 16, 8, 0, 30 * SEC));
	ASSERT_EQ(0, sleeps_reach(c0 + 4));
	EXPECT_EQ(1, w_wake(self->fd, self->g, 1));
	EXPECT_EQ(0, w_wake(self->fd, self->g + 4, 0));	/* nobody there */
	EXPECT_EQ(2, w_wake(self->fd, self->g, 0));
	EXPECT_EQ(1, w_wake(self->fd, self->g + 16, 0));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(w[i].th, NULL));
		EXPECT_EQ(0, w[i].ret);
	}
}

/* the module's own writes into a word wake its waiters */
TEST_F(word, module_writes_wake)
{
	uint64_t c0 = stat_of("wait_sleeps"), m0 = stat_of("wait_write_woken");
	uint32_t one = 1;
	struct odsm_rw rw = { .gaddr = self->g + 64, .buf = (uintptr_t)&one,
			      .len = 4 };
	struct odsm_atomic a = { .gaddr = self->g + 128,
				 .op = ODSM_ATOMIC_FETCH_ADD, .operand = 1 };
	struct waiter w[2];

	ASSERT_EQ(0, start(&w[0], self->fd, self->g + 64, 4, 0, 30 * SEC));
	ASSERT_EQ(0, start(&w[1], self->fd, self->g + 128, 8, 0, 30 * SEC));
	ASSERT_EQ(0, sleeps_reach(c0 + 2));
	ASSERT_EQ(0, t_ioctl(self->fd, ODSM_IOC_WRITE, &rw));
	ASSERT_EQ(0, t_ioctl(self->fd, ODSM_IOC_ATOMIC, &a));
	ASSERT_EQ(0, pthread_join(w[0].th, NULL));
	ASSERT_EQ(0, pthread_join(w[1].th, NULL));
	EXPECT_EQ(0, w[0].ret);
	EXPECT_EQ(0, w[1].ret);
	EXPECT_EQ(m0 + 2, stat_of("wait_write_woken"));
}

/*
 * WORDS x PER_WORD waiters on WORDS words, which share the table's
 * buckets with each other.  Each wake takes exactly its word's waiters,
 * whatever else its bucket holds; the heap's store gains no page from
 * the waits (the module allocates nothing per wait: a waiter lives on its
 * task's stack, the table is fixed).
 */
TEST_F(word, many_waiters_on_many_words)
{
	static struct waiter w[WORDS * PER_WORD];
	uint64_t c0 = stat_of("wait_sleeps"), p0;
	int i, j;

	for (i = 0; i < WORDS * PER_WORD; i++)
		ASSERT_EQ(0, start(&w[i], self->fd, self->g + 4 * (i / PER_WORD),
				   4, 0, 60 * SEC));
	ASSERT_EQ(0, sleeps_reach(c0 + WORDS * PER_WORD));
	/* the page of the words faults in at the first store, not later */
	self->w32[WORDS] = 0;
	p0 = stat_of("pages_in_use");
	for (i = 0; i < WORDS; i++) {
		self->w32[i] = 1;
		EXPECT_EQ(PER_WORD, w_wake(self->fd, self->g + 4 * i, 0));
		/* the next word's waiters are all still asleep */
		if (i + 1 < WORDS)
			for (j = 0; j < PER_WORD; j++)
				EXPECT_EQ(1, w[(i + 1) * PER_WORD + j].ret);
	}
	for (i = 0; i < WORDS * PER_WORD; i++) {
		ASSERT_EQ(0, pthread_join(w[i].th, NULL));
		EXPECT_EQ(0, w[i].ret);
	}
	EXPECT_EQ(p0, stat_of("pages_in_use"));
}

/* ---- what it changes for delegation ---------------------------------- */

static uint64_t OP_NOP;

static int op_nop(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	*rl = 0;
	return 0;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

#define APPLIES		40
#define IDLE_MS		500

struct measure {
	uint64_t apply_ns;	/* mean apply to an idle trustee */
	uint64_t idle_cpu_ns;	/* CPU of the process over IDLE_MS idle */
	uint64_t waits;		/* ODSM_IOC_WAIT calls meanwhile */
};

/*
 * In a process of its own (ODSM_WAIT_NAP is read once): a runtime with
 * one trustee in the heap; APPLIES applies, each after the trustee went
 * to sleep; then IDLE_MS of nothing.
 */
static int measure(struct measure *m)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2 };
	struct odsm_deleg_arena a;
	struct odsm_deleg *d;
	uint64_t t0, sum = 0, w0;
	odsm_trust t;
	odsm_box b;
	int i;

	if (odsm_init() || odsm_deleg_register("vm.nop", op_nop, &OP_NOP) ||
	    odsm_deleg_arena_heap(&a, odsm_deleg_arena_size(&c)) ||
	    odsm_deleg_start(&a, &c, &d))
		return 20;
	if (odsm_box_new(&b, 8, ODSM_ALLOC_ZERO) ||
	    odsm_deleg_entrust(d, 0, &b, 0, &t))
		return 21;
	w0 = stat_of("wait_calls");
	for (i = 0; i < APPLIES; i++) {
		usleep(5000);		/* the trustee goes to sleep */
		t0 = now_ns();
		if (odsm_deleg_apply(&t, OP_NOP, NULL, 0, NULL, NULL))
			return 22;
		sum += now_ns() - t0;
	}
	m->apply_ns = sum / APPLIES;
	usleep(20000);
	t0 = cpu_ns();
	usleep(IDLE_MS * 1000);
	m->idle_cpu_ns = cpu_ns() - t0;
	m->waits = stat_of("wait_calls") - w0;
	if (odsm_trust_drop(&t))
		return 23;
	odsm_deleg_stop(d);
	if (odsm_deleg_arena_heap_free(&a))
		return 24;
	odsm_fini();
	return 0;
}

static int measure_in_child(bool nap, struct measure *m)
{
	struct measure *sh;
	int status;
	pid_t pid;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (nap)
			setenv("ODSM_WAIT_NAP", "1", 1);
		_exit(measure(sh));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	*m = *sh;
	munmap(sh, sizeof(*sh));
	return WEXITSTATUS(status);
}

TEST(idle_trustee_apply_latency_and_cpu)
{
	struct measure k, n;

	ASSERT_EQ(0, measure_in_child(false, &k));
	ASSERT_EQ(0, measure_in_child(true, &n));
	/* the module's wait was used, and only with it */
	EXPECT_LT(0u, k.waits);
	EXPECT_EQ(0u, n.waits);
	TH_LOG("apply to an idle trustee: %llu us with ODSM_IOC_WAIT, %llu us napping",
	       (unsigned long long)k.apply_ns / 1000,
	       (unsigned long long)n.apply_ns / 1000);
	TH_LOG("idle runtime's CPU over %d ms: %llu us with ODSM_IOC_WAIT, %llu us napping",
	       IDLE_MS, (unsigned long long)k.idle_cpu_ns / 1000,
	       (unsigned long long)n.idle_cpu_ns / 1000);
	printf("ODSM_WAITWORD apply_us kwait=%llu nap=%llu idle_cpu_us kwait=%llu nap=%llu\n",
	       (unsigned long long)k.apply_ns / 1000,
	       (unsigned long long)n.apply_ns / 1000,
	       (unsigned long long)k.idle_cpu_ns / 1000,
	       (unsigned long long)n.idle_cpu_ns / 1000);
	/* an idle trustee that sleeps in the kernel burns less */
	EXPECT_GT(n.idle_cpu_ns, k.idle_cpu_ns);
}


/* ---- a channel's receiver in another process --------------------------- */

#define CHAN_IDLE_MS	1000

/*
 * A process of its own (forked before anything of libodsm ran in it):
 * its own runtime (odsm_spawn_start registers the channel's operations),
 * then a recv on the parent's channel (its address comes through go),
 * which stays empty CHAN_IDLE_MS.
 * The receiving thread's CPU goes to *cpu_us.
 */
static int chan_receiver(int go, bool nap, uint64_t *cpu_us)
{
	uint64_t rdv;
	struct timespec t0, t1;
	odsm_box b = { 0 };
	odsm_chan c;
	uint64_t rt;
	int ret;

	alarm(15);	/* never outlives the test for long */
	if (nap)
		setenv("ODSM_WAIT_NAP", "1", 1);
	odsm_fini();
	if (odsm_init() || odsm_spawn_start(1, &rt))
		return 10;
	if (read(go, &rdv, sizeof(rdv)) != sizeof(rdv) ||
	    odsm_read(rdv, &c, sizeof(c)))
		return 11;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	ret = odsm_chan_recv(&c, &b, NULL, 8000);
	if (ret)
		fprintf(stderr, "# receiver: recv %d\n", ret);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	*cpu_us = ((uint64_t)(t1.tv_sec - t0.tv_sec) * SEC + t1.tv_nsec -
		   t0.tv_nsec) / 1000;
	if (ret)
		return 12;
	if (!b.g || odsm_box_drop(&b))
		return 13;
	odsm_spawn_stop();
	odsm_fini();
	return 0;
}

/* the receiver's CPU while the channel is empty; -1 on a failure */
static int64_t chan_round(bool nap)
{
	uint64_t *cpu, rdv, rt;
	int go[2], status;
	int64_t ret = -1;
	odsm_chan c;
	odsm_box b;
	pid_t pid;

	cpu = mmap(NULL, sizeof(*cpu), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cpu == MAP_FAILED || pipe(go))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit(chan_receiver(go[0], nap, cpu));
	if (odsm_init() || odsm_spawn_start(1, &rt) ||
	    odsm_chan_new(4, &c) ||
	    odsm_alloc(sizeof(c), 16, ODSM_ALLOC_ZERO, &rdv) ||
	    odsm_write(rdv, &c, sizeof(c)))
		goto out;
	ret = -2;
	if (write(go[1], &rdv, sizeof(rdv)) != sizeof(rdv))
		goto out;
	usleep(CHAN_IDLE_MS * 1000);
	if (odsm_box_new(&b, 64, ODSM_ALLOC_ZERO) || odsm_chan_send(&c, &b))
		goto out;
	ret = -3;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		goto out;
	/* the receiver's own failure: where, as -(100 + its code) */
	ret = -100 - WEXITSTATUS(status);
	if (WEXITSTATUS(status))
		goto out;
	ret = (int64_t)*cpu;
	odsm_chan_free(&c);
	odsm_free(rdv);
out:
	if (ret < 0)
		kill(pid, SIGKILL);
	odsm_spawn_stop();
	odsm_fini();
	munmap(cpu, sizeof(*cpu));
	return ret;
}

/*
 * A receiver in another process than the channel's trustee sleeps on the
 * object's seq word in the module, woken by the trustee's push: it gets
 * the box, and burns far less CPU while the channel is empty than when
 * it polls seq every millisecond (the fallback, ODSM_WAIT_NAP).
 */
/* chan_round() in a process of its own: one runtime per process life */
static int64_t chan_round_in_child(bool nap)
{
	int64_t *sh, ret;
	int status;
	pid_t pid;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -10;
	*sh = -11;
	pid = fork();
	if (pid < 0)
		return -12;
	if (!pid) {
		*sh = chan_round(nap);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -13;
	ret = *sh;
	munmap(sh, sizeof(*sh));
	return ret;
}

TEST(chan_receiver_in_another_process)
{
	int64_t k, n;

	k = chan_round_in_child(false);
	n = chan_round_in_child(true);
	TH_LOG("rounds: %lld %lld", (long long)k, (long long)n);
	ASSERT_LE(0, k);
	ASSERT_LE(0, n);
	TH_LOG("receiver's CPU over %d ms of an empty channel: %lld us with ODSM_IOC_WAIT, %lld us polling",
	       CHAN_IDLE_MS, (long long)k, (long long)n);
	printf("ODSM_WAITWORD chan_recv_idle_cpu_us kwait=%lld nap=%lld\n",
	       (long long)k, (long long)n);
	EXPECT_GT(n, k);
}

TEST_HARNESS_MAIN
