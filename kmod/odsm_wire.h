/* SPDX-License-Identifier: GPL-2.0 */
/*
 * odsm wire protocol: the messages nodes exchange, identical over every
 * transport (TCP streams, RDMA SEND/RECV).  Documentation/odsm/wire-protocol.rst
 * describes every field.
 *
 * Every message is a 32-byte header followed by len payload bytes.  All
 * fields are fixed-width little-endian.  A request carries a seq that its
 * reply echoes.  Everything received is untrusted: odsm_wire_get_hdr()
 * and the odsm_wire_get_*() payload decoders validate a message completely
 * before any field is used, and a message that fails is dropped and
 * counted.
 *
 * Pure logic: builds into the module and into host test programs.
 */
#ifndef _ODSM_WIRE_H
#define _ODSM_WIRE_H

#include "odsm_portable.h"

#define ODSM_WIRE_MAGIC		0x4d53444fU	/* "ODSM" in LE byte order */
#define ODSM_WIRE_VERSION	13
#define ODSM_WIRE_HDR_SIZE	32
/* largest payload: one chunk of a read or write, plus its fixed part */
#define ODSM_WIRE_MAX_DATA	(256U << 10)
#define ODSM_WIRE_MAX_PAYLOAD	(ODSM_WIRE_MAX_DATA + 64)

/* Wire sizes of the fixed payloads (what put_* returns). */
#define ODSM_WIRE_HELLO_SIZE		104
#define ODSM_WIRE_PING_SIZE		8
#define ODSM_WIRE_PONG_SIZE		16
#define ODSM_WIRE_RW_SIZE		16	/* READ; WRITE adds its data */
#define ODSM_WIRE_ALLOC_SIZE		16
#define ODSM_WIRE_ALLOC_REPLY_SIZE	16
#define ODSM_WIRE_FREE_SIZE		8
#define ODSM_WIRE_ATOMIC_SIZE		32
#define ODSM_WIRE_ATOMIC_REPLY_SIZE	8
#define ODSM_WIRE_FETCH_SIZE		24
#define ODSM_WIRE_FETCH_REPLY_SIZE	16	/* then its data */
/* FETCH_MANY: count and len, then count colored addresses */
#define ODSM_WIRE_FETCH_MANY_HDR_SIZE	8
#define ODSM_WIRE_FETCH_MANY_MAX	64U	/* objects in one */
#define ODSM_WIRE_FETCH_MANY_LEN	4096U	/* most bytes of each */
/* its reply: an item per object, then the data, each padded to 8 */
#define ODSM_WIRE_FETCH_ITEM_SIZE	24
#define ODSM_WIRE_MAP_SIZE		8
#define ODSM_WIRE_MAP_REPLY_SIZE	32
/* what one MAP registers: one 64 KiB block of the partition */
#define ODSM_WIRE_MAP_LEN		(64U << 10)
/* KEYS: a count, then that many MAP_REPLY-shaped entries */
#define ODSM_WIRE_KEYS_HDR_SIZE		8
#define ODSM_WIRE_KEYS_MAX		4096U
/* DELEG: the fixed part, then a request batch of 16 .. 65536 bytes */
#define ODSM_WIRE_DELEG_SIZE		16
#define ODSM_WIRE_DSLOT_MIN		16	/* a batch's header */
#define ODSM_WIRE_DSLOT_MAX		65536	/* ODSM_DSLOT_SIZE_MAX */
#define ODSM_WIRE_WAKE_SIZE		16
#define ODSM_WIRE_WAKE_REPLY_SIZE	8
#define ODSM_WIRE_WAKE_NR_MAX		0x7fffffffU	/* INT_MAX */
#define ODSM_WIRE_AQP_SIZE		16	/* AQP and its reply */
#define ODSM_WIRE_KEYS_ASK_SIZE		16
/* KEYS_ASK: blocks asked for at once (16 MiB) */
#define ODSM_WIRE_KEYS_ASK_MAX		256U

/* A reply's status: 0 or STATUS_MIN..-1; a negative one has no payload. */
#define ODSM_WIRE_STATUS_MIN	(-4095)

