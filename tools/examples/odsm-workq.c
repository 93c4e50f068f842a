// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-workq: a work queue spread over the nodes, written the way a DRust
 * application is: threads, channels that carry boxes, spawn_to the data a
 * task touches, and a result table behind a mutex.  Start the same
 * command on every node of a joined cluster (programs.rst):
 *
 *   odsm-workq [-a APP] [TASKS_PER_NODE]
 *
 * Node 0 makes the shared data: DATA_PER_NODE objects in every node's
 * partition (their addresses in a table published under "APP.table")
 * and a result table guarded by a mutex ("APP.results").  Every node
 * starts its runtime (the workers spawned operations run on) and a
 * channel of tasks that it receives, and publishes both ("APP.node.K").
 *
 * Then every node's main thread produces TASKS_PER_NODE tasks, each a
 * box naming one data object, and sends them round the nodes' channels;
 * WORKERS threads on every node receive tasks from their node's channel
 * and spawn_to the data object each names: the work runs where the data
 * lives, whichever node took the task.  The worker records the result
 * under the mutex.  When every node is done, node 0 checks that every
 * task ran exactly once, on its data's node, and that the total is right.
 *
 * Exits 0 only when every check passed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <odsm.h>

#define WORKERS		2		/* threads taking tasks, per node */
#define DATA_PER_NODE	4		/* data objects in each partition */
#define DATA_WORDS	32		/* 64-bit words of a data object */
#define MAX_TASKS	512		/* tasks of every node together */
#define CHAN_CAP	8
#define MS		60000		/* a peer that takes longer is lost */

/* What a channel carries: a box owning one of these. */
struct task {
	uint32_t id;		/* 0 .. tasks - 1 */
	uint32_t from;		/* the node that produced it */
	uint32_t data;		/* the data object it works on */
	uint32_t weight;
};

/* What each node publishes: where to spawn, where to send tasks. */
struct node_rec {
	uint64_t runtime;	/* odsm_spawn_start()'s address */
	odsm_chan chan;		/* this node's queue of tasks */
};

/* The object behind the mutex. */
struct results {
	uint64_t total;			/* sum of the tasks' values */
	uint32_t runs[MAX_TASKS];	/* how often each task ran */
	uint8_t ran_on[MAX_TASKS];	/* the node each task ran on */
	uint8_t taken_by[MAX_TASKS];	/* the node whose worker took it */
};

static struct odsm_app app;
static const char *name = "workq";
static unsigned int ndata, ntasks;
static uint64_t data[ODSM_MAX_NODES * DATA_PER_NODE];	/* colored */
static struct node_rec peers[ODSM_MAX_NODES];
static uint64_t op_work, results_mx, table;
static odsm_box rec_box;		/* this node's struct node_rec */

/* Word i of data object d: node 0 writes them, node 0 checks with them. */
static uint64_t pattern(unsigned int d, unsigned int i)
{
	return (uint64_t)d * 1000 + i;
}

/* The value a task must produce: the sum of its data's words, weighed. */
static uint64_t expected(const struct task *t)
{
	uint64_t s = 0;
	unsigned int i;

	for (i = 0; i < DATA_WORDS; i++)
		s += pattern(t->data, i);
	return s * t->weight;
}

/* The node whose partition holds the object at colored address g. */
static unsigned int home_of(uint64_t g)
{
	return (odsm_addr_of(g) - odsm_rt.info.heap_base) /
	       odsm_rt.info.part_size;
}

/*
 * The operation a worker spawns to a data object: it runs on a worker
 * of the runtime of the node holding the object, reads the object there
 * and returns the node it ran on and the weighed sum.
 */
static int work(void *obj, const void *arg, size_t len, void *ret,
		size_t *ret_len)
{
	const struct odsm_spawn_ctx *ctx = obj;
	odsm_box field = { .g = ctx->obj };
	uint64_t out[2] = { ctx->node, 0 };
	const uint64_t *w;
	uint32_t weight;
	unsigned int i;
	odsm_ref r;
	int err;

	if (len != sizeof(weight) || *ret_len < sizeof(out))
		return -EINVAL;
	memcpy(&weight, arg, sizeof(weight));
	err = odsm_borrow_field(&field, &r, (const void **)&w);
	if (err)
		return err;
	for (i = 0; i < DATA_WORDS; i++)
		out[1] += w[i];
	odsm_return(&r);
	out[1] *= weight;
	memcpy(ret, out, sizeof(out));
	*ret_len = sizeof(out);
	return 0;
}

