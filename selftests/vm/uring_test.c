// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring commands on /dev/odsm (struct odsm_uring_cmd) on this node's own
 * partition, no cluster: every command completes once with what its ioctl
 * returns, the same bytes as the ioctls one at a time; a bad command area
 * gets its errno and the uring_refused counter, and so does a command
 * past a program's bound on commands in flight; a process that exits with
 * commands in flight loses none (uring_cmds and uring_done meet again) and
 * hangs nothing.  The remote cases: selftests/cluster/cluster_uring_test.c.
 */
#include <pthread.h>
#include <time.h>
#include <linux/odsm_deleg.h>
#include "odsm_vm.h"
#include "odsm_async.h"
#include "uring_raw.h"

#define NR	64u

static uint64_t ustat(const char *name)
{
	char path[96];

	snprintf(path, sizeof(path), "stats/%s", name);
	return t_sysfs(path);
}

/* Wait up to secs for every command taken to be done: 0, or the gap. */
static int64_t settle(unsigned int secs)
{
	unsigned int i;
	int64_t gap = 0;

	for (i = 0; i < secs * 20; i++) {
		gap = (int64_t)(ustat("uring_cmds") - ustat("uring_done"));
		if (!gap)
			return 0;
		usleep(50000);
	}
	return gap;
}

FIXTURE(uring)
{
	struct odsm_async *a;
	uint64_t obj;		/* NR KiB of pattern */
	uint8_t *p;
};

FIXTURE_SETUP(uring)
{
	unsigned int i;

	ASSERT_EQ(0, odsm_init());
	ASSERT_EQ(0, odsm_async_new(NR, &self->a));
	ASSERT_EQ(0, odsm_alloc(NR * 1024, 0, 0, &self->obj));
	self->p = t_p(self->obj);
	for (i = 0; i < NR * 1024; i++)
		self->p[i] = (uint8_t)(i * 7 + i / 251);
}

FIXTURE_TEARDOWN(uring)
{
	odsm_async_free(self->a);
	odsm_free(self->obj);
	odsm_fini();
}

/* NR READs in flight at once: each completes once, with its bytes. */
TEST_F(uring, reads_in_flight)
{
	static uint8_t buf[NR][1024];
	struct odsm_rw rw[NR];
	struct odsm_async_done d[NR];
	unsigned int seen[NR] = { 0 }, i, got = 0;
	uint64_t c0 = ustat("uring_cmds"), d0 = ustat("uring_done");
	int n;

	memset(buf, 0, sizeof(buf));
	for (i = 0; i < NR; i++) {
		rw[i] = (struct odsm_rw){ .gaddr = self->obj + i * 1024,
					  .buf = (uintptr_t)buf[i], .len = 1024 };
		ASSERT_EQ(0, odsm_async_queue(self->a, ODSM_IOC_READ, &rw[i],
					      1000 + i));
	}
	/* the ring is full: depth operations queued */
	ASSERT_EQ(-EBUSY, odsm_async_queue(self->a, ODSM_IOC_READ, &rw[0], 0));
	ASSERT_EQ((int)NR, odsm_async_submit(self->a));
	while (got < NR) {
		n = odsm_async_reap(self->a, d, NR, 1);
		ASSERT_LT(0, n);
		for (i = 0; i < (unsigned int)n; i++) {
			ASSERT_LE(1000u, d[i].tag);
			ASSERT_GT(1000 + NR, d[i].tag);
			EXPECT_EQ(0, d[i].result);
			seen[d[i].tag - 1000]++;
		}
		got += n;
	}
	EXPECT_EQ(0u, odsm_async_pending(self->a));
	for (i = 0; i < NR; i++) {
		EXPECT_EQ(1u, seen[i]);
		EXPECT_EQ(0, memcmp(buf[i], self->p + i * 1024, 1024));
	}
	EXPECT_EQ(NR, ustat("uring_cmds") - c0);
	EXPECT_EQ(NR, ustat("uring_done") - d0);
}