enum odsm_msg_type {
	ODSM_MSG_HELLO = 1,	/* first message on a connection, both ways */
	ODSM_MSG_PING,		/* heartbeat request */
	ODSM_MSG_PONG,		/* heartbeat reply */
	ODSM_MSG_READ,		/* read bytes of the receiver's partition */
	ODSM_MSG_READ_REPLY,
	ODSM_MSG_WRITE,		/* write bytes of the receiver's partition */
	ODSM_MSG_WRITE_REPLY,
	ODSM_MSG_ALLOC,		/* allocate in the receiver's partition */
	ODSM_MSG_ALLOC_REPLY,
	ODSM_MSG_FREE,		/* free an object of the receiver's partition */
	ODSM_MSG_FREE_REPLY,
	ODSM_MSG_ATOMIC,	/* 8-byte atomic on the receiver's partition */
	ODSM_MSG_ATOMIC_REPLY,
	ODSM_MSG_FETCH,		/* an object's size and bytes, for a borrow */
	ODSM_MSG_FETCH_REPLY,
	ODSM_MSG_MAP,		/* register a block for one-sided RDMA */
	ODSM_MSG_MAP_REPLY,
	ODSM_MSG_KEYS,		/* registrations made at connect, unasked */
	ODSM_MSG_DELEG,		/* a delegation batch for a trustee runtime */
	ODSM_MSG_DELEG_REPLY,	/* ... and its response batch */
	ODSM_MSG_FETCH_MANY,	/* several objects' bytes, for prefetching */
	ODSM_MSG_FETCH_MANY_REPLY,
	ODSM_MSG_WAKE,		/* wake the waiters of a word of the receiver's */
	ODSM_MSG_WAKE_REPLY,
	ODSM_MSG_AQP,		/* connect a QP pair for one-sided atomics */
	ODSM_MSG_AQP_REPLY,
	ODSM_MSG_KEYS_ASK,	/* register these blocks for me: KEYS back */
	ODSM_MSG_TYPE_MAX,
};

#define ODSM_WIRE_F_REPLY	0x0001	/* set on every *_REPLY and PONG */
#define ODSM_WIRE_F_ALL		ODSM_WIRE_F_REPLY	/* every known flag */

/* Host-order view of a header; the wire form is packed little-endian. */
struct odsm_wire_hdr {
	u32 magic;
	u8 version;
	u8 type;
	u16 flags;
	u32 src_node;		/* sender's node id */
	u32 dst_node;		/* receiver's node id */
	u64 seq;		/* request id, echoed by the reply */
	u32 len;		/* payload bytes after the header */
	s32 status;		/* replies: 0 or a negative errno */
};

/*
 * The handshake: three HELLOs on every new connection, told apart by step.
 * 1: dialer -> acceptor, the dialer's nonce, no proof (all zero);
 * 2: acceptor -> dialer, the acceptor's nonce and its proof;
 * 3: dialer -> acceptor, the dialer's nonce again and its proof.
 * A proof is HMAC-SHA256(cluster key, odsm_wire_put_auth() of the step).
 */
enum odsm_hello_step {
	ODSM_HELLO_OFFER = 1,
	ODSM_HELLO_CHALLENGE = 2,
	ODSM_HELLO_PROOF = 3,
};

#define ODSM_WIRE_NONCE_SIZE	32
#define ODSM_WIRE_PROOF_SIZE	32	/* HMAC-SHA256 */
#define ODSM_WIRE_AUTH_SIZE	104	/* what a proof is computed over */

/* Payloads: host-order views; the wire sizes are ODSM_WIRE_*_SIZE. */
struct odsm_wire_hello {
	u32 node_id;
	u32 nr_nodes;
	u64 heap_base;
	u64 part_size;
	u64 incarnation;	/* changes when the sender's module restarts */
	u32 step;		/* enum odsm_hello_step */
	u8 nonce[ODSM_WIRE_NONCE_SIZE];	/* the sender's, fresh per connection */
	u8 proof[ODSM_WIRE_PROOF_SIZE];	/* steps 2 and 3; zero in step 1 */
};

/*
 * What a proof covers: the step, who proves to whom, both incarnations
 * and both nonces.  The dialer's values come first whoever proves.
 */
struct odsm_wire_auth {
	u32 step;		/* ODSM_HELLO_CHALLENGE or ODSM_HELLO_PROOF */
	u32 prover;		/* node id of the HELLO's sender */
	u32 verifier;		/* node id of its receiver */
	u64 dialer_inc, acceptor_inc;
	const u8 *dialer_nonce, *acceptor_nonce;	/* NONCE_SIZE each */
};

