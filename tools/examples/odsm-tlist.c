// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-tlist: a linked list whose nodes carry their payloads tied to them
 * (odsm_tbox.h, DRust's TBox).  Each list node is a group: the node
 * itself (a key, the owner box of the next node's group, the name of its
 * payload) and its payload, a child carved from the group's arena.  A
 * shared borrow of a list node brings its payload in the same transfer,
 * and the payload is found in the borrowed bytes, with no lookup of its
 * own; a mutable borrow would move both.
 *
 *   odsm-tlist [N]              build N nodes (default 8), walk the list,
 *                               add a second child (a note) to one node
 *                               after growing its group, walk again, free
 *   odsm-tlist --keep N         build N nodes, print "head=0x..." and
 *                               leave the list in the heap
 *   odsm-tlist --reader HEAD N  walk the list whose first group has the
 *                               colored address HEAD (from any node of
 *                               the cluster): N nodes expected; prints the
 *                               fetches the walk took (borrow_misses)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "odsm.h"

#define PAYLOAD		64
#define NOTE		32

struct lnode {
	uint64_t key;
	odsm_box next;		/* the next node's group: a fat pointer in the heap */
	odsm_tbox payload;	/* this node's payload, tied to it */
	odsm_tbox note;		/* a second child, added later (0: none) */
};

static void die(const char *what, int err)
{
	fprintf(stderr, "odsm-tlist: %s: %s\n", what, odsm_strerror(err));
	exit(1);
}

/* The list of n nodes, built from its tail; the head's group is *head. */
static void build(odsm_box *head, unsigned int n)
{
	odsm_box next = { 0 }, g;
	struct lnode *ln;
	unsigned int i;
	odsm_mut m;
	char *p;
	int ret;

	for (i = n; i-- > 0;) {
		/* room for the payload only: the note will need a grow */
		ret = odsm_tgroup_new(&g, sizeof(*ln), ODSM_TBOX_HDR + PAYLOAD);
		if (!ret)
			ret = odsm_tgroup_borrow_mut(&g, &m, (void **)&ln);
		if (ret)
			die("a list node", ret);
		ln->key = i;
		ret = odsm_tbox_new(&m, PAYLOAD, &ln->payload, (void **)&p);
		if (ret)
			die("its payload", ret);
		snprintf(p, PAYLOAD, "payload of node %u", i);
		if (next.g)
			odsm_box_transfer(&ln->next, &next);
		ret = odsm_return_mut(&m);
		if (ret)
			die("odsm_return_mut", ret);
		next = g;
	}
	*head = next;
}

static unsigned long long misses(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/sys/kernel/odsm/stats/borrow_misses", "r");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Walk from the group at colored address head; the nodes seen. */
static unsigned int walk(uint64_t head, int print)
{
	odsm_box f = { head, 0 };
	const struct lnode *ln;
	const char *p;
	unsigned int n = 0;
	odsm_ref r;
	int ret;

	while (f.g) {
		ret = odsm_tgroup_borrow_field(&f, &r, (const void **)&ln);
		if (ret)
			die("borrowing a list node", ret);
		/* no lookup: the payload is in the bytes just borrowed */
		ret = odsm_tbox_get(&r, &ln->payload, (const void **)&p);
		if (ret)
			die("its payload", ret);
		if (print)
			printf("  node %" PRIu64 ": \"%s\"", ln->key, p);
		if (ln->note.size) {
			ret = odsm_tbox_get(&r, &ln->note, (const void **)&p);
			if (ret)
				die("its note", ret);
			if (print)
				printf(", note \"%s\"", p);
		}
		if (print)
			putchar('\n');
		f = ln->next;
		odsm_return(&r);
		n++;
	}
	return n;
}

/* Give the node after the head a note: its group grows (and moves). */
static void add_note(odsm_box *head)
{
	odsm_box *second;
	struct lnode *ln, *l2;
	odsm_mut m, m2;
	char *p;
	int ret;

	ret = odsm_tgroup_borrow_mut(head, &m, (void **)&ln);
	if (ret)
		die("the head", ret);
	second = &ln->next;	/* its owner lives in the head's bytes */
	ret = odsm_tgroup_grow(second, ODSM_TBOX_HDR + PAYLOAD +
				       ODSM_TBOX_HDR + NOTE);
	if (ret)
		die("growing node 1", ret);
	ret = odsm_tgroup_borrow_mut(second, &m2, (void **)&l2);
	if (!ret)
		ret = odsm_tbox_new(&m2, NOTE, &l2->note, (void **)&p);
	if (ret)
		die("the note", ret);
	snprintf(p, NOTE, "added after a grow");
	odsm_return_mut(&m2);
	odsm_return_mut(&m);
}

/* Free the list: each group takes its children with it. */
static void drop(odsm_box *head)
{
	odsm_box next;
	struct lnode *ln;
	odsm_mut m;
	int ret;

	while (head->g) {
		ret = odsm_tgroup_borrow_mut(head, &m, (void **)&ln);
		if (ret)
			die("borrowing a node to free", ret);
		odsm_box_transfer(&next, &ln->next);
		odsm_return_mut(&m);
		ret = odsm_tgroup_drop(head);
		if (ret)
			die("odsm_tgroup_drop", ret);
		*head = next;
	}
}

int main(int argc, char **argv)
{
	unsigned long long m0;
	odsm_box head = { 0 };
	unsigned int n, seen;
	int ret;

	ret = odsm_init();
	if (ret)
		die("odsm_init", ret);
	if (argc == 4 && !strcmp(argv[1], "--reader")) {
		n = (unsigned int)strtoul(argv[3], NULL, 0);
		m0 = misses();
		seen = walk(strtoull(argv[2], NULL, 0), 1);
		printf("odsm-tlist: %u nodes read with %llu fetches\n", seen,
		       misses() - m0);
		return seen == n ? 0 : 1;
	}
	if (argc == 3 && !strcmp(argv[1], "--keep")) {
		build(&head, (unsigned int)strtoul(argv[2], NULL, 0));
		printf("head=0x%" PRIx64 "\n", odsm_box_share(&head));
		return 0;
	}
	n = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 8;
	if (n < 2 || n > 100000)
		die("usage: odsm-tlist [N (2..100000)]", -EINVAL);
	build(&head, n);
	printf("odsm-tlist: %u list nodes, each a group with its payload tied to it\n", n);
	seen = walk(head.g, n <= 16);
	if (seen != n)
		die("the walk", -EBADMSG);
	add_note(&head);
	printf("odsm-tlist: node 1's group grew to hold a note:\n");
	seen = walk(head.g, n <= 16);
	if (seen != n)
		die("the second walk", -EBADMSG);
	drop(&head);
	printf("odsm-tlist: ok\n");
	odsm_fini();
	return 0;
}
