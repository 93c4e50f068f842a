// SPDX-License-Identifier: GPL-2.0
/*
 * Delegation across nodes through the module (ODSM_IOC_DELEG_*), run on
 * every node at once.  Node 0 binds a trustee endpoint and serves it from
 * one thread: a counter only that thread touches.  Client threads on every
 * node, node 0's own included (the module's local path), send batches of
 * increments to it, one ODSM_IOC_DELEG_CALL per batch; every answer is
 * checked with the slot codec (count, tags, statuses) and the total must
 * come out exact (a call with too little room for an answer, refused
 * before it is sent, adds nothing).  Then the failures: a batch the
 * client's module refuses as malformed (-EBADMSG, counted), bad arguments
 * (-EINVAL, counted), and, once node 0's runtime has gone,
 * a batch for it fails at once (-ESRCH); and a runtime that dies holding a
 * batch it took fails that batch at once (-EOWNERDEAD), not after a
 * timeout; and a runtime whose take of a batch is stuck copying it out
 * (its buffer a page userfaultfd holds) does not keep the batch's client
 * past its -ETIMEDOUT; and a local client killed while its batch waits
 * ends at once; and 64 batches of node 1 waiting for a stalled runtime of
 * node 0 leave node 1's reads of node 0 served (the rest are -EBUSY).
 *
 * This drives the module's carrying of batches with a minimal runtime of
 * its own (the serving loop below); libodsm's trustees do not use it yet.
 */
#include <pthread.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include "odsm_cluster.h"
#include "../../kmod/odsm_dslot.h"

#define THREADS		2	/* client threads per node */
#define BATCHES		150	/* batches per thread */
#define PER_BATCH	8	/* increments per batch */
#define SLOT		1024
#define OP_INC		0x9e3779b97f4a7c15ULL	/* any id but 0 */
#define OP_LEN		0x5851f42d4c957f2dULL	/* answers the req_len it got */
#define OP_OVERLONG	0x14057b7ef767814fULL	/* answers ret_max + 8 bytes */

#define W_DG_EP		270	/* node 0: its address is the endpoint */
#define W_DG_READY	271	/* node 0: 1 once the endpoint is bound */
#define W_DG_GONE	272	/* node 0: 1 once the runtime has gone */
#define W_DG_READY2	273	/* node 0: 1 once its second runtime is bound */
#define W_DG_EP3	274	/* node 0: its address is the stuck runtime's */
#define W_DG_EP4	275	/* node 0: its address is the silent runtime's */
#define W_DG_EP5	276	/* node 0: its address is the flooded runtime's */
#define W_DG_READY5	277	/* node 0: 1 once it is bound */
#define B_HOST		1	/* the barriers' directory: node 1's */
#define B_DG		20	/* .. 24 */
#define SECS		240

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

/* ---- node 0: the runtime ---------------------------------------------- */

struct server {
	pthread_t tid;
	int fd;
	volatile int stop;
	uint64_t counter;
	uint64_t batches, bad;
	uint64_t probes;	/* batches of answer_bounds(), not counted */
	uint64_t refused;	/* answers the module refused */
	int err;
};

/*
 * Answer a batch of OP_INC requests into resp; its length.  A batch of
 * answer_bounds() (one OP_LEN or OP_OVERLONG request) is answered as that
 * asks, and counted apart.
 */
