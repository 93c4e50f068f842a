/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of the protocol steps, one event per step, for trace-cmd,
 * perf and tracefs (events/odsm/).  Fields are kept to what a reader of a
 * trace needs to follow one object: the peer, the colored global address,
 * a size or offset, the result (0 or -errno) and, for the steps that wait
 * on a peer, the latency in ns.  Disabled, each costs a static branch.
 *
 * Built as rtrs does (drivers/infiniband/ulp/rtrs/rtrs-clt-trace.h): one
 * file, odsm_trace.c, defines CREATE_TRACE_POINTS before including this
 * header, and kmod/Kbuild adds -I$(src) so that <trace/define_trace.h>
 * finds it again by TRACE_INCLUDE_PATH/TRACE_INCLUDE_FILE.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM odsm

/* odsm_auth_fail's why: plain numbers, the same on every kernel */
#ifndef _ODSM_TRACE_WHY
#define _ODSM_TRACE_WHY
#define ODSM_AUTH_REFUSED	1	/* we refused its HELLO or proof */
#define ODSM_AUTH_HUNG_UP	2	/* it closed after our challenge */
#define ODSM_AUTH_EARLY_MSG	3	/* a message before authentication */
#define ODSM_AUTH_TIMEOUT	4	/* handshake begun, not done in time */
#endif

#if !defined(_ODSM_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _ODSM_TRACE_H

#include <linux/tracepoint.h>

/* ---- borrows and the node cache ---------------------------------------- */

DECLARE_EVENT_CLASS(odsm_borrow_class,
		    TP_PROTO(u32 node, u64 gaddr, u64 size, u64 lat_ns),
		    TP_ARGS(node, gaddr, size, lat_ns),
		    TP_STRUCT__entry(__field(u32, node)
				     __field(u64, gaddr)
				     __field(u64, size)
				     __field(u64, lat_ns)),
		    TP_fast_assign(__entry->node = node;
				   __entry->gaddr = gaddr;
				   __entry->size = size;
				   __entry->lat_ns = lat_ns;),
		    TP_printk("node=%u gaddr=0x%llx size=%llu lat_ns=%llu",
			      __entry->node, __entry->gaddr, __entry->size,
			      __entry->lat_ns));

/* a shared borrow served by a cached copy (lat_ns: 0, no peer asked) */
DEFINE_EVENT(odsm_borrow_class,
	     odsm_borrow_hit,
	     TP_PROTO(u32 node, u64 gaddr, u64 size, u64 lat_ns),
	     TP_ARGS(node, gaddr, size, lat_ns));

/* a shared borrow that copied the object from its home now */
DEFINE_EVENT(odsm_borrow_class,
	     odsm_borrow_miss,
	     TP_PROTO(u32 node, u64 gaddr, u64 size, u64 lat_ns),
	     TP_ARGS(node, gaddr, size, lat_ns));

/* a cached copy left the cache (budget, shrinker, drop, stale home) */
TRACE_EVENT(odsm_evict,
	    TP_PROTO(u32 node, u64 gaddr, u64 size),
	    TP_ARGS(node, gaddr, size),
	    TP_STRUCT__entry(__field(u32, node)
			     __field(u64, gaddr)
			     __field(u64, size)),
	    TP_fast_assign(__entry->node = node;
			   __entry->gaddr = gaddr;
			   __entry->size = size;),
	    TP_printk("node=%u gaddr=0x%llx size=%llu",
		      __entry->node, __entry->gaddr, __entry->size));

/* one FETCH of [offset, offset + len) of an object from its home */
TRACE_EVENT(odsm_fetch,
	    TP_PROTO(u32 node, u64 gaddr, u64 offset, u32 len, int ret,
		     u64 lat_ns),
	    TP_ARGS(node, gaddr, offset, len, ret, lat_ns),
	    TP_STRUCT__entry(__field(u32, node)
			     __field(u64, gaddr)
			     __field(u64, offset)
			     __field(u32, len)
			     __field(int, ret)
			     __field(u64, lat_ns)),
	    TP_fast_assign(__entry->node = node;
			   __entry->gaddr = gaddr;
			   __entry->offset = offset;
			   __entry->len = len;
			   __entry->ret = ret;
			   __entry->lat_ns = lat_ns;),
	    TP_printk("node=%u gaddr=0x%llx offset=%llu len=%u ret=%d lat_ns=%llu",
		      __entry->node, __entry->gaddr, __entry->offset,
		      __entry->len, __entry->ret, __entry->lat_ns));