/* The batch calls give what the calls one at a time give. */
TEST_F(uring, batches_match_single_calls)
{
	static uint8_t one[NR][100], many[NR][100], src[NR][100];
	struct odsm_range r[NR];
	int res[NR];
	unsigned int i;

	for (i = 0; i < NR; i++) {
		ASSERT_EQ(0, odsm_read(self->obj + i * 997, one[i], 100));
		r[i] = (struct odsm_range){ self->obj + i * 997, many[i], 100 };
	}
	ASSERT_EQ(0, odsm_read_many(r, NR, res));
	for (i = 0; i < NR; i++) {
		EXPECT_EQ(0, res[i]);
		EXPECT_EQ(0, memcmp(one[i], many[i], 100));
	}
	/* writes land where odsm_write() would put them */
	for (i = 0; i < NR; i++) {
		memset(src[i], 0x40 + i, 100);
		r[i] = (struct odsm_range){ self->obj + i * 1024, src[i], 100 };
	}
	ASSERT_EQ(0, odsm_write_many(r, NR, NULL));
	for (i = 0; i < NR; i++)
		EXPECT_EQ(0, memcmp(self->p + i * 1024, src[i], 100));
	/* one bad range fails alone, with the ioctl's errno */
	r[5].gaddr = odsm_rt.local_hi - 50;	/* past the partition */
	ASSERT_EQ(-EINVAL, odsm_read_many(r, NR, res));
	for (i = 0; i < NR; i++)
		EXPECT_EQ(i == 5 ? -EINVAL : 0, res[i]);
}

/* Atomics and borrows of local objects, through the ring. */
TEST_F(uring, atomics_and_local_borrows)
{
	struct odsm_atomic at[NR];
	struct odsm_async_done d[NR];
	unsigned int olds[NR] = { 0 }, i, got = 0;
	odsm_ref refs[4];
	const void *ptr[4];
	int res[4], n;
	uint64_t word = self->obj + 8;

	*(uint64_t *)t_p(word) = 0;
	for (i = 0; i < NR; i++) {
		at[i] = (struct odsm_atomic){ .gaddr = word,
					      .op = ODSM_ATOMIC_FETCH_ADD,
					      .operand = 1 };
		ASSERT_EQ(0, odsm_async_queue(self->a, ODSM_IOC_ATOMIC,
					      &at[i], i));
	}
	ASSERT_EQ((int)NR, odsm_async_submit(self->a));
	while (got < NR) {
		n = odsm_async_reap(self->a, d, NR, NR - got);
		ASSERT_LT(0, n);
		for (i = 0; i < (unsigned int)n; i++) {
			ASSERT_EQ(0, d[i].result);
			ASSERT_GT(NR, at[d[i].tag].old);
			olds[at[d[i].tag].old]++;
		}
		got += n;
	}
	EXPECT_EQ(NR, *(uint64_t *)t_p(word));
	for (i = 0; i < NR; i++)
		EXPECT_EQ(1u, olds[i]);

	/* local borrows never enter the kernel: the objects in place */
	for (i = 0; i < 4; i++)
		refs[i].g = self->obj;
	refs[3].g = 8;		/* not in the heap */
	EXPECT_EQ(-EINVAL, odsm_borrow_many(refs, ptr, 4, res));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0, res[i]);
		EXPECT_EQ(self->p, ptr[i]);
		EXPECT_EQ(0, odsm_return(&refs[i]));
	}
	EXPECT_EQ(-EINVAL, res[3]);
	EXPECT_EQ(NULL, ptr[3]);
}

/*
 * The command area and cmd_op are checked before anything runs, each
 * with its errno, counted in uring_refused; the op's own arguments by the
 * ioctl's code, counted in bad_ioctls.
 */