static uint32_t run_batch(struct server *s, const uint8_t *req,
			  uint32_t req_len, uint8_t *resp)
{
	struct odsm_dreq_view v[64];
	struct odsm_drbatch rb;
	uint32_t n = 0, i;
	uint64_t *ret;

	odsm_drbatch_init(&rb, resp, SLOT);
	if (odsm_dslot_parse_req(req, SLOT, v, 64, &n)) {
		s->bad++;
		odsm_drbatch_seal(&rb, -EBADMSG);
		return ODSM_DSLOT_HDR + rb.len;
	}
	for (i = 0; i < n; i++) {
		uint64_t d;

		ret = odsm_drbatch_ret(&rb, v[i].ret_max);
		if (n == 1 && (v[i].op == OP_LEN || v[i].op == OP_OVERLONG)) {
			uint64_t got = req_len;

			s->probes++;
			memset(ret, 0, v[i].ret_max + 8);
			memcpy(ret, &got, 8);
			odsm_drbatch_add(&rb, 0, v[i].tag, v[i].op == OP_LEN ?
					 8 : v[i].ret_max + 8);
			continue;
		}
		if (v[i].op != OP_INC || v[i].arg_len != 8 || v[i].ret_max < 8) {
			odsm_drbatch_add(&rb, -EBADRQC, v[i].tag, 0);
			continue;
		}
		memcpy(&d, req + v[i].arg_off, 8);
		s->counter += d;
		memcpy(ret, &s->counter, 8);
		odsm_drbatch_add(&rb, 0, v[i].tag, 8);
	}
	odsm_drbatch_seal(&rb, 0);
	return ODSM_DSLOT_HDR + rb.len;
}

static void *serve_loop(void *arg)
{
	struct server *s = arg;
	static uint8_t req[SLOT], resp[SLOT];
	struct odsm_deleg_serve a = { .req = (uintptr_t)req,
				      .resp = (uintptr_t)resp,
				      .timeout_ms = 100 };
	int ret;

	while (!s->stop) {
		ret = ioctl(s->fd, ODSM_IOC_DELEG_SERVE, &a);
		a.done = 0;
		if (ret && errno == EBADMSG) {
			s->refused++;	/* its last answer: OP_OVERLONG's */
			continue;
		}
		if (ret && errno != EAGAIN && errno != EINTR) {
			s->err = -errno;
			break;
		}
		if (ret)
			continue;
		s->batches++;
		a.done = a.ticket;
		a.resp_len = run_batch(s, req, a.req_len, resp);
	}
	return NULL;
}

/* ---- clients ------------------------------------------------------------- */

struct client {
	pthread_t tid;
	uint64_t ep;
	unsigned int id;
	int err;		/* first error */
	unsigned int bad;	/* answers that do not add up */
	uint64_t last;		/* the counter's value after its last batch */
};

static int send_batch(uint64_t ep, const uint8_t *req, uint32_t len,
		      uint8_t *resp, uint32_t *resp_len)
{
	struct odsm_deleg_call a = {
		.endpoint = ep, .req = (uintptr_t)req, .resp = (uintptr_t)resp,
		.req_len = len, .resp_cap = SLOT, .slot_size = SLOT,
	};

	if (ioctl(odsm_rt.fd, ODSM_IOC_DELEG_CALL, &a))
		return -errno;
	*resp_len = a.resp_len;
	return 0;
}

static void *client_loop(void *arg)
{
	struct client *c = arg;
	uint8_t req[SLOT], resp[SLOT];
	struct odsm_dresp_view v[PER_BATCH];
	unsigned int b, i;

	for (b = 0; b < BATCHES; b++) {
		struct odsm_dbatch db;
		uint64_t one = 1, prev = 0, val;
		uint32_t rlen = 0;
		int32_t st;
		int ret;

		memset(req, 0, sizeof(req));
		odsm_dbatch_init(&db, req, SLOT);
		for (i = 0; i < PER_BATCH; i++) {
			struct odsm_dreq r = {
				.op = OP_INC, .arg_len = 8, .ret_max = 8,
				.kind = ODSM_DREQ_APPLY, .tag = b * PER_BATCH + i,
			};

			ret = odsm_dbatch_add(&db, &r, &one);
			if (ret) {
				c->err = ret;
				return NULL;
			}
		}
		odsm_dbatch_seal(&db);
		ret = send_batch(c->ep, req, ODSM_DSLOT_HDR + db.len, resp,
				 &rlen);
		if (ret) {
			c->err = ret;
			return NULL;
		}
		memset(resp + rlen, 0, SLOT - rlen);
		if (odsm_dslot_parse_resp(resp, SLOT, PER_BATCH, v, &st) || st) {
			c->bad++;
			continue;
		}
		for (i = 0; i < PER_BATCH; i++) {
			if (v[i].status || v[i].ret_len != 8 ||
			    v[i].tag != b * PER_BATCH + i) {
				c->bad++;
				break;
			}
			memcpy(&val, resp + v[i].ret_off, 8);
			/* one batch runs whole on the trustee: consecutive */
			if (i && val != prev + 1)
				c->bad++;
			prev = val;
		}
		c->last = prev;
	}
	return NULL;
}