/* a fault on a lazily filled copy that fetched its pages at offset */
TRACE_EVENT(odsm_lazy_fault,
	    TP_PROTO(u32 node, u64 gaddr, u64 offset, int ret, u64 lat_ns),
	    TP_ARGS(node, gaddr, offset, ret, lat_ns),
	    TP_STRUCT__entry(__field(u32, node)
			     __field(u64, gaddr)
			     __field(u64, offset)
			     __field(int, ret)
			     __field(u64, lat_ns)),
	    TP_fast_assign(__entry->node = node;
			   __entry->gaddr = gaddr;
			   __entry->offset = offset;
			   __entry->ret = ret;
			   __entry->lat_ns = lat_ns;),
	    TP_printk("node=%u gaddr=0x%llx offset=%llu ret=%d lat_ns=%llu",
		      __entry->node, __entry->gaddr, __entry->offset,
		      __entry->ret, __entry->lat_ns));

/* ---- mutable borrows and owner boxes ----------------------------------- */

/* a remote mutable borrow moved the object here (new_gaddr: our copy) */
TRACE_EVENT(odsm_move,
	    TP_PROTO(u32 node, u64 gaddr, u64 new_gaddr, u64 size, int ret,
		     u64 lat_ns),
	    TP_ARGS(node, gaddr, new_gaddr, size, ret, lat_ns),
	    TP_STRUCT__entry(__field(u32, node)
			     __field(u64, gaddr)
			     __field(u64, new_gaddr)
			     __field(u64, size)
			     __field(int, ret)
			     __field(u64, lat_ns)),
	    TP_fast_assign(__entry->node = node;
			   __entry->gaddr = gaddr;
			   __entry->new_gaddr = new_gaddr;
			   __entry->size = size;
			   __entry->ret = ret;
			   __entry->lat_ns = lat_ns;),
	    TP_printk("node=%u gaddr=0x%llx new_gaddr=0x%llx size=%llu ret=%d lat_ns=%llu",
		      __entry->node, __entry->gaddr, __entry->new_gaddr,
		      __entry->size, __entry->ret, __entry->lat_ns));

/* WRITE_BACK: the owner box at owner now names gaddr */
TRACE_EVENT(odsm_writeback,
	    TP_PROTO(u64 owner, u64 gaddr, int ret),
	    TP_ARGS(owner, gaddr, ret),
	    TP_STRUCT__entry(__field(u64, owner)
			     __field(u64, gaddr)
			     __field(int, ret)),
	    TP_fast_assign(__entry->owner = owner;
			   __entry->gaddr = gaddr;
			   __entry->ret = ret;),
	    TP_printk("owner=0x%llx gaddr=0x%llx ret=%d",
		      __entry->owner, __entry->gaddr, __entry->ret));

/* this node, the home, freed gaddr on node's request (a moved original) */
TRACE_EVENT(odsm_free_home,
	    TP_PROTO(u32 node, u64 gaddr, int ret),
	    TP_ARGS(node, gaddr, ret),
	    TP_STRUCT__entry(__field(u32, node)
			     __field(u64, gaddr)
			     __field(int, ret)),
	    TP_fast_assign(__entry->node = node;
			   __entry->gaddr = gaddr;
			   __entry->ret = ret;),
	    TP_printk("node=%u gaddr=0x%llx ret=%d",
		      __entry->node, __entry->gaddr, __entry->ret));

/* ---- calls --------------------------------------------------------------- */

