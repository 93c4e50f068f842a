// SPDX-License-Identifier: GPL-2.0
/*
 * The cluster configuration file: "KEY = VALUE" lines, '#' comments, read
 * by "odsmctl up" (odsm_conf.h; the format is in the admin guide).  Every
 * value is checked here, as far as a file can be checked without the
 * module, so that a mistake is reported with its file and line before the
 * node is touched, rather than as the module's bare EINVAL after it.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "odsm_conf.h"

#define CONF_MAX_LINE	8192
#define CONF_MAX_FILE	(1 << 20)
#define CONF_MAX_WAIT_S	3600
/* the module's defaults (kmod/odsm_cluster.c), for the timeout check */
#define CONF_DEF_HEARTBEAT_MS	200
#define CONF_DEF_TIMEOUT_MS	2000

#define SYS_ODSM	"/sys/kernel/odsm/"
#define SYS_PARAM	"/sys/module/odsm/parameters/"

const struct odsm_knob odsm_knobs[] = {
	{ "cache_budget_bytes", SYS_ODSM "cache_budget_bytes", 0, 0 },
	{ "lazy_threshold", SYS_ODSM "lazy_threshold", 0, 0 },
	{ "readahead_pages", SYS_ODSM "readahead_pages", 0, 1 },
	{ "onesided", SYS_PARAM "onesided", 1, 0 },
	{ "nic_atomics", SYS_PARAM "nic_atomics", 1, 0 },
	{ "premap_blocks", SYS_PARAM "premap_blocks", 0, 1 },
	{ "store_reserve_mb", SYS_PARAM "store_reserve_mb", 0, 1 },
	{ NULL, NULL, 0, 0 },
};

/* where a message points: the file being read and the line in it */
struct where {
	const char *path;
	unsigned int line;
	char *err;
	size_t errlen;
};

