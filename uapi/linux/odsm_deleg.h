/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * odsm delegation: the request and response slot format.
 *
 * A client thread ships operations on an entrusted object to the object's
 * trustee in batches.  Per (client, trustee) pair there is one request slot
 * and one response slot of ODSM_DSLOT_SIZE_* bytes, each a header followed
 * by records.  On one node the slots are memory both processes map; across
 * nodes (later) the module writes the same bytes into the trustee's slots.
 *
 * Every field is little-endian, every record starts 8-byte aligned and is
 * padded to a multiple of 8.  Everything a trustee reads from a request
 * slot is validated before anything runs (kmod/odsm_dslot.c); a malformed
 * batch is answered with a negative status in the response header and no
 * record of it runs.
 *
 * The ready flag is hdr.seq: a client publishes a batch by writing the
 * records, then hdr.seq = the response slot's seq + 1 (release); the batch
 * is pending while the two differ, and the trustee answers by writing the
 * response records, then the response's seq = the request's seq (release).
 */
#ifndef _UAPI_LINUX_ODSM_DELEG_H
#define _UAPI_LINUX_ODSM_DELEG_H

#include <linux/types.h>

#define ODSM_DSLOT_ALIGN	8
#define ODSM_DSLOT_SIZE_MIN	256
#define ODSM_DSLOT_SIZE_MAX	65536

/* The first 16 bytes of every request and response slot. */
struct odsm_dslot_hdr {
	__u32 seq;		/* the ready flag: see above */
	__u16 count;		/* records after the header */
	__u16 flags;		/* request: 0 or ODSM_DSLOT_F_GATEWAY;
				 * response: 0
				 */
	__u32 len;		/* bytes of records after the header */
	__s32 status;		/* response: 0, or the -errno the whole
				 * batch got (-EBADMSG: malformed, not run)
				 */
};

/*
 * A request batch that the runtime's gateway must take, not a trustee:
 * across nodes the module then queues it for ODSM_IOC_DELEG_SERVE rather
 * than write it into a lane (ODSM_DELEG_BIND_LANES).
 */
#define ODSM_DSLOT_F_GATEWAY	0x0001

/* Kinds of request. */
#define ODSM_DREQ_APPLY		1	/* run op on obj with the inline arg */
#define ODSM_DREQ_APPLY_WITH	2	/* arg is a struct odsm_dwith */
#define ODSM_DREQ_LAUNCH	3	/* run op on a worker, obj's handle */
#define ODSM_DREQ_ENTRUST	4	/* arg is a struct odsm_dentrust */
#define ODSM_DREQ_FREE		5	/* the last reference to obj went */
#define ODSM_DREQ_KIND_MAX	6

/* A request record: 32 bytes, then arg_len bytes, padded to 8. */
struct odsm_dreq {
	__u64 op;		/* registered operation id, never 0 */
	__u64 obj;		/* cell index | generation << 32 */
	__u32 arg_len;		/* inline bytes after this record */
	__u32 ret_max;		/* result bytes the client has room for */
	__u16 kind;		/* ODSM_DREQ_* */
	__u16 flags;		/* 0 */
	__u32 tag;		/* the client's number for it, echoed */
};

/* ODSM_DREQ_APPLY_WITH's argument: a global address the trustee borrows. */
struct odsm_dwith {
	__u64 gaddr;
	__u64 len;
};

/* ODSM_DREQ_ENTRUST's argument: the owner box's address, its destructor. */
struct odsm_dentrust {
	__u64 g;		/* colored global address of the object */
	__u64 dtor;		/* op run on the object before it is freed; 0 */
};

/* A response record: 16 bytes, then ret_len bytes, padded to 8. */
struct odsm_dresp {
	__s32 status;		/* what the op returned, or a -errno */
	__u32 ret_len;		/* <= the request's ret_max */
	__u32 tag;		/* the request's */
	__u32 reserved;		/* 0 */
};

#endif /* _UAPI_LINUX_ODSM_DELEG_H */