/*
 * A client with less room for the answer than a slot (an answer may take
 * a whole slot) is refused with -EMSGSIZE before its batch is sent: the
 * batch must not run (the runtime's exact total below checks that), or
 * the client would hear an error for a batch that ran.
 */
static void small_room(struct __test_metadata *_metadata, uint64_t ep)
{
	uint8_t req[SLOT] = { 0 }, resp[SLOT];
	struct odsm_dreq r = { .op = OP_INC, .arg_len = 8, .ret_max = 8,
			       .kind = ODSM_DREQ_APPLY };
	struct odsm_dbatch db;
	struct odsm_deleg_call a = {
		.endpoint = ep, .req = (uintptr_t)req, .resp = (uintptr_t)resp,
		.resp_cap = ODSM_DSLOT_HDR, .slot_size = SLOT,
	};
	uint64_t one = 1;

	odsm_dbatch_init(&db, req, SLOT);
	ASSERT_EQ(0, odsm_dbatch_add(&db, &r, &one));
	odsm_dbatch_seal(&db);
	a.req_len = ODSM_DSLOT_HDR + db.len;
	EXPECT_EQ(-1, ioctl(odsm_rt.fd, ODSM_IOC_DELEG_CALL, &a));
	EXPECT_EQ(EMSGSIZE, errno);
}

/*
 * What the module carries is bounded by the batch itself, both ways: the
 * bytes a client passes past its batch's own length (the header's len)
 * never reach the runtime, and an answer longer than its request's room
 * (ret_max) is refused (-EBADMSG, counted as malformed on the runtime's
 * node) whatever the client's library would have made of it.
 */
static void answer_bounds(struct __test_metadata *_metadata, uint64_t ep)
{
	uint8_t req[SLOT] = { 0 }, resp[SLOT];
	struct odsm_dreq r = { .op = OP_LEN, .ret_max = 8,
			       .kind = ODSM_DREQ_APPLY };
	struct odsm_dresp_view v[1];
	struct odsm_dbatch db;
	uint64_t got = 0, m0 = c_stat("deleg_malformed");
	uint32_t rlen = 0, len;
	int32_t st = 1;
	int ret;

	odsm_dbatch_init(&db, req, SLOT);
	ASSERT_EQ(0, odsm_dbatch_add(&db, &r, NULL));
	odsm_dbatch_seal(&db);
	len = ODSM_DSLOT_HDR + db.len;
	memset(req + len, 0xa5, 64);		/* not the batch's */
	ret = send_batch(ep, req, len + 64, resp, &rlen);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, odsm_dslot_parse_resp(resp, SLOT, 1, v, &st));
	ASSERT_EQ(0, st);
	ASSERT_EQ(8U, v[0].ret_len);
	memcpy(&got, resp + v[0].ret_off, 8);
	EXPECT_EQ(len, got) {
		TH_LOG("the runtime got %llu bytes of a %u-byte batch",
		       (unsigned long long)got, len);
	}

	r.op = OP_OVERLONG;
	odsm_dbatch_init(&db, req, SLOT);
	ASSERT_EQ(0, odsm_dbatch_add(&db, &r, NULL));
	odsm_dbatch_seal(&db);
	ret = send_batch(ep, req, ODSM_DSLOT_HDR + db.len, resp, &rlen);
	EXPECT_EQ(-EBADMSG, ret);
	if (C.self == 0)	/* the runtime's node refused it */
		EXPECT_LE(m0 + 1, c_stat("deleg_malformed"));
}

