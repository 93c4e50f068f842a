// SPDX-License-Identifier: GPL-2.0
/*
 * The delegation slot codec: see odsm_dslot.h and the format in
 * uapi/linux/odsm_deleg.h.  The parsers copy each header out of the slot
 * before looking at it and keep only the copies, because the slot is
 * memory another process (or, later, a NIC) may write at any time: what
 * was checked is what is used.
 */
#include "odsm_dslot.h"

void odsm_dbatch_init(struct odsm_dbatch *b, void *slot, u32 slot_size)
{
	b->slot = slot;
	b->slot_size = slot_size;
	b->len = 0;
	b->resp_len = 0;
	b->count = 0;
}

int odsm_dbatch_add(struct odsm_dbatch *b, const struct odsm_dreq *r,
		    const void *arg)
{
	u32 need, resp;
	u8 *p;

	if (r->arg_len > odsm_dslot_max_arg(b->slot_size) ||
	    r->ret_max > odsm_dslot_max_ret(b->slot_size))
		return -E2BIG;
	need = ODSM_DREQ_HDR + odsm_dslot_pad(r->arg_len);
	resp = ODSM_DRESP_HDR + odsm_dslot_pad(r->ret_max);
	if (need > b->slot_size - ODSM_DSLOT_HDR)
		return -E2BIG;
	if (resp > b->slot_size - ODSM_DSLOT_HDR)
		return -E2BIG;
	if (b->len + need > b->slot_size - ODSM_DSLOT_HDR ||
	    b->resp_len + resp > b->slot_size - ODSM_DSLOT_HDR ||
	    b->count >= odsm_dslot_max_count(b->slot_size))
		return -ENOSPC;
	p = b->slot + ODSM_DSLOT_HDR + b->len;
	memcpy(p, r, ODSM_DREQ_HDR);
	if (r->arg_len)
		memcpy(p + ODSM_DREQ_HDR, arg, r->arg_len);
	b->len += need;
	b->resp_len += resp;
	b->count++;
	return 0;
}

void odsm_dbatch_seal(struct odsm_dbatch *b)
{
	struct odsm_dslot_hdr *h = (struct odsm_dslot_hdr *)b->slot;

	h->count = b->count;
	h->flags = 0;
	h->len = b->len;
	h->status = 0;
}

/* What an argument of each kind must be, beyond fitting the batch. */
static bool dreq_ok(const struct odsm_dreq *r, u32 slot_size)
{
	if (r->flags || r->ret_max > odsm_dslot_max_ret(slot_size))
		return false;
	switch (r->kind) {
	case ODSM_DREQ_APPLY:
	case ODSM_DREQ_LAUNCH:
		return r->op != 0;
	case ODSM_DREQ_APPLY_WITH:
		return r->op != 0 && r->arg_len == sizeof(struct odsm_dwith);
	case ODSM_DREQ_ENTRUST:
		return r->arg_len == sizeof(struct odsm_dentrust) &&
		       r->ret_max >= sizeof(u64);
	case ODSM_DREQ_FREE:
		return r->arg_len == 0;
	default:
		return false;
	}
}

int odsm_dslot_parse_req(const void *slot, u32 slot_size,
			 struct odsm_dreq_view *v, u32 max, u32 *n)
{
	const u8 *s = slot;
	struct odsm_dslot_hdr h;
	struct odsm_dreq r;
	u32 off, end, resp = 0, i;

	*n = 0;
	if (!odsm_dslot_size_ok(slot_size))
		return -EBADMSG;
	memcpy(&h, s, sizeof(h));
	if ((h.flags & ~ODSM_DSLOT_F_GATEWAY) || h.count > max ||
	    h.count > odsm_dslot_max_count(slot_size) ||
	    h.len > slot_size - ODSM_DSLOT_HDR || h.len % ODSM_DSLOT_ALIGN)
		return -EBADMSG;
	off = ODSM_DSLOT_HDR;
	end = ODSM_DSLOT_HDR + h.len;
	for (i = 0; i < h.count; i++) {
		if (end - off < ODSM_DREQ_HDR)
			return -EBADMSG;
		memcpy(&r, s + off, sizeof(r));
		off += ODSM_DREQ_HDR;
		/* end - off is a multiple of 8, so the padding fits too */
		if (r.arg_len > end - off || !dreq_ok(&r, slot_size))
			return -EBADMSG;
		resp += ODSM_DRESP_HDR + odsm_dslot_pad(r.ret_max);
		if (resp > slot_size - ODSM_DSLOT_HDR)
			return -EBADMSG;	/* could not all be answered */
		v[i].op = r.op;
		v[i].obj = r.obj;
		v[i].arg_off = off;
		v[i].arg_len = r.arg_len;
		v[i].ret_max = r.ret_max;
		v[i].tag = r.tag;
		v[i].kind = r.kind;
		off += odsm_dslot_pad(r.arg_len);
	}
	if (off != end)
		return -EBADMSG;	/* bytes no record accounts for */
	*n = h.count;
	return 0;
}

