/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cluster configuration file, /etc/odsm/cluster.conf, that "odsmctl up"
 * reads (the format: Documentation/odsm/admin-guide.rst, "The cluster
 * configuration file").  Pure logic, no I/O but reading the files named:
 * odsmctl.c acts on the result, selftests/host/conf_test.c tests it.
 *
 * Every error is one line "FILE:LINE: what is wrong" (or "FILE: ..." for
 * what no line says, such as a missing key), written to the caller's
 * buffer; the functions return 0 or -EINVAL.
 */
#ifndef _ODSM_CONF_H
#define _ODSM_CONF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/odsm.h>

#define ODSM_CONF_PATH		"/etc/odsm/cluster.conf"
#define ODSM_DEFAULT_PORT	7100
#define ODSM_CONF_NODE_AUTO	(-1)	/* node_id = auto */
#define ODSM_CONF_MAX_KNOBS	16
#define ODSM_CONF_ERR_LEN	(PATH_MAX + 256)

/* a tunable of the module that "odsmctl up" writes before joining */
struct odsm_knob {
	const char *name;	/* its key in the file */
	const char *path;	/* the file under /sys it is written to */
	int is_bool;		/* Y/N (else a number, K/M/G allowed) */
	int is_count;		/* a number of things (pages, MiB): no
				 * K/M/G, which would multiply a unit
				 */
};

struct odsm_conf_knob {
	const struct odsm_knob *knob;
	char value[24];		/* as the sysfs file takes it */
	unsigned int line;
};

struct odsm_conf {
	char path[PATH_MAX];		/* the file read, for messages */
	int node_id;			/* or ODSM_CONF_NODE_AUTO */
	unsigned int nr_nodes;
	struct odsm_node_addr nodes[ODSM_MAX_NODES];
	unsigned int node_line[ODSM_MAX_NODES];	/* where each was given */
	unsigned char node_in_hosts[ODSM_MAX_NODES];	/* 1: from hosts_file */
	char hosts_file[PATH_MAX];	/* hosts_file =, resolved */
	unsigned int transport;		/* ODSM_TRANSPORT_* */
	char key_file[PATH_MAX];
	unsigned int heartbeat_ms;	/* 0: the module's default */
	unsigned int timeout_ms;	/* 0: the module's default */
	uint64_t heap_base;		/* 0: as the node has it */
	uint64_t part_size;		/* 0: as the node has it */
	unsigned int wait_s;		/* how long up waits for the address */
	unsigned int nr_knobs;
	struct odsm_conf_knob knobs[ODSM_CONF_MAX_KNOBS];
	/* where each key was seen (0: not given), for later messages */
	unsigned int line_node_id, line_nodes, line_hosts_file, line_transport,
		     line_key_file, line_heartbeat_ms, line_timeout_ms,
		     line_heap_base, line_part_size, line_wait_s;
};

/* The knobs a file may set, NULL-terminated. */
extern const struct odsm_knob odsm_knobs[];

/*
 * A number as the file and the command line take it: digits first (no
 * sign, no blank), in C's bases, and with sizes a K, M or G suffix; one
 * that does not fit in 64 bits (with its suffix) is refused.  0 or
 * -EINVAL.
 */
int odsm_conf_parse_num(const char *s, int sizes, uint64_t *v);

/* "10.0.0.1:7100" or "10.0.0.1" (port 7100) into *a; 0 or -EINVAL */
int odsm_conf_parse_addr(const char *s, struct odsm_node_addr *a);

/*
 * Parse the text of a configuration file named path into *c (which it
 * initialises).  hosts_file is only recorded: odsm_conf_load() reads it.
 */
int odsm_conf_parse(struct odsm_conf *c, const char *path, const char *text,
		    char *err, size_t errlen);

/* Add the addresses of a hosts file's text (one per line) to c. */
int odsm_conf_parse_hosts(struct odsm_conf *c, const char *path,
			  const char *text, char *err, size_t errlen);

/* What no single line shows: required keys, counts, node id vs. nodes. */
int odsm_conf_check(const struct odsm_conf *c, char *err, size_t errlen);

/* Read path (and the hosts file it names), parse and check it. */
int odsm_conf_load(struct odsm_conf *c, const char *path, char *err,
		   size_t errlen);

#endif /* _ODSM_CONF_H */