/*
 * A call with a reserved field set fails with -EINVAL and counts in
 * deleg_out_errors (sysfs-kernel-odsm: "bad arguments"); odsm_dev.c
 * counts a DELEG_CALL in bad_ioctls never, so nowhere else would.  No
 * other program of this node calls meanwhile, so the count is exact.
 */
static void bad_args(struct __test_metadata *_metadata, uint64_t ep,
		     uint8_t *req, uint8_t *resp)
{
	struct odsm_deleg_call a = {
		.endpoint = ep, .req = (uintptr_t)req, .resp = (uintptr_t)resp,
		.req_len = ODSM_DSLOT_HDR, .resp_cap = SLOT, .slot_size = SLOT,
		.reserved = { 1 },
	};
	uint64_t e0 = c_stat("deleg_out_errors");

	EXPECT_EQ(-1, ioctl(odsm_rt.fd, ODSM_IOC_DELEG_CALL, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(e0 + 1, c_stat("deleg_out_errors"));
}

/*
 * Node 0's runtime is gone: a batch for it fails at once (-ESRCH), and a
 * malformed one is refused by the client's own module (-EBADMSG).
 */
static void gone_checks(struct __test_metadata *_metadata, uint64_t ep)
{
	uint8_t req[SLOT] = { 0 }, resp[SLOT];
	struct odsm_dbatch db;
	struct odsm_dreq r = { .op = OP_INC, .arg_len = 8,
			       .ret_max = 8,
			       .kind = ODSM_DREQ_APPLY };
	uint64_t one = 1, t0, e0 = c_stat("deleg_out_errors");
	uint64_t m0 = c_stat("deleg_malformed");
	struct odsm_dslot_hdr h;
	uint32_t rlen;
	int ret;

	odsm_dbatch_init(&db, req, SLOT);
	ASSERT_EQ(0, odsm_dbatch_add(&db, &r, &one));
	odsm_dbatch_seal(&db);
	t0 = c_now_ms();
	ret = send_batch(ep, req, ODSM_DSLOT_HDR + db.len, resp, &rlen);
	EXPECT_EQ(-ESRCH, ret);
	EXPECT_GT(1000ULL, c_now_ms() - t0);

	/* a batch whose header overstates its records: refused here */
	memcpy(&h, req, sizeof(h));
	h.count = 2;
	memcpy(req, &h, sizeof(h));
	ret = send_batch(ep, req, ODSM_DSLOT_HDR + db.len, resp, &rlen);
	EXPECT_EQ(-EBADMSG, ret);
	EXPECT_LE(m0 + 1, c_stat("deleg_malformed"));
	EXPECT_LE(e0 + 2, c_stat("deleg_out_errors"));

	/* bad arguments: -EINVAL, counted like every failure of the call */
	bad_args(_metadata, ep, req, resp);
}

/*
 * Node 0 binds a runtime again, takes one batch (node 1's) and closes its
 * file without answering, as a runtime killed mid-batch does: node 1's
 * call fails with -EOWNERDEAD at once, far within the cluster's timeout.
 */
static void dies_holding(struct __test_metadata *_metadata, uint64_t ep)
{
	uint8_t req[SLOT] = { 0 }, resp[SLOT];
	uint64_t one = 1, t0, took;
	struct odsm_dbatch db;
	struct odsm_dreq r = { .op = OP_INC, .arg_len = 8, .ret_max = 8,
			       .kind = ODSM_DREQ_APPLY };
	uint32_t rlen;
	int ret;

	if (C.self == 0) {
		struct odsm_deleg_bind bd = { .endpoint = ep, .slot_size = SLOT };
		struct odsm_deleg_serve a = { .req = (uintptr_t)req,
					      .timeout_ms = 60000 };
		int fd = open("/dev/odsm", O_RDWR);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, ODSM_IOC_DELEG_BIND, &bd));
		ASSERT_EQ(0, c_put(0, W_DG_READY2, 1));
		ret = ioctl(fd, ODSM_IOC_DELEG_SERVE, &a);
		EXPECT_EQ(0, ret) {
			TH_LOG("serve: %s", strerror(errno));
		}
		EXPECT_EQ(1U, a.node);
		close(fd);		/* dies holding the batch */
		return;
	}
	ASSERT_EQ(0, c_poll(0, W_DG_READY2, 1, SECS, NULL));
	if (C.self != 1)
		return;
	odsm_dbatch_init(&db, req, SLOT);
	ASSERT_EQ(0, odsm_dbatch_add(&db, &r, &one));
	odsm_dbatch_seal(&db);
	t0 = c_now_ms();
	ret = send_batch(ep, req, ODSM_DSLOT_HDR + db.len, resp, &rlen);
	took = c_now_ms() - t0;
	EXPECT_EQ(-EOWNERDEAD, ret);
	/* the cluster's timeout is seconds; this is the close's round trip */
	EXPECT_GT(C.timeout_ms / 2, took);
	TH_LOG("a runtime that died holding the batch: %s after %llu ms",
	       strerror(-ret), (unsigned long long)took);
}

