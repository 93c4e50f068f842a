/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A strict JSON checker (RFC 8259: one value, whitespace around it) for the
 * tests of odsmctl's --json output: the host test (statfmt_test) and the
 * cluster program (cluster_odsmctl_test), whose guests have no python.
 * Header only.  json_valid() is 1 when TEXT is one valid JSON value and
 * nothing else.  Objects with a repeated key are valid
 * JSON but useless to a monitoring system: refused too.
 */
#ifndef _ODSM_JSON_CHECK_H
#define _ODSM_JSON_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 32

static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (; *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL;	/* also the end of the text */
		if (*p != '\\')
			continue;
		p++;
		if (*p == 'u') {
			int i;

			for (i = 1; i <= 4; i++)
				if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
					return NULL;
			p += 4;
		} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
			return NULL;
		}
	}
	return p + 1;
}

static const char *json_digits(const char *p)
{
	if (*p < '0' || *p > '9')
		return NULL;
	while (*p >= '0' && *p <= '9')
		p++;
	return p;
}

static const char *json_number(const char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else
		p = json_digits(p);
	if (p && *p == '.')
		p = json_digits(p + 1);
	if (!p)
		return NULL;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		p = json_digits(p);
	}
	return p;
}

/* is the key starting at K (a string token) among the keys before it? */
static int json_dup_key(const char *first, const char *k, size_t klen)
{
	const char *p = first;

	/* the object's earlier keys: walk them again */
	while (p && p < k) {
		const char *end = json_string(p);

		if (!end)
			return 0;
		if ((size_t)(end - p) == klen && !memcmp(p, k, klen))
			return 1;
		p = json_ws(end);
		p = json_value(json_ws(p + 1), 0);
		if (!p)
			return 0;
		p = json_ws(p);
		if (*p != ',')
			return 0;
		p = json_ws(p + 1);
	}
	return 0;
}

static const char *json_value(const char *p, int depth)
{
	if (depth > JSON_MAX_DEPTH)
		return NULL;
	p = json_ws(p);
	switch (*p) {
	case '{': {
		const char *first;

		p = json_ws(p + 1);
		if (*p == '}')
			return p + 1;
		first = p;
		for (;;) {
			const char *k = p;

			p = json_string(p);
			if (!p || json_dup_key(first, k, (size_t)(p - k)))
				return NULL;
			p = json_ws(p);
			if (*p++ != ':')
				return NULL;
			p = json_value(p, depth + 1);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p == '}')
				return p + 1;
			if (*p++ != ',')
				return NULL;
			p = json_ws(p);
		}
	}
	case '[':
		p = json_ws(p + 1);
		if (*p == ']')
			return p + 1;
		for (;;) {
			p = json_value(p, depth + 1);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p == ']')
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	case '"':
		return json_string(p);
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	default:
		return json_number(p);
	}
}

/* 1 if TEXT is exactly one JSON value (and whitespace) */
static inline int json_valid(const char *text)
{
	const char *p = json_value(text, 0);

	return p && !*json_ws(p);
}

/*
 * The unsigned number after the first "KEY": in TEXT (the tests' way to
 * pick a counter; keys in odsmctl's JSON are unique per object), or -1.
 */
static inline long long json_ull_after(const char *text, const char *key)
{
	char pat[96];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(text, pat);
	if (!p)
		return -1;
	p = json_ws(p + strlen(pat));
	if (*p < '0' || *p > '9')
		return -1;
	return strtoll(p, NULL, 10);
}

#endif /* _ODSM_JSON_CHECK_H */
