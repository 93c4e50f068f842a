// SPDX-License-Identifier: GPL-2.0
/*
 * odsmctl - look at and configure this node's odsm module.
 *
 *   odsmctl info                  the heap geometry this node uses
 *   odsmctl stats [--raw|--json]  counters and gauges by subsystem, errors
 *                                 and non-zero values first (name=value
 *                                 lines with --raw, JSON with --json)
 *   odsmctl latency [--json]      the latency histograms: count, p50, p90,
 *                                 p99 and a bar chart per operation
 *   odsmctl top [-i SECS] [-n ITER]
 *                                 the counters' rates per second, printed
 *                                 again every SECS (1) seconds, ITER times
 *                                 (until interrupted)
 *   odsmctl config --node-id N --nodes N [--base ADDR] [--part-size SIZE]
 *                                 reconfigure (root; nothing may be mapped
 *                                 or allocated)
 *   odsmctl keygen FILE           write a new random cluster key (32 bytes,
 *                                 mode 0600) to FILE, which must not exist
 *   odsmctl join --node-id K --nodes HOST[:PORT],HOST[:PORT],...
 *                --key-file FILE
 *                [--transport tcp|rdma] [--heartbeat-ms N] [--timeout-ms N]
 *                [--base ADDR] [--part-size SIZE]
 *                                 configure node K of a cluster of as many
 *                                 nodes as addresses, and join it (root);
 *                                 FILE holds the cluster key (16..64 bytes,
 *                                 the same file on every node, readable by
 *                                 its owner only)
 *   odsmctl leave                 leave the cluster (root)
 *   odsmctl up [--config FILE] [--check]
 *                                 set the knobs and join the cluster that
 *                                 FILE (/etc/odsm/cluster.conf) describes
 *                                 (root; odsm.service runs it at boot);
 *                                 --check: only read FILE and print it
 *   odsmctl down                  leave the cluster, if the module is
 *                                 loaded (root; odsm.service at stop)
 *   odsmctl status [--raw|--json] the peers as this node sees them
 *
 * info, stats, latency and top read ODSM_SYSFS (default /sys/kernel/odsm)
 * when it is set: the host test points them at a fake tree.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include "odsm.h"
#include "odsm_conf.h"
#include "odsm_ds.h"
#include "odsm_statfmt.h"

#define SYSFS	"/sys/kernel/odsm"

/* the tree the display commands read: ODSM_SYSFS, for tests */
static const char *sysfs_root(void)
{
	const char *r = getenv("ODSM_SYSFS");

	return r && *r ? r : SYSFS;
}

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

#define human_bytes odsm_sf_human_bytes

