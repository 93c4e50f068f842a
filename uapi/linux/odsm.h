/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * odsm - ownership-guided distributed shared memory: user-space ABI.
 *
 * One global heap, mapped at the same virtual address in every process of an
 * application on every node.  The heap is cut into equal partitions, one per
 * node: node = (va - heap_base) / part_size.  A global address is a virtual
 * address inside the heap; a *colored* global address carries a 16-bit color
 * (version) in bits 63..48, which is never part of the address.
 *
 * Every structure is fixed-size, naturally aligned and carries reserved
 * fields that must be zero on input (non-zero gets -EINVAL), so fields can be
 * added without a new ioctl number.
 *
 * A file opened without write access reads (INFO, OBJ_INFO, READ, BORROW,
 * RETURN, READ_OWNER, PREFETCH, STATUS, WAIT) and changes nothing: SET_CONFIG,
 * ALLOC, FREE, MOVE, WRITE, ATOMIC, BORROW_MUT, WRITE_BACK, DROP_COPIES,
 * JOIN, LEAVE, DELEG_BIND, DELEG_CALL, DELEG_SERVE and WAKE are -EBADF on it
 * (and its mmap of the heap is refused).
 */
#ifndef _UAPI_LINUX_ODSM_H
#define _UAPI_LINUX_ODSM_H

#include <linux/types.h>
#include <linux/ioctl.h>
#include <linux/const.h>

#define ODSM_ABI_VERSION	1
#define ODSM_DEVICE_PATH	"/dev/odsm"

/* Colored global addresses: color in the top 16 bits. */
#define ODSM_COLOR_SHIFT	48
#define ODSM_COLOR_MAX		0xffffULL
#define ODSM_ADDR_MASK		((1ULL << ODSM_COLOR_SHIFT) - 1)

/* Limits of the configuration (see Documentation/odsm/admin-guide.rst). */
#define ODSM_MAX_NODES		256
#define ODSM_PART_ALIGN		(2ULL << 20)	/* base and partition size */
#define ODSM_MAX_PART_SIZE	(64ULL << 30)
#define ODSM_MIN_ALIGN		16		/* every object is 16-aligned */

/* ODSM_IOC_INFO: what this node's module is configured as. */
struct odsm_info {
	__u32 abi_version;	/* ODSM_ABI_VERSION */
	__u32 node_id;		/* this node */
	__u32 nr_nodes;		/* partitions in the heap */
	__u32 page_size;
	__u64 heap_base;	/* mmap address of the heap */
	__u64 heap_size;	/* nr_nodes * part_size: the mmap length */
	__u64 part_size;	/* bytes per node partition */
	__u64 max_alloc;	/* largest object one allocation can make */
	__u64 reserved[4];
};

/*
 * ODSM_IOC_SET_CONFIG (CAP_SYS_ADMIN): change the node id, node count, heap
 * base and partition size.  Refused with -EBUSY while any process has the heap
 * mapped or any object is allocated; -EINVAL for an inconsistent set.
 */
struct odsm_config {
	__u32 node_id;
	__u32 nr_nodes;
	__u64 heap_base;
	__u64 part_size;
	__u64 reserved[2];
};

/* Flags of struct odsm_alloc. */
#define ODSM_ALLOC_ZERO		_BITUL(0)	/* zero the object's bytes */
#define ODSM_ALLOC_ON_NODE	_BITUL(1)	/* in node's partition */
#define ODSM_ALLOC_ANYWHERE	_BITUL(2)	/* local, else the node with
						 * the most room
						 */
#define ODSM_ALLOC_FLAGS	(ODSM_ALLOC_ZERO | ODSM_ALLOC_ON_NODE | \
				 ODSM_ALLOC_ANYWHERE)

/*
 * ODSM_IOC_ALLOC: allocate an object: in this node's partition; with
 * ODSM_ALLOC_ON_NODE in node's; with ODSM_ALLOC_ANYWHERE here if there is
 * room, else on the up peer that reported the most free memory.
 * in:  size (1..max_alloc), align (0 or a power of two <= 4096; objects are
 *      always ODSM_MIN_ALIGN-aligned), flags, node.
 * out: gaddr, the colored global address of the new object, and usable, the
 *      bytes the object really spans (its size class).
 * A reused address never carries a color an earlier object there had.
 * Errors: -EINVAL (bad size, align, flags, node or reserved), -ENOMEM
 * (full), -EHOSTDOWN / -ETIMEDOUT (the node is down or did not answer).
 */
struct odsm_alloc {
	__u64 size;
	__u32 align;
	__u32 flags;
	__u64 gaddr;
	__u64 usable;
	__u32 node;		/* with ODSM_ALLOC_ON_NODE; else 0 */
	__u32 reserved0;
	__u64 reserved;
};