struct odsm_wire_ping {
	u64 send_ns;		/* the sender's clock, echoed by the PONG */
};

struct odsm_wire_pong {
	u64 free_bytes;		/* room left in the sender's partition */
	u64 echo_ns;		/* the PING's send time, for the RTT */
};

/*
 * Flags of a READ.  CHECK: move nothing, only say whether the whole range
 * lies in blocks that hold objects (a multi-piece transfer asks first);
 * its len may then be anything from 1 to U32_MAX.
 */
#define ODSM_WIRE_RW_CHECK	0x0001
/*
 * READ or WRITE of the 16-byte owner box at gaddr (16-aligned): the home
 * refuses it (-EBUSY) when the object holding the box has been copied
 * into a peer's cache, since a box changed behind that copy's back would
 * be served stale (the ownership rule in design.rst).
 */
#define ODSM_WIRE_RW_OWNER	0x0002
/* with RW_OWNER on a WRITE: only into an empty box (g 0), else -EEXIST */
#define ODSM_WIRE_RW_IF_EMPTY	0x0004
#define ODSM_WIRE_BOX_SIZE	16

struct odsm_wire_rw {		/* READ, WRITE (then len bytes of data) */
	u64 gaddr;		/* uncolored global address */
	u32 len;		/* bytes to read or written after this */
	u32 flags;		/* one ODSM_WIRE_RW_* or 0 */
};

/* Flags of an ALLOC: the sender resolves ON_NODE and ANYWHERE itself. */
#define ODSM_WIRE_ALLOC_ZERO	0x0001	/* zero the object's bytes */
#define ODSM_WIRE_ALLOC_FLAGS	ODSM_WIRE_ALLOC_ZERO

struct odsm_wire_alloc {
	u64 size;		/* not 0 */
	u32 align;		/* 0 or a power of two <= 4096 */
	u32 flags;		/* ODSM_WIRE_ALLOC_* */
};

struct odsm_wire_alloc_reply {
	u64 gaddr;		/* colored */
	u64 usable;
};

struct odsm_wire_free {
	u64 gaddr;		/* colored */
};

enum odsm_wire_atomic_op {
	ODSM_WIRE_FETCH_ADD = 1,
	ODSM_WIRE_CMP_SWAP = 2,
};

/*
 * ATOMIC flags.  F_NIC: the word is in its home's NIC atomic domain (see
 * uapi ODSM_ATOMIC_F_NIC): a home whose RDMA device runs atomics runs this
 * one through it too, never with a CPU atomic.
 */
#define ODSM_WIRE_ATOMIC_F_NIC	0x1
#define ODSM_WIRE_ATOMIC_F_ALL	ODSM_WIRE_ATOMIC_F_NIC

struct odsm_wire_atomic {
	u64 gaddr;		/* 8-byte aligned */
	u32 op;
	u32 flags;		/* ODSM_WIRE_ATOMIC_F_* */
	u64 operand;		/* FETCH_ADD: addend; CMP_SWAP: new value */
	u64 compare;		/* CMP_SWAP: expected value */
};

struct odsm_wire_atomic_reply {
	u64 old;		/* the word's value before the operation */
};

/*
 * FETCH: bytes [offset, offset + len) of the live object that starts at
 * gaddr, clipped to its end, and its size: what a borrow of a remote object
 * needs, in one round trip.  gaddr is colored: the home refuses, with
 * -ESTALE, a color older than the object's allocation color and an object
 * freed or moved since (a stale pointer); a successful FETCH marks the
 * object copied (odsm_palloc_set_copied()).  whole: an object with at most
 * that many bytes from offset on comes whole even past len, so that a
 * first FETCH can ask for a small start of a big object and all of a small
 * one (odsm_wire_fetch_span()).
 */
struct odsm_wire_fetch {
	u64 gaddr;		/* colored start of the object */
	u64 offset;		/* first byte wanted, < 2^48 */
	u32 len;		/* most bytes wanted, 0..ODSM_WIRE_MAX_DATA */
	u32 whole;		/* 0..ODSM_WIRE_MAX_DATA, see above */
};

/* The bytes a FETCH answers for an object of size bytes (offset <= size). */
static inline u32 odsm_wire_fetch_span(u64 size, u64 offset, u32 len,
				       u32 whole)
{
	u64 left = size - offset;

	if (left <= whole)
		return (u32)left;
	return left < len ? (u32)left : len;
}