/* One task taken from this node's channel: run it where its data is. */
static int run_task(odsm_box *b)
{
	odsm_box target = { 0 };
	struct odsm_guard g;
	struct results *res;
	const struct task *p;
	struct task t;
	uint64_t out[2];
	size_t len = sizeof(out);
	odsm_task *h;
	int err;

	err = odsm_box_read(b, (const void **)&p);
	if (err)
		return err;
	t = *p;
	err = odsm_box_drop(b);		/* the task is ours: free it */
	if (err)
		return err;
	if (t.id >= ntasks || t.data >= ndata)
		return -EPROTO;

	target.g = data[t.data];
	err = odsm_spawn_to(&target, op_work, &t.weight, sizeof(t.weight), &h);
	if (!err)
		err = odsm_task_join(h, out, &len);
	if (err)
		return err;
	printf("node %u: task %u from node %u ran on node %u (data on node %u)\n",
	       app.self, t.id, t.from, (unsigned int)out[0],
	       home_of(data[t.data]));

	err = odsm_mutex_lock(results_mx, &g, (void **)&res);
	if (err)
		return err;
	res->runs[t.id]++;
	res->ran_on[t.id] = (uint8_t)out[0];
	res->taken_by[t.id] = (uint8_t)app.self;
	res->total += out[1];
	return odsm_mutex_unlock(&g);
}

/* A worker: tasks from this node's channel until it is closed and empty. */
static void *worker(void *arg)
{
	odsm_box b = { 0 };
	int err;

	for (;;) {
		err = odsm_chan_recv(&peers[app.self].chan, &b, NULL, MS);
		if (err == -EPIPE)
			return NULL;	/* closed, and nothing left */
		if (!err)
			err = run_task(&b);
		if (err) {
			fprintf(stderr, "node %u: a worker stopped: %s\n", app.self,
				odsm_strerror(err));
			return (void *)(intptr_t)err;
		}
	}
}

/* Node 0: the data spread over every partition, and the result table. */
static int make_shared(void)
{
	uint64_t w[DATA_WORDS];
	odsm_box b = { 0 };
	char n[ODSM_NAME_MAX + 1];
	unsigned int d, i;
	int err;

	for (d = 0; d < ndata; d++) {
		for (i = 0; i < DATA_WORDS; i++)
			w[i] = pattern(d, i);
		err = odsm_box_new_on(&b, d % app.nodes, sizeof(w), 0, w);
		if (err)
			return err;
		data[d] = odsm_box_share(&b);	/* read-only from now on */
	}
	err = odsm_box_new_on(&b, 0, ndata * sizeof(data[0]), 0, data);
	if (err)
		return err;
	table = odsm_box_share(&b);
	snprintf(n, sizeof(n), "%s.table", name);
	err = odsm_name_publish(n, ODSM_NAME_ADDR, table);
	if (err)
		return err;

	err = odsm_box_new(&b, sizeof(struct results), ODSM_ALLOC_ZERO);
	if (!err)
		err = odsm_mutex_new(&results_mx, ODSM_MUTEX_FIFO, &b);
	if (err)
		return err;
	snprintf(n, sizeof(n), "%s.results", name);
	return odsm_name_publish(n, ODSM_NAME_MUTEX, results_mx);
}

/* Every node: its runtime and its channel, published; then everyone's. */
static int meet(void)
{
	struct odsm_name nm;
	char n[ODSM_NAME_MAX + 1];
	struct node_rec *rec;
	unsigned int k;
	int err;

	err = odsm_deleg_register("workq.work", work, &op_work);
	if (!err)
		err = odsm_spawn_start(2, &peers[app.self].runtime);
	if (!err)
		err = odsm_chan_new(CHAN_CAP, &peers[app.self].chan);
	if (!err)
		err = odsm_box_new(&rec_box, sizeof(*rec), 0);
	if (!err)
		err = odsm_box_write(&rec_box, (void **)&rec);
	if (err)
		return err;
	*rec = peers[app.self];
	snprintf(n, sizeof(n), "%s.node.%u", name, app.self);
	err = odsm_name_publish(n, ODSM_NAME_ADDR, odsm_box_share(&rec_box));
	if (!err && app.self == 0)
		err = make_shared();

	for (k = 0; k < app.nodes && !err; k++) {
		snprintf(n, sizeof(n), "%s.node.%u", name, k);
		err = odsm_name_wait(n, MS, &nm);
		if (!err)
			err = odsm_read(nm.value, &peers[k], sizeof(peers[k]));
		if (!err)
			err = odsm_spawn_peer(k, peers[k].runtime);
	}
	snprintf(n, sizeof(n), "%s.table", name);
	if (!err)
		err = odsm_name_wait(n, MS, &nm);
	if (!err)
		err = odsm_read(nm.value, data, ndata * sizeof(data[0]));
	snprintf(n, sizeof(n), "%s.results", name);
	if (!err)
		err = odsm_name_wait(n, MS, &nm);
	if (!err)
		results_mx = nm.value;
	return err;
}

/* This node's tasks, sent round the nodes' channels. */
static int produce(unsigned int per_node)
{
	struct task *t;
	odsm_box b = { 0 };
	unsigned int i, to;
	int err;

	for (i = 0; i < per_node; i++) {
		err = odsm_box_new(&b, sizeof(*t), 0);
		if (!err)
			err = odsm_box_write(&b, (void **)&t);
		if (err)
			return err;
		t->id = app.self * per_node + i;
		t->from = app.self;
		t->data = (t->id * 7 + 3) % ndata;
		t->weight = t->id + 1;
		to = (app.self + 1 + i) % app.nodes;
		err = odsm_chan_send(&peers[to].chan, &b);	/* b is empty */
		if (err) {
			odsm_box_drop(&b);
			return err;
		}
	}
	return 0;
}

