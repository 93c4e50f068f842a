// SPDX-License-Identifier: GPL-2.0
/*
 * Remote work and a delegated mutex while a node powers off (issue 16):
 * the failure contract of odsm_spawn.h and of ODSM_MUTEX_DELEG with a
 * real power-off, not a killed process.  Run with ODSM_MOVEDOWN=K on
 * every node of a cluster of 3 or more, next to cluster_movedown_test
 * (scenario cluster-faults, rig.down=K), which powers node K off in the
 * middle of the run; every test SKIPs without it.
 *
 * Every node starts its spawn runtime and learns the others'.  Node 0
 * makes a delegated mutex (its queue at node 0's trustee) guarding 42 in
 * an object of node 1.  Node K takes the mutex, writes 666 over the
 * object and holds it until it is powered off; then it says it is ready
 * (ODSM_READY_FILE, which the scenario waits for before it starts the
 * clock of the power-off).  The survivors:
 *
 *   - spawn_to, over and over, an operation that naps NAP_MS on a worker
 *     of node K (the object named is in K's partition) and join it: each
 *     ran on K, until K goes; then the join in flight fails with
 *     -EHOSTDOWN or -ETIMEDOUT within the cluster's timeout (plus the nap
 *     and TCG's slack), and a spawn_on K after that fails at once;
 *   - node 1 waits in the mutex meanwhile: it gets -EOWNERDEAD once K is
 *     down, with the object as the last unlock left it (42: K's 666 is
 *     lost with K), makes it consistent, and the mutex works again;
 *   - node K sent a box on node 1's channel before it went: node 1
 *     receives it (from K; its object went with K: -EHOSTDOWN), then
 *     learns that K is down (-EHOSTDOWN, from K) at once.
 *
 * Every allocation of a survivor is made before it says it is ready:
 * cluster_movedown_test, started after, counts the objects of each
 * partition.  A survivor frees nothing until ODSM_DONE_FILE appears (the
 * scenario makes it once cluster_movedown_test is over).  The nodes meet
 * with odsm_app_join() and names of their own ("wdown.*").
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include "odsm_cluster.h"

#define SECS		120
#define NAP_MS		300
/* TCG's slack over the cluster's timeout: a starved guest is late */
#define SLACK_MS	3000
#define DEAD_VALUE	42

FIXTURE(wd)
{
	int unused;
};

FIXTURE_SETUP(wd)
{
}

FIXTURE_TEARDOWN(wd)
{
}

static uint64_t OP_NAP;

/* Nap *arg ms on a worker; answer the node it ran on. */
static int nap(void *obj, const void *arg, size_t len, void *ret, size_t *rl)
{
	const struct odsm_spawn_ctx *ctx = obj;
	uint64_t ms, node = ctx->node;

	if (len != sizeof(ms) || *rl < sizeof(node))
		return -EINVAL;
	memcpy(&ms, arg, sizeof(ms));
	c_sleep_ms((unsigned int)ms);
	memcpy(ret, &node, sizeof(node));
	*rl = sizeof(node);
	return 0;
}

/* Every node: start its runtime, publish it, learn the others'. */
static int meet(struct odsm_app *app)
{
	char n[ODSM_NAME_MAX + 1];
	struct odsm_name nm;
	unsigned int k;
	uint64_t rt;
	int ret;

	ret = odsm_app_join(app, "wdown", 0, SECS * 1000);
	ret = ret ?: odsm_deleg_register("wdown.nap", nap, &OP_NAP);
	ret = ret ?: odsm_spawn_start(2, &rt);
	if (ret)
		return ret;
	snprintf(n, sizeof(n), "wdown.rt.%u", app->self);
	ret = odsm_name_publish(n, ODSM_NAME_ADDR, rt);
	for (k = 0; k < app->nodes && !ret; k++) {
		snprintf(n, sizeof(n), "wdown.rt.%u", k);
		ret = odsm_name_wait(n, SECS * 1000, &nm);
		ret = ret ?: odsm_spawn_peer(k, nm.value);
	}
	return ret;
}