struct odsm_wire_fetch_reply {
	u64 size;		/* the object's bytes */
	u16 color;		/* its allocation color */
	u16 reserved;
	u32 len;		/* bytes of data that follow */
};

/*
 * FETCH_MANY: the first len bytes of each of count live objects, by
 * colored start address, in one round trip: what a batch of borrows of
 * small remote objects needs (odsm_cache_prefetch_start()).  The home answers
 * each as it answers a FETCH at offset 0 (its refusals, -ESTALE..., in
 * that item's status, the object marked copied when it succeeds).  The
 * reply is count items, then the data of the items whose status is 0,
 * each item's len bytes padded to a multiple of 8, in order.  Bounds:
 * count 1..FETCH_MANY_MAX, len 1..FETCH_MANY_LEN, and the largest reply,
 * count * (ITEM_SIZE + len), within ODSM_WIRE_MAX_DATA.
 */
struct odsm_wire_fetch_many {
	u32 count;
	u32 len;		/* most bytes wanted of each */
};

struct odsm_wire_fetch_item {
	u64 size;		/* the object's bytes; 0 unless status 0 */
	u16 color;		/* its allocation color */
	u16 reserved;
	u32 len;		/* bytes of data it has: min(len, size) */
	s32 status;		/* 0, or the FETCH's refusal */
	u32 reserved2;
};

/*
 * WAKE: wake up to nr (0: every) waiters of ODSM_IOC_WAIT on the word at
 * gaddr of the receiver's partition, as its own ODSM_IOC_WAKE would: what
 * a peer that stored into the word without the home's CPU (a one-sided
 * RDMA WRITE or atomic) sends after the store.  The reply says how many
 * woke.  gaddr is 4-byte aligned and uncolored, nr at most WAKE_NR_MAX.
 */
struct odsm_wire_wake {
	u64 gaddr;
	u32 nr;
	u32 flags;		/* 0 */
};

struct odsm_wire_wake_reply {
	u32 woken;
	u32 reserved;		/* 0 */
};

/*
 * MAP (RDMA transport only): register the 64 KiB block at gaddr of the
 * receiver's partition for one-sided RDMA READ/WRITE by the sender, on the
 * connection the request came on.  The reply names the registration: the
 * sender then reads/writes [gaddr, gaddr + len) at [iova, iova + len) with
 * rkey.  With MAP_F_ATOMIC, the registration also takes RDMA atomics, and
 * the home runs every flagged (F_NIC) atomic of its own through its RDMA
 * device: the sender may then run F_NIC atomics one-sided.
 */
#define ODSM_WIRE_MAP_F_ATOMIC	0x1
/*
 * With MAP_F_PUB, the registration goes on for ODSM_WIRE_MAP_PUB_LEN bytes
 * past the block: the home's published slot words of it (odsm_pubword.h),
 * at [iova + len, iova + len + ODSM_WIRE_MAP_PUB_LEN).
 */
#define ODSM_WIRE_MAP_F_PUB	0x2
/*
 * With MAP_F_INORDER, the home's responder reads memory in the order of
 * the READs it is sent (Soft-RoCE's software responder does; an HCA may
 * pipeline the DMA reads of several): a chain of READs that brackets
 * bytes with their published word may go unfenced (odsm_rdma_read_pub()).
 */
#define ODSM_WIRE_MAP_F_INORDER	0x4
#define ODSM_WIRE_MAP_F_ALL	(ODSM_WIRE_MAP_F_ATOMIC | ODSM_WIRE_MAP_F_PUB | \
				 ODSM_WIRE_MAP_F_INORDER)
#define ODSM_WIRE_MAP_PUB_LEN	4096U

struct odsm_wire_map {
	u64 gaddr;		/* ODSM_WIRE_MAP_LEN aligned, < 2^48 */
};

struct odsm_wire_map_reply {
	u64 gaddr;		/* the block, as asked */
	u64 iova;		/* its first byte in the registration */
	u32 len;		/* ODSM_WIRE_MAP_LEN */
	u32 rkey;
	u32 flags;		/* ODSM_WIRE_MAP_F_* */
	u32 reserved;
};

/*
 * AQP (RDMA transport only): the sender's end of a QP pair that carries
 * nothing but its one-sided atomics on the receiver's partition (qpn, its
 * first PSN, the atomics it keeps in flight); the reply is the
 * receiver's end, connected to it (qpn, first PSN, the atomics in flight
 * it takes).  One per connection: asked again, the same answer.
 */
