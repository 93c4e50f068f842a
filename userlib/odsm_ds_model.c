// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The data structures' cost model (BCL, Tables II and III): each
 * one-sided variant's best case as a sum of component latencies, a
 * request as one round trip to the owner, and the choice between them.
 * Pure logic: the host test (selftests/host/ds_model_test.c) links it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "odsm_ds.h"
#include "odsm_ds_int.h"

static const char *const op_names[ODSM_DS_NR_OPS] = {
	"insert", "find", "update", "delete", "push", "pop",
};

static const char *const promise_names[ODSM_DS_NR_PROMISES] = {
	"CRW", "CW", "CR",
};

const char *odsm_ds_op_name(enum odsm_ds_op op)
{
	return (unsigned int)op < ODSM_DS_NR_OPS ? op_names[op] : "?";
}

const char *odsm_ds_promise_name(enum odsm_ds_promise p)
{
	return (unsigned int)p < ODSM_DS_NR_PROMISES ? promise_names[p] : "?";
}

/* CRW for every operation; the weaker one: CR for readers, CW for writers */
int odsm_ds_promise_ok(enum odsm_ds_op op, enum odsm_ds_promise p)
{
	if ((unsigned int)op >= ODSM_DS_NR_OPS)
		return 0;
	if (p == ODSM_DS_CRW)
		return 1;
	return op == ODSM_DS_FIND || op == ODSM_DS_POP ? p == ODSM_DS_CR :
							  p == ODSM_DS_CW;
}

/*
 * The one-sided best cases, as odsm_ds_hash.c runs them (an uncontended
 * first probe; collisions and retries are not in the model, as in the
 * paper's):
 *   insert CRW  CAS (claim FREE->BUSY) + W + FAO (BUSY->READY)
 *   insert CW   CAS (claim FREE->READY) + W
 *   find   CRW  FAO (read lock) + R + FAO (unlock)
 *   find   CR   R
 *   update CRW  R (locate) + CAS (READY->BUSY) + W + FAO
 *   update CW   R + W
 *   delete      R + CAS (READY->DEAD), at either promise
 * and the queue's (odsm_ds_queue.c), whose slots are reserved by CAS so
 * that a full or empty queue can refuse without having taken one; a
 * persistent CAS (CAS-P: until the frontier reaches this slot) counts as
 * one CAS, its best case:
 *   push   CRW  CAS (reserve) + W + CAS-P (publish: tail_ready)
 *   push   CW   CAS + W
 *   pop    CRW  CAS (reserve) + R + CAS-P (free: head_done)
 *   pop    CR   CAS + R + FAO (count the slot free)
 */
double odsm_ds_predict(const struct odsm_ds_costs *c, enum odsm_ds_op op,
		       enum odsm_ds_promise p, int request)
{
	int crw = p == ODSM_DS_CRW;

	if (!odsm_ds_promise_ok(op, p))
		return -1;
	if (request)
		return c->req_ns;
	switch (op) {
	case ODSM_DS_INSERT:
		return c->cas_ns + c->write_ns + (crw ? c->fao_ns : 0);
	case ODSM_DS_FIND:
		return crw ? 2 * c->fao_ns + c->read_ns : c->read_ns;
	case ODSM_DS_UPDATE:
		return c->read_ns + c->write_ns +
		       (crw ? c->cas_ns + c->fao_ns : 0);
	case ODSM_DS_DELETE:
		return c->read_ns + c->cas_ns;
	case ODSM_DS_PUSH:
		return c->cas_ns + c->write_ns + (crw ? c->cas_ns : 0);
	case ODSM_DS_POP:
		return c->cas_ns + c->read_ns + (crw ? c->cas_ns : c->fao_ns);
	default:
		return -1;
	}
}

int odsm_ds_choose(const struct odsm_ds_costs *c, enum odsm_ds_op op,
		   enum odsm_ds_promise p)
{
	if (!odsm_ds_promise_ok(op, p))
		return -EINVAL;
	return odsm_ds_predict(c, op, p, 1) < odsm_ds_predict(c, op, p, 0);
}