/*
 * ODSM_IOC_FREE: free the object at the colored global address gaddr.
 * The color must be the object's current color: the free records it so
 * the next object at this address starts above it.  (Any color >= the
 * allocation color is accepted, as the kernel cannot know the latest one;
 * passing an older color than the latest weakens the no-reuse guarantee.)
 * -EINVAL for an address of another partition or one where no object
 * starts; -ESTALE for an object that is gone: freed or moved already (a
 * double free), or a color older than the live object's there (a stale
 * pointer to an earlier object at that address).
 */
struct odsm_free {
	__u64 gaddr;
	__u64 reserved[3];
};

/*
 * ODSM_IOC_MOVE: move the local object at gaddr to a fresh address of this
 * partition (same size): allocate, copy, free the old one.  Used when a
 * color would overflow.  out: new_gaddr (colored).  Errors as ALLOC + FREE.
 */
struct odsm_move {
	__u64 gaddr;
	__u64 new_gaddr;
	__u64 reserved[2];
};

/*
 * ODSM_IOC_OBJ_INFO: what the allocator knows of the live object at gaddr
 * (this node's partition; the color is not compared: alloc_color says
 * whether gaddr's color is one the object may carry, >= alloc_color).
 * out: size (bytes requested for a multi-block object, the slot size for
 * one of 32 KiB or less), usable bytes, the color it was allocated with.
 * -ESTALE when no object starts at gaddr now but one did at gaddr's color
 * (freed or moved), -EINVAL when none did.
 */
struct odsm_obj_info {
	__u64 gaddr;
	__u64 size;
	__u64 usable;
	__u32 alloc_color;
	__u32 reserved0;
	__u64 reserved[2];
};

/* ---- cluster ---------------------------------------------------------- */

#define ODSM_TRANSPORT_TCP	1
#define ODSM_TRANSPORT_RDMA	2

/* One node of the cluster: where its module listens. */
struct odsm_node_addr {
	__u32 ipv4;		/* network byte order */
	__u16 port;		/* host byte order */
	__u16 reserved0;
	__u32 reserved[2];
};

/*
 * ODSM_IOC_JOIN (CAP_SYS_ADMIN): bring this node into a cluster.  nodes
 * points at nr_nodes addresses indexed by node id, this node's own among
 * them (it listens there); nr_nodes must equal the configured node count.
 * Connections form a full mesh (each node dials the nodes with lower ids and
 * accepts the others), re-dialled while a peer is down, so a node that
 * starts late or restarts joins.  A peer silent for timeout_ms is down:
 * every operation that needs it fails with -EHOSTDOWN, one in flight with
 * -EHOSTDOWN or -ETIMEDOUT, within timeout_ms.
 * key points at key_len (ODSM_KEY_MIN..ODSM_KEY_MAX) bytes of the cluster
 * secret, the same on every node: a connection is used only after both
 * ends proved they hold it (an HMAC-SHA256 challenge-response in the
 * handshake).  The module keeps its own copy until the node leaves.
 * heartbeat_ms / timeout_ms 0 take the defaults (200 / 2000); otherwise
 * heartbeat_ms is at most ODSM_HEARTBEAT_MS_MAX, timeout_ms at most
 * ODSM_TIMEOUT_MS_MAX and longer than the heartbeat (-EINVAL).  A joined
 * node refuses ODSM_IOC_SET_CONFIG (-EBUSY): its geometry is the
 * cluster's until it leaves.
 * -EBUSY if already joined, -ENOKEY without a key, -EINVAL for a bad table
 * or key length, -EPROTONOSUPPORT for a transport this build does not have.
 */
#define ODSM_KEY_MIN	16
#define ODSM_KEY_MAX	64
#define ODSM_HEARTBEAT_MS_MAX	10000
#define ODSM_TIMEOUT_MS_MAX	60000

struct odsm_join {
	__u32 transport;
	__u32 nr_nodes;
	__u64 nodes;		/* user pointer: struct odsm_node_addr[] */
	__u32 heartbeat_ms;
	__u32 timeout_ms;
	__u64 key;		/* user pointer: the cluster secret */
	__u32 key_len;
	__u32 reserved;
};

enum odsm_peer_state {
	ODSM_PEER_SELF = 0,
	ODSM_PEER_DOWN,		/* no connection, or timed out */
	ODSM_PEER_CONNECTING,	/* connection up, HELLO not yet seen */
	ODSM_PEER_UP,
};

struct odsm_peer_info {
	__u32 node_id;
	__u32 state;		/* enum odsm_peer_state */
	__u32 transport;
	__u32 ipv4;
	__u64 rtt_ns;		/* last heartbeat round trip */
	__u64 msgs_tx, msgs_rx;
	__u64 bytes_tx, bytes_rx;
	__u64 free_bytes;	/* room the peer last reported */
	__u32 keys;		/* RDMA: the peer's blocks this node may
				 * access one-sided
				 */
	__u32 regs;		/* RDMA: blocks it registered for the peer */
	__u64 incarnation;	/* the node's joins (random at each) as
				 * this node saw them: bits 0..31 of the
				 * last seen, in 32..63 of the one seen
				 * before it; 0: none (kept across this
				 * node's own leaves; its own entry too)
				 */
};