#define ODSM_WIRE_AQP_24BIT	0xffffffU	/* QPNs and PSNs */
#define ODSM_WIRE_AQP_DEPTH_MAX	255U

struct odsm_wire_aqp {
	u32 qpn;		/* 1 .. 2^24 - 1 */
	u32 psn;		/* < 2^24 */
	u32 depth;		/* 1 .. ODSM_WIRE_AQP_DEPTH_MAX */
	u32 reserved;
};

/*
 * KEYS (RDMA transport only; no reply): the sender registered these blocks
 * of its own partition for the receiver when the connection came up, as
 * if the receiver had sent a MAP for each: nr entries, each laid out like
 * a MAP_REPLY, follow the 8-byte head.
 */
struct odsm_wire_keys {
	u32 nr;			/* 1 .. ODSM_WIRE_KEYS_MAX */
	u32 reserved;
};

/*
 * KEYS_ASK (RDMA transport only; no reply): register for the sender the
 * blocks [gaddr, gaddr + nr blocks) of the receiver's partition that hold
 * objects, and send their keys in a KEYS message: the MAPs of a long
 * object's blocks in one message, asked without waiting.
 */
struct odsm_wire_keys_ask {
	u64 gaddr;		/* ODSM_WIRE_MAP_LEN aligned, < 2^48 */
	u32 nr;			/* 1 .. ODSM_WIRE_KEYS_ASK_MAX */
	u32 reserved;
};

/*
 * DELEG (a request; reply DELEG_REPLY, whose payload is the response batch,
 * 16 .. 65536 bytes): a client's batch for the trustee runtime named by
 * endpoint, on the receiver's partition.  Documentation/odsm/delegation.rst.
 * wait_ms is the sender's budget for the runtime (3/4 of its cluster
 * timeout): the receiver waits no longer than that, nor than its own.
 */
#define ODSM_WIRE_DELEG_WAIT_MAX	45000	/* 3/4 of the longest timeout */

struct odsm_wire_deleg {
	u64 endpoint;		/* the runtime's global address */
	u32 slot_size;		/* of its slots: bounds the batch and answer */
	u32 wait_ms;		/* 1 .. ODSM_WIRE_DELEG_WAIT_MAX */
};

/* Encode a header into 32 wire bytes. */
void odsm_wire_put_hdr(u8 *buf, const struct odsm_wire_hdr *h);

/*
 * Decode and validate 32 wire bytes against the receiving node: magic,
 * version, known type, REPLY flag consistent with the type, no unknown
 * flags, len within the type's bounds, src_node < nr_nodes and not
 * self_node, dst_node == self_node, status 0 on requests and 0 or
 * -4095..-1 on replies, and no payload on a reply with a negative status.
 * Returns 0 or a negative errno (-EPROTO for a malformed header, -EMSGSIZE
 * for a bad length).  *h is filled in even on failure, so that a caller
 * can say what it got (h->magic == ODSM_WIRE_MAGIC with another version is
 * a peer speaking another version of the protocol).
 */
/*
 * A reply's status as the errno its caller gets: the status itself, but
 * -EPROTO for the kernel's own errnos (512 and up: -ERESTARTSYS,
 * -EIOCBQUEUED...).  Those tell the system-call layer and io_uring what to
 * do next -- restart the call, wait for a completion -- so one that a peer
 * sends must never reach them: the ioctl would run again, a batch with it.
 */
int odsm_wire_errno(s32 status);

int odsm_wire_get_hdr(const u8 *buf, struct odsm_wire_hdr *h, u32 self_node,
		      u32 nr_nodes);
/*
 * Whether the header at buf (ODSM_WIRE_HDR_SIZE bytes) says it is a reply
 * (ODSM_WIRE_F_REPLY), before it is validated: where a receiver delivers
 * it.  odsm_wire_get_hdr() still decides whether it is well formed.
 */
bool odsm_wire_hdr_is_reply(const u8 *buf);

/*
 * Payload codecs.  put_* write the fixed wire form and return its size;
 * get_* decode and validate it against the header's len (exact size, or
 * fixed part plus the data it announces) and reserved fields, returning 0,
 * -EMSGSIZE for a bad length or -EPROTO for a bad field.  They read no
 * byte of buf past len (buf may be NULL when len is 0).
 */