TEST_F(uring, bad_commands)
{
	struct odsm_rw rw = { .gaddr = self->obj, .len = 16 };
	struct odsm_alloc al = { .size = 16 };
	struct io_uring_sqe *sqe;
	uint8_t buf[16];
	struct t_ring r, r128;
	uint64_t ref0, bad0, einval0, tag;
	int fd = odsm_rt.fd, res;

	rw.buf = (uintptr_t)buf;
	ASSERT_EQ(0, t_ring_init(&r, 8, 0));
	ref0 = ustat("uring_refused");
	bad0 = ustat("bad_ioctls");
	einval0 = ustat("alloc_einval");
	EXPECT_EQ(0, t_ring_run(&r, fd, ODSM_IOC_READ, (uintptr_t)&rw, 0, 0));
	/* no such command, and admin ones: the worker has no caller's caps */
	EXPECT_EQ(-ENOTTY, t_ring_run(&r, fd, 0xdead, (uintptr_t)&rw, 0, 0));
	EXPECT_EQ(-ENOTTY, t_ring_run(&r, fd, ODSM_IOC_LEAVE, 1, 0, 0));
	EXPECT_EQ(-ENOTTY, t_ring_run(&r, fd, ODSM_IOC_SET_CONFIG,
				      (uintptr_t)&rw, 0, 0));
	EXPECT_EQ(-ENOTTY, t_ring_run(&r, fd, ODSM_IOC_DELEG_SERVE,
				      (uintptr_t)&rw, 0, 0));
	/* the area's own fields */
	EXPECT_EQ(-EINVAL, t_ring_run(&r, fd, ODSM_IOC_READ, (uintptr_t)&rw,
				      1, 0));
	EXPECT_EQ(-EINVAL, t_ring_run(&r, fd, ODSM_IOC_READ, (uintptr_t)&rw,
				      0, 0x80000000u));
	EXPECT_EQ(-EINVAL, t_ring_run(&r, fd, ODSM_IOC_READ, 0, 0, 0));
	EXPECT_EQ(7u, ustat("uring_refused") - ref0);
	EXPECT_EQ(0u, ustat("bad_ioctls") - bad0);

	/* refused by the ioctl's checks, after the worker ran it */
	rw.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, t_ring_run(&r, fd, ODSM_IOC_READ, (uintptr_t)&rw,
				      0, 0));
	rw.reserved[1] = 0;
	al.reserved = 3;
	EXPECT_EQ(-EINVAL, t_ring_run(&r, fd, ODSM_IOC_ALLOC, (uintptr_t)&al,
				      0, 0));
	/* an argument that is no user memory */
	EXPECT_EQ(-EFAULT, t_ring_run(&r, fd, ODSM_IOC_READ, 4096, 0, 0));
	EXPECT_EQ(7u, ustat("uring_refused") - ref0);
	/* as the ioctls count them: a refused ALLOC is an alloc_einval */
	EXPECT_EQ(2u, ustat("bad_ioctls") - bad0);
	EXPECT_EQ(1u, ustat("alloc_einval") - einval0);

	/* a file that is not /dev/odsm: io_uring's own refusal */
	EXPECT_GT(0, t_ring_run(&r, 0, ODSM_IOC_READ, (uintptr_t)&rw, 0, 0));

	/* 128-byte SQEs: the area's other 64 bytes are reserved */
	ASSERT_EQ(0, t_ring_init(&r128, 8, IORING_SETUP_SQE128));
	EXPECT_EQ(0, t_ring_run(&r128, fd, ODSM_IOC_READ, (uintptr_t)&rw,
				0, 0));
	sqe = t_ring_cmd(&r128, fd, ODSM_IOC_READ, (uintptr_t)&rw, 0, 0, 9);
	sqe->cmd[79] = 1;
	t_ring_push(&r128);
	ASSERT_EQ(1, t_ring_enter(&r128, 1, 1));
	ASSERT_EQ(1, t_ring_cqe(&r128, &tag, &res));
	EXPECT_EQ(9u, tag);
	EXPECT_EQ(-EINVAL, res);
	EXPECT_EQ(8u, ustat("uring_refused") - ref0);
	t_ring_exit(&r128);

	/* run from an io-wq worker (IOSQE_ASYNC): the submitter's mm too */
	memset(buf, 0, sizeof(buf));
	sqe = t_ring_cmd(&r, fd, ODSM_IOC_READ, (uintptr_t)&rw, 0, 0, 11);
	sqe->flags |= IOSQE_ASYNC;
	t_ring_push(&r);
	ASSERT_EQ(1, t_ring_enter(&r, 1, 1));
	ASSERT_EQ(1, t_ring_cqe(&r, &tag, &res));
	EXPECT_EQ(11u, tag);
	EXPECT_EQ(0, res);
	EXPECT_EQ(0, memcmp(buf, self->p, 16));
	t_ring_exit(&r);
	EXPECT_EQ(0, settle(5));
}

/*
 * A cancel of commands in flight: each still completes exactly once, with
 * its result (io_uring cannot take back a command not marked cancelable).
 */