/*
 * Node 0 only: a runtime's SERVE takes a batch into a page that
 * userfaultfd holds, so its copy to user memory waits until the page is
 * given.  The batch's client (a local one) must still fail with
 * -ETIMEDOUT after 3/4 of the cluster's timeout, not when the runtime's
 * copy ends: the page is given only after three timeouts.
 */
struct stuck_serve {
	int fd;
	void *page;
	int ret, err;
};

static void *stuck_serve_loop(void *arg)
{
	struct stuck_serve *ss = arg;
	struct odsm_deleg_serve a = { .req = (uintptr_t)ss->page,
				      .timeout_ms = 60000 };

	ss->ret = ioctl(ss->fd, ODSM_IOC_DELEG_SERVE, &a);
	ss->err = errno;
	return NULL;
}

struct stuck_client {
	uint64_t ep;
	int ret;
	volatile int done;
};

static void *stuck_client_loop(void *arg)
{
	struct stuck_client *sc = arg;
	static uint8_t req[SLOT], resp[SLOT];
	struct odsm_dreq r = { .op = OP_INC, .arg_len = 8, .ret_max = 8,
			       .kind = ODSM_DREQ_APPLY };
	struct odsm_dbatch db;
	uint64_t one = 1;
	uint32_t rlen;

	odsm_dbatch_init(&db, req, SLOT);
	odsm_dbatch_add(&db, &r, &one);
	odsm_dbatch_seal(&db);
	sc->ret = send_batch(sc->ep, req, ODSM_DSLOT_HDR + db.len, resp,
			     &rlen);
	sc->done = 1;
	return NULL;
}