/*
 * ODSM_IOC_STATUS: the cluster as this node sees it.  in: nr entries at
 * peers (user pointer); out: nr = the node count, transport, and one entry
 * per node (up to the room given).  nr 0 only asks for the count.
 */
struct odsm_status {
	__u32 nr;
	__u32 transport;	/* 0: not joined */
	__u64 peers;
	__u64 reserved[2];
};

/*
 * ODSM_IOC_READ / ODSM_IOC_WRITE: copy len bytes between the user buffer
 * buf and any global address of the heap (DRust's dread/dwrite), local or
 * remote, in pieces of at most 256 KiB.  The range must lie in one node's
 * partition, in blocks that hold objects.  -EINVAL otherwise; -EHOSTDOWN /
 * -ETIMEDOUT when its node is down or does not answer.
 */
struct odsm_rw {
	__u64 gaddr;		/* colored or not: the color is ignored */
	__u64 buf;
	__u64 len;
	__u64 reserved[2];
};

#define ODSM_ATOMIC_FETCH_ADD	1
#define ODSM_ATOMIC_CMP_SWAP	2

/*
 * ODSM_ATOMIC_F_NIC: the word is in its home node's NIC atomic domain.  A
 * caller promises that every atomic on the word, from any node (its home
 * included), carries this flag, and that nothing else writes the word
 * while such atomics may run.  In return, over the RDMA transport, a peer
 * runs the atomic one-sided (an RDMA FETCH_AND_ADD or CMP_AND_SWP straight
 * at the home's memory, no request served by its CPU), and the home runs
 * its own through its RDMA device too (a loopback queue pair): RDMA
 * devices that report IB_ATOMIC_HCA, Soft-RoCE among them, make atomics
 * atomic only against atomics of the same device, never against CPU
 * atomics.  Where the home has no RDMA atomics (the TCP transport, a
 * device without them) the flag changes nothing.
 */
#define ODSM_ATOMIC_F_NIC	0x1

/*
 * ODSM_IOC_ATOMIC: an atomic operation on the 8-byte aligned word at gaddr,
 * anywhere in the heap: FETCH_ADD adds operand; CMP_SWAP stores operand if
 * the word equals compare.  out: old, the word's value before.
 *
 * Without flags: atomic against every other unflagged ODSM_IOC_ATOMIC and
 * against CPU atomics on the word's home node.  A remote word is operated
 * on by its home node's CPU (an ATOMIC request, over TCP and RDMA alike).
 * With ODSM_ATOMIC_F_NIC: atomic against every other flagged one on the
 * word, see above.  -EINVAL for an unknown op or flag, a word that is not
 * 8-byte aligned or not in a block holding an object.
 */
struct odsm_atomic {
	__u64 gaddr;
	__u32 op;
	__u32 flags;		/* ODSM_ATOMIC_F_* */
	__u64 operand;
	__u64 compare;
	__u64 old;
	__u64 reserved[2];
};

/* ---- ownership across nodes (DRust's coherence protocol) ------------- */

/* result of ODSM_IOC_BORROW and ODSM_IOC_BORROW_MUT */
#define ODSM_BORROWED_LOCAL	0	/* the object is in this partition */
#define ODSM_BORROWED_HIT	1	/* BORROW: a cached copy was there */
#define ODSM_BORROWED_MISS	2	/* BORROW: copied into the cache now */
#define ODSM_BORROWED_MOVED	3	/* BORROW_MUT: copied here, the
					 * original freed at its home
					 */
#define ODSM_BORROWED_TAKEN	4	/* BORROW_MUT: a cached copy of
					 * exactly this version became the
					 * object (no transfer)
					 */

/*
 * ODSM_IOC_BORROW: a shared borrow of the object that starts at the colored
 * global address gaddr.  A local object is not touched: addr is the object
 * and no reference is taken (libodsm never asks: it reads local objects in
 * place).  A remote one is looked up in this node's cache by its colored
 * address: on a hit the caller's file takes a reference on the cached copy;
 * on a miss the object is copied with one transfer into a slot of this
 * node's partition and inserted, then referenced.  Objects of at least
 * /sys/kernel/odsm/lazy_threshold bytes are not copied up front: their
 * pages are fetched on first touch, with read-ahead.  No other node is told
 * anything, ever: a write anywhere changes the color, so an old copy simply
 * never matches again.
 * in:  gaddr, flags (0).
 * out: addr, where to read the bytes (uncolored; the object itself or the
 *      cached copy); size, the object's bytes (its requested size for an
 *      object of more than one 64 KiB block, its slot size otherwise);
 *      result, ODSM_BORROWED_LOCAL / HIT / MISS.
 * The reference belongs to the open file: ODSM_IOC_RETURN drops it, and
 * closing the file drops every one it still holds.  An unreferenced copy
 * stays cached until the cache needs the room (cache_budget_bytes) or the
 * kernel needs memory (a shrinker).
 * Errors: -ESTALE (gaddr names an object that is gone: it was moved or
 * freed since that colored address was read; read its owner again),
 * -EINVAL (no object starts at gaddr), -ENOMEM (no room for the copy
 * here), -EOVERFLOW (the copy has 2^32 - 1 references already),
 * -EHOSTDOWN / -ETIMEDOUT.
 */
