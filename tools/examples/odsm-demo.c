// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-demo: build a binary search tree in the global heap through
 * libodsm's owner boxes and borrows, walk it from a second process that maps
 * the heap on its own, update it in place, and tear it down.
 *
 *   odsm-demo [KEYS]          run the demo (default 2000 keys)
 *   odsm-demo --reader ROOT N walk the tree whose root box is stored at the
 *                             global address ROOT; expect N keys
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "odsm.h"

struct tnode {
	uint64_t key;
	uint64_t value;
	odsm_box left, right;	/* owners of the subtrees: fat pointers in the heap */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "odsm-demo: %s: %s\n", what, odsm_strerror(err));
	exit(1);
}

/* Insert key under the owner *slot, descending with mutable borrows. */
static int insert(odsm_box *slot, uint64_t key)
{
	struct tnode *n;
	odsm_mut m;
	int ret;

	if (!slot->g) {
		ret = odsm_box_new(slot, sizeof(struct tnode), ODSM_ALLOC_ZERO);
		if (ret)
			return ret;
		ret = odsm_box_write(slot, (void **)&n);
		if (ret)
			return ret;
		n->key = key;
		n->value = key * 3;
		return 1;
	}
	ret = odsm_borrow_mut(slot, &m, (void **)&n);
	if (ret)
		return ret;
	if (key == n->key)
		ret = 0;
	else
		ret = insert(key < n->key ? &n->left : &n->right, key);
	odsm_return_mut(&m);
	return ret;
}

struct walk {
	uint64_t nodes, sum, depth, max_depth;
	uint64_t last_key;
	int ordered;
};

/*
 * In-order walk with shared borrows only.  A child's box is read out of
 * its parent's bytes, which a shared borrow may only read (on another node
 * they are a cached copy): odsm_borrow_field() borrows through it without
 * writing to it.
 */
static int walk(const odsm_box *slot, struct walk *w)
{
	const struct tnode *n;
	odsm_ref r;
	int ret;

	if (!slot->g)
		return 0;
	ret = odsm_borrow_field(slot, &r, (const void **)&n);
	if (ret)
		return ret;
	w->depth++;
	if (w->depth > w->max_depth)
		w->max_depth = w->depth;
	ret = walk(&n->left, w);
	if (!ret) {
		if (w->nodes && n->key <= w->last_key)
			w->ordered = 0;
		w->last_key = n->key;
		w->nodes++;
		w->sum += n->value;
		ret = walk(&n->right, w);
	}
	w->depth--;
	odsm_return(&r);
	return ret;
}

/* Add delta to every value, through mutable borrows (each bumps a color). */
static int update(odsm_box *slot, uint64_t delta)
{
	struct tnode *n;
	odsm_mut m;
	int ret;

	if (!slot->g)
		return 0;
	ret = odsm_borrow_mut(slot, &m, (void **)&n);
	if (ret)
		return ret;
	n->value += delta;
	ret = update(&n->left, delta);
	if (!ret)
		ret = update(&n->right, delta);
	odsm_return_mut(&m);
	return ret;
}

static int destroy(odsm_box *slot, uint64_t *freed)
{
	struct tnode *n;
	int ret;

	if (!slot->g)
		return 0;
	ret = odsm_box_write(slot, (void **)&n);
	if (ret)
		return ret;
	ret = destroy(&n->left, freed);
	if (!ret)
		ret = destroy(&n->right, freed);
	if (!ret)
		ret = odsm_box_drop(slot);
	if (!ret)
		(*freed)++;
	return ret;
}

static int reader(uint64_t root_addr, uint64_t expect)
{
	struct walk w = { .ordered = 1 };
	int ret = odsm_init();

	if (ret)
		die("reader: odsm_init", ret);
	/* the root box lives in the heap: the same address in this process */
	ret = walk((odsm_box *)(uintptr_t)root_addr, &w);
	if (ret)
		die("reader: walk", ret);
	printf("reader (pid %d): mapped the heap itself at 0x%" PRIx64
	       ", walked %" PRIu64 " nodes in order=%s, sum of values %" PRIu64 "\n",
	       getpid(), (uint64_t)odsm_rt.info.heap_base, w.nodes, w.ordered ? "yes" : "NO",
	       w.sum);
	odsm_fini();
	return w.nodes == expect && w.ordered ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint64_t keys = 2000, inserted = 0, freed = 0, seed = 88172645463325252ULL;
	struct walk w = { .ordered = 1 };
	odsm_box *root, anchor;
	uint16_t c0, c1;
	char arg1[32], arg2[32];
	int ret, status;
	pid_t pid;

	if (argc == 4 && !strcmp(argv[1], "--reader"))
		return reader(strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0));
	if (argc > 1)
		keys = strtoull(argv[1], NULL, 0);

	ret = odsm_init();
	if (ret)
		die("odsm_init", ret);
	printf("odsm-demo: node %u of %u, global heap at 0x%" PRIx64 " (%" PRIu64
	       " MiB per node), pid %d\n", odsm_rt.info.node_id,
	       odsm_rt.info.nr_nodes, (uint64_t)odsm_rt.info.heap_base,
	       (uint64_t)odsm_rt.info.part_size >> 20, getpid());

	/* the root's owner box itself lives in the heap, so another process
	 * can find the tree from one global address
	 */
	ret = odsm_box_new(&anchor, sizeof(odsm_box), ODSM_ALLOC_ZERO);
	if (ret)
		die("alloc root", ret);
	root = odsm_ptr(anchor.g);

	for (uint64_t i = 0; i < keys; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		ret = insert(root, seed % (keys * 4));
		if (ret < 0)
			die("insert", ret);
		inserted += ret;
	}
	ret = walk(root, &w);
	if (ret)
		die("walk", ret);
	printf("built a binary search tree: %" PRIu64 " keys inserted (%" PRIu64
	       " distinct), depth %" PRIu64 ", in order=%s, sum of values %" PRIu64 "\n",
	       keys, inserted, w.max_depth, w.ordered ? "yes" : "NO", w.sum);
	if (w.nodes != inserted || !w.ordered)
		return 1;

	snprintf(arg1, sizeof(arg1), "0x%" PRIx64, odsm_addr_of(anchor.g));
	snprintf(arg2, sizeof(arg2), "%" PRIu64, inserted);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* a fresh program image: it maps the heap on its own */
		execl("/proc/self/exe", argv[0], "--reader", arg1, arg2, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "odsm-demo: reader process failed\n");
		return 1;
	}

	c0 = odsm_color_of(root->g);
	ret = update(root, 1);
	if (ret)
		die("update", ret);
	c1 = odsm_color_of(root->g);
	memset(&w, 0, sizeof(w));
	w.ordered = 1;
	walk(root, &w);
	printf("added 1 to every value through mutable borrows: sum now %" PRIu64
	       ", root color %u -> %u (a cached copy of the old version can never match)\n",
	       w.sum, c0, c1);

	ret = destroy(root, &freed);
	if (ret)
		die("destroy", ret);
	ret = odsm_box_drop(&anchor);
	if (ret)
		die("drop root", ret);
	printf("freed %" PRIu64 " tree objects and the root box\n", freed);
	odsm_fini();
	return freed == inserted ? 0 : 1;
}