u32 odsm_wire_put_hello(u8 *buf, const struct odsm_wire_hello *p);
/* node_id < nr_nodes, a known step, reserved 0, no proof in step 1 */
int odsm_wire_get_hello(const u8 *buf, u32 len, struct odsm_wire_hello *p);
/* The ODSM_WIRE_AUTH_SIZE bytes a proof is the HMAC of; returns the size. */
u32 odsm_wire_put_auth(u8 *buf, const struct odsm_wire_auth *a);
u32 odsm_wire_put_ping(u8 *buf, const struct odsm_wire_ping *p);
int odsm_wire_get_ping(const u8 *buf, u32 len, struct odsm_wire_ping *p);
u32 odsm_wire_put_pong(u8 *buf, const struct odsm_wire_pong *p);
int odsm_wire_get_pong(const u8 *buf, u32 len, struct odsm_wire_pong *p);
u32 odsm_wire_put_rw(u8 *buf, const struct odsm_wire_rw *p);
/*
 * READ: len == fixed size; WRITE: len == fixed size + p->len.  p->len is
 * 1..ODSM_WIRE_MAX_DATA (1..U32_MAX for a READ with RW_CHECK), gaddr is
 * uncolored and gaddr + p->len does not pass the 48-bit address space;
 * flags are 0 or one of RW_CHECK (a READ only), RW_OWNER (len 16 at a
 * 16-aligned gaddr) and RW_OWNER | RW_IF_EMPTY (a WRITE only).
 */
int odsm_wire_get_rw(const u8 *buf, u32 len, bool with_data,
		     struct odsm_wire_rw *p);
u32 odsm_wire_put_alloc(u8 *buf, const struct odsm_wire_alloc *p);
/* size not 0, align 0 or a power of two <= 4096, no unknown flags */
int odsm_wire_get_alloc(const u8 *buf, u32 len, struct odsm_wire_alloc *p);
u32 odsm_wire_put_alloc_reply(u8 *buf, const struct odsm_wire_alloc_reply *p);
int odsm_wire_get_alloc_reply(const u8 *buf, u32 len,
			      struct odsm_wire_alloc_reply *p);
u32 odsm_wire_put_free(u8 *buf, const struct odsm_wire_free *p);
int odsm_wire_get_free(const u8 *buf, u32 len, struct odsm_wire_free *p);
u32 odsm_wire_put_atomic(u8 *buf, const struct odsm_wire_atomic *p);
/* a known op, reserved 0, gaddr 8-byte aligned */
int odsm_wire_get_atomic(const u8 *buf, u32 len, struct odsm_wire_atomic *p);
u32 odsm_wire_put_atomic_reply(u8 *buf, const struct odsm_wire_atomic_reply *p);
int odsm_wire_get_atomic_reply(const u8 *buf, u32 len,
			       struct odsm_wire_atomic_reply *p);

u32 odsm_wire_put_fetch(u8 *buf, const struct odsm_wire_fetch *p);
/* len <= ODSM_WIRE_MAX_DATA, offset < 2^48, reserved 0 */
int odsm_wire_get_fetch(const u8 *buf, u32 len, struct odsm_wire_fetch *p);
u32 odsm_wire_put_fetch_reply(u8 *buf, const struct odsm_wire_fetch_reply *p);
/*
 * len == fixed size + p->len, p->len <= ODSM_WIRE_MAX_DATA and <= p->size,
 * reserved 0.  The data follows at buf + ODSM_WIRE_FETCH_REPLY_SIZE.
 */
int odsm_wire_get_fetch_reply(const u8 *buf, u32 len,
			      struct odsm_wire_fetch_reply *p);
/* The head, then the addresses: 8 + 8 * count bytes written. */
u32 odsm_wire_put_fetch_many(u8 *buf, const struct odsm_wire_fetch_many *p,
			     const u64 *gaddr);
/*
 * len == 8 + 8 * count, count and len within the bounds above; address i
 * is odsm_wire_fetch_many_addr(buf, i).
 */
int odsm_wire_get_fetch_many(const u8 *buf, u32 len,
			     struct odsm_wire_fetch_many *p);
/* A FETCH_MANY_REPLY item's data of len bytes, padded: its room. */
static inline u32 odsm_wire_fetch_item_padded(u32 len)
{
	return (len + 7) & ~7U;		/* len <= ODSM_WIRE_FETCH_MANY_LEN */
}