static void stuck_copy(struct __test_metadata *_metadata)
{
	struct stuck_client sc = { .ep = c_word(0, W_DG_EP3) };
	struct odsm_deleg_bind bd = { .endpoint = sc.ep, .slot_size = SLOT };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct stuck_serve ss = { .ret = -1 };
	struct uffdio_zeropage zp = { 0 };
	uint64_t t0, took, give = 3ULL * C.timeout_ms;
	pthread_t st, ct;
	int uffd;

	if (C.self != 0)
		return;
	uffd = syscall(__NR_userfaultfd, O_CLOEXEC);
	if (uffd < 0 && errno == ENOSYS) {
		/* make check-debug's kernel has no userfaultfd */
		TH_LOG("no userfaultfd in this kernel: the stuck-copy step is left out");
		return;
	}
	ASSERT_LE(0, uffd) {
		TH_LOG("userfaultfd: %s", strerror(errno));
	}
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	ss.page = mmap(NULL, SLOT < 4096 ? 4096 : SLOT, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ss.page);
	reg.range.start = (uintptr_t)ss.page;
	reg.range.len = SLOT < 4096 ? 4096 : SLOT;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));
	zp.range = reg.range;

	ss.fd = open("/dev/odsm", O_RDWR);
	ASSERT_LE(0, ss.fd);
	ASSERT_EQ(0, ioctl(ss.fd, ODSM_IOC_DELEG_BIND, &bd));
	ASSERT_EQ(0, pthread_create(&st, NULL, stuck_serve_loop, &ss));
	t0 = c_now_ms();
	ASSERT_EQ(0, pthread_create(&ct, NULL, stuck_client_loop, &sc));
	while (!sc.done && c_now_ms() - t0 < give)
		usleep(10000);
	took = c_now_ms() - t0;
	/* give the page: the runtime's copy ends, so does a stuck client */
	EXPECT_EQ(0, ioctl(uffd, UFFDIO_ZEROPAGE, &zp));
	pthread_join(ct, NULL);
	pthread_join(st, NULL);
	close(uffd);
	EXPECT_EQ(-ETIMEDOUT, sc.ret);
	EXPECT_GT((uint64_t)C.timeout_ms, took);
	TH_LOG("client of a runtime stuck in its copy: %s after %llu ms%s",
	       strerror(-sc.ret), (unsigned long long)took,
	       sc.done ? "" : " (still waiting when the page was given)");
	/* the runtime got the batch, whose client had gone by then */
	EXPECT_EQ(0, ss.ret) {
		TH_LOG("serve: %s", strerror(ss.err));
	}
	close(ss.fd);
	munmap(ss.page, SLOT < 4096 ? 4096 : SLOT);
}

/*
 * Node 0 only: a local client killed while its batch waits for a runtime
 * that never answers ends at once, not when the batch times out (3/4 of
 * the cluster's timeout later): its process is reaped within a quarter
 * of the timeout (TCG guests are slow to tear a process down).
 */
static void killed_client(struct __test_metadata *_metadata)
{
	uint64_t ep = c_word(0, W_DG_EP4);
	struct odsm_deleg_bind bd = { .endpoint = ep, .slot_size = SLOT };
	uint8_t req[SLOT] = { 0 }, resp[SLOT];
	struct odsm_dreq r = { .op = OP_INC, .arg_len = 8, .ret_max = 8,
			       .kind = ODSM_DREQ_APPLY };
	struct odsm_dbatch db;
	uint64_t one = 1, t0, took;
	uint32_t rlen;
	int fd, st;
	pid_t pid;

	if (C.self != 0)
		return;
	fd = open("/dev/odsm", O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, ODSM_IOC_DELEG_BIND, &bd));
	odsm_dbatch_init(&db, req, SLOT);
	ASSERT_EQ(0, odsm_dbatch_add(&db, &r, &one));
	odsm_dbatch_seal(&db);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(send_batch(ep, req, ODSM_DSLOT_HDR + db.len, resp,
				 &rlen) ? 1 : 0);
	usleep(300000);		/* in its call, its batch queued */
	t0 = c_now_ms();
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	took = c_now_ms() - t0;
	EXPECT_TRUE(WIFSIGNALED(st));
	EXPECT_GT((uint64_t)C.timeout_ms / 4, took);
	TH_LOG("a client killed in its call: reaped after %llu ms",
	       (unsigned long long)took);
	close(fd);
}