struct odsm_borrow {
	__u64 gaddr;		/* in: colored global address */
	__u64 addr;		/* out: where to read; RETURN: in */
	__u64 size;		/* out: the object's bytes */
	__u32 flags;		/* in: 0 */
	__u32 result;		/* out: ODSM_BORROWED_* */
	__u64 reserved[2];
};

/*
 * ODSM_IOC_RETURN: the end of a shared borrow: drop one reference this file
 * holds on the cached copy of gaddr (the colored address it borrowed).
 * in: gaddr; addr, the address its BORROW answered (the struct as BORROW
 * left it does), or 0 for any copy of gaddr the file references.  Name the
 * copy: a file can hold references on two copies of one colored address
 * (one of a home's former incarnation, whose address was handed out again
 * after a restart), and a return by gaddr alone drops the current copy's.
 * A local gaddr is a no-op.  -ENOENT if the file holds no such reference.
 */

/* Flags of struct odsm_borrow_mut. */
#define ODSM_MUT_HELD_REF	_BITUL(0)	/* the caller holds a reference
						 * on a cached copy of gaddr
						 * (from BORROW), the one at
						 * addr; the borrow consumes
						 * it
						 */
#define ODSM_MUT_KEEP_ORIGINAL	_BITUL(1)	/* leave the original at its
						 * home: the write-back that
						 * publishes the new address
						 * frees it (ODSM_WB_FREE_OLD)
						 */
#define ODSM_MUT_FLAGS		(ODSM_MUT_HELD_REF | ODSM_MUT_KEEP_ORIGINAL)

/*
 * ODSM_IOC_BORROW_MUT: a mutable borrow moves the object here (DRust).  A
 * local object stays: new_gaddr = gaddr, result LOCAL.  A remote one is
 * allocated in this partition (same size), copied with one transfer, and
 * its original is freed on its home node asynchronously, at the color gaddr
 * carries (the owner's latest: the home raises the address's floor above
 * it).  When this node caches a copy of exactly gaddr that no one else
 * references, that copy becomes the object and nothing is transferred
 * (DRust Algorithm 8, "a local copy exists").
 * in:  gaddr (the owner's colored address), flags ODSM_MUT_*; with
 *      ODSM_MUT_HELD_REF, addr: the copy whose reference the caller holds,
 *      the address its BORROW answered, or 0 for any copy of gaddr the
 *      file references (as ODSM_IOC_RETURN: a file can hold copies of two
 *      incarnations of a home at one colored address, and by gaddr alone
 *      the current copy's reference is the one consumed, which another
 *      borrow of the caller may be using).  Without it, addr is 0.
 * out: new_gaddr (colored, in this partition), size, result
 *      (ODSM_BORROWED_LOCAL / MOVED / TAKEN).
 * The caller writes new_gaddr back into the owner when the borrow ends
 * (ODSM_IOC_WRITE_BACK when the owner box lives in another partition).
 * With ODSM_MUT_KEEP_ORIGINAL the original is not freed here: the
 * WRITE_BACK that names new_gaddr in the owner box frees it
 * (ODSM_WB_FREE_OLD), so that until the box names the new instance the
 * original stays the object -- a node that dies holding the borrow loses
 * its changes, never the object (design.rst, "The failure contract").
 * Errors as ODSM_IOC_BORROW; on error nothing moved.
 */
struct odsm_borrow_mut {
	__u64 gaddr;		/* in: colored global address */
	__u64 new_gaddr;	/* out: colored, local */
	__u64 size;		/* out */
	__u32 flags;		/* in: ODSM_MUT_* */
	__u32 result;		/* out: ODSM_BORROWED_* */
	__u64 addr;		/* in: the held copy (ODSM_MUT_HELD_REF) */
	__u64 reserved[1];
};

