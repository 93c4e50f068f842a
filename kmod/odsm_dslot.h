/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The delegation slot codec (uapi/linux/odsm_deleg.h): building a batch of
 * requests, validating one before anything of it runs, and the same for
 * responses.  Pure logic: libodsm links it, the host tests link it, and
 * the module will validate the batches it carries between nodes with it.
 *
 * A slot is slot_size bytes: a struct odsm_dslot_hdr, then records.  The
 * functions never touch hdr.seq (the ready flag): publishing is the
 * caller's, with the memory ordering its medium needs.
 */
#ifndef _ODSM_DSLOT_H
#define _ODSM_DSLOT_H

#include "odsm_portable.h"
#include "../uapi/linux/odsm_deleg.h"

#define ODSM_DSLOT_HDR		((u32)sizeof(struct odsm_dslot_hdr))
#define ODSM_DREQ_HDR		((u32)sizeof(struct odsm_dreq))
#define ODSM_DRESP_HDR		((u32)sizeof(struct odsm_dresp))

static inline u32 odsm_dslot_pad(u32 n)
{
	return (n + ODSM_DSLOT_ALIGN - 1) & ~(u32)(ODSM_DSLOT_ALIGN - 1);
}

/* Whether slot_size is one a slot may have: a power of 2 in range. */
static inline bool odsm_dslot_size_ok(u32 slot_size)
{
	return slot_size >= ODSM_DSLOT_SIZE_MIN &&
	       slot_size <= ODSM_DSLOT_SIZE_MAX && is_power_of_2(slot_size);
}

/* The most records a batch can hold: every one at least its header. */
static inline u32 odsm_dslot_max_count(u32 slot_size)
{
	return (slot_size - ODSM_DSLOT_HDR) / ODSM_DREQ_HDR;
}

/* The longest inline argument, and result, one request may have. */
static inline u32 odsm_dslot_max_arg(u32 slot_size)
{
	return slot_size - ODSM_DSLOT_HDR - ODSM_DREQ_HDR;
}

static inline u32 odsm_dslot_max_ret(u32 slot_size)
{
	return slot_size - ODSM_DSLOT_HDR - ODSM_DRESP_HDR;
}

/*
 * A batch being built: the request bytes so far (len), and the response
 * bytes their answers may take (resp_len: every request reserves room for
 * its full ret_max, so a batch that fits is always answered in full).
 */
struct odsm_dbatch {
	u8 *slot;
	u32 slot_size;
	u32 len;
	u32 resp_len;
	u16 count;
};

void odsm_dbatch_init(struct odsm_dbatch *b, void *slot, u32 slot_size);
/*
 * Append a request (r->arg_len bytes of arg after it).  -E2BIG: it could
 * never fit a slot of this size (argument or result too long); -ENOSPC: it
 * does not fit the room left (flush and retry).  On error nothing changed.
 */
int odsm_dbatch_add(struct odsm_dbatch *b, const struct odsm_dreq *r,
		    const void *arg);
/* Write the header (count, len; seq and status left as they are). */
void odsm_dbatch_seal(struct odsm_dbatch *b);

/* One validated request of a batch: where its argument is, in the slot. */
struct odsm_dreq_view {
	u64 op;
	u64 obj;
	u32 arg_off;		/* from the start of the slot */
	u32 arg_len;
	u32 ret_max;
	u32 tag;
	u16 kind;
};

/*
 * Validate the batch in a request slot and describe its records in v (room
 * for max of them): every field is read once, so a writer changing the
 * slot meanwhile cannot make the caller read outside it.  0 and *n, or
 * -EBADMSG (counts, lengths, kinds, flags or padding wrong, records past
 * the header's len or the slot, results that could not be answered): run
 * nothing of it.
 */
int odsm_dslot_parse_req(const void *slot, u32 slot_size,
			 struct odsm_dreq_view *v, u32 max, u32 *n);

/* A response batch being written by the trustee. */
struct odsm_drbatch {
	u8 *slot;
	u32 slot_size;
	u32 len;
	u16 count;
};

void odsm_drbatch_init(struct odsm_drbatch *b, void *slot, u32 slot_size);
/*
 * Room for the result of the next response: up to ret_max bytes at the
 * returned address (NULL when even ret_max more would not fit: the
 * parser's reservation rules make that a caller bug).
 */
void *odsm_drbatch_ret(struct odsm_drbatch *b, u32 ret_max);
/* The next response: status and the ret_len bytes written at _ret(). */
int odsm_drbatch_add(struct odsm_drbatch *b, s32 status, u32 tag,
		     u32 ret_len);
/* Write the header: count, len, status (seq left as it is). */
void odsm_drbatch_seal(struct odsm_drbatch *b, s32 status);

/* One validated response. */
struct odsm_dresp_view {
	s32 status;
	u32 ret_off;
	u32 ret_len;
	u32 tag;
};

/*
 * Validate a response slot answering count requests; *status gets the
 * batch status.  A batch answered with a negative status has no records.
 * -EBADMSG when anything is out of place.
 */
int odsm_dslot_parse_resp(const void *slot, u32 slot_size, u32 count,
			  struct odsm_dresp_view *v, s32 *status);

/*
 * Whether the n validated responses r answer the n validated requests q:
 * each in its request's place (the same tag) and no longer than the room
 * its request gave (ret_max).  The response parser alone cannot know
 * either; a client, and the module carrying a batch between nodes, check
 * both before a result reaches anyone.  0 or -EBADMSG.
 */
int odsm_dslot_answers(const struct odsm_dreq_view *q,
		       const struct odsm_dresp_view *r, u32 n);

#endif /* _ODSM_DSLOT_H */
