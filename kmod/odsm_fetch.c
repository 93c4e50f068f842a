// SPDX-License-Identifier: GPL-2.0
/*
 * FETCH from the requester's side: one request for a span of a remote
 * object, every reply checked against what was asked, and the rest of a
 * large object by chunks, several in flight at once.
 *
 * Why several: a chunk is a round trip of up to ODSM_WIRE_MAX_DATA bytes.
 * One after another, the home and this node take turns (the home reads
 * and sends while this node waits, then this node copies while the home
 * waits); with FETCH_REST_DEPTH chunks out, both work at once.  The
 * chunks beyond the first that a node has out at a peer are bounded
 * (FETCH_REST_EXTRA per peer), so that many threads moving large objects
 * from one home stay under the home's bound on a peer's requests in
 * flight (ODSM_PEER_REQS_MAX, past which it refuses them).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/slab.h>
#include "odsm.h"
#include "odsm_cache.h"
#include "odsm_core.h"
#include "odsm_lat.h"
#include "odsm_trace.h"

#define FETCH_REST_DEPTH	4
#define FETCH_REST_EXTRA	16

/* Chunks out at each peer beyond the first of each fetch. */
static atomic_t rest_extra[ODSM_MAX_NODES];

/* A FETCH in flight: the request's bytes stay here until it is answered. */
struct fetch_call {
	struct odsm_rpc_call rc;
	struct odsm_wire_fetch fe;
	u8 p[ODSM_WIRE_FETCH_SIZE];
	u32 node;
	u64 start;
};

static int fetch_start(struct fetch_call *f, u32 node, u64 inc, u64 cg,
		       u64 offset, void *rbuf, u32 len, u32 whole)
{
	u32 n;
	int ret;

	f->fe = (struct odsm_wire_fetch){ .gaddr = cg, .offset = offset,
					  .len = len, .whole = whole };
	f->node = node;
	n = odsm_wire_put_fetch(f->p, &f->fe);
	f->start = ktime_get_ns();
	ret = odsm_rpc_start(&f->rc, node, inc, ODSM_MSG_FETCH, f->p, n, NULL,
			     0, rbuf,
			     ODSM_WIRE_FETCH_REPLY_SIZE + max(len, whole));
	if (ret)
		trace_odsm_fetch(node, cg, offset, 0, ret,
				 ktime_get_ns() - f->start);
	return ret;
}

/* Wait for a started FETCH's reply and check it against what was asked. */
static int fetch_finish(struct fetch_call *f, u64 *size, u32 *got)
{
	const struct odsm_wire_fetch *fe = &f->fe;
	struct odsm_wire_fetch_reply fr;
	u32 rlen = 0;
	int ret;

	ret = odsm_rpc_wait(&f->rc, &rlen);
	if (ret)
		goto out;
	if (odsm_wire_get_fetch_reply(f->rc.reply, rlen, &fr) || !fr.size ||
	    fr.size > odsm_heap.geom.part_size || fe->offset > fr.size ||
	    fr.len != odsm_wire_fetch_span(fr.size, fe->offset, fe->len,
					   fe->whole) ||
	    fr.color > odsm_color(fe->gaddr)) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		ret = -EPROTO;
		goto out;
	}
	odsm_stat_add(ODSM_STAT_bytes_fetched, fr.len);
	*size = fr.size;
	*got = fr.len;
	/* only answered fetches: a failure's time is the timeout's */
	trace_odsm_fetch(f->node, fe->gaddr, fe->offset, fr.len, 0,
			 odsm_lat_record(ODSM_LAT_fetch, f->start));
	return 0;
out:
	trace_odsm_fetch(f->node, fe->gaddr, fe->offset, 0, ret,
			 ktime_get_ns() - f->start);
	return ret;
}

/*
 * rbuf has room for the reply's fixed part and the larger of len and
 * whole; the data lands at rbuf + ODSM_WIRE_FETCH_REPLY_SIZE.  Everything
 * the home answers is checked against what was asked.
 */