/*
 * Owner boxes inside objects.  An owner box { g, ext } stored in an object
 * is part of that object's bytes: changing it is a write to the object.
 * The rule odsm enforces: a box inside an object that other nodes may
 * hold copies of changes only through a mutable borrow (or owner write)
 * of that object, which moves it here and bumps its color, so the copies
 * elsewhere never match again (libodsm's odsm_borrow_mut_field).  Boxes
 * in objects no node has copied (directories of addresses, read with
 * ODSM_IOC_READ) may be read and written in place by any node, with
 * ODSM_IOC_READ_OWNER and ODSM_IOC_WRITE_BACK: the home refuses both,
 * with -EBUSY, once it has handed out a copy of the object that holds
 * the box (a shared borrow or box read from another node fetched it);
 * the object keeps that mark until it is freed or moved.
 *
 * ODSM_IOC_WRITE_BACK: the end of a mutable borrow whose owner box lives in
 * the heap (libodsm's odsm_borrow_mut_at), or the store of a new owner
 * into such a box: store the 16-byte box { g, ext } at the global address
 * owner (16-byte aligned, inside one live object, any node), at its home,
 * atomically with the check above.
 * ODSM_IOC_READ_OWNER: read the box at owner into g and ext, with the
 * same checks: what odsm_borrow_mut_at() starts from.
 * With ODSM_WB_IF_EMPTY a WRITE_BACK stores only into a box that owns
 * nothing (its g is 0) and fails with -EEXIST otherwise, checked in the
 * same step: two stores into one empty box cannot both succeed.
 * Errors: -EINVAL (owner not 16-byte aligned, not in the heap, not inside
 * a live object, inside a copy in this node's cache; an unknown flag),
 * -EBUSY (the object holding it has copies out), -EEXIST, -EHOSTDOWN /
 * -ETIMEDOUT.
 */
/* Flags of struct odsm_write_back (WRITE_BACK only). */
#define ODSM_WB_IF_EMPTY	_BITUL(0)	/* store only into an empty box
						 * (g 0), else -EEXIST: in the
						 * same step at the home
						 */
#define ODSM_WB_FREE_OLD	_BITUL(1)	/* then free the object the box
						 * named before, when it lives
						 * on another node: the end of
						 * a borrow that kept it
						 * (ODSM_MUT_KEEP_ORIGINAL)
						 */
#define ODSM_WB_FLAGS		(ODSM_WB_IF_EMPTY | ODSM_WB_FREE_OLD)

struct odsm_write_back {
	__u64 owner;		/* global address of the owner box */
	__u64 g;		/* the box's new colored address */
	__u64 ext;		/* the box's new extension word */
	__u32 flags;		/* ODSM_WB_* */
	__u32 reserved0;
	__u64 reserved;
};

/*
 * ODSM_IOC_DROP_COPIES: drop every idle copy in this node's cache (copies
 * no open file references), and give back the pages of the blocks the
 * cache keeps for its next copies (the stats' kept_blocks).  out:
 * dropped, how many copies went; kept, the copies still referenced by
 * borrows.
 */
struct odsm_drop_copies {
	__u64 dropped;
	__u64 kept;
	__u64 reserved[2];
};

/*
 * ODSM_IOC_PREFETCH: a hint before borrowing many small remote objects:
 * fetch the n objects named by the colored start addresses in the array at
 * gaddrs (user memory, n * 8 bytes) into this node's cache, one FETCH_MANY
 * round trip per home and up to 64 objects, as copies nobody references
 * yet, so that the borrows that follow hit.  Objects of this node, ones
 * cached already, bigger than 2 KiB or refused by their home (gone, a
 * stale color, not an object) are skipped: the borrow reports them.
 * n 1..ODSM_PREFETCH_MAX; flags and reserved 0.  out: fetched, the
 * copies made (idle copies go first when the cache needs room).
 */
#define ODSM_PREFETCH_MAX	1024

struct odsm_prefetch {
	__u64 gaddrs;		/* in: user pointer to __u64[n] */
	__u32 n;		/* in */
	__u32 flags;		/* in: 0 */
	__u32 fetched;		/* out */
	__u32 reserved0;
	__u64 reserved[2];
};

/*
 * The cache's hit page: PAGE_SIZE bytes at file offset ODSM_HITS_OFFSET of
 * /dev/odsm, mapped read-only (PROT_READ, MAP_SHARED and MAP_FIXED at an
 * address the caller reserved: the heap's mapping owns the file's other
 * offsets).  The module bumps its counters; libodsm reads them on every
 * hit it serves from its own table of copies (see "Cache hits in user
 * space" in Documentation/odsm/design.rst).  With ODSM_HITS_F_NODE_INC in
 * features the module also keeps this node's incarnation there, which
 * libodsm's mutexes name in their lock words without a system call.  A
 * writable or executable mapping, or one of another length, is refused
 * (-EINVAL).
 */
#define ODSM_HITS_OFFSET	_BITULL(46)	/* past any heap offset */