/*
 * The most bytes a reply to count objects of at most len bytes each takes
 * (len <= ODSM_WIRE_FETCH_MANY_LEN): the items, and each one's data padded
 * (odsm_wire_fetch_item_padded()).
 */
u64 odsm_wire_fetch_many_room(u32 count, u32 len);
u64 odsm_wire_fetch_many_addr(const u8 *buf, u32 i);
/* Item i of a reply to count objects (at buf + i * ITEM_SIZE). */
void odsm_wire_put_fetch_item(u8 *buf, const struct odsm_wire_fetch_item *p);
/*
 * A whole reply of len bytes to a FETCH_MANY of count objects of at most
 * want bytes each: every item (status 0 or STATUS_MIN..-1; a failed one
 * with size, color and len 0; len == min(want, size) otherwise; reserved
 * 0) and len exactly the items and their padded data.  0, -EPROTO or
 * -EMSGSIZE.  Then odsm_wire_get_fetch_item() reads item i, whose data
 * sits at the offset *data_off walks (start it at count * ITEM_SIZE).
 */
int odsm_wire_check_fetch_many_reply(const u8 *buf, u32 len, u32 count,
				     u32 want);
void odsm_wire_get_fetch_item(const u8 *buf, u32 i,
			      struct odsm_wire_fetch_item *p, u32 *data_off);
u32 odsm_wire_put_wake(u8 *buf, const struct odsm_wire_wake *p);
/* gaddr 4-byte aligned and < 2^48, nr <= WAKE_NR_MAX, flags 0 */
int odsm_wire_get_wake(const u8 *buf, u32 len, struct odsm_wire_wake *p);
u32 odsm_wire_put_wake_reply(u8 *buf, const struct odsm_wire_wake_reply *p);
/* woken <= WAKE_NR_MAX, reserved 0 */
int odsm_wire_get_wake_reply(const u8 *buf, u32 len,
			     struct odsm_wire_wake_reply *p);
u32 odsm_wire_put_map(u8 *buf, const struct odsm_wire_map *p);
/* gaddr ODSM_WIRE_MAP_LEN aligned and < 2^48 */
int odsm_wire_get_map(const u8 *buf, u32 len, struct odsm_wire_map *p);
u32 odsm_wire_put_map_reply(u8 *buf, const struct odsm_wire_map_reply *p);
/*
 * gaddr as for MAP, len == ODSM_WIRE_MAP_LEN, iova 4 KiB aligned, its last byte
 * addressable (no wrap)
 */
int odsm_wire_get_map_reply(const u8 *buf, u32 len,
			    struct odsm_wire_map_reply *p);
u32 odsm_wire_put_aqp(u8 *buf, const struct odsm_wire_aqp *p);
/* qpn 1 .. 2^24 - 1, psn < 2^24, depth 1 .. 255, reserved 0 */
int odsm_wire_get_aqp(const u8 *buf, u32 len, struct odsm_wire_aqp *p);
/* The head; the entries follow at ODSM_WIRE_KEYS_HDR_SIZE + i * 32. */
u32 odsm_wire_put_keys(u8 *buf, const struct odsm_wire_keys *p);
/* len == 8 + nr * ODSM_WIRE_MAP_REPLY_SIZE, nr 1 .. KEYS_MAX, reserved 0 */
int odsm_wire_get_keys(const u8 *buf, u32 len, struct odsm_wire_keys *p);
u32 odsm_wire_put_keys_ask(u8 *buf, const struct odsm_wire_keys_ask *p);
/* gaddr as for MAP, nr 1 .. KEYS_ASK_MAX, reserved 0 */
int odsm_wire_get_keys_ask(const u8 *buf, u32 len,
			   struct odsm_wire_keys_ask *p);
/*
 * DELEG's fixed part; the request batch follows it (the rest of the
 * payload: its header and records as they sit in a request slot).
 */
u32 odsm_wire_put_deleg(u8 *buf, const struct odsm_wire_deleg *p);
/*
 * len == 16 + the batch, the batch 16 .. slot_size bytes, slot_size a
 * power of 2 in 256 .. 65536, wait_ms 1 .. ODSM_WIRE_DELEG_WAIT_MAX.  The
 * batch itself is checked by odsm_dslot_parse_req() (odsm_deleg.c), not
 * here.
 */
int odsm_wire_get_deleg(const u8 *buf, u32 len, struct odsm_wire_deleg *p);

#endif /* _ODSM_WIRE_H */