/* Tell the scenario this node is set up (ODSM_READY_FILE, if any). */
static int say_ready(void)
{
	const char *path = getenv("ODSM_READY_FILE");
	int fd;

	if (!path || !*path)
		return 0;
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Wait until the scenario says the other program is over (or secs). */
static void wait_done(unsigned int secs)
{
	const char *path = getenv("ODSM_DONE_FILE");
	uint64_t end = c_now_ms() + secs * 1000ULL;
	struct stat st;

	if (!path || !*path)
		return;
	while (stat(path, &st) && c_now_ms() < end)
		c_sleep_ms(200);
}

/* Node 1's waiter in the mutex that node K holds when it dies. */
struct waiter {
	uint64_t mx;
	struct odsm_guard g;
	uint64_t *p;
	uint64_t at;		/* when lock returned */
	int ret;
};

static void *wait_lock(void *arg)
{
	struct waiter *w = arg;

	w->ret = odsm_mutex_lock(w->mx, &w->g, (void **)&w->p);
	w->at = c_now_ms();
	return NULL;
}

TEST_F_TIMEOUT(wd, node_powered_off_mid_run, 300)
{
	uint64_t mx = 0, t0, fail_at = 0, ms, node, arg = NAP_MS, *p;
	unsigned int d, ok = 0, state[ODSM_MAX_NODES];
	struct waiter w = { 0 };
	struct odsm_app app;
	struct odsm_guard g;
	struct odsm_name nm;
	pthread_t waiter;
	size_t rl;
	odsm_task *t;
	odsm_box b, gb, rb = { 0 }, rb2 = { 0 };
	unsigned int from = 0;
	odsm_chan ch;
	uint64_t chg = 0;
	int ret, err = 0;

	if (!getenv("ODSM_MOVEDOWN"))
		SKIP(return, "no ODSM_MOVEDOWN: no node powers off");
	C_BEGIN();
	d = c_env_uint("ODSM_MOVEDOWN", 0);
	ASSERT_LE(3U, C.nodes);
	ASSERT_LT(1U, d);
	ASSERT_GT(C.nodes, d);
	ret = meet(&app);
	ASSERT_EQ(0, ret) TH_LOG("meet: %s", odsm_strerror(ret));

	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_new_on(&gb, 1, 8, 0,
					     &(uint64_t){ DEAD_VALUE }));
		ASSERT_EQ(0, odsm_mutex_new(&mx, ODSM_MUTEX_DELEG, &gb));
		ASSERT_EQ(0, odsm_name_publish("wdown.mx", ODSM_NAME_MUTEX, mx));
	}
	if (C.self == 1) {
		ASSERT_EQ(0, odsm_chan_new(4, &ch));
		ASSERT_EQ(0, odsm_alloc(sizeof(ch), 8, 0, &chg));
		ASSERT_EQ(0, odsm_write(chg, &ch, sizeof(ch)));
		ASSERT_EQ(0, odsm_name_publish("wdown.chan", ODSM_NAME_ADDR, chg));
	}
	if (C.self == d) {
		/* a box on node 1's channel, its object here */
		ASSERT_EQ(0, odsm_name_wait("wdown.chan", SECS * 1000, &nm));
		ASSERT_EQ(0, odsm_read(nm.value, &ch, sizeof(ch)));
		ASSERT_EQ(0, odsm_box_new_on(&b, d, 16, ODSM_ALLOC_ZERO, NULL));
		ASSERT_EQ(0, odsm_chan_send(&ch, &b));
		ASSERT_EQ(0ULL, b.g);
		ASSERT_EQ(0, odsm_name_wait("wdown.mx", SECS * 1000, &nm));
		ASSERT_EQ(0, odsm_mutex_lock(nm.value, &g, (void **)&p));
		ASSERT_EQ((uint64_t)DEAD_VALUE, *p);
		*p = 666;	/* lost when this node dies */
		ASSERT_EQ(0, odsm_name_publish("wdown.held", ODSM_NAME_ADDR,
					       nm.value));
		ASSERT_EQ(0, say_ready());
		TH_LOG("node %u holds the mutex and serves spawns until it is powered off",
		       C.self);
		for (;;)
			c_sleep_ms(1000);
	}

	/* a survivor: an object of node K to spawn to */
	ASSERT_EQ(0, odsm_box_new_on(&b, d, 64, ODSM_ALLOC_ZERO, NULL));
	ASSERT_EQ(0, odsm_name_wait("wdown.held", SECS * 1000, &nm));
	ASSERT_EQ(0, say_ready());
	if (C.self == 1) {
		w.mx = nm.value;
		ASSERT_EQ(0, pthread_create(&waiter, NULL, wait_lock, &w));
	}

	/* spawn_to node K until it goes */
	for (;;) {
		t0 = c_now_ms();
		ret = odsm_spawn_to(&b, OP_NAP, &arg, sizeof(arg), &t);
		if (!ret) {
			rl = sizeof(node);
			ret = odsm_task_join(t, &node, &rl);
		}
		if (ret) {
			fail_at = c_now_ms();
			err = ret;
			break;
		}
		ok++;
		ASSERT_EQ((uint64_t)d, node);
		ASSERT_GT(t0 + 200000, c_now_ms()) TH_LOG("node %u never went", d);
	}
	ms = fail_at - t0;
	TH_LOG("node %u: %u tasks ran on node %u; then: %s after %" PRIu64 " ms",
	       C.self, ok, d, odsm_strerror(err), ms);
	EXPECT_LT(0U, ok);
	EXPECT_TRUE(c_is_down_err(err)) TH_LOG("%s", odsm_strerror(err));
	EXPECT_GE(NAP_MS + C.timeout_ms + SLACK_MS, ms);

	/* K is down for this node now (or soon): a new spawn fails at once */
	for (t0 = c_now_ms();; c_sleep_ms(100)) {
		ASSERT_EQ(0, c_states(state, C.nodes));
		if (state[d] == ODSM_PEER_DOWN)
			break;
		ASSERT_GT(t0 + C.timeout_ms + SLACK_MS, c_now_ms());
	}
	t0 = c_now_ms();
	ret = odsm_spawn_on(d, OP_NAP, &arg, sizeof(arg), &t);
	if (!ret)
		ret = odsm_task_join(t, NULL, NULL);
	ms = c_now_ms() - t0;
	EXPECT_EQ(-EHOSTDOWN, ret) TH_LOG("%s", odsm_strerror(ret));
	EXPECT_GT(1000ULL, ms);

	if (C.self == 1) {
		uint64_t v;

		/* K's box comes, then the news that K is down, at once */
		ASSERT_EQ(0, odsm_chan_recv(&ch, &rb, &from, 5000));
		EXPECT_EQ(d, from);
		EXPECT_TRUE(c_in_part(rb.g, d));
		EXPECT_EQ(-EHOSTDOWN, odsm_read(rb.g, &v, sizeof(v)));
		from = 0;
		t0 = c_now_ms();
		EXPECT_EQ(-EHOSTDOWN, odsm_chan_recv(&ch, &rb2, &from, 10000));
		EXPECT_EQ(d, from);
		EXPECT_GT(t0 + 2000, c_now_ms());

		ASSERT_EQ(0, pthread_join(waiter, NULL));
		TH_LOG("mutex of the dead holder: %s %" PRId64 " ms after this node's join failed",
		       odsm_strerror(w.ret), (int64_t)(w.at - fail_at));
		ASSERT_EQ(-EOWNERDEAD, w.ret);
		EXPECT_GE(fail_at + C.timeout_ms + SLACK_MS, w.at);
		EXPECT_EQ((uint64_t)DEAD_VALUE, *w.p);	/* 666 is lost */
		*w.p = DEAD_VALUE + 1;
		ASSERT_EQ(0, odsm_mutex_consistent(&w.g));
		ASSERT_EQ(0, odsm_mutex_unlock(&w.g));
		ASSERT_EQ(0, odsm_mutex_lock(w.mx, &g, (void **)&p));
		EXPECT_EQ((uint64_t)DEAD_VALUE + 1, *p);
		ASSERT_EQ(0, odsm_mutex_unlock(&g));
		ASSERT_EQ(0, odsm_name_publish("wdown.relocked", ODSM_NAME_ADDR,
					       w.mx));
	}
	/* node 0 keeps the trustee of the mutex until node 1 is done */
	ASSERT_EQ(0, odsm_name_wait("wdown.relocked", SECS * 1000, &nm));
	wait_done(SECS);
	if (C.self == 0)
		EXPECT_EQ(0, odsm_mutex_free(mx, NULL));
	if (C.self == 1) {
		EXPECT_EQ(0, odsm_chan_free(&ch));
		EXPECT_EQ(0, odsm_free(chg));
	}
	odsm_spawn_stop();
}

TEST_HARNESS_MAIN