struct odsm_hits_page {
	__u64 forget_epoch;	/* bumped when copies were forgotten (a
				 * home restarted, the cluster was left):
				 * no hit recorded before may be served
				 */
	__u64 want_epoch;	/* bumped when the cache wants room: return
				 * the references kept idle
				 */
	__u64 features;		/* ODSM_HITS_F_*: what else the page keeps */
	__u64 node_incarnation;	/* with ODSM_HITS_F_NODE_INC: this node's
				 * incarnation while it is in a cluster (the
				 * one ODSM_IOC_STATUS says of it), 0 while
				 * it is in none
				 */
};

#define ODSM_HITS_F_NODE_INC	_BITULL(0)	/* node_incarnation kept */

/*
 * Delegation across nodes (Documentation/odsm/delegation.rst): the module
 * carries a batch of uapi/linux/odsm_deleg.h between a client on one node
 * and the trustee runtime of another (or of this one).
 *
 * ODSM_IOC_DELEG_BIND: this open file serves the trustee runtime named
 * endpoint (a global address in this node's partition: the runtime's
 * odsm_deleg_addr()), whose slots are slot_size bytes.  One endpoint per
 * file, one file per endpoint (-EADDRINUSE); it ends when the file is
 * closed, and every batch queued for it or taken and not answered fails
 * with -EOWNERDEAD then.
 */
struct odsm_deleg_bind {
	__u64 endpoint;
	__u32 slot_size;	/* a power of 2, ODSM_DSLOT_SIZE_MIN..MAX */
	__u32 flags;		/* 0 or ODSM_DELEG_BIND_LANES */
	__u64 lanes;		/* with ODSM_DELEG_BIND_LANES: the user
				 * address of a struct odsm_deleg_lanes
				 */
	__u64 reserved;		/* 0 */
};

/*
 * ODSM_DELEG_BIND_LANES: the runtime also gives the module *lanes*,
 * request/response slot pairs in its arena (heap memory of this node)
 * that its trustees poll like any client's.  A batch for the endpoint
 * then goes straight into a free lane of its trustee (the one of its
 * first record's cell): the module writes the records, then the request
 * header's seq, bumps that trustee's wake word and wakes its sleepers,
 * and waits for the response slot's seq to match.  A batch the gateway
 * must see (ODSM_DSLOT_F_GATEWAY, or an apply_with argument of another
 * node), or one that finds every lane of its trustee busy, is queued for
 * ODSM_IOC_DELEG_SERVE as without lanes.
 *
 * Lane l of trustee t: its request slot is at
 * slots + t * trustee_stride + l * 2 * slot_size, its response slot
 * follows; trustee t's wake word (a __u32) is at wake + t * wake_stride.
 * The runtime keeps each lane's response slot's sleepers woken (with
 * ODSM_IOC_WAKE) whenever it answers in it.  Every address is a global
 * address inside the object that starts at endpoint (the arena, in this
 * node's partition: -EINVAL otherwise); the module reaches them through
 * the heap, checked at each access like a peer's WRITE, and only while
 * that object lives: once it is freed, batches for the endpoint fail with
 * -EOWNERDEAD, whoever still holds the file.
 */
#define ODSM_DELEG_BIND_LANES	1
#define ODSM_DELEG_LANES_MAX	16	/* per trustee */
#define ODSM_DELEG_TRUSTEES_MAX	64

struct odsm_deleg_lanes {
	__u64 slots;
	__u64 trustee_stride;
	__u64 wake;
	__u32 wake_stride;
	__u32 trustees;		/* 1..ODSM_DELEG_TRUSTEES_MAX */
	__u32 lanes;		/* per trustee, 1..ODSM_DELEG_LANES_MAX */
	__u32 cells;		/* a request's trustee: (__u32)obj / cells */
	__u64 reserved[2];	/* 0 */
};

/*
 * ODSM_IOC_DELEG_CALL: send the request batch at req (req_len bytes: the
 * header and its records, as they would sit in a request slot of
 * slot_size bytes) to the trustee runtime at endpoint, on whatever node
 * holds it, and wait for its response batch, copied to resp (resp_cap
 * bytes of room, resp_len out).  One system call per batch.  0, or:
 * -EBADMSG (the batch, or the response, malformed: nothing of it ran, or
 * the answer is unusable), -ESRCH (no runtime serves endpoint),
 * -EOWNERDEAD (it went while the batch was out), -EHOSTDOWN, -ETIMEDOUT
 * (its node is down, or did not answer within the cluster's timeout),
 * -EBUSY (too many batches of this node wait there already: not sent on),
 * -EAGAIN (that node refused the request: too many of this node's in
 * flight there, or no memory for it; nothing of it ran),
 * -EMSGSIZE (resp_cap below slot_size, which an answer may take whole:
 * refused before the batch is sent), -ENOMEM (no memory on this node to
 * send it: nothing of it ran), -EINVAL, -EFAULT.  Once a batch ran, its
 * answer is not lost for want of memory: the room for it is taken first.
 */
