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
#include "odsm_window.h"

#define FETCH_REST_DEPTH	4
#define FETCH_REST_EXTRA	16

/* Chunks out at each peer beyond the first of each fetch. */
static atomic_t rest_extra[ODSM_MAX_NODES];

/* A FETCH in flight: the request's bytes stay here until it is answered. */
struct fetch_call {
	struct odsm_rpc_call rc;
	struct odsm_wire_fetch fe;
	u8 p[ODSM_WIRE_FETCH_SIZE];
	u64 start;
};

static int fetch_start(struct fetch_call *f, u32 node, u64 inc, u64 cg,
		       u64 offset, void *rbuf, u32 len, u32 whole)
{
	u32 n;
	int ret;

	f->fe = (struct odsm_wire_fetch){ .gaddr = cg, .offset = offset,
					  .len = len, .whole = whole };
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
	trace_odsm_fetch(f->rc.peer, fe->gaddr, fe->offset, fr.len, 0,
			 odsm_lat_record(ODSM_LAT_fetch, f->start));
	return 0;
out:
	trace_odsm_fetch(f->rc.peer, fe->gaddr, fe->offset, 0, ret,
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

/* odsm_fetch_rest() in progress: the object, and where the next chunk starts. */
struct rest {
	struct rest_chunk *cs;
	u32 node;
	u64 inc, cg, next, size, dst;
	u32 chunk;
};

/*
 * Start the chunk of slot at r->next (the first one out always; the others
 * only while the peer's bound on extra chunks allows): 1 started, 0 none
 * now (all started, or the bound reached), or -errno.
 */
static int rest_start(void *ctx, unsigned int slot, unsigned int out)
{
	struct rest *r = ctx;
	struct rest_chunk *c = &r->cs[slot];
	int ret;

	if (r->next >= r->size)
		return 0;
	/* killed, or an io_uring command whose program went */
	if (odsm_abandoned())
		return -EINTR;
	c->extra = out > 0;
	if (c->extra &&
	    atomic_inc_return(&rest_extra[r->node]) > FETCH_REST_EXTRA) {
		atomic_dec(&rest_extra[r->node]);
		return 0;
	}
	c->from = r->next;
	c->len = min_t(u64, r->size - r->next, r->chunk);
	ret = fetch_start(&c->f, r->node, r->inc, r->cg, c->from, c->buf,
			  c->len, 0);
	if (ret) {
		if (c->extra)
			atomic_dec(&rest_extra[r->node]);
		return ret;
	}
	r->next += c->len;
	if (c->extra)
		odsm_stat_inc(ODSM_STAT_fetch_chunks_overlapped);
	return 1;
}

/* Wait for the chunk of slot and store it, unless the fetch failed already. */
static int rest_finish(void *ctx, unsigned int slot, bool failed)
{
	struct rest *r = ctx;
	struct rest_chunk *c = &r->cs[slot];
	u64 osize;
	u32 got;
	int ret;

	/* in the order started: a reply that came first waits in its call */
	ret = fetch_finish(&c->f, &osize, &got);
	if (c->extra)
		atomic_dec(&rest_extra[r->node]);
	if (!ret && (osize != r->size || got != c->len))
		ret = -EPROTO;	/* the object changed under us */
	if (!ret && !failed)
		ret = odsm_store_rw(&odsm_heap, r->dst + c->from,
				    c->buf + ODSM_WIRE_FETCH_REPLY_SIZE,
				    c->len, true);
	return ret;
}

static const struct odsm_window_ops rest_ops = {
	.start = rest_start, .finish = rest_finish,
};

/*
 * Fetch [from, size) of the object into the local range at dst, by chunks,
 * up to FETCH_REST_DEPTH of them in flight.  On an error no chunk is
 * started any more, and every one out is waited for before returning.
 */
int odsm_fetch_rest(u32 node, u64 inc, u64 cg, u64 from, u64 size, u64 dst)
{
	struct rest r = { .node = node, .inc = inc, .cg = cg, .next = from,
			  .size = size, .dst = dst };
	unsigned int depth, i;
	int ret = 0;

	if (from >= size)
		return 0;
	if (node >= ODSM_MAX_NODES)
		return -EINVAL;
	r.chunk = min_t(u64, size - from, ODSM_WIRE_MAX_DATA);
	depth = min_t(u64, FETCH_REST_DEPTH, DIV_ROUND_UP(size - from, r.chunk));
	r.cs = kcalloc(depth, sizeof(*r.cs), GFP_KERNEL);
	if (!r.cs)
		return -ENOMEM;
	for (i = 0; i < depth; i++) {
		r.cs[i].buf = kvmalloc(ODSM_WIRE_FETCH_REPLY_SIZE + r.chunk,
				       ODSM_GFP_REQ);
		/* fewer buffers: fewer chunks out, not a failure */
		if (!r.cs[i].buf) {
			if (!i)
				ret = -ENOMEM;
			depth = i;
			break;
		}
	}
	if (!ret)
		ret = odsm_window_run(&rest_ops, &r, depth);
	for (i = 0; i < depth; i++)
		kvfree(r.cs[i].buf);
	kfree(r.cs);
	return ret;
}