static int __attribute__((format(printf, 2, 3)))
fail(const struct where *w, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	if (w->line)
		n = (size_t)snprintf(w->err, w->errlen, "%s:%u: ", w->path, w->line);
	else
		n = (size_t)snprintf(w->err, w->errlen, "%s: ", w->path);
	if (n < w->errlen) {
		va_start(ap, fmt);
		vsnprintf(w->err + n, w->errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int odsm_conf_parse_addr(const char *s, struct odsm_node_addr *a)
{
	char host[INET_ADDRSTRLEN], *end;
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	struct in_addr in;
	unsigned long port = ODSM_DEFAULT_PORT;

	if (n == 0 || n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	if (inet_pton(AF_INET, host, &in) != 1 || in.s_addr == 0)
		return -EINVAL;
	if (colon) {
		if (!isdigit((unsigned char)colon[1]))
			return -EINVAL;
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (errno || *end || port == 0 || port > 65535)
			return -EINVAL;
	}
	memset(a, 0, sizeof(*a));
	a->ipv4 = in.s_addr;
	a->port = (uint16_t)port;
	return 0;
}

/* decimal or 0x, with a K, M or G suffix when sizes is set */
int odsm_conf_parse_num(const char *s, int sizes, uint64_t *v)
{
	unsigned long long x;
	char *end;
	int shift = 0;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;	/* strtoull would take "-1" and " 1" */
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	if (sizes && *end) {
		switch (*end) {
		case 'K': case 'k':
			shift = 10;
			break;
		case 'M': case 'm':
			shift = 20;
			break;
		case 'G': case 'g':
			shift = 30;
			break;
		default:
			return -EINVAL;
		}
		end++;
	}
	if (*end || (shift && x > (~0ULL >> shift)))
		return -EINVAL;
	*v = (uint64_t)x << shift;
	return 0;
}

static int parse_uint(const struct where *w, const char *key, const char *val,
		      unsigned long long min, unsigned long long max,
		      unsigned int *out)
{
	uint64_t v;

	if (odsm_conf_parse_num(val, 0, &v) || v < min || v > max)
		return fail(w, "%s = %s: want a number from %llu to %llu", key,
			    val, min, max);
	*out = (unsigned int)v;
	return 0;
}

/* a path as given, or relative to the configuration file's directory */
static int set_path(const struct where *w, const char *key, const char *val,
		    char *out)
{
	const char *slash = strrchr(w->path, '/');
	int n;

	if (val[0] == '/' || !slash)
		n = snprintf(out, PATH_MAX, "%s", val);
	else
		n = snprintf(out, PATH_MAX, "%.*s/%s", (int)(slash - w->path),
			     w->path, val);
	if (n < 0 || n >= PATH_MAX)
		return fail(w, "%s: the path is too long", key);
	return 0;
}

/* one more node, from the configuration file or the hosts file */
static int add_node(struct odsm_conf *c, const struct where *w,
		    const char *tok, int in_hosts)
{
	struct odsm_node_addr a;
	unsigned int i;

	if (odsm_conf_parse_addr(tok, &a))
		return fail(w, "bad node address '%s' (want IPv4[:PORT], port 1..65535, default %d)",
			    tok, ODSM_DEFAULT_PORT);
	if (c->nr_nodes == ODSM_MAX_NODES)
		return fail(w, "more than %d nodes", ODSM_MAX_NODES);
	for (i = 0; i < c->nr_nodes; i++)
		if (c->nodes[i].ipv4 == a.ipv4 && c->nodes[i].port == a.port)
			return fail(w, "'%s' is both node %u (%sline %u) and node %u",
				    tok, i, c->node_in_hosts[i] ? "hosts_file " : "",
				    c->node_line[i], c->nr_nodes);
	c->nodes[c->nr_nodes] = a;
	c->node_line[c->nr_nodes] = w->line;
	c->node_in_hosts[c->nr_nodes] = (unsigned char)in_hosts;
	c->nr_nodes++;
	return 0;
}

/* "a, b c" : entries separated by commas and/or blanks */
static int add_nodes(struct odsm_conf *c, const struct where *w, char *val)
{
	char *tok, *save = NULL;
	int ret;

	for (tok = strtok_r(val, ", \t", &save); tok;
	     tok = strtok_r(NULL, ", \t", &save)) {
		ret = add_node(c, w, tok, 0);
		if (ret)
			return ret;
	}
	return 0;
}

static int set_knob(struct odsm_conf *c, const struct where *w,
		    const struct odsm_knob *k, const char *val)
{
	struct odsm_conf_knob *ck;
	unsigned int i;
	uint64_t v;

	for (i = 0; i < c->nr_knobs; i++)
		if (c->knobs[i].knob == k)
			return fail(w, "%s given twice (first at line %u)",
				    k->name, c->knobs[i].line);
	ck = &c->knobs[c->nr_knobs++];
	ck->knob = k;
	ck->line = w->line;
	if (k->is_bool) {
		if (!strcasecmp(val, "y") || !strcasecmp(val, "yes") ||
		    !strcasecmp(val, "on") || !strcasecmp(val, "true") ||
		    !strcmp(val, "1"))
			strcpy(ck->value, "Y");
		else if (!strcasecmp(val, "n") || !strcasecmp(val, "no") ||
			 !strcasecmp(val, "off") || !strcasecmp(val, "false") ||
			 !strcmp(val, "0"))
			strcpy(ck->value, "N");
		else
			return fail(w, "%s = %s: want yes or no", k->name, val);
		return 0;
	}
	if (odsm_conf_parse_num(val, !k->is_count, &v))
		return fail(w, k->is_count ? "%s = %s: want a number" :
			    "%s = %s: want a number (K, M or G allowed)",
			    k->name, val);
	snprintf(ck->value, sizeof(ck->value), "%llu", (unsigned long long)v);
	return 0;
}

/* a key that may be given once: its line, 0 if it was not seen yet */
static int once(const struct where *w, const char *key, unsigned int *seen)
{
	if (*seen)
		return fail(w, "%s given twice (first at line %u)", key, *seen);
	*seen = w->line;
	return 0;
}

static int parse_line(struct odsm_conf *c, const struct where *w,
		      const char *key, char *val)
{
	const struct odsm_knob *k;
	uint64_t v;
	int ret;

	if (!strcmp(key, "nodes")) {
		if (!c->line_nodes)
			c->line_nodes = w->line;
		return add_nodes(c, w, val);
	}
	if (!strcmp(key, "node_id")) {
		ret = once(w, key, &c->line_node_id);
		if (ret)
			return ret;
		if (!strcmp(val, "auto")) {
			c->node_id = ODSM_CONF_NODE_AUTO;
			return 0;
		}
		if (odsm_conf_parse_num(val, 0, &v) || v >= ODSM_MAX_NODES)
			return fail(w, "node_id = %s: want auto or a number from 0 to %d",
				    val, ODSM_MAX_NODES - 1);
		c->node_id = (int)v;
		return 0;
	}
	if (!strcmp(key, "hosts_file")) {
		ret = once(w, key, &c->line_hosts_file);
		return ret ? ret : set_path(w, key, val, c->hosts_file);
	}
	if (!strcmp(key, "key_file")) {
		ret = once(w, key, &c->line_key_file);
		return ret ? ret : set_path(w, key, val, c->key_file);
	}
	if (!strcmp(key, "transport")) {
		ret = once(w, key, &c->line_transport);
		if (ret)
			return ret;
		if (!strcmp(val, "tcp"))
			c->transport = ODSM_TRANSPORT_TCP;
		else if (!strcmp(val, "rdma"))
			c->transport = ODSM_TRANSPORT_RDMA;
		else
			return fail(w, "transport = %s: want tcp or rdma", val);
		return 0;
	}
	if (!strcmp(key, "heartbeat_ms")) {
		ret = once(w, key, &c->line_heartbeat_ms);
		return ret ? ret : parse_uint(w, key, val, 1, ODSM_HEARTBEAT_MS_MAX,
					      &c->heartbeat_ms);
	}
	if (!strcmp(key, "timeout_ms")) {
		ret = once(w, key, &c->line_timeout_ms);
		return ret ? ret : parse_uint(w, key, val, 1, ODSM_TIMEOUT_MS_MAX,
					      &c->timeout_ms);
	}
	if (!strcmp(key, "wait_s")) {
		ret = once(w, key, &c->line_wait_s);
		return ret ? ret : parse_uint(w, key, val, 0, CONF_MAX_WAIT_S,
					      &c->wait_s);
	}
	if (!strcmp(key, "heap_base")) {
		ret = once(w, key, &c->line_heap_base);
		if (ret)
			return ret;
		if (odsm_conf_parse_num(val, 1, &v) || v < (4ULL << 30) ||
		    v % ODSM_PART_ALIGN)
			return fail(w, "heap_base = %s: want an address of at least 4G, a multiple of 2M",
				    val);
		c->heap_base = v;
		return 0;
	}
	if (!strcmp(key, "part_size")) {
		ret = once(w, key, &c->line_part_size);
		if (ret)
			return ret;
		if (odsm_conf_parse_num(val, 1, &v) || !v || v % ODSM_PART_ALIGN ||
		    v > ODSM_MAX_PART_SIZE)
			return fail(w, "part_size = %s: want a multiple of 2M, at most 64G",
				    val);
		c->part_size = v;
		return 0;
	}
	for (k = odsm_knobs; k->name; k++)
		if (!strcmp(key, k->name))
			return set_knob(c, w, k, val);
	return fail(w, "unknown key '%s'", key);
}

/* the next line of text into buf, its comment cut, trimmed; NULL at the end */
static const char *next_line(const char *text, char *buf, int *too_long)
{
	const char *nl;
	size_t n;
	char *p, *e;

	if (!*text)
		return NULL;
	nl = strchr(text, '\n');
	n = nl ? (size_t)(nl - text) : strlen(text);
	*too_long = n >= CONF_MAX_LINE;
	if (*too_long)
		n = 0;
	memcpy(buf, text, n);
	buf[n] = '\0';
	/* a comment starts at a '#' that starts a word */
	for (p = buf; *p; p++)
		if (*p == '#' && (p == buf || isspace((unsigned char)p[-1]))) {
			*p = '\0';
			break;
		}
	for (p = buf; isspace((unsigned char)*p); p++)
		;
	e = p + strlen(p);
	while (e > p && isspace((unsigned char)e[-1]))
		*--e = '\0';
	memmove(buf, p, strlen(p) + 1);
	return nl ? nl + 1 : text + strlen(text);
}

static void conf_init(struct odsm_conf *c, const char *path)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->node_id = ODSM_CONF_NODE_AUTO;
	c->transport = ODSM_TRANSPORT_TCP;
	c->wait_s = 60;
}

int odsm_conf_parse(struct odsm_conf *c, const char *path, const char *text,
		    char *err, size_t errlen)
{
	struct where w = { path, 0, err, errlen };
	char *buf, *eq, *key, *val, *e;
	int too_long, ret = 0;

	conf_init(c, path);
	buf = malloc(CONF_MAX_LINE);
	if (!buf)
		return fail(&w, "out of memory");
	while ((text = next_line(text, buf, &too_long))) {
		w.line++;
		if (too_long) {
			ret = fail(&w, "line longer than %d bytes (split a long nodes list over several 'nodes =' lines)",
				   CONF_MAX_LINE - 1);
			break;
		}
		if (!buf[0])
			continue;
		eq = strchr(buf, '=');
		if (!eq) {
			ret = fail(&w, "'%s' is not KEY = VALUE", buf);
			break;
		}
		key = buf;
		e = eq;
		while (e > key && isspace((unsigned char)e[-1]))
			e--;
		*e = '\0';
		for (val = eq + 1; isspace((unsigned char)*val); val++)
			;
		if (!key[0]) {
			ret = fail(&w, "no key before '='");
			break;
		}
		if (!val[0]) {
			ret = fail(&w, "%s has no value", key);
			break;
		}
		ret = parse_line(c, &w, key, val);
		if (ret)
			break;
	}
	free(buf);
	return ret;
}

int odsm_conf_parse_hosts(struct odsm_conf *c, const char *path,
			  const char *text, char *err, size_t errlen)
{
	struct where w = { path, 0, err, errlen };
	char *buf, *addr, *name, *extra, *save = NULL;
	int too_long, ret = 0;

	buf = malloc(CONF_MAX_LINE);
	if (!buf)
		return fail(&w, "out of memory");
	while ((text = next_line(text, buf, &too_long))) {
		w.line++;
		if (too_long) {
			ret = fail(&w, "line longer than %d bytes", CONF_MAX_LINE - 1);
			break;
		}
		/* "ADDRESS [NAME]", as in /etc/hosts */
		addr = strtok_r(buf, " \t", &save);
		if (!addr)
			continue;
		name = strtok_r(NULL, " \t", &save);
		extra = name ? strtok_r(NULL, " \t", &save) : NULL;
		if (extra) {
			ret = fail(&w, "'%s' after '%s %s': want ADDRESS [NAME]",
				   extra, addr, name);
			break;
		}
		ret = add_node(c, &w, addr, 1);
		if (ret)
			break;
	}
	free(buf);
	return ret;
}

int odsm_conf_check(const struct odsm_conf *c, char *err, size_t errlen)
{
	struct where w = { c->path, 0, err, errlen };
	unsigned int hb = c->heartbeat_ms ? c->heartbeat_ms : CONF_DEF_HEARTBEAT_MS;
	unsigned int to = c->timeout_ms ? c->timeout_ms : CONF_DEF_TIMEOUT_MS;

	if (c->line_nodes && c->line_hosts_file) {
		w.line = c->line_hosts_file;
		return fail(&w, "hosts_file and nodes (line %u) both given: use one",
			    c->line_nodes);
	}
	if (!c->line_nodes && !c->line_hosts_file)
		return fail(&w, "no 'nodes =' or 'hosts_file =' line: the cluster's addresses are required");
	if (c->nr_nodes < 2) {
		w.line = c->line_hosts_file ? c->line_hosts_file : c->line_nodes;
		return fail(&w, "a cluster needs at least 2 nodes, %s %u",
			    c->line_hosts_file ? "the hosts file lists" : "the file lists",
			    c->nr_nodes);
	}
	if (!c->line_node_id)
		return fail(&w, "no 'node_id =' line: this node's id (a number, or auto) is required");
	if (c->node_id != ODSM_CONF_NODE_AUTO &&
	    (unsigned int)c->node_id >= c->nr_nodes) {
		w.line = c->line_node_id;
		return fail(&w, "node_id = %d but the cluster has %u nodes (ids 0..%u)",
			    c->node_id, c->nr_nodes, c->nr_nodes - 1);
	}
	if (!c->line_key_file)
		return fail(&w, "no 'key_file =' line: the cluster key is required (odsmctl keygen FILE makes one)");
	if (to <= hb) {
		w.line = c->line_timeout_ms ? c->line_timeout_ms : c->line_heartbeat_ms;
		return fail(&w, "timeout_ms (%u) must be longer than heartbeat_ms (%u)",
			    to, hb);
	}
	return 0;
}

/*
 * The whole file at path, NUL-terminated, in a fresh buffer; NULL after
 * failing, with w's place and label (the hosts file: its config line) first.
 */
static char *read_text(const char *path, const struct where *w,
		       const char *label)
{
	char *text;
	ssize_t n;
	size_t len = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		fail(w, "%scannot open: %s", label, strerror(errno));
		return NULL;
	}
	text = malloc(CONF_MAX_FILE + 1);
	if (!text) {
		fail(w, "%sout of memory", label);
		goto err;
	}
	while ((n = read(fd, text + len, CONF_MAX_FILE + 1 - len)) > 0) {
		len += (size_t)n;
		if (len > CONF_MAX_FILE) {
			fail(w, "%slarger than %d bytes", label, CONF_MAX_FILE);
			goto err;
		}
	}
	if (n < 0) {
		fail(w, "%scannot read: %s", label, strerror(errno));
		goto err;
	}
	if (memchr(text, '\0', len)) {
		fail(w, "%snot a text file (it holds a NUL byte)", label);
		goto err;
	}
	text[len] = '\0';
	close(fd);
	return text;
err:
	free(text);
	close(fd);
	return NULL;
}

int odsm_conf_load(struct odsm_conf *c, const char *path, char *err,
		   size_t errlen)
{
	struct where w = { path, 0, err, errlen };
	char *text, label[PATH_MAX + 16];
	int ret;

	text = read_text(path, &w, "");
	if (!text)
		return -EINVAL;
	ret = odsm_conf_parse(c, path, text, err, errlen);
	free(text);
	if (ret)
		return ret;
	if (c->line_hosts_file && !c->line_nodes) {
		w.line = c->line_hosts_file;
		snprintf(label, sizeof(label), "hosts_file %s: ", c->hosts_file);
		text = read_text(c->hosts_file, &w, label);
		if (!text)
			return -EINVAL;
		ret = odsm_conf_parse_hosts(c, c->hosts_file, text, err, errlen);
		free(text);
		if (ret)
			return ret;
	}
	return odsm_conf_check(c, err, errlen);
}