TEST_F(uring, cancel_in_flight)
{
	static uint8_t buf[NR][1024];
	struct odsm_rw rw[NR];
	struct io_uring_sqe *sqe;
	struct t_ring r;
	unsigned int seen[NR] = { 0 }, cancels = 0, i, got = 0;
	uint64_t tag;
	int res;

	ASSERT_EQ(0, t_ring_init(&r, 2 * NR, 0));
	for (i = 0; i < NR; i++) {
		rw[i] = (struct odsm_rw){ .gaddr = self->obj + i * 1024,
					  .buf = (uintptr_t)buf[i], .len = 1024 };
		t_ring_cmd(&r, odsm_rt.fd, ODSM_IOC_READ, (uintptr_t)&rw[i],
			   0, 0, i);
		t_ring_push(&r);
	}
	ASSERT_EQ((int)NR, t_ring_enter(&r, NR, 0));
	for (i = 0; i < NR; i++) {
		sqe = t_ring_sqe(&r);
		sqe->opcode = IORING_OP_ASYNC_CANCEL;
		sqe->fd = -1;
		sqe->addr = i;
		sqe->user_data = 5000 + i;
		t_ring_push(&r);
	}
	ASSERT_EQ((int)NR, t_ring_enter(&r, NR, 0));
	while (got < 2 * NR) {
		if (!t_ring_cqe(&r, &tag, &res)) {
			ASSERT_LE(0, t_ring_enter(&r, 0, 1));
			continue;
		}
		got++;
		if (tag >= 5000) {
			/* gone already, or found and not cancelable */
			EXPECT_TRUE(res == -ENOENT || res == -EALREADY ||
				    res == -EINVAL);
			cancels++;
			continue;
		}
		ASSERT_GT(NR, tag);
		EXPECT_EQ(0, res);
		seen[tag]++;
	}
	EXPECT_EQ(NR, cancels);
	for (i = 0; i < NR; i++) {
		EXPECT_EQ(1u, seen[i]);
		EXPECT_EQ(0, memcmp(buf[i], self->p + i * 1024, 1024));
	}
	t_ring_exit(&r);
	EXPECT_EQ(0, settle(5));
}

/*
 * A process that exits with commands in flight: its exit waits them out
 * (within the cluster timeout at worst), none is lost, nothing hangs.
 */
