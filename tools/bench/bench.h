/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the benchmarks (odsm-bench, odsm-rbench, odsm-cbench) share: the
 * clock, medians and percentiles, the ODSM_BENCH rows, numeric arguments,
 * failing, the module's counters and knobs.  Header-only: each benchmark
 * stays one file.  Include it after odsm.h in a program that uses libodsm
 * (its messages then come from odsm_strerror()).
 *
 * The rows are "ODSM_BENCH <what> name=value ..." lines on stdout; make
 * bench and the documented results read them, so their names and format
 * are a stable interface.
 */
#ifndef ODSM_TOOLS_BENCH_H
#define ODSM_TOOLS_BENCH_H

#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* CLOCK_MONOTONIC in microseconds */
static inline double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median and (p90 may be NULL) 90th percentile of n samples; sorts them. */
static inline void stats(double *t, int n, double *med, double *p90)
{
	qsort(t, n, sizeof(*t), cmp_double);
	*med = t[n / 2];
	if (p90)
		*p90 = t[n * 9 / 10];
}

/* One result row: "ODSM_BENCH " fmt "\n" on stdout. */
static inline __attribute__((format(printf, 1, 2)))
void row(const char *fmt, ...)
{
	va_list ap;

	fputs("ODSM_BENCH ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* argv[i] as a number (decimal, 0x hex or 0 octal), def when not given. */
static inline long arg_num(int argc, char **argv, int i, long def)
{
	return argc > i ? strtol(argv[i], NULL, 0) : def;
}

/* "<program>: what: <message for err>" on stderr, exit 1; err < 0 */
static inline __attribute__((noreturn)) void die(const char *what, int err)
{
#ifdef ODSM_USER_H
	errx(1, "%s: %s", what, odsm_strerror(err));
#else
	errx(1, "%s: %s", what, strerror(-err));
#endif
}

#define BENCH_SYSFS	"/sys/kernel/odsm/"

/* The module's counter /sys/kernel/odsm/stats/<name>; 0 if unreadable. */
static inline unsigned long long stat_of(const char *name)
{
	unsigned long long v = 0;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), BENCH_SYSFS "stats/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Set the module's knob /sys/kernel/odsm/<name>; dies if it cannot. */
static inline void knob(const char *name, unsigned long long v)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), BENCH_SYSFS "%s", name);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%llu\n", v) < 0 || fclose(f))
		die(path, -errno);
}

/*
 * The client's side of a two-node benchmark: connect to the server at
 * ip:port (it may not listen yet: 60 s to come up) and read its len
 * bytes of addresses into info.  The connection, which the client keeps
 * to say "done" on; exits on failure.
 */
static inline int bench_dial(const char *ip, unsigned short port, void *info,
			     size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	int s = -1, i;

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		errx(1, "%s: not an IPv4 address", ip);
	for (i = 0; i < 600; i++) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0)
			err(1, "socket");
		if (!connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		close(s);
		s = -1;
		usleep(100000);
	}
	if (s < 0)
		errx(1, "%s:%u: no server in 60 s", ip, port);
	if (read(s, info, len) != (ssize_t)len)
		err(1, "%s:%u: the server's addresses", ip, port);
	return s;
}

#endif /* ODSM_TOOLS_BENCH_H */