struct odsm_deleg_call {
	__u64 endpoint;
	__u64 req;		/* user address of the batch */
	__u64 resp;		/* user address of room for the answer */
	__u32 req_len;
	__u32 resp_cap;
	__u32 resp_len;		/* out */
	__u32 slot_size;
	__u64 reserved[2];	/* 0 */
};

/*
 * ODSM_IOC_DELEG_SERVE: for the file bound to an endpoint: answer the batch
 * done (a ticket this call returned before; 0: none) with the response
 * batch at resp (resp_len bytes), then wait up to timeout_ms (0: until a
 * signal) for the next batch and copy it to req (slot_size bytes of room):
 * ticket, node and req_len out.  One system call per batch.  -EAGAIN when
 * none came in time (the answer, if any, was delivered; an answer to a
 * batch whose client gave up goes nowhere, silently); -EBADMSG for a
 * malformed answer (its client gets -EBADMSG; no batch is taken); -EBADF
 * when the file serves no endpoint; -EINTR; -ENOMEM when the kernel had no
 * memory for the answer or the next batch: the answer may not have been
 * taken, so give the same done again (a done already answered is ignored).
 */
struct odsm_deleg_serve {
	__u64 done;
	__u64 resp;
	__u64 req;
	__u64 ticket;		/* out */
	__u32 resp_len;
	__u32 req_len;		/* out */
	__u32 node;		/* out: the client's node */
	__u32 timeout_ms;
	__u64 reserved[2];	/* 0 */
};

/*
 * Asynchronous operations through io_uring.  An IORING_OP_URING_CMD SQE on
 * an open /dev/odsm file runs one ioctl without blocking its submitter:
 * sqe->cmd_op is the ioctl's number, and the SQE's command area (sqe->cmd:
 * the 16 bytes a 64-byte SQE has, or the first 16 of a 128-byte one's 80)
 * holds struct odsm_uring_cmd, whose arg points to the ioctl's usual
 * argument.  The command runs the ioctl's own code, with its checks, and
 * completes with a CQE whose res is what the ioctl returns (0 or
 * -errno); its out fields (and a READ's bytes) are in place before that
 * CQE is posted.  The argument and every buffer it names must stay valid
 * until then.
 * Taken: ODSM_IOC_READ, WRITE, ATOMIC, ALLOC, FREE, BORROW, PREFETCH,
 * RETURN, BORROW_MUT, WRITE_BACK, READ_OWNER and DELEG_CALL.  A reference
 * a BORROW takes belongs to the /dev/odsm file the SQE names, as with the
 * ioctl.
 * Refused at submission: any other cmd_op (-ENOTTY); flags or reserved
 * not zero, arg 0, or (128-byte SQEs) the rest of the area not zero
 * (-EINVAL); a command past ODSM_URING_INFLIGHT_MAX in flight from the
 * same program, i.e. address space, all its rings and files together
 * (-EBUSY: the node's workers are shared by every program, so one may not
 * take them all; reap completions and submit again).  On a NUMA host
 * under Linux 6.9 or later the bound is half the submitting CPU's node's
 * share of the workers when that is less (it is 256 on one node).  A ring
 * set up with IORING_SETUP_IOPOLL gets -EOPNOTSUPP from io_uring.
 */
#define ODSM_URING_INFLIGHT_MAX	256

struct odsm_uring_cmd {
	__u64 arg;		/* user pointer: the ioctl's argument */
	__u32 flags;		/* 0 */
	__u32 reserved;		/* 0 */
};

/* ---- waits on heap words ------------------------------------------------ */

/*
 * ODSM_IOC_WAIT: a futex for a word of this node's partition (FUTEX_WAIT
 * fails with EFAULT on heap words: their pages have no page-cache mapping).
 * Sleep while the size-byte word at gaddr holds expect, until an
 * ODSM_IOC_WAKE names the word (on any node), this node's module itself
 * writes into it (this node's ODSM_IOC_WRITE or ODSM_IOC_ATOMIC, a peer's
 * served by this node's CPU), timeout_ns nanoseconds pass (0: no timeout)
 * or a signal comes.  A CPU store into the word wakes nobody: the process
 * that stores calls ODSM_IOC_WAKE after it, as with futexes.  Nor does a
 * peer's store that passes by this node's CPU: over RDMA a peer's
 * ODSM_IOC_WRITE (and an ODSM_ATOMIC_F_NIC atomic) may go one-sided, so a
 * peer that stores into a word someone may wait on calls ODSM_IOC_WAKE
 * on it after the store, whatever the transport.
 * in:  gaddr (colored or not: the color is ignored), size 4 or 8, expect
 *      (at most 0xffffffff for size 4), timeout_ns, flags 0.
 * Returns 0 when woken (the caller reads the word again: a wakeup may be
 * for a value it does not want), -EAGAIN when the word did not hold
 * expect, -ETIMEDOUT, -EINTR on a signal during a timed wait (an untimed
 * one restarts when the handler has SA_RESTART, as FUTEX_WAIT's does),
 * -EINVAL for a size not 4 or 8, a gaddr not size-aligned, not in this
 * node's partition or not in a block holding objects, non-zero flags or
 * reserved.
 */