/*
 * Node 1 sends FLOOD batches at once to a runtime of node 0 that never
 * answers (each waits there up to 3/4 of the timeout), as many clients of
 * a stalled runtime do, and reads a word of node 0 meanwhile.  The reads
 * must all succeed: the waiting batches may not take every request node 1
 * may have in flight at node 0 (ODSM_PEER_REQS_MAX, 64), so past a bound
 * node 0 answers the rest -EBUSY at once.
 */
#define FLOOD	64

struct flood_client {
	pthread_t tid;
	uint64_t ep;
	int ret;
};

static void *flood_loop(void *arg)
{
	struct flood_client *f = arg;
	uint8_t req[SLOT] = { 0 }, resp[SLOT];
	struct odsm_dreq r = { .op = OP_INC, .arg_len = 8, .ret_max = 8,
			       .kind = ODSM_DREQ_APPLY };
	struct odsm_dbatch db;
	uint64_t one = 1;
	uint32_t rlen;

	odsm_dbatch_init(&db, req, SLOT);
	odsm_dbatch_add(&db, &r, &one);
	odsm_dbatch_seal(&db);
	f->ret = send_batch(f->ep, req, ODSM_DSLOT_HDR + db.len, resp, &rlen);
	return NULL;
}

static void stalled_runtime(struct __test_metadata *_metadata)
{
	uint64_t ep = c_word(0, W_DG_EP5), b0, v, t0;
	struct flood_client fc[FLOOD];
	unsigned int i, busy = 0, timedout = 0, reads = 0, bad_reads = 0;
	int fd = -1, ret, first_bad = 0;

	if (C.self == 0) {
		struct odsm_deleg_bind bd = { .endpoint = ep,
					      .slot_size = SLOT };

		fd = open("/dev/odsm", O_RDWR);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, ODSM_IOC_DELEG_BIND, &bd));
		ASSERT_EQ(0, c_put(0, W_DG_READY5, 1));
	}
	if (C.self == 1) {
		ASSERT_EQ(0, c_poll(0, W_DG_READY5, 1, SECS, NULL));
		b0 = c_stat("deleg_out_batches");
		for (i = 0; i < FLOOD; i++) {
			fc[i] = (struct flood_client){ .ep = ep };
			ASSERT_EQ(0, pthread_create(&fc[i].tid, NULL,
						    flood_loop, &fc[i]));
		}
		/* every batch sent (counted before it goes), then some */
		t0 = c_now_ms();
		while (c_stat("deleg_out_batches") < b0 + FLOOD &&
		       c_now_ms() - t0 < C.timeout_ms / 4)
			c_sleep_ms(10);
		c_sleep_ms(200);
		/* node 0's word, read while the batches wait there */
		t0 = c_now_ms();
		while (c_now_ms() - t0 < C.timeout_ms / 4) {
			ret = c_get(0, W_DG_READY5, &v);
			reads++;
			if (ret) {
				bad_reads++;
				first_bad = first_bad ? first_bad : ret;
			}
			c_sleep_ms(20);
		}
		for (i = 0; i < FLOOD; i++) {
			pthread_join(fc[i].tid, NULL);
			busy += fc[i].ret == -EBUSY;
			timedout += fc[i].ret == -ETIMEDOUT;
		}
		EXPECT_EQ(0U, bad_reads) {
			TH_LOG("%u of %u reads failed, the first with %s",
			       bad_reads, reads, strerror(-first_bad));
		}
		EXPECT_EQ((unsigned int)FLOOD, busy + timedout);
		EXPECT_LT(0U, busy);
		TH_LOG("%u batches for a stalled runtime: %u -EBUSY, %u -ETIMEDOUT; %u of %u reads of its node failed",
		       FLOOD, busy, timedout, bad_reads, reads);
	}
	ASSERT_EQ(0, c_barrier(B_HOST, B_DG + 4, C.nodes, SECS));
	if (fd >= 0)
		close(fd);
}