/* as the configuration file takes it: no sign, no overflow */
static int parse_size(const char *s, unsigned long long *v)
{
	uint64_t x;
	int ret = odsm_conf_parse_num(s, 1, &x);

	if (!ret)
		*v = x;
	return ret;
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

		snprintf(path, sizeof(path), "%s/%s", sysfs_root(), files[i]);
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

/* name=value lines in name order: scripts parse them, keep them as they are */
static int stats_raw(const char *dir)
{
	struct dirent **ents;
	int n, i;

	n = scandir(dir, &ents, NULL, by_name);
	if (n < 0) {
		fprintf(stderr, "odsmctl: %s: %s (is the odsm module loaded?)\n",
			dir, strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		unsigned long long v;
		char path[4096 + 512];	/* dir, a name of 255 at most */

		if (name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			if (!read_u64(path, &v))
				printf("%s=%llu\n", name, v);
		}
		free(ents[i]);
	}
	free(ents);
	return 0;
}

/* this node's id, or -1 when it cannot be read */
static long long node_id_of(const char *root)
{
	unsigned long long v;
	char path[4096];

	snprintf(path, sizeof(path), "%s/node_id", root);
	return read_u64(path, &v) ? -1 : (long long)v;
}

static int cmd_stats(int argc, char **argv)
{
	struct odsm_sf_snap snap;
	char dir[4096];
	int raw = 0, json = 0, i, ret;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--raw")) {
			raw = 1;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else {
			fprintf(stderr, "odsmctl stats: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (raw && json) {
		fprintf(stderr, "odsmctl stats: --raw or --json, not both\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/stats", sysfs_root());
	if (raw)
		return stats_raw(dir);
	ret = odsm_sf_snap_read(dir, &snap);
	if (ret) {
		fprintf(stderr, "odsmctl: %s: %s (is the odsm module loaded?)\n",
			dir, strerror(-ret));
		return 1;
	}
	if (json)
		odsm_sf_print_json(stdout, &snap, node_id_of(sysfs_root()));
	else
		odsm_sf_print_text(stdout, &snap,
				   (unsigned long long)sysconf(_SC_PAGESIZE));
	odsm_sf_snap_free(&snap);
	return 0;
}

static int cmd_latency(int argc, char **argv)
{
	struct odsm_sf_hist *h;
	char dir[4096];
	int json = 0, i, n;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else {
			fprintf(stderr, "odsmctl latency: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	snprintf(dir, sizeof(dir), "%s/latency", sysfs_root());
	n = odsm_sf_hists_read(dir, &h);
	if (n < 0) {
		fprintf(stderr, "odsmctl: %s: %s (is the odsm module loaded?)\n",
			dir, strerror(-n));
		return 1;
	}
	if (json)
		odsm_sf_print_hists_json(stdout, h, n);
	else
		odsm_sf_print_hists(stdout, h, n);
	free(h);
	return 0;
}

static int cmd_top(int argc, char **argv)
{
	struct odsm_sf_snap prev, cur;
	unsigned long long iters = 0, k;
	double secs = 1;
	char dir[4096], *end;
	int opt, ret;

	while ((opt = getopt(argc, argv, "i:n:")) != -1) {
		switch (opt) {
		case 'i':
			errno = 0;
			secs = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(secs >= 0.1 && secs <= 3600)) {
				fprintf(stderr, "odsmctl top: bad -i '%s' (seconds, 0.1 .. 3600)\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			if (parse_size(optarg, &iters) || !iters) {
				fprintf(stderr, "odsmctl top: bad -n '%s' (a count, at least 1)\n",
					optarg);
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "odsmctl top: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/stats", sysfs_root());
	ret = odsm_sf_snap_read(dir, &prev);
	if (ret)
		goto err;
	/* plain lines, no terminal control: a log that captures it reads well */
	for (k = 0; !iters || k < iters; k++) {
		struct timespec ts = { (time_t)secs,
				       (long)((secs - (double)(time_t)secs) * 1e9) };
		char when[16];
		time_t t;

		nanosleep(&ts, NULL);
		ret = odsm_sf_snap_read(dir, &cur);
		if (ret) {
			odsm_sf_snap_free(&prev);
			goto err;
		}
		t = time(NULL);
		strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
		printf("--- odsmctl top %s, node %lld: ", when, node_id_of(sysfs_root()));
		odsm_sf_print_rates(stdout, &prev, &cur);
		fflush(stdout);
		odsm_sf_snap_free(&prev);
		prev = cur;
	}
	odsm_sf_snap_free(&prev);
	return 0;
err:
	fprintf(stderr, "odsmctl: %s: %s (is the odsm module loaded?)\n", dir,
		strerror(-ret));
	return 1;
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
			if (v >= ODSM_MAX_NODES) {
				fprintf(stderr, "odsmctl config: --node-id %llu: at most %d\n",
					v, ODSM_MAX_NODES - 1);
				return 2;
			}
			c.node_id = (unsigned int)v;
			have_id = 1;
			break;
		case 'n':
			if (!v || v > ODSM_MAX_NODES) {
				fprintf(stderr, "odsmctl config: --nodes %llu: 1 to %d\n",
					v, ODSM_MAX_NODES);
				return 2;
			}
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
	if (optind < argc) {
		fprintf(stderr, "odsmctl config: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
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

/* ---- the cluster ------------------------------------------------------- */

static const char *transport_name(unsigned int t)
{
	switch (t) {
	case 0:
		return "none";
	case ODSM_TRANSPORT_TCP:
		return "tcp";
	case ODSM_TRANSPORT_RDMA:
		return "rdma";
	}
	return "?";
}

static const char *state_name(unsigned int s)
{
	switch (s) {
	case ODSM_PEER_SELF:
		return "self";
	case ODSM_PEER_DOWN:
		return "down";
	case ODSM_PEER_CONNECTING:
		return "connecting";
	case ODSM_PEER_UP:
		return "up";
	}
	return "?";
}

/* The comma-separated list into a fresh array; the count, or -1 (said why). */
static int parse_nodes(const char *list, struct odsm_node_addr **out)
{
	struct odsm_node_addr *a;
	char *copy, *tok, *save = NULL;
	int n = 0, i;

	a = calloc(ODSM_MAX_NODES, sizeof(*a));
	copy = strdup(list);
	if (!a || !copy) {
		fprintf(stderr, "odsmctl join: out of memory\n");
		goto err;
	}
	if (list[0] == ',' || strstr(list, ",,") ||
	    (list[0] && list[strlen(list) - 1] == ',')) {
		fprintf(stderr, "odsmctl join: empty entry in --nodes '%s'\n", list);
		goto err;
	}
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == ODSM_MAX_NODES) {
			fprintf(stderr, "odsmctl join: more than %d nodes\n",
				ODSM_MAX_NODES);
			goto err;
		}
		if (odsm_conf_parse_addr(tok, &a[n])) {
			fprintf(stderr, "odsmctl join: bad node address '%s' (want IPv4[:PORT], port 1..65535, default %d)\n",
				tok, ODSM_DEFAULT_PORT);
			goto err;
		}
		for (i = 0; i < n; i++)
			if (a[i].ipv4 == a[n].ipv4 && a[i].port == a[n].port) {
				fprintf(stderr, "odsmctl join: '%s' is both node %d and node %d\n",
					tok, i, n);
				goto err;
			}
		n++;
	}
	if (n < 2) {
		fprintf(stderr, "odsmctl join: a cluster needs at least 2 nodes in --nodes\n");
		goto err;
	}
	free(copy);
	*out = a;
	return n;
err:
	free(copy);
	free(a);
	return -1;
}

static int parse_ms(const char *opt, const char *s, unsigned int *v)
{
	unsigned long long x;

	if (parse_size(s, &x) || x > UINT_MAX) {
		fprintf(stderr, "odsmctl join: bad %s '%s' (milliseconds)\n", opt, s);
		return -1;
	}
	*v = (unsigned int)x;
	return 0;
}

/*
 * Read the cluster key: the whole file, ODSM_KEY_MIN..ODSM_KEY_MAX bytes,
 * used as it is; a file that others may read is refused.  Its length, or
 * -1 after saying why.
 */
static int read_key(const char *what, const char *path, unsigned char *key)
{
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot open the key file %s: %s\n",
			what, path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: the key file %s is not a regular file\n",
			what, path);
		goto err;
	}
	if (st.st_mode & 077) {
		fprintf(stderr, "%s: the key file %s may be read by others (mode %04o): chmod 600 it\n",
			what, path, (unsigned int)(st.st_mode & 07777));
		goto err;
	}
	/* its owner may read it, and rewrite it: only we may */
	if (st.st_uid != geteuid()) {
		fprintf(stderr, "%s: the key file %s belongs to uid %u, not to us (uid %u): chown it\n",
			what, path, (unsigned int)st.st_uid,
			(unsigned int)geteuid());
		goto err;
	}
	n = read(fd, key, ODSM_KEY_MAX + 1);
	if (n < ODSM_KEY_MIN || n > ODSM_KEY_MAX) {
		fprintf(stderr, "%s: the key file %s must hold %d to %d bytes (odsmctl keygen FILE makes one)\n",
			what, path, ODSM_KEY_MIN, ODSM_KEY_MAX);
		goto err;
	}
	close(fd);
	return (int)n;
err:
	close(fd);
	return -1;
}

static int cmd_keygen(int argc, char **argv)
{
	unsigned char key[32];
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: odsmctl keygen FILE\n");
		return 2;
	}
	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		fprintf(stderr, "odsmctl keygen: getrandom: %s\n", strerror(errno));
		return 1;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "odsmctl keygen: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (write(fd, key, sizeof(key)) != (ssize_t)sizeof(key) || close(fd)) {
		fprintf(stderr, "odsmctl keygen: writing %s: %s\n", argv[1],
			strerror(errno));
		unlink(argv[1]);
		return 1;
	}
	printf("wrote a %zu-byte cluster key to %s: copy it to every node (mode 0600)\n",
	       sizeof(key), argv[1]);
	return 0;
}

/* What joining needs, from join's options or up's configuration file. */
struct join_req {
	const char *what;		/* "odsmctl join", "odsmctl up" */
	unsigned int id, nr, transport, heartbeat_ms, timeout_ms;
	const struct odsm_node_addr *nodes;
	const char *key_file;
	unsigned long long heap_base, part_size;	/* 0: as it is */
	unsigned int wait_s;	/* retry while the address is not here */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Configure node r->id of r->nr and join; 0, or 1 after saying why.  While
 * this node's own address is not (yet) on the machine (the network, or the
 * RDMA device, still coming up at boot), the join is tried again every
 * second for r->wait_s seconds.
 */
static int join_cluster(const struct join_req *r)
{
	unsigned char key[ODSM_KEY_MAX + 1];
	struct odsm_config c = { 0 };
	unsigned long long v;
	char ip[INET_ADDRSTRLEN];
	double deadline = now_s() + r->wait_s;
	int key_len, ret, waited = 0, rc = 1;

	key_len = read_key(r->what, r->key_file, key);
	if (key_len < 0)
		return 1;
	if (read_u64(SYSFS "/heap_base", &v) == 0)
		c.heap_base = v;
	if (read_u64(SYSFS "/part_size", &v) == 0)
		c.part_size = v;
	if (r->heap_base)
		c.heap_base = r->heap_base;
	if (r->part_size)
		c.part_size = r->part_size;
	if (c.heap_base == 0 || c.part_size == 0) {
		fprintf(stderr, "%s: cannot read %s (is the odsm module loaded?)\n",
			r->what, SYSFS);
		goto out;
	}
	c.node_id = r->id;
	c.nr_nodes = r->nr;

	/* the geometry first, unless it already is the one asked for (a
	 * node that holds objects cannot be reconfigured)
	 */
	if (read_u64(SYSFS "/node_id", &v) || v != c.node_id ||
	    read_u64(SYSFS "/nr_nodes", &v) || v != c.nr_nodes ||
	    read_u64(SYSFS "/heap_base", &v) || v != c.heap_base ||
	    read_u64(SYSFS "/part_size", &v) || v != c.part_size) {
		ret = odsm_set_config(&c);
		if (ret) {
			fprintf(stderr, "%s: configuring node %u of %u: %s\n",
				r->what, c.node_id, c.nr_nodes, odsm_strerror(ret));
			if (ret == -EBUSY)
				fprintf(stderr, "  (free every object and unmap the heap, or reload the module, before joining with another geometry)\n");
			if (ret == -EINVAL)
				fprintf(stderr, "  (base and partition size multiples of 2 MiB; partition <= 64 GiB; the heap, %u partitions, within user space above 4 GiB)\n",
					c.nr_nodes);
			goto out;
		}
	}

	inet_ntop(AF_INET, &r->nodes[r->id].ipv4, ip, sizeof(ip));
	for (;;) {
		ret = odsm_join(r->transport, r->nodes, r->nr, key,
				(unsigned int)key_len, r->heartbeat_ms,
				r->timeout_ms);
		if ((ret != -EADDRNOTAVAIL && ret != -ENODEV) ||
		    now_s() >= deadline)
			break;
		if (!waited++)
			printf("%s: %s is not on this machine%s yet: waiting up to %u s\n",
			       r->what, ip,
			       r->transport == ODSM_TRANSPORT_RDMA ? " (or on no RDMA device)" : "",
			       r->wait_s);
		fflush(stdout);
		sleep(1);
	}
	if (ret) {
		fprintf(stderr, "%s: %s\n", r->what, odsm_strerror(ret));
		switch (-ret) {
		case EBUSY:
			fprintf(stderr, "  (this node already joined a cluster: 'odsmctl leave' first)\n");
			break;
		case EPROTONOSUPPORT:
			fprintf(stderr, "  (the loaded odsm module has no %s transport)\n",
				transport_name(r->transport));
			break;
		case EADDRINUSE:
		case EADDRNOTAVAIL:
		case ENODEV:
			fprintf(stderr, "  (node %u listens on %s:%u, its entry in the node list: is that an address of this machine%s, and the port free?)\n",
				r->id, ip, r->nodes[r->id].port,
				r->transport == ODSM_TRANSPORT_RDMA ? ", on an RDMA device" : "");
			break;
		case EINVAL:
			fprintf(stderr, "  (the module refused the node table or the timings: heartbeat at most %u ms, timeout at most %u ms and longer than the heartbeat)\n",
				ODSM_HEARTBEAT_MS_MAX, ODSM_TIMEOUT_MS_MAX);
			break;
		case EPERM:
			fprintf(stderr, "  (joining needs CAP_SYS_ADMIN)\n");
			break;
		}
		goto out;
	}
	printf("joined: node %u of %u over %s, listening on %s:%u\n", r->id,
	       r->nr, transport_name(r->transport), ip, r->nodes[r->id].port);
	rc = 0;
out:
	memset(key, 0, sizeof(key));
	return rc;
}

static int cmd_join(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "node-id", required_argument, NULL, 'i' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "transport", required_argument, NULL, 't' },
		{ "heartbeat-ms", required_argument, NULL, 'H' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "base", required_argument, NULL, 'b' },
		{ "part-size", required_argument, NULL, 's' },
		{ "key-file", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct join_req r = { .what = "odsmctl join",
			      .transport = ODSM_TRANSPORT_TCP };
	struct odsm_node_addr *nodes = NULL;
	unsigned long long v, id = ULLONG_MAX;
	const char *list = NULL;
	int opt, n, rc;

	while ((opt = getopt_long(argc, argv, "i:n:t:H:T:b:s:k:", opts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			r.key_file = optarg;
			break;
		case 'i':
			if (parse_size(optarg, &id) || id >= ODSM_MAX_NODES) {
				fprintf(stderr, "odsmctl join: bad --node-id '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			list = optarg;
			break;
		case 't':
			if (!strcmp(optarg, "tcp")) {
				r.transport = ODSM_TRANSPORT_TCP;
			} else if (!strcmp(optarg, "rdma")) {
				r.transport = ODSM_TRANSPORT_RDMA;
			} else {
				fprintf(stderr, "odsmctl join: unknown transport '%s' (tcp or rdma)\n",
					optarg);
				return 2;
			}
			break;
		case 'H':
			if (parse_ms("--heartbeat-ms", optarg, &r.heartbeat_ms))
				return 2;
			break;
		case 'T':
			if (parse_ms("--timeout-ms", optarg, &r.timeout_ms))
				return 2;
			break;
		case 'b':
		case 's':
			if (parse_size(optarg, &v)) {
				fprintf(stderr, "odsmctl join: bad number '%s'\n", optarg);
				return 2;
			}
			if (opt == 'b')
				r.heap_base = v;
			else
				r.part_size = v;
			break;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "odsmctl join: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (id == ULLONG_MAX || !list) {
		fprintf(stderr, "odsmctl join: --node-id and --nodes are required\n");
		return 2;
	}
	if (!r.key_file) {
		fprintf(stderr, "odsmctl join: --key-file FILE is required: the nodes prove to each other that they hold the same cluster key (make one with 'odsmctl keygen FILE' and copy it to every node)\n");
		return 2;
	}
	/* the module's defaults are 200 / 2000 ms */
	if ((r.timeout_ms ? r.timeout_ms : 2000) <= (r.heartbeat_ms ? r.heartbeat_ms : 200)) {
		fprintf(stderr, "odsmctl join: --timeout-ms (%u) must be longer than the heartbeat (%u ms)\n",
			r.timeout_ms ? r.timeout_ms : 2000,
			r.heartbeat_ms ? r.heartbeat_ms : 200);
		return 2;
	}
	n = parse_nodes(list, &nodes);
	if (n < 0)
		return 2;
	if (id >= (unsigned long long)n) {
		fprintf(stderr, "odsmctl join: --node-id %llu but --nodes lists only %d nodes (ids 0..%d)\n",
			id, n, n - 1);
		free(nodes);
		return 2;	/* a usage error, as the man page says */
	}
	r.id = (unsigned int)id;
	r.nr = (unsigned int)n;
	r.nodes = nodes;
	rc = join_cluster(&r);
	free(nodes);
	return rc;
}

/*
 * node_id = auto: the one entry of the node list that is an address of
 * this machine.  Its id, or -1 (none yet) or -2 (several; said why).
 */
static int find_self(const struct odsm_conf *c)
{
	struct ifaddrs *ifa, *i;
	unsigned int k;
	int found = -1;

	if (getifaddrs(&ifa))
		return -1;
	for (k = 0; k < c->nr_nodes; k++) {
		for (i = ifa; i; i = i->ifa_next) {
			const struct sockaddr_in *sin = (const void *)i->ifa_addr;

			if (!sin || sin->sin_family != AF_INET ||
			    sin->sin_addr.s_addr != c->nodes[k].ipv4)
				continue;
			if (found >= 0) {
				fprintf(stderr, "odsmctl up: %s: node_id = auto, but nodes %d and %u are both addresses of this machine: give node_id\n",
					c->path, found, k);
				freeifaddrs(ifa);
				return -2;
			}
			found = (int)k;
			break;
		}
	}
	freeifaddrs(ifa);
	return found;
}

/* node_id = auto, waiting (wait_s) for the address to appear; -1 after failing */
static int resolve_self(const struct odsm_conf *c)
{
	double deadline = now_s() + c->wait_s;
	int id, waited = 0;

	for (;;) {
		id = find_self(c);
		if (id != -1 || now_s() >= deadline)
			break;
		if (!waited++)
			printf("odsmctl up: node_id = auto: none of the %u addresses of %s is on this machine yet: waiting up to %u s\n",
			       c->nr_nodes, c->path, c->wait_s);
		fflush(stdout);
		sleep(1);
	}
	if (id == -1)
		fprintf(stderr, "odsmctl up: %s:%u: node_id = auto, but no address in the node list is an address of this machine\n",
			c->path, c->line_node_id);
	return id < 0 ? -1 : id;
}

/* write each knob of the file to its sysfs file; the module checks them */
static int set_knobs(const struct odsm_conf *c)
{
	unsigned int i;

	for (i = 0; i < c->nr_knobs; i++) {
		const struct odsm_conf_knob *k = &c->knobs[i];
		FILE *f = fopen(k->knob->path, "w");
		int ok;

		if (!f) {
			fprintf(stderr, "odsmctl up: %s:%u: %s: cannot open %s: %s (is the odsm module loaded?)\n",
				c->path, k->line, k->knob->name, k->knob->path,
				strerror(errno));
			return -1;
		}
		ok = fputs(k->value, f) >= 0;
		ok = !fclose(f) && ok;	/* sysfs says no at the flush */
		if (!ok) {
			fprintf(stderr, "odsmctl up: %s:%u: %s = %s: the module refused it: %s\n",
				c->path, k->line, k->knob->name, k->value,
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void print_conf(const struct odsm_conf *c, int id)
{
	char ip[INET_ADDRSTRLEN];
	unsigned int i;

	printf("config: %s\n", c->path);
	if (id >= 0)
		printf("node_id      %d%s\n", id,
		       c->node_id == ODSM_CONF_NODE_AUTO ? " (auto)" : "");
	else
		printf("node_id      auto (no address of this machine in the list)\n");
	for (i = 0; i < c->nr_nodes; i++) {
		inet_ntop(AF_INET, &c->nodes[i].ipv4, ip, sizeof(ip));
		printf("node %-7u %s:%u\n", i, ip, c->nodes[i].port);
	}
	printf("transport    %s\n", transport_name(c->transport));
	printf("key_file     %s\n", c->key_file);
	if (c->heartbeat_ms)
		printf("heartbeat_ms %u\n", c->heartbeat_ms);
	if (c->timeout_ms)
		printf("timeout_ms   %u\n", c->timeout_ms);
	if (c->heap_base)
		printf("heap_base    0x%llx\n", (unsigned long long)c->heap_base);
	if (c->part_size)
		printf("part_size    %llu\n", (unsigned long long)c->part_size);
	printf("wait_s       %u\n", c->wait_s);
	for (i = 0; i < c->nr_knobs; i++)
		printf("%-12s %s  (%s)\n", c->knobs[i].knob->name,
		       c->knobs[i].value, c->knobs[i].knob->path);
}

static int cmd_up(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	static struct odsm_conf c;	/* a few KiB: not on the stack */
	const char *path = ODSM_CONF_PATH;
	char err[ODSM_CONF_ERR_LEN];
	struct join_req r = { .what = "odsmctl up" };
	unsigned char key[ODSM_KEY_MAX + 1];
	int opt, check = 0, id;
	double t0, waited;

	while ((opt = getopt_long(argc, argv, "c:n", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'n':
			check = 1;
			break;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "odsmctl up: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (odsm_conf_load(&c, path, err, sizeof(err))) {
		fprintf(stderr, "odsmctl up: %s\n", err);
		return 2;
	}
	/* the key first: a bad one must fail the check, and change nothing */
	if (check && access(c.key_file, F_OK)) {
		/* --check of a file made before its key (the example) */
		fprintf(stderr, "odsmctl up: note: no key file %s yet\n",
			c.key_file);
	} else if (read_key("odsmctl up", c.key_file, key) < 0) {
		return 1;
	}
	memset(key, 0, sizeof(key));
	if (check) {
		print_conf(&c, c.node_id == ODSM_CONF_NODE_AUTO ? find_self(&c) : c.node_id);
		return 0;
	}
	t0 = now_s();
	id = c.node_id == ODSM_CONF_NODE_AUTO ? resolve_self(&c) : c.node_id;
	if (id < 0)
		return 1;
	if (access(SYSFS, F_OK)) {
		fprintf(stderr, "odsmctl up: no %s: the odsm module is not loaded (modprobe odsm)\n",
			SYSFS);
		return 1;
	}
	if (set_knobs(&c))
		return 1;
	r.id = (unsigned int)id;
	r.nr = c.nr_nodes;
	r.nodes = c.nodes;
	r.transport = c.transport;
	r.key_file = c.key_file;
	r.heartbeat_ms = c.heartbeat_ms;
	r.timeout_ms = c.timeout_ms;
	r.heap_base = c.heap_base;
	r.part_size = c.part_size;
	/* one wait_s in all: what finding our address took is spent */
	waited = now_s() - t0;
	r.wait_s = waited >= c.wait_s ? 0 : c.wait_s - (unsigned int)waited;
	return join_cluster(&r);
}

/* Leave; a node whose module is gone (or never came) is down already. */
static int cmd_down(int argc, char **argv)
{
	unsigned int nr = 0, transport = 0;
	int ret;

	if (argc > 1) {
		fprintf(stderr, "odsmctl down: unexpected argument '%s'\n", argv[1]);
		return 2;
	}
	if (access(SYSFS, F_OK)) {
		printf("odsmctl down: the odsm module is not loaded: nothing to leave\n");
		return 0;
	}
	ret = odsm_status(NULL, &nr, &transport);
	if (!ret && !transport) {
		printf("odsmctl down: not in a cluster: nothing to leave\n");
		return 0;
	}
	if (!ret)
		ret = odsm_leave();
	if (ret) {
		fprintf(stderr, "odsmctl down: %s\n", odsm_strerror(ret));
		return 1;
	}
	printf("left the cluster\n");
	return 0;
}

static int cmd_leave(int argc, char **argv)
{
	int ret;

	if (argc > 1) {
		fprintf(stderr, "odsmctl leave: unexpected argument '%s'\n", argv[1]);
		return 2;
	}
	ret = odsm_leave();
	if (ret) {
		fprintf(stderr, "odsmctl leave: %s\n", odsm_strerror(ret));
		return 1;
	}
	return 0;
}

/* Drop this node's idle cached copies (after a program freed its objects). */
static int cmd_drop_copies(int argc, char **argv)
{
	uint64_t dropped = 0, kept = 0;
	int ret;

	if (argc > 1) {
		fprintf(stderr, "odsmctl drop-copies: unexpected argument '%s'\n",
			argv[1]);
		return 2;
	}
	ret = odsm_drop_copies(&dropped, &kept);
	if (ret) {
		fprintf(stderr, "odsmctl drop-copies: %s\n", odsm_strerror(ret));
		return 1;
	}
	printf("dropped %llu idle cached copies; %llu still borrowed\n",
	       (unsigned long long)dropped, (unsigned long long)kept);
	return 0;
}

/* the fields of --raw, with the same names, as one JSON object */
static void status_json(const struct odsm_peer_info *p, unsigned int nr,
			unsigned int transport)
{
	unsigned int i;

	printf("{\n  \"nodes\": %u,\n  \"transport\": \"%s\",\n  \"peers\": [",
	       nr, transport_name(transport));
	for (i = 0; i < nr; i++) {
		const struct odsm_peer_info *q = &p[i];
		char ip[INET_ADDRSTRLEN];

		if (!inet_ntop(AF_INET, &q->ipv4, ip, sizeof(ip)))
			snprintf(ip, sizeof(ip), "?");
		printf("%s\n    {\"node\": %u, \"addr\": \"%s\", \"state\": \"%s\", \"transport\": \"%s\", \"rtt_ns\": %llu, \"msgs_tx\": %llu, \"msgs_rx\": %llu, \"bytes_tx\": %llu, \"bytes_rx\": %llu, \"free_bytes\": %llu, \"keys\": %u, \"regs\": %u}",
		       i ? "," : "", q->node_id, ip, state_name(q->state),
		       transport_name(q->transport),
		       (unsigned long long)q->rtt_ns,
		       (unsigned long long)q->msgs_tx,
		       (unsigned long long)q->msgs_rx,
		       (unsigned long long)q->bytes_tx,
		       (unsigned long long)q->bytes_rx,
		       (unsigned long long)q->free_bytes, q->keys, q->regs);
	}
	printf("%s]\n}\n", nr ? "\n  " : "");
}

static int cmd_status(int argc, char **argv)
{
	struct odsm_peer_info *p;
	unsigned int nr = ODSM_MAX_NODES, transport = 0, i;
	int raw = 0, json = 0, ret;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--raw")) {
			raw = 1;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else {
			fprintf(stderr, "odsmctl status: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	p = calloc(ODSM_MAX_NODES, sizeof(*p));
	if (!p) {
		fprintf(stderr, "odsmctl status: out of memory\n");
		return 1;
	}
	ret = odsm_status(p, &nr, &transport);
	if (ret) {
		fprintf(stderr, "odsmctl status: %s\n", odsm_strerror(ret));
		free(p);
		return 1;
	}
	if (nr > ODSM_MAX_NODES)
		nr = ODSM_MAX_NODES;
	if (raw && json) {
		fprintf(stderr, "odsmctl status: --raw or --json, not both\n");
		free(p);
		return 2;
	}
	if (json) {
		status_json(p, nr, transport);
		free(p);
		return 0;
	}
	if (raw) {
		printf("nodes=%u transport=%s\n", nr, transport_name(transport));
	} else if (!transport) {
		printf("not in a cluster (odsmctl join)\n");
	} else {
		printf("cluster of %u nodes over %s\n", nr, transport_name(transport));
		printf("%-5s %-15s %-10s %-5s %11s %21s %23s %13s\n", "node",
		       "address", "state", "via", "rtt", "messages tx/rx",
		       "bytes tx/rx", "keys/regs");
	}
	for (i = 0; i < nr; i++) {
		const struct odsm_peer_info *q = &p[i];
		char ip[INET_ADDRSTRLEN], rtt[32], msgs[48], b1[32], b2[32], bytes[72];
		char keys[32];

		if (!inet_ntop(AF_INET, &q->ipv4, ip, sizeof(ip)))
			snprintf(ip, sizeof(ip), "?");
		if (raw) {
			printf("node=%u addr=%s state=%s transport=%s rtt_ns=%llu msgs_tx=%llu msgs_rx=%llu bytes_tx=%llu bytes_rx=%llu free_bytes=%llu keys=%u regs=%u\n",
			       q->node_id, ip, state_name(q->state),
			       transport_name(q->transport),
			       (unsigned long long)q->rtt_ns,
			       (unsigned long long)q->msgs_tx,
			       (unsigned long long)q->msgs_rx,
			       (unsigned long long)q->bytes_tx,
			       (unsigned long long)q->bytes_rx,
			       (unsigned long long)q->free_bytes, q->keys, q->regs);
			continue;
		}
		if (q->state == ODSM_PEER_SELF) {
			printf("%-5u %-15s %-10s %-5s %11s %21s %23s %13s\n",
			       q->node_id, ip, state_name(q->state),
			       transport_name(q->transport), "-", "-", "-", "-");
			continue;
		}
		/* microseconds, one decimal ("µ" is two bytes: one more column) */
		if (q->rtt_ns)
			snprintf(rtt, sizeof(rtt), "%.1f \u00b5s", q->rtt_ns / 1000.0);
		else
			snprintf(rtt, sizeof(rtt), "- ");
		snprintf(msgs, sizeof(msgs), "%llu / %llu",
			 (unsigned long long)q->msgs_tx,
			 (unsigned long long)q->msgs_rx);
		snprintf(bytes, sizeof(bytes), "%s / %s",
			 human_bytes(q->bytes_tx, b1, sizeof(b1)),
			 human_bytes(q->bytes_rx, b2, sizeof(b2)));
		/* one-sided RDMA: its blocks we hold keys for / ours we registered */
		if (q->transport == ODSM_TRANSPORT_RDMA)
			snprintf(keys, sizeof(keys), "%u / %u", q->keys, q->regs);
		else
			snprintf(keys, sizeof(keys), "-");
		printf("%-5u %-15s %-10s %-5s %*s %21s %23s %13s\n", q->node_id, ip,
		       state_name(q->state), transport_name(q->transport),
		       q->rtt_ns ? 12 : 11, rtt, msgs, bytes, keys);
	}
	free(p);
	return 0;
}

/*
 * The data structures' calibration (odsm_ds.h) a program saved, and what
 * the model makes of it: per (operation, promise) the predicted cost of
 * each variant and the one an AUTO structure runs.
 */
static int cmd_ds_model(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : getenv("ODSM_DS_COSTS");
	struct odsm_ds_costs c;
	unsigned int op, p;
	int ret;

	if (!path || argc > 2) {
		fprintf(stderr, "usage: odsmctl ds-model [FILE]   (default: $ODSM_DS_COSTS)\n");
		return 2;
	}
	ret = odsm_ds_costs_load(path, &c);
	if (ret) {
		fprintf(stderr, "odsmctl: %s: %s\n", path,
			ret == -EINVAL ? "not a calibration" : strerror(-ret));
		return 1;
	}
	printf("calibration %s (generation %llu), in us:\n", path,
	       (unsigned long long)c.gen);
	printf("  read %.1f  write %.1f  cas %.1f  fao %.1f  request %.1f (first %.1f)\n",
	       c.read_ns / 1e3, c.write_ns / 1e3, c.cas_ns / 1e3,
	       c.fao_ns / 1e3, c.req_ns / 1e3, c.req_idle_ns / 1e3);
	printf("%-8s %-7s %12s %12s  %s\n", "op", "promise", "one-sided",
	       "request", "auto runs");
	for (op = 0; op < ODSM_DS_NR_OPS; op++) {
		for (p = 0; p < ODSM_DS_NR_PROMISES; p++) {
			if (!odsm_ds_promise_ok(op, p))
				continue;
			printf("%-8s %-7s %12.1f %12.1f  %s\n",
			       odsm_ds_op_name(op), odsm_ds_promise_name(p),
			       odsm_ds_predict(&c, op, p, 0) / 1e3,
			       odsm_ds_predict(&c, op, p, 1) / 1e3,
			       odsm_ds_choose(&c, op, p) ? "request" :
			       "one-sided");
		}
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: odsmctl info\n"
		"       odsmctl stats [--raw|--json]\n"
		"       odsmctl latency [--json]\n"
		"       odsmctl top [-i SECS] [-n ITER]\n"
		"       odsmctl config --node-id N --nodes N [--base ADDR] [--part-size SIZE[K|M|G]]\n"
		"       odsmctl keygen FILE\n"
		"       odsmctl join --node-id K --nodes IP[:PORT],IP[:PORT],... --key-file FILE\n"
		"                    [--transport tcp|rdma] [--heartbeat-ms N] [--timeout-ms N]\n"
		"                    [--base ADDR] [--part-size SIZE]\n"
		"       odsmctl leave\n"
		"       odsmctl up [--config FILE] [--check]   (FILE: " ODSM_CONF_PATH ")\n"
		"       odsmctl down\n"
		"       odsmctl status [--raw|--json]\n"
		"       odsmctl drop-copies\n"
		"       odsmctl ds-model [FILE]\n");
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
		return cmd_stats(argc - 1, argv + 1);
	if (!strcmp(argv[1], "latency"))
		return cmd_latency(argc - 1, argv + 1);
	if (!strcmp(argv[1], "top"))
		return cmd_top(argc - 1, argv + 1);
	if (!strcmp(argv[1], "config"))
		return cmd_config(argc - 1, argv + 1);
	if (!strcmp(argv[1], "join"))
		return cmd_join(argc - 1, argv + 1);
	if (!strcmp(argv[1], "keygen"))
		return cmd_keygen(argc - 1, argv + 1);
	if (!strcmp(argv[1], "leave"))
		return cmd_leave(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(argv[1], "up"))
		return cmd_up(argc - 1, argv + 1);
	if (!strcmp(argv[1], "down"))
		return cmd_down(argc - 1, argv + 1);
	if (!strcmp(argv[1], "drop-copies"))
		return cmd_drop_copies(argc - 1, argv + 1);
	if (!strcmp(argv[1], "ds-model"))
		return cmd_ds_model(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "odsmctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