int odsm_fetch_at(u32 node, u64 inc, u64 cg, u64 offset, void *rbuf, u32 len,
		  u32 whole, u64 *size, u32 *got)
{
	struct fetch_call f;
	int ret;

	ret = fetch_start(&f, node, inc, cg, offset, rbuf, len, whole);
	return ret ? ret : fetch_finish(&f, size, got);
}

/* One chunk of odsm_fetch_rest(): its call, buffer and place. */
struct rest_chunk {
	struct fetch_call f;
	void *buf;
	u64 from;
	u32 len;
	bool extra;		/* counted in rest_extra */
};

/*
 * Start the chunk of c at *next (the first one out always; the others
 * only while the peer's bound on extra chunks allows): 1 started, 0 not
 * now, or -errno.
 */
static int rest_start(struct rest_chunk *c, bool first, u32 node, u64 inc,
		      u64 cg, u64 *next, u64 size, u32 chunk)
{
	int ret;

	c->extra = !first;
	if (c->extra &&
	    atomic_inc_return(&rest_extra[node]) > FETCH_REST_EXTRA) {
		atomic_dec(&rest_extra[node]);
		return 0;
	}
	c->from = *next;
	c->len = min_t(u64, size - *next, chunk);
	ret = fetch_start(&c->f, node, inc, cg, c->from, c->buf, c->len, 0);
	if (ret) {
		if (c->extra)
			atomic_dec(&rest_extra[node]);
		return ret;
	}
	*next += c->len;
	if (c->extra)
		odsm_stat_inc(ODSM_STAT_fetch_chunks_overlapped);
	return 1;
}

/*
 * Fetch [from, size) of the object into the local range at dst, by chunks,
 * up to FETCH_REST_DEPTH of them in flight.  On an error no chunk is
 * started any more, and every one out is waited for before returning.
 */
int odsm_fetch_rest(u32 node, u64 inc, u64 cg, u64 from, u64 size, u64 dst)
{
	u32 chunk = min_t(u64, size - from, ODSM_WIRE_MAX_DATA), got;
	unsigned int depth, head = 0, tail = 0, out = 0, i;
	struct rest_chunk *cs;
	u64 next = from, osize;
	int ret = 0, r;

	if (from >= size)
		return 0;
	if (node >= ODSM_MAX_NODES)
		return -EINVAL;
	depth = min_t(u64, FETCH_REST_DEPTH, DIV_ROUND_UP(size - from, chunk));
	cs = kcalloc(depth, sizeof(*cs), GFP_KERNEL);
	if (!cs)
		return -ENOMEM;
	for (i = 0; i < depth; i++) {
		cs[i].buf = kvmalloc(ODSM_WIRE_FETCH_REPLY_SIZE + chunk,
				     GFP_KERNEL);
		/* fewer buffers: fewer chunks out, not a failure */
		if (!cs[i].buf) {
			if (!i)
				ret = -ENOMEM;
			depth = i;
			break;
		}
	}
	while (!ret || out) {
		/* as many out as the depth and the peer's bound allow */
		while (!ret && next < size && out < depth) {
			r = rest_start(&cs[tail], !out, node, inc, cg, &next,
				       size, chunk);
			if (r <= 0) {
				ret = r;
				break;
			}
			tail = (tail + 1) % depth;
			out++;
		}
		if (!out)
			break;
		/* in the order started: a reply that came first waits in its call */
		r = fetch_finish(&cs[head].f, &osize, &got);
		if (cs[head].extra)
			atomic_dec(&rest_extra[node]);
		if (!r && (osize != size || got != cs[head].len))
			r = -EPROTO;	/* the object changed under us */
		if (!r && !ret)
			r = odsm_store_rw(&odsm_heap, dst + cs[head].from,
					  cs[head].buf +
					  ODSM_WIRE_FETCH_REPLY_SIZE,
					  cs[head].len, true);
		if (r && !ret)
			ret = r;
		head = (head + 1) % depth;
		out--;
	}
	for (i = 0; i < depth; i++)
		kvfree(cs[i].buf);
	kfree(cs);
	return ret;
}