/* Node 0, once every node is done: every task once, where its data is. */
static int check(unsigned int per_node)
{
	unsigned int i, bad = 0, per_node_ran[ODSM_MAX_NODES] = { 0 };
	uint64_t want = 0;
	struct odsm_guard g;
	struct results *res;
	struct task t;
	int err;

	err = odsm_mutex_lock(results_mx, &g, (void **)&res);
	if (err)
		return err;
	for (i = 0; i < ntasks; i++) {
		t.id = i;
		t.data = (i * 7 + 3) % ndata;
		t.weight = i + 1;
		want += expected(&t);
		if (res->runs[i] != 1 ||
		    res->ran_on[i] != home_of(data[t.data])) {
			printf("task %u: ran %u times, on node %u (data on node %u)\n",
			       i, res->runs[i], res->ran_on[i],
			       home_of(data[t.data]));
			bad++;
		}
		per_node_ran[res->ran_on[i] % ODSM_MAX_NODES]++;
	}
	printf("workq: %u tasks from %u nodes (%u each), %u data objects\n",
	       ntasks, app.nodes, per_node, ndata);
	for (i = 0; i < app.nodes; i++)
		printf("workq: node %u ran %u tasks\n", i, per_node_ran[i]);
	printf("workq: total %llu, expected %llu\n",
	       (unsigned long long)res->total, (unsigned long long)want);
	if (bad || res->total != want)
		err = -EBADMSG;
	printf("workq: %s\n", err ? "FAILED" :
	       "every task ran exactly once, on its data's node");
	if (!err)
		err = odsm_mutex_unlock(&g);
	else
		odsm_mutex_unlock(&g);
	return err;
}

/* After the last barrier: what this node made, freed (names stay). */
static int cleanup(void)
{
	odsm_box b = { 0 };
	unsigned int d;
	int err;

	err = odsm_chan_free(&peers[app.self].chan);
	if (!err)
		err = odsm_box_drop(&rec_box);
	if (err || app.self)
		return err;
	for (d = 0; d < ndata && !err; d++) {
		b.g = data[d];		/* node 0 owns them: rebuild the box */
		err = odsm_box_drop(&b);
	}
	b.g = table;
	if (!err)
		err = odsm_box_drop(&b);
	return err ? err : odsm_mutex_free(results_mx, NULL);
}

int main(int argc, char **argv)
{
	unsigned int per_node = 8, i, started = 0;
	pthread_t th[WORKERS];
	int err, opt, bad = 0;
	void *wret;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* whole lines from threads */
	while ((opt = getopt(argc, argv, "a:")) != -1) {
		if (opt != 'a')
			goto usage;
		name = optarg;
	}
	if (optind < argc)
		per_node = strtoul(argv[optind], NULL, 0);
	if (!per_node || strlen(name) > ODSM_NAME_MAX - 8)
		goto usage;

	err = odsm_app_join(&app, name, 0, MS);	/* the first allocation */
	if (err)
		goto out;
	ndata = app.nodes * DATA_PER_NODE;
	ntasks = app.nodes * per_node;
	if (ntasks > MAX_TASKS) {
		err = -E2BIG;
		goto out;
	}
	err = meet();
	if (err)
		goto out;

	for (i = 0; i < WORKERS && !err; i++) {
		err = -pthread_create(&th[i], NULL, worker, NULL);
		started += !err;
	}
	if (!err)
		err = produce(per_node);
	/* every node sent all its tasks: no more sends to this channel */
	if (!err)
		err = odsm_barrier_wait(app.barrier, MS);
	if (!err)
		err = odsm_chan_close(&peers[app.self].chan);
	if (err)
		odsm_chan_close(&peers[app.self].chan);	/* stop the workers */
	for (i = 0; i < started; i++) {
		pthread_join(th[i], &wret);
		if (!err && wret)
			err = (int)(intptr_t)wret;
	}
	if (err)
		goto out;
	/* every task ran: the results are complete */
	err = odsm_barrier_wait(app.barrier, MS);
	if (!err && app.self == 0)
		bad = check(per_node);
	/*
	 * Nobody spawns or sends any more: the runtimes may go.  Node 0
	 * comes here even when its check failed, so that the others end
	 * at once instead of waiting out the barrier.
	 */
	if (!err)
		err = odsm_barrier_wait(app.barrier, MS);
	if (!err)
		err = cleanup();
	if (!err)
		err = bad;
	odsm_spawn_stop();
out:
	if (err)
		fprintf(stderr, "odsm-workq (node %u): %s\n", app.self,
			odsm_strerror(err));
	odsm_fini();
	return !!err;
usage:
	fprintf(stderr, "usage: odsm-workq [-a APP] [TASKS_PER_NODE]\n");
	return 2;
}