/* a request sent to node (type: enum odsm_msg_type of the wire) */
TRACE_EVENT(odsm_rpc_send,
	    TP_PROTO(u32 node, u8 type, u64 seq, u32 len),
	    TP_ARGS(node, type, seq, len),
	    TP_STRUCT__entry(__field(u32, node)
			     __field(u8, type)
			     __field(u64, seq)
			     __field(u32, len)),
	    TP_fast_assign(__entry->node = node;
			   __entry->type = type;
			   __entry->seq = seq;
			   __entry->len = len;),
	    TP_printk("node=%u type=%u seq=%llu len=%u",
		      __entry->node, __entry->type, __entry->seq, __entry->len));

DECLARE_EVENT_CLASS(odsm_rpc_class,
		    TP_PROTO(u32 node, u8 type, u64 seq, int ret, u64 lat_ns),
		    TP_ARGS(node, type, seq, ret, lat_ns),
		    TP_STRUCT__entry(__field(u32, node)
				     __field(u8, type)
				     __field(u64, seq)
				     __field(int, ret)
				     __field(u64, lat_ns)),
		    TP_fast_assign(__entry->node = node;
				   __entry->type = type;
				   __entry->seq = seq;
				   __entry->ret = ret;
				   __entry->lat_ns = lat_ns;),
		    TP_printk("node=%u type=%u seq=%llu ret=%d lat_ns=%llu",
			      __entry->node, __entry->type, __entry->seq, __entry->ret,
			      __entry->lat_ns));

/* the caller got the answer to its request (or a failure: ret) */
DEFINE_EVENT(odsm_rpc_class,
	     odsm_rpc_done,
	     TP_PROTO(u32 node, u8 type, u64 seq, int ret, u64 lat_ns),
	     TP_ARGS(node, type, seq, ret, lat_ns));

/* the caller gave up on its request: no answer within timeout_ms */
DEFINE_EVENT(odsm_rpc_class,
	     odsm_rpc_timeout,
	     TP_PROTO(u32 node, u8 type, u64 seq, int ret, u64 lat_ns),
	     TP_ARGS(node, type, seq, ret, lat_ns));

/* this node served a peer's request (ret: the status it answered;
 * lat_ns: from its arrival to the answer, queueing included)
 */
DEFINE_EVENT(odsm_rpc_class,
	     odsm_rpc_serve,
	     TP_PROTO(u32 node, u8 type, u64 seq, int ret, u64 lat_ns),
	     TP_ARGS(node, type, seq, ret, lat_ns));

/* ---- membership ----------------------------------------------------------- */

TRACE_EVENT(odsm_peer_up,
	    TP_PROTO(u32 node, u64 incarnation),
	    TP_ARGS(node, incarnation),
	    TP_STRUCT__entry(__field(u32, node)
			     __field(u64, incarnation)),
	    TP_fast_assign(__entry->node = node;
			   __entry->incarnation = incarnation;),
	    TP_printk("node=%u incarnation=0x%llx",
		      __entry->node, __entry->incarnation));

TRACE_EVENT(odsm_peer_down,
	    TP_PROTO(u32 node),
	    TP_ARGS(node),
	    TP_STRUCT__entry(__field(u32, node)),
	    TP_fast_assign(__entry->node = node;),
	    TP_printk("node=%u", __entry->node));

/* a handshake refused or abandoned without proof of the cluster key
 * (node: the id it claimed, or U32_MAX before any HELLO; why: the
 * ODSM_AUTH_* step it failed at, see below)
 */
TRACE_EVENT(odsm_auth_fail,
	    TP_PROTO(u32 node, int why),
	    TP_ARGS(node, why),
	    TP_STRUCT__entry(__field(u32, node)
			     __field(int, why)),
	    TP_fast_assign(__entry->node = node;
			   __entry->why = why;),
	    TP_printk("node=%u why=%s", __entry->node,
		      __print_symbolic(__entry->why,
				       { ODSM_AUTH_REFUSED, "refused" },
				       { ODSM_AUTH_HUNG_UP, "hung_up" },
				       { ODSM_AUTH_EARLY_MSG, "early_msg" },
				       { ODSM_AUTH_TIMEOUT, "timeout" })));

#endif /* _ODSM_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE odsm_trace
#include <trace/define_trace.h>