struct odsm_wait {
	__u64 gaddr;
	__u64 expect;
	__u64 timeout_ns;
	__u32 size;
	__u32 flags;		/* 0 */
	__u64 reserved[2];
};

/*
 * ODSM_IOC_WAKE: wake up to nr (0: every) waiters of ODSM_IOC_WAIT whose
 * gaddr is exactly this one (the key is the word's address, whatever the
 * size they wait with).  The word may be of any node's partition: a
 * peer's word is woken by its home, which this call asks (one round trip)
 * and waits for.  Returns the number woken.  -EINVAL for a gaddr not
 * 4-aligned or not in the heap (or of a peer's partition before
 * ODSM_IOC_JOIN), nr above INT_MAX, non-zero flags or reserved;
 * -EHOSTDOWN or -ETIMEDOUT when the word's home is down or does not
 * answer.
 */
struct odsm_wake {
	__u64 gaddr;
	__u32 nr;
	__u32 flags;		/* 0 */
	__u64 reserved[2];
};

#define ODSM_IOC_MAGIC		0xd5
#define ODSM_IOC_INFO		_IOR(ODSM_IOC_MAGIC, 0x00, struct odsm_info)
#define ODSM_IOC_SET_CONFIG	_IOW(ODSM_IOC_MAGIC, 0x01, struct odsm_config)
#define ODSM_IOC_ALLOC		_IOWR(ODSM_IOC_MAGIC, 0x10, struct odsm_alloc)
#define ODSM_IOC_FREE		_IOW(ODSM_IOC_MAGIC, 0x11, struct odsm_free)
#define ODSM_IOC_MOVE		_IOWR(ODSM_IOC_MAGIC, 0x12, struct odsm_move)
#define ODSM_IOC_OBJ_INFO	_IOWR(ODSM_IOC_MAGIC, 0x13, struct odsm_obj_info)
#define ODSM_IOC_READ		_IOW(ODSM_IOC_MAGIC, 0x14, struct odsm_rw)
#define ODSM_IOC_WRITE		_IOW(ODSM_IOC_MAGIC, 0x15, struct odsm_rw)
#define ODSM_IOC_ATOMIC		_IOWR(ODSM_IOC_MAGIC, 0x16, struct odsm_atomic)
#define ODSM_IOC_BORROW		_IOWR(ODSM_IOC_MAGIC, 0x18, struct odsm_borrow)
#define ODSM_IOC_RETURN		_IOW(ODSM_IOC_MAGIC, 0x19, struct odsm_borrow)
#define ODSM_IOC_BORROW_MUT	_IOWR(ODSM_IOC_MAGIC, 0x1a, struct odsm_borrow_mut)
#define ODSM_IOC_WRITE_BACK	_IOW(ODSM_IOC_MAGIC, 0x1b, struct odsm_write_back)
#define ODSM_IOC_READ_OWNER	_IOWR(ODSM_IOC_MAGIC, 0x1c, struct odsm_write_back)
#define ODSM_IOC_DROP_COPIES	_IOWR(ODSM_IOC_MAGIC, 0x1d, struct odsm_drop_copies)
#define ODSM_IOC_PREFETCH	_IOWR(ODSM_IOC_MAGIC, 0x1e, struct odsm_prefetch)
#define ODSM_IOC_JOIN		_IOW(ODSM_IOC_MAGIC, 0x20, struct odsm_join)
#define ODSM_IOC_LEAVE		_IO(ODSM_IOC_MAGIC, 0x21)
#define ODSM_IOC_STATUS		_IOWR(ODSM_IOC_MAGIC, 0x22, struct odsm_status)
#define ODSM_IOC_DELEG_BIND	_IOW(ODSM_IOC_MAGIC, 0x30, struct odsm_deleg_bind)
#define ODSM_IOC_DELEG_CALL	_IOWR(ODSM_IOC_MAGIC, 0x31, struct odsm_deleg_call)
#define ODSM_IOC_DELEG_SERVE	_IOWR(ODSM_IOC_MAGIC, 0x32, struct odsm_deleg_serve)
#define ODSM_IOC_WAIT		_IOW(ODSM_IOC_MAGIC, 0x38, struct odsm_wait)
#define ODSM_IOC_WAKE		_IOW(ODSM_IOC_MAGIC, 0x39, struct odsm_wake)

#endif /* _UAPI_LINUX_ODSM_H */