TEST_F(uring, exit_in_flight)
{
	uint64_t c0 = ustat("uring_cmds"), d0 = ustat("uring_done");
	int status, round;
	pid_t pid;

	for (round = 0; round < 3; round++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			static uint8_t buf[NR][16384];
			struct odsm_rw rw[NR];
			struct odsm_async *a;
			unsigned int i;

			if (odsm_async_new(NR, &a))
				_exit(2);
			for (i = 0; i < NR; i++) {
				rw[i] = (struct odsm_rw){
					.gaddr = self->obj + (i % 4) * 16384,
					.buf = (uintptr_t)buf[i],
					.len = 16384 };
				odsm_async_queue(a, ODSM_IOC_READ, &rw[i], i);
			}
			if (odsm_async_submit(a) != (int)NR)
				_exit(3);
			/* round 1 closes the device first */
			if (round == 1)
				close(odsm_rt.fd);
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	EXPECT_EQ(0, settle(10));
	EXPECT_EQ(3 * NR, ustat("uring_cmds") - c0);
	EXPECT_EQ(3 * NR, ustat("uring_done") - d0);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * A forked program's READ through its own ring: 0 when it completed with
 * the object's bytes within a second (it was not queued behind the
 * parent's commands), else what went wrong.
 */
static int other_program_reads(const uint8_t *want, uint64_t gaddr)
{
	static uint8_t buf[64];
	struct odsm_rw rw = { .gaddr = gaddr, .buf = (uintptr_t)buf,
			      .len = sizeof(buf) };
	uint64_t tag, t0 = now_ms();
	struct t_ring r;
	int res;

	if (t_ring_init(&r, 4, 0))
		return 2;
	t_ring_cmd(&r, odsm_rt.fd, ODSM_IOC_READ, (uintptr_t)&rw, 0, 0, 1);
	t_ring_push(&r);
	if (t_ring_enter(&r, 1, 1) != 1 || !t_ring_cqe(&r, &tag, &res))
		return 3;
	if (res || memcmp(buf, want, sizeof(buf)))
		return 4;
	return now_ms() - t0 < 1000 ? 0 : 5;
}

/*
 * A program takes at most ODSM_URING_INFLIGHT_MAX commands in flight, all
 * its rings and files together: one more is refused with -EBUSY at once
 * (uring_refused), through another file too, while another program's
 * commands still run; once they complete, the count is back (256 more at
 * once, none refused).  The commands that wait are DELEG_CALLs to an
 * endpoint of this node that nobody serves: each fails -ETIMEDOUT after
 * 3/4 of the cluster's timeout (1.5 s unjoined).
 */
/* A batch of 8 READs run while the program's cap is taken (a thread). */
struct capped {
	pthread_t th;
	uint64_t obj;
	uint8_t buf[8][100];
	int res[8], ret;
};

static void *capped_batch(void *arg)
{
	struct capped *c = arg;
	struct odsm_range r[8];
	unsigned int i;

	for (i = 0; i < 8; i++)
		r[i] = (struct odsm_range){ c->obj + i * 1024, c->buf[i], 100 };
	c->ret = odsm_read_many(r, 8, c->res);
	return NULL;
}

TEST_F(uring, per_program_cap)
{
	struct capped cb = { .obj = self->obj };
	enum { CAP = ODSM_URING_INFLIGHT_MAX };
	static struct odsm_deleg_call dc[CAP + 2];
	static struct odsm_rw rw[CAP];
	static uint8_t req[1024], answer[1024], resp[CAP][64];
	/* an endpoint is an address without its color */
	uint64_t ep = odsm_addr_of(self->obj);
	struct odsm_deleg_bind bd = { .endpoint = ep,
				      .slot_size = sizeof(req) };
	uint64_t refused0 = ustat("uring_refused"), tag;
	unsigned int i, got = 0, timedout = 0, other = 0;
	int fd2 = open("/dev/odsm", O_RDWR), rt = open("/dev/odsm", O_RDWR);
	int res, status;
	struct t_ring r;
	pid_t pid;

	ASSERT_LE(0, fd2);
	ASSERT_LE(0, rt);
	ASSERT_EQ(0, ioctl(rt, ODSM_IOC_DELEG_BIND, &bd)) {
		TH_LOG("bind at %#llx: %s", (unsigned long long)bd.endpoint,
		       strerror(errno));
	}
	/* one APPLY of 8 bytes: seq 1, count 1, len 40 */
	memset(req, 0, sizeof(req));
	req[0] = 1;
	req[4] = 1;
	req[8] = 40;
	req[16] = 1;			/* op */
	req[32] = 8;			/* arg_len */
	req[36] = 8;			/* ret_max */
	req[40] = ODSM_DREQ_APPLY;	/* kind */
	ASSERT_EQ(0, t_ring_init(&r, 2 * CAP, 0));
	/* CAP on this program's own file, then one more on it and one on fd2 */
	for (i = 0; i < CAP + 2; i++) {
		dc[i] = (struct odsm_deleg_call){
			.endpoint = ep, .req = (uintptr_t)req,
			.resp = (uintptr_t)answer, .req_len = 56,
			.resp_cap = sizeof(answer), .slot_size = sizeof(req) };
		t_ring_cmd(&r, i == CAP + 1 ? fd2 : odsm_rt.fd,
			   ODSM_IOC_DELEG_CALL, (uintptr_t)&dc[i], 0, 0, i);
		t_ring_push(&r);
	}
	ASSERT_EQ((int)CAP + 2, t_ring_enter(&r, CAP + 2, 0));
	/* the two past the cap come back at once */
	for (i = 0; i < 2; i++) {
		ASSERT_LE(0, t_ring_enter(&r, 0, 1));
		ASSERT_TRUE(t_ring_cqe(&r, &tag, &res));
		EXPECT_LE((uint64_t)CAP, tag);
		EXPECT_EQ(-EBUSY, res);
		got++;
	}
	EXPECT_EQ(refused0 + 2, ustat("uring_refused"));
	/* a batch of this program's meanwhile: refused by the cap, sent
	 * again until the count comes back (it returned -EBUSY at once)
	 */
	ASSERT_EQ(0, pthread_create(&cb.th, NULL, capped_batch, &cb));
	/* another program's command runs meanwhile */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(other_program_reads(self->p, self->obj));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("the other program's READ: %d (3: none, 4: wrong, 5: late)",
		       WEXITSTATUS(status));
	}
	while (got < CAP + 2) {
		if (!t_ring_cqe(&r, &tag, &res)) {
			ASSERT_LE(0, t_ring_enter(&r, 0, 1));
			continue;
		}
		got++;
		if (res == -ETIMEDOUT)
			timedout++;
		else
			TH_LOG("command %llu: %d", (unsigned long long)tag,
			       res);
	}
	EXPECT_EQ((unsigned int)CAP, timedout);
	ASSERT_EQ(0, pthread_join(cb.th, NULL));
	EXPECT_EQ(0, cb.ret);
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(0, cb.res[i]);
		EXPECT_EQ(0, memcmp(cb.buf[i], self->p + i * 1024, 100));
	}
	/* the count came back: CAP more at once, none refused */
	for (i = 0; i < CAP; i++) {
		rw[i] = (struct odsm_rw){ .gaddr = self->obj + (i % NR) * 1024,
					  .buf = (uintptr_t)resp[i],
					  .len = sizeof(resp[i]) };
		t_ring_cmd(&r, i % 2 ? fd2 : odsm_rt.fd, ODSM_IOC_READ,
			   (uintptr_t)&rw[i], 0, 0, 10000 + i);
		t_ring_push(&r);
	}
	ASSERT_EQ((int)CAP, t_ring_enter(&r, CAP, 0));
	for (got = 0; got < CAP;) {
		if (!t_ring_cqe(&r, &tag, &res)) {
			ASSERT_LE(0, t_ring_enter(&r, 0, 1));
			continue;
		}
		got++;
		EXPECT_EQ(0, res) TH_LOG("READ %llu", (unsigned long long)tag);
		other += !res;
	}
	EXPECT_EQ((unsigned int)CAP, other);
	for (i = 0; i < CAP; i++)
		EXPECT_EQ(0, memcmp(resp[i], self->p + (i % NR) * 1024,
				    sizeof(resp[i])));
	t_ring_exit(&r);
	close(rt);
	close(fd2);
	EXPECT_EQ(0, settle(5));
}

