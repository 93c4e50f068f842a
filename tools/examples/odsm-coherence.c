// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-coherence: a bank ledger shared by every node of a cluster, kept
 * coherent by ownership alone (DRust's protocol through libodsm).  Run it
 * on every node at once, on a freshly loaded module (its root is the first
 * object of node 0's partition).
 *
 * Node 0 makes the accounts and a table of their owner boxes in its own
 * partition.  Then the nodes take turns (a token passed with a remote
 * fetch-and-add): on its turn a node moves money between two accounts
 * through mutable borrows of their owners in node 0's table -- each
 * account *moves* to the node that writes it, and the new address is
 * written back into the table -- and audits the whole ledger through
 * shared borrows, which read copies in its node's cache.  The money must
 * add up after every turn, on every node, wherever the accounts are.
 *
 *   odsm-coherence [ROUNDS]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "odsm.h"

#define ACCOUNTS	8
#define START		1000
#define ROOT_MAGIC	0x4c45444745520000ULL	/* "LEDGER" */

struct account {
	uint64_t balance;
	uint64_t moves;		/* transfers it took part in */
	char owner_note[48];	/* which node last wrote it */
};

struct root {
	uint64_t magic;
	uint64_t table;		/* global address of ACCOUNTS owner boxes */
	uint64_t turn;		/* whose turn: turn % nodes */
};

static unsigned int self, nodes;
static uint64_t root_ga;

static void die(const char *what, int err)
{
	fprintf(stderr, "odsm-coherence (node %u): %s: %s\n", self, what,
		odsm_strerror(err));
	exit(1);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static uint64_t root_word(unsigned int i)
{
	uint64_t v = 0;
	int ret = odsm_read(root_ga + 8 * i, &v, 8);

	if (ret && ret != -EINVAL)
		die("reading the root", ret);
	return ret ? 0 : v;
}

static uint64_t stat_of(const char *name)
{
	char path[128];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/odsm/stats/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static void setup(void)
{
	struct root *r;
	odsm_box *tab;
	uint64_t cg, tg;
	int i, ret;

	ret = odsm_alloc(4096, 0, ODSM_ALLOC_ZERO, &cg);
	if (ret)
		die("allocating the root", ret);
	if (odsm_addr_of(cg) != root_ga)
		die("the root is not the partition's first object (run on a freshly loaded module)", -EEXIST);
	ret = odsm_alloc(ACCOUNTS * sizeof(odsm_box), 16, ODSM_ALLOC_ZERO, &tg);
	if (ret)
		die("allocating the table", ret);
	tab = odsm_ptr(tg);
	for (i = 0; i < ACCOUNTS; i++) {
		struct account *a;
		void *w;

		ret = odsm_box_new(&tab[i], sizeof(*a), ODSM_ALLOC_ZERO);
		if (!ret)
			ret = odsm_box_write(&tab[i], &w);
		if (ret)
			die("making an account", ret);
		a = w;
		a->balance = START;
		snprintf(a->owner_note, sizeof(a->owner_note), "opened on node 0");
	}
	r = odsm_ptr(cg);
	r->table = odsm_addr_of(tg);
	__atomic_store_n(&r->magic, ROOT_MAGIC, __ATOMIC_RELEASE);
}

/* Every account through a shared borrow: the total, and where they live. */
static uint64_t audit(uint64_t table, char *where, size_t room)
{
	uint64_t total = 0;
	const struct account *a;
	const void *p;
	size_t used = 0;
	odsm_box b;
	odsm_ref r;
	int i, ret;

	for (i = 0; i < ACCOUNTS; i++) {
		ret = odsm_read(table + i * sizeof(odsm_box), &b, sizeof(b));
		b.ext = 0;
		if (!ret)
			ret = odsm_borrow(&b, &r, &p);
		if (ret)
			die("shared borrow of an account", ret);
		a = p;
		total += a->balance;
		used += snprintf(where + used, room - used, "%s%u",
				 i ? "," : "",
				 (unsigned int)((odsm_addr_of(b.g) -
						 odsm_rt.info.heap_base) /
						odsm_rt.info.part_size));
		odsm_return(&r);
	}
	return total;
}

/* Move amount from account x to account y: both come here. */
static void transfer(uint64_t table, int x, int y, uint64_t amount)
{
	struct account *a, *b;
	odsm_mut mx, my;
	int ret;

	ret = odsm_borrow_mut_at(table + x * sizeof(odsm_box), &mx, (void **)&a);
	if (ret)
		die("mutable borrow", ret);
	ret = odsm_borrow_mut_at(table + y * sizeof(odsm_box), &my, (void **)&b);
	if (ret)
		die("mutable borrow", ret);
	if (amount > a->balance)
		amount = a->balance;
	a->balance -= amount;
	b->balance += amount;
	a->moves++;
	b->moves++;
	snprintf(a->owner_note, sizeof(a->owner_note), "written on node %u", self);
	snprintf(b->owner_note, sizeof(b->owner_note), "written on node %u", self);
	ret = odsm_return_mut(&mx);
	if (!ret)
		ret = odsm_return_mut(&my);
	if (ret)
		die("returning a mutable borrow", ret);
}

int main(int argc, char **argv)
{
	unsigned int rounds = argc > 1 ? (unsigned int)atoi(argv[1]) : 4;
	uint64_t table, turn, moves0, hits0, misses0, total;
	char where[4 * ACCOUNTS];
	unsigned int k;
	int ret;

	ret = odsm_init();
	if (ret)
		die("odsm_init", ret);
	self = odsm_rt.info.node_id;
	nodes = odsm_rt.info.nr_nodes;
	root_ga = odsm_rt.info.heap_base;	/* node 0's first object */
	if (self == 0)
		setup();
	while (root_word(0) != ROOT_MAGIC)
		sleep_ms(20);
	table = root_word(1);
	moves0 = stat_of("mut_moves");
	hits0 = stat_of("borrow_hits");
	misses0 = stat_of("borrow_misses");

	for (k = 0; k < rounds; k++) {
		/* wait for this node's turn */
		while ((turn = root_word(2)) % nodes != self ||
		       turn / nodes != k)
			sleep_ms(10);
		transfer(table, (int)((self + k) % ACCOUNTS),
			 (int)((self * 3 + k + 1) % ACCOUNTS), 100 + 10 * self);
		total = audit(table, where, sizeof(where));
		printf("node %u, turn %llu: moved money; accounts live on nodes [%s]; total %llu %s\n",
		       self, (unsigned long long)turn, where,
		       (unsigned long long)total,
		       total == ACCOUNTS * START ? "(balanced)" : "(WRONG)");
		fflush(stdout);
		if (total != ACCOUNTS * START)
			return 1;
		ret = odsm_fetch_add(root_ga + 16, 1, NULL);
		if (ret)
			die("passing the turn", ret);
	}
	/* everybody's done: one last audit each */
	while (root_word(2) < (uint64_t)rounds * nodes)
		sleep_ms(20);
	total = audit(table, where, sizeof(where));
	printf("node %u: final audit: total %llu over %d accounts on nodes [%s]; this node moved %llu objects here, cache hits %llu, misses %llu\n",
	       self, (unsigned long long)total, ACCOUNTS, where,
	       (unsigned long long)(stat_of("mut_moves") - moves0),
	       (unsigned long long)(stat_of("borrow_hits") - hits0),
	       (unsigned long long)(stat_of("borrow_misses") - misses0));
	odsm_fini();
	return total == ACCOUNTS * START ? 0 : 1;
}