TEST_F(cl, counter_exact)
{
	struct client cs[THREADS];
	struct server s = { .fd = -1 };
	uint64_t ep, v = 0, b0 = c_stat("deleg_out_batches");
	unsigned int i, bad = 0;

	C_BEGIN();
	ep = c_word(0, W_DG_EP);
	if (C.self == 0) {
		struct odsm_deleg_bind bd = { .endpoint = ep, .slot_size = SLOT };
		int fd2;

		s.fd = open("/dev/odsm", O_RDWR);
		ASSERT_LE(0, s.fd);
		ASSERT_EQ(0, ioctl(s.fd, ODSM_IOC_DELEG_BIND, &bd)) {
			TH_LOG("bind: %s", strerror(errno));
		}
		/* a second runtime for the same endpoint is refused */
		fd2 = open("/dev/odsm", O_RDWR);
		ASSERT_LE(0, fd2);
		EXPECT_EQ(-1, ioctl(fd2, ODSM_IOC_DELEG_BIND, &bd));
		EXPECT_EQ(EADDRINUSE, errno);
		close(fd2);
		ASSERT_EQ(0, pthread_create(&s.tid, NULL, serve_loop, &s));
		ASSERT_EQ(0, c_put(0, W_DG_READY, 1));
	}
	ASSERT_EQ(0, c_step(B_HOST, B_DG, SECS));
	ASSERT_EQ(0, c_poll(0, W_DG_READY, 1, SECS, NULL));

	for (i = 0; i < THREADS; i++) {
		cs[i] = (struct client){ .ep = ep, .id = i };
		ASSERT_EQ(0, pthread_create(&cs[i].tid, NULL, client_loop,
					    &cs[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(cs[i].tid, NULL);
		EXPECT_EQ(0, cs[i].err) {
			TH_LOG("client %u: %s", i, strerror(-cs[i].err));
		}
		bad += cs[i].bad;
	}
	EXPECT_EQ(0U, bad);
	EXPECT_LE(b0 + THREADS * BATCHES, c_stat("deleg_out_batches"));
	small_room(_metadata, ep);
	answer_bounds(_metadata, ep);

	/* every node's clients are done: the total must be exact */
	ASSERT_EQ(0, c_barrier(B_HOST, B_DG + 1, C.nodes, SECS));
	if (C.self == 0) {
		uint64_t want = (uint64_t)C.nodes * THREADS * BATCHES *
				PER_BATCH;

		s.stop = 1;
		pthread_join(s.tid, NULL);
		EXPECT_EQ(0, s.err);
		EXPECT_EQ(0U, s.bad);
		EXPECT_EQ(want, s.counter);
		EXPECT_EQ((uint64_t)C.nodes * THREADS * BATCHES,
			  s.batches - s.probes);
		EXPECT_EQ((uint64_t)C.nodes * 2, s.probes);
		EXPECT_EQ((uint64_t)C.nodes, s.refused);
		TH_LOG("counter %llu of %u nodes x %u threads x %u batches x %u; in_batches %llu",
		       (unsigned long long)s.counter, C.nodes, THREADS, BATCHES,
		       PER_BATCH,
		       (unsigned long long)c_stat("deleg_in_batches"));
		/* the runtime goes: its endpoint with it */
		close(s.fd);
		ASSERT_EQ(0, c_put(0, W_DG_GONE, 1));
	}
	ASSERT_EQ(0, c_poll(0, W_DG_GONE, 1, SECS, &v));

	gone_checks(_metadata, ep);
	ASSERT_EQ(0, c_barrier(B_HOST, B_DG + 2, C.nodes, SECS));
	dies_holding(_metadata, ep);
	stuck_copy(_metadata);
	killed_client(_metadata);
	ASSERT_EQ(0, c_barrier(B_HOST, B_DG + 3, C.nodes, SECS));
	stalled_runtime(_metadata);
}

TEST_HARNESS_MAIN