void odsm_drbatch_init(struct odsm_drbatch *b, void *slot, u32 slot_size)
{
	b->slot = slot;
	b->slot_size = slot_size;
	b->len = 0;
	b->count = 0;
}

void *odsm_drbatch_ret(struct odsm_drbatch *b, u32 ret_max)
{
	u32 room = b->slot_size - ODSM_DSLOT_HDR - b->len;

	if (ret_max > odsm_dslot_max_ret(b->slot_size) ||
	    room < ODSM_DRESP_HDR + odsm_dslot_pad(ret_max))
		return NULL;
	return b->slot + ODSM_DSLOT_HDR + b->len + ODSM_DRESP_HDR;
}

int odsm_drbatch_add(struct odsm_drbatch *b, s32 status, u32 tag,
		     u32 ret_len)
{
	struct odsm_dresp r = { .status = status, .ret_len = ret_len,
				.tag = tag };
	u32 room = b->slot_size - ODSM_DSLOT_HDR - b->len;

	if (ret_len > odsm_dslot_max_ret(b->slot_size) ||
	    room < ODSM_DRESP_HDR + odsm_dslot_pad(ret_len))
		return -ENOSPC;
	memcpy(b->slot + ODSM_DSLOT_HDR + b->len, &r, sizeof(r));
	b->len += ODSM_DRESP_HDR + odsm_dslot_pad(ret_len);
	b->count++;
	return 0;
}

void odsm_drbatch_seal(struct odsm_drbatch *b, s32 status)
{
	struct odsm_dslot_hdr *h = (struct odsm_dslot_hdr *)b->slot;

	h->count = status ? 0 : b->count;
	h->flags = 0;
	h->len = status ? 0 : b->len;
	h->status = status;
}

int odsm_dslot_parse_resp(const void *slot, u32 slot_size, u32 count,
			  struct odsm_dresp_view *v, s32 *status)
{
	const u8 *s = slot;
	struct odsm_dslot_hdr h;
	struct odsm_dresp r;
	u32 off, end, i;

	if (!odsm_dslot_size_ok(slot_size))
		return -EBADMSG;
	memcpy(&h, s, sizeof(h));
	*status = h.status;
	if (h.flags || h.len > slot_size - ODSM_DSLOT_HDR ||
	    h.len % ODSM_DSLOT_ALIGN || h.status > 0)
		return -EBADMSG;
	if (h.status < 0)
		return h.count || h.len ? -EBADMSG : 0;
	if (h.count != count)
		return -EBADMSG;
	off = ODSM_DSLOT_HDR;
	end = ODSM_DSLOT_HDR + h.len;
	for (i = 0; i < count; i++) {
		if (end - off < ODSM_DRESP_HDR)
			return -EBADMSG;
		memcpy(&r, s + off, sizeof(r));
		off += ODSM_DRESP_HDR;
		if (r.ret_len > end - off || r.reserved)
			return -EBADMSG;
		v[i].status = r.status;
		v[i].ret_off = off;
		v[i].ret_len = r.ret_len;
		v[i].tag = r.tag;
		off += odsm_dslot_pad(r.ret_len);
	}
	return off == end ? 0 : -EBADMSG;
}

int odsm_dslot_answers(const struct odsm_dreq_view *q,
		       const struct odsm_dresp_view *r, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (r[i].tag != q[i].tag || r[i].ret_len > q[i].ret_max)
			return -EBADMSG;
	return 0;
}