void ds_chooser_set(struct ds_chooser *ch, const struct odsm_ds_costs *c)
{
	unsigned int op, p;
	int v;

	ch->costs = *c;
	for (op = 0; op < ODSM_DS_NR_OPS; op++) {
		for (p = 0; p < ODSM_DS_NR_PROMISES; p++) {
			v = odsm_ds_choose(c, op, p);
			if (v >= 0 && ch->mode != ODSM_DS_AUTO)
				v = ch->mode == ODSM_DS_REQUEST;
			__atomic_store_n(&ch->choice[op][p], v < 0 ? -1 : v,
					 __ATOMIC_RELAXED);
		}
	}
}

int ds_chooser_get(const struct ds_chooser *ch, enum odsm_ds_op op,
		   enum odsm_ds_promise p)
{
	int v;

	if ((unsigned int)op >= ODSM_DS_NR_OPS ||
	    (unsigned int)p >= ODSM_DS_NR_PROMISES)
		return -EINVAL;
	v = __atomic_load_n(&ch->choice[op][p], __ATOMIC_RELAXED);
	return v < 0 ? -EINVAL : v;
}

/* ---- the text form -------------------------------------------------------- */

#define COST_FIELDS(X) \
	X(read_ns) X(write_ns) X(cas_ns) X(fao_ns) X(req_ns) X(req_idle_ns)

int odsm_ds_costs_format(const struct odsm_ds_costs *c, char *buf, size_t len)
{
	int n = snprintf(buf, len,
#define X(f) #f " %.0f\n"
			 COST_FIELDS(X)
#undef X
			 "gen %llu\n",
#define X(f) c->f,
			 COST_FIELDS(X)
#undef X
			 (unsigned long long)c->gen);

	return n < 0 ? -EIO : (size_t)n >= len ? -ENOSPC : 0;
}

/* Every field once, each a non-negative number; nothing else. */
int odsm_ds_costs_parse(const char *buf, struct odsm_ds_costs *c)
{
	struct odsm_ds_costs v = { 0 };
	unsigned int seen = 0, all = (1u << 7) - 1;
	char name[32];
	double x;
	int n;

	while (*buf) {
		if (sscanf(buf, "%31s %lf%n", name, &x, &n) != 2 || x < 0 ||
		    x > 1e12)
			return -EINVAL;
		buf += n;
		while (*buf == ' ' || *buf == '\t')
			buf++;
		if (*buf && *buf != '\n')
			return -EINVAL;
		if (*buf)
			buf++;
		if (!strcmp(name, "read_ns") && !(seen & 1)) {
			v.read_ns = x;
			seen |= 1;
		} else if (!strcmp(name, "write_ns") && !(seen & 2)) {
			v.write_ns = x;
			seen |= 2;
		} else if (!strcmp(name, "cas_ns") && !(seen & 4)) {
			v.cas_ns = x;
			seen |= 4;
		} else if (!strcmp(name, "fao_ns") && !(seen & 8)) {
			v.fao_ns = x;
			seen |= 8;
		} else if (!strcmp(name, "req_ns") && !(seen & 16)) {
			v.req_ns = x;
			seen |= 16;
		} else if (!strcmp(name, "req_idle_ns") && !(seen & 32)) {
			v.req_idle_ns = x;
			seen |= 32;
		} else if (!strcmp(name, "gen") && !(seen & 64)) {
			v.gen = (uint64_t)x;
			seen |= 64;
		} else {
			return -EINVAL;
		}
	}
	if (seen != all)
		return -EINVAL;
	*c = v;
	return 0;
}

/* ---- the calibration file ------------------------------------------------- */

int odsm_ds_costs_save(const char *path, const struct odsm_ds_costs *c)
{
	char buf[512], tmp[4096];
	ssize_t n;
	int fd, ret;

	ret = odsm_ds_costs_format(c, buf, sizeof(buf));
	if (ret)
		return ret;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	n = write(fd, buf, strlen(buf));
	ret = n < 0 ? -errno : (size_t)n != strlen(buf) ? -EIO : 0;
	if (close(fd) && !ret)
		ret = -errno;
	/* readers see the old file or the new one, never half of one */
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

int odsm_ds_costs_load(const char *path, struct odsm_ds_costs *c)
{
	char buf[512];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	if ((size_t)n == sizeof(buf) - 1)
		return -EINVAL;		/* longer than any calibration */
	buf[n] = 0;
	return odsm_ds_costs_parse(buf, c);
}