/*
 * A child of fork() gets a batch ring of its own: the forking thread's is
 * a shared mapping, which parent and child used together before (each
 * took the other's completions, and both hung or wrote past res[]).
 */
static int batch_loop(const uint8_t *want, uint64_t obj, unsigned int n,
		      unsigned int rounds)
{
	static uint8_t buf[NR][64];
	struct odsm_range r[NR];
	int res[NR + 8];
	unsigned int k, i;

	for (k = 0; k < rounds; k++) {
		for (i = 0; i < NR + 8; i++)
			res[i] = 0x5a5a;
		for (i = 0; i < n; i++)
			r[i] = (struct odsm_range){ obj + i * 1024 + k % 64,
						    buf[i], 64 };
		if (odsm_read_many(r, n, res))
			return 1;
		for (i = 0; i < n; i++)
			if (res[i] || memcmp(buf[i], want + i * 1024 + k % 64,
					     64))
				return 2;
		for (i = n; i < NR + 8; i++)
			if (res[i] != 0x5a5a)
				return 3;	/* written past res[n] */
	}
	return 0;
}

TEST_F(uring, batch_ring_after_fork)
{
	int status;
	pid_t pid;

	/* the parent's thread has its ring now */
	ASSERT_EQ(0, batch_loop(self->p, self->obj, 8, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		alarm(60);
		_exit(batch_loop(self->p, self->obj, 8, 300));
	}
	EXPECT_EQ(0, batch_loop(self->p, self->obj, NR, 300));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) {
		TH_LOG("the child: signal %d (a hang: SIGALRM)",
		       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	if (WIFEXITED(status))
		EXPECT_EQ(0, WEXITSTATUS(status));
}

/* Without the device (odsm_fini()), a batch fails; it spun for ever. */
TEST_F(uring, batch_without_device_fails)
{
	uint8_t buf[8];
	struct odsm_range r = { self->obj, buf, sizeof(buf) };
	int res = 1, status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		alarm(10);
		odsm_fini();
		_exit(odsm_read_many(&r, 1, &res) == -EBADF && res == -EBADF ?
		      0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	if (WIFEXITED(status))
		EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
