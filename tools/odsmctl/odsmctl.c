// SPDX-License-Identifier: GPL-2.0
/*
 * odsmctl - look at and configure this node's odsm module.
 *
 *   odsmctl info                  the heap geometry this node uses
 *   odsmctl stats [--raw]         counters and gauges, for a person (or
 *                                 name=value lines with --raw)
 *   odsmctl config --node-id N --nodes N [--base ADDR] [--part-size SIZE]
 *                                 reconfigure (root; nothing may be mapped
 *                                 or allocated)
 */
#include <errno.h>
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "odsm.h"

#define SYSFS	"/sys/kernel/odsm"

static int read_u64(const char *path, unsigned long long *v)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -errno;
	ok = fscanf(f, "%lli", v) == 1;
	fclose(f);
	return ok ? 0 : -EIO;
}

/* 1536 -> "1.5 KiB" */
static const char *human_bytes(unsigned long long v, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%llu B", v);
	else
		snprintf(buf, n, "%.1f %s", d, unit[u]);
	return buf;
}

static int parse_size(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'G': case 'g':
		*v <<= 10;
		/* fall through */
	case 'M': case 'm':
		*v <<= 10;
		/* fall through */
	case 'K': case 'k':
		*v <<= 10;
		end++;
		break;
	}
	return *end ? -EINVAL : 0;
}

static int cmd_info(void)
{
	static const char *const files[] = {
		"abi_version", "node_id", "nr_nodes", "heap_base", "part_size",
		"heap_size",
	};
	unsigned long long v;
	char buf[32];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[256];

		snprintf(path, sizeof(path), SYSFS "/%s", files[i]);
		ret = read_u64(path, &v);
		if (ret) {
			fprintf(stderr, "odsmctl: %s: %s (is the odsm module loaded?)\n",
				path, strerror(-ret));
			return 1;
		}
		if (!strcmp(files[i], "heap_base"))
			printf("%-12s 0x%llx\n", files[i], v);
		else if (strstr(files[i], "size"))
			printf("%-12s %s\n", files[i], human_bytes(v, buf, sizeof(buf)));
		else
			printf("%-12s %llu\n", files[i], v);
	}
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int cmd_stats(int raw)
{
	struct dirent **ents;
	int n, i;

	n = scandir(SYSFS "/stats", &ents, NULL, by_name);
	if (n < 0) {
		fprintf(stderr, "odsmctl: %s/stats: %s (is the odsm module loaded?)\n",
			SYSFS, strerror(errno));
		return 1;
	}
	if (!raw)
		printf("odsm counters (node-wide, since the module was loaded) and gauges (now):\n");
	for (i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		unsigned long long v;
		char path[512], buf[32];

		if (name[0] == '.')
			goto next;
		snprintf(path, sizeof(path), SYSFS "/stats/%s", name);
		if (read_u64(path, &v))
			goto next;
		if (raw)
			printf("%s=%llu\n", name, v);
		else if (strstr(name, "bytes"))
			printf("  %-18s %14llu  (%s)\n", name, v,
			       human_bytes(v, buf, sizeof(buf)));
		else if (!strcmp(name, "pages_in_use"))
			printf("  %-18s %14llu  (%s)\n", name, v,
			       human_bytes(v * (unsigned long long)sysconf(_SC_PAGESIZE),
					   buf, sizeof(buf)));
		else
			printf("  %-18s %14llu\n", name, v);
next:
		free(ents[i]);
	}
	free(ents);
	return 0;
}

static int cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "node-id", required_argument, NULL, 'i' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "base", required_argument, NULL, 'b' },
		{ "part-size", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct odsm_config c = { 0 };
	unsigned long long v;
	int opt, have_id = 0, have_n = 0, ret;

	if (read_u64(SYSFS "/heap_base", &v) == 0)
		c.heap_base = v;
	if (read_u64(SYSFS "/part_size", &v) == 0)
		c.part_size = v;
	while ((opt = getopt_long(argc, argv, "i:n:b:s:", opts, NULL)) != -1) {
		if (opt == '?')
			return 2;
		if (parse_size(optarg, &v)) {
			fprintf(stderr, "odsmctl: bad number '%s'\n", optarg);
			return 2;
		}
		switch (opt) {
		case 'i':
			c.node_id = (unsigned int)v;
			have_id = 1;
			break;
		case 'n':
			c.nr_nodes = (unsigned int)v;
			have_n = 1;
			break;
		case 'b':
			c.heap_base = v;
			break;
		case 's':
			c.part_size = v;
			break;
		}
	}
	if (!have_id || !have_n) {
		fprintf(stderr, "odsmctl config: --node-id and --nodes are required\n");
		return 2;
	}
	ret = odsm_set_config(&c);
	if (ret) {
		fprintf(stderr, "odsmctl config: %s\n", odsm_strerror(ret));
		if (ret == -EINVAL)
			fprintf(stderr, "  (node id < nodes <= %d; base and partition size multiples of 2 MiB; partition <= 64 GiB; the heap within user space above 4 GiB)\n",
				ODSM_MAX_NODES);
		return 1;
	}
	return cmd_info();
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: odsmctl info\n"
		"       odsmctl stats [--raw]\n"
		"       odsmctl config --node-id N --nodes N [--base ADDR] [--part-size SIZE[K|M|G]]\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "info"))
		return cmd_info();
	if (!strcmp(argv[1], "stats"))
		return cmd_stats(argc > 2 && !strcmp(argv[2], "--raw"));
	if (!strcmp(argv[1], "config"))
		return cmd_config(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "odsmctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
