// SPDX-License-Identifier: GPL-2.0
/*
 * The wire codec: headers and payloads to and from their little-endian wire
 * form, and the validation of everything received.  The wire form is
 * written and read one byte at a time, so it depends neither on the host's
 * byte order nor on struct layout, and no load is unaligned.
 * Documentation/odsm/wire-protocol.rst describes the format.
 */
#include "odsm_wire.h"

/* gaddr of READ and WRITE: uncolored, so below 2^48 (ODSM_COLOR_SHIFT) */
#define WIRE_ADDR_LIMIT		0x0001000000000000ULL
/* largest alignment an ALLOC may ask for (ODSM_MAX_ALIGN) */
#define WIRE_MAX_ALIGN		4096U

/* ---- little-endian bytes ------------------------------------------------ */

static inline void wire_put_le16(u8 *p, u16 v)
{
	p[0] = (u8)v;
	p[1] = (u8)(v >> 8);
}

static inline void wire_put_le32(u8 *p, u32 v)
{
	p[0] = (u8)v;
	p[1] = (u8)(v >> 8);
	p[2] = (u8)(v >> 16);
	p[3] = (u8)(v >> 24);
}

static inline void wire_put_le64(u8 *p, u64 v)
{
	wire_put_le32(p, (u32)v);
	wire_put_le32(p + 4, (u32)(v >> 32));
}

static inline u16 wire_get_le16(const u8 *p)
{
	return (u16)(p[0] | (u16)p[1] << 8);
}

static inline u32 wire_get_le32(const u8 *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

static inline u64 wire_get_le64(const u8 *p)
{
	return (u64)wire_get_le32(p) | (u64)wire_get_le32(p + 4) << 32;
}

/* ---- header ------------------------------------------------------------- */

/*
 * What each type may carry when its status is 0: payload bytes
 * min_len..max_len.  A reply with a negative status carries none.
 */
struct wire_type {
	u32 min_len;
	u32 max_len;
	bool reply;		/* must have ODSM_WIRE_F_REPLY */
};

static const struct wire_type wire_types[ODSM_MSG_TYPE_MAX] = {
	[ODSM_MSG_HELLO]	= { ODSM_WIRE_HELLO_SIZE, ODSM_WIRE_HELLO_SIZE,
				    false },
	[ODSM_MSG_PING]		= { ODSM_WIRE_PING_SIZE, ODSM_WIRE_PING_SIZE,
				    false },
	[ODSM_MSG_PONG]		= { ODSM_WIRE_PONG_SIZE, ODSM_WIRE_PONG_SIZE,
				    true },
	[ODSM_MSG_READ]		= { ODSM_WIRE_RW_SIZE, ODSM_WIRE_RW_SIZE,
				    false },
	[ODSM_MSG_READ_REPLY]	= { 0, ODSM_WIRE_MAX_DATA, true },
	[ODSM_MSG_WRITE]	= { ODSM_WIRE_RW_SIZE,
				    ODSM_WIRE_RW_SIZE + ODSM_WIRE_MAX_DATA,
				    false },
	[ODSM_MSG_WRITE_REPLY]	= { 0, 0, true },
	[ODSM_MSG_ALLOC]	= { ODSM_WIRE_ALLOC_SIZE, ODSM_WIRE_ALLOC_SIZE,
				    false },
	[ODSM_MSG_ALLOC_REPLY]	= { ODSM_WIRE_ALLOC_REPLY_SIZE,
				    ODSM_WIRE_ALLOC_REPLY_SIZE, true },
	[ODSM_MSG_FREE]		= { ODSM_WIRE_FREE_SIZE, ODSM_WIRE_FREE_SIZE,
				    false },
	[ODSM_MSG_FREE_REPLY]	= { 0, 0, true },
	[ODSM_MSG_ATOMIC]	= { ODSM_WIRE_ATOMIC_SIZE, ODSM_WIRE_ATOMIC_SIZE,
				    false },
	[ODSM_MSG_ATOMIC_REPLY]	= { ODSM_WIRE_ATOMIC_REPLY_SIZE,
				    ODSM_WIRE_ATOMIC_REPLY_SIZE, true },
	[ODSM_MSG_FETCH]	= { ODSM_WIRE_FETCH_SIZE, ODSM_WIRE_FETCH_SIZE,
				    false },
	[ODSM_MSG_FETCH_REPLY]	= { ODSM_WIRE_FETCH_REPLY_SIZE,
				    ODSM_WIRE_FETCH_REPLY_SIZE +
				    ODSM_WIRE_MAX_DATA, true },
	[ODSM_MSG_MAP]		= { ODSM_WIRE_MAP_SIZE, ODSM_WIRE_MAP_SIZE,
				    false },
	[ODSM_MSG_MAP_REPLY]	= { ODSM_WIRE_MAP_REPLY_SIZE,
				    ODSM_WIRE_MAP_REPLY_SIZE, true },
	[ODSM_MSG_KEYS]		= { ODSM_WIRE_KEYS_HDR_SIZE +
				    ODSM_WIRE_MAP_REPLY_SIZE,
				    ODSM_WIRE_KEYS_HDR_SIZE + ODSM_WIRE_KEYS_MAX *
				    ODSM_WIRE_MAP_REPLY_SIZE, false },
	[ODSM_MSG_DELEG]	= { ODSM_WIRE_DELEG_SIZE + ODSM_WIRE_DSLOT_MIN,
				    ODSM_WIRE_DELEG_SIZE + ODSM_WIRE_DSLOT_MAX,
				    false },
	[ODSM_MSG_DELEG_REPLY]	= { ODSM_WIRE_DSLOT_MIN, ODSM_WIRE_DSLOT_MAX,
				    true },
	[ODSM_MSG_FETCH_MANY]	= { ODSM_WIRE_FETCH_MANY_HDR_SIZE + 8,
				    ODSM_WIRE_FETCH_MANY_HDR_SIZE +
				    8 * ODSM_WIRE_FETCH_MANY_MAX, false },
	[ODSM_MSG_FETCH_MANY_REPLY] = { ODSM_WIRE_FETCH_ITEM_SIZE,
					ODSM_WIRE_MAX_DATA, true },
	[ODSM_MSG_WAKE]		= { ODSM_WIRE_WAKE_SIZE, ODSM_WIRE_WAKE_SIZE,
				    false },
	[ODSM_MSG_WAKE_REPLY]	= { ODSM_WIRE_WAKE_REPLY_SIZE,
				    ODSM_WIRE_WAKE_REPLY_SIZE, true },
	[ODSM_MSG_AQP]		= { ODSM_WIRE_AQP_SIZE, ODSM_WIRE_AQP_SIZE,
				    false },
	[ODSM_MSG_AQP_REPLY]	= { ODSM_WIRE_AQP_SIZE, ODSM_WIRE_AQP_SIZE,
				    true },
	[ODSM_MSG_KEYS_ASK]	= { ODSM_WIRE_KEYS_ASK_SIZE,
				    ODSM_WIRE_KEYS_ASK_SIZE, false },
};

void odsm_wire_put_hdr(u8 *buf, const struct odsm_wire_hdr *h)
{
	wire_put_le32(buf, h->magic);
	buf[4] = h->version;
	buf[5] = h->type;
	wire_put_le16(buf + 6, h->flags);
	wire_put_le32(buf + 8, h->src_node);
	wire_put_le32(buf + 12, h->dst_node);
	wire_put_le64(buf + 16, h->seq);
	wire_put_le32(buf + 24, h->len);
	wire_put_le32(buf + 28, (u32)h->status);
}

bool odsm_wire_hdr_is_reply(const u8 *buf)
{
	return wire_get_le16(buf + 6) & ODSM_WIRE_F_REPLY;
}

int odsm_wire_get_hdr(const u8 *buf, struct odsm_wire_hdr *h, u32 self_node,
		      u32 nr_nodes)
{
	const struct wire_type *t;
	bool reply;

	h->magic = wire_get_le32(buf);
	h->version = buf[4];
	h->type = buf[5];
	h->flags = wire_get_le16(buf + 6);
	h->src_node = wire_get_le32(buf + 8);
	h->dst_node = wire_get_le32(buf + 12);
	h->seq = wire_get_le64(buf + 16);
	h->len = wire_get_le32(buf + 24);
	h->status = (s32)wire_get_le32(buf + 28);

	if (h->magic != ODSM_WIRE_MAGIC || h->version != ODSM_WIRE_VERSION)
		return -EPROTO;
	if (h->type == 0 || h->type >= ODSM_MSG_TYPE_MAX)
		return -EPROTO;
	t = &wire_types[h->type];
	if (h->flags & ~ODSM_WIRE_F_ALL)
		return -EPROTO;
	reply = h->flags & ODSM_WIRE_F_REPLY;
	if (reply != t->reply)
		return -EPROTO;
	if (h->src_node >= nr_nodes || h->src_node == self_node ||
	    h->dst_node != self_node)
		return -EPROTO;
	if (h->status > 0 || h->status < ODSM_WIRE_STATUS_MIN ||
	    (!reply && h->status))
		return -EPROTO;
	if (h->status < 0)
		return h->len ? -EMSGSIZE : 0;
	if (h->len < t->min_len || h->len > t->max_len)
		return -EMSGSIZE;
	return 0;
}

int odsm_wire_errno(s32 status)
{
	/* include/linux/errno.h: the kernel's own start at ERESTARTSYS */
	return status <= -512 ? -EPROTO : status;
}

/* ---- payloads ----------------------------------------------------------- */

u32 odsm_wire_put_hello(u8 *buf, const struct odsm_wire_hello *p)
{
	wire_put_le32(buf, p->node_id);
	wire_put_le32(buf + 4, p->nr_nodes);
	wire_put_le64(buf + 8, p->heap_base);
	wire_put_le64(buf + 16, p->part_size);
	wire_put_le64(buf + 24, p->incarnation);
	wire_put_le32(buf + 32, p->step);
	wire_put_le32(buf + 36, 0);
	memcpy(buf + 40, p->nonce, ODSM_WIRE_NONCE_SIZE);
	memcpy(buf + 72, p->proof, ODSM_WIRE_PROOF_SIZE);
	return ODSM_WIRE_HELLO_SIZE;
}

int odsm_wire_get_hello(const u8 *buf, u32 len, struct odsm_wire_hello *p)
{
	u32 i;

	if (len != ODSM_WIRE_HELLO_SIZE)
		return -EMSGSIZE;
	p->node_id = wire_get_le32(buf);
	p->nr_nodes = wire_get_le32(buf + 4);
	p->heap_base = wire_get_le64(buf + 8);
	p->part_size = wire_get_le64(buf + 16);
	p->incarnation = wire_get_le64(buf + 24);
	p->step = wire_get_le32(buf + 32);
	memcpy(p->nonce, buf + 40, ODSM_WIRE_NONCE_SIZE);
	memcpy(p->proof, buf + 72, ODSM_WIRE_PROOF_SIZE);
	if (p->node_id >= p->nr_nodes)
		return -EPROTO;
	if (p->step < ODSM_HELLO_OFFER || p->step > ODSM_HELLO_PROOF ||
	    wire_get_le32(buf + 36))
		return -EPROTO;
	/* the offer proves nothing yet: its proof field is reserved */
	if (p->step == ODSM_HELLO_OFFER) {
		for (i = 0; i < ODSM_WIRE_PROOF_SIZE; i++)
			if (p->proof[i])
				return -EPROTO;
	}
	return 0;
}

u32 odsm_wire_put_auth(u8 *buf, const struct odsm_wire_auth *a)
{
	wire_put_le32(buf, ODSM_WIRE_MAGIC);
	buf[4] = ODSM_WIRE_VERSION;
	buf[5] = 0;
	wire_put_le16(buf + 6, 0);
	wire_put_le32(buf + 8, a->step);
	wire_put_le32(buf + 12, a->prover);
	wire_put_le32(buf + 16, a->verifier);
	wire_put_le32(buf + 20, 0);
	wire_put_le64(buf + 24, a->dialer_inc);
	wire_put_le64(buf + 32, a->acceptor_inc);
	memcpy(buf + 40, a->dialer_nonce, ODSM_WIRE_NONCE_SIZE);
	memcpy(buf + 72, a->acceptor_nonce, ODSM_WIRE_NONCE_SIZE);
	return ODSM_WIRE_AUTH_SIZE;
}

u32 odsm_wire_put_ping(u8 *buf, const struct odsm_wire_ping *p)
{
	wire_put_le64(buf, p->send_ns);
	return ODSM_WIRE_PING_SIZE;
}

int odsm_wire_get_ping(const u8 *buf, u32 len, struct odsm_wire_ping *p)
{
	if (len != ODSM_WIRE_PING_SIZE)
		return -EMSGSIZE;
	p->send_ns = wire_get_le64(buf);
	return 0;
}

u32 odsm_wire_put_pong(u8 *buf, const struct odsm_wire_pong *p)
{
	wire_put_le64(buf, p->free_bytes);
	wire_put_le64(buf + 8, p->echo_ns);
	return ODSM_WIRE_PONG_SIZE;
}

int odsm_wire_get_pong(const u8 *buf, u32 len, struct odsm_wire_pong *p)
{
	if (len != ODSM_WIRE_PONG_SIZE)
		return -EMSGSIZE;
	p->free_bytes = wire_get_le64(buf);
	p->echo_ns = wire_get_le64(buf + 8);
	return 0;
}

u32 odsm_wire_put_rw(u8 *buf, const struct odsm_wire_rw *p)
{
	wire_put_le64(buf, p->gaddr);
	wire_put_le32(buf + 8, p->len);
	wire_put_le32(buf + 12, p->flags);
	return ODSM_WIRE_RW_SIZE;
}

int odsm_wire_get_rw(const u8 *buf, u32 len, bool with_data,
		     struct odsm_wire_rw *p)
{
	bool check;

	if (len < ODSM_WIRE_RW_SIZE)
		return -EMSGSIZE;
	p->gaddr = wire_get_le64(buf);
	p->len = wire_get_le32(buf + 8);
	p->flags = wire_get_le32(buf + 12);
	check = !with_data && p->flags == ODSM_WIRE_RW_CHECK;
	if (p->len == 0 || (!check && p->len > ODSM_WIRE_MAX_DATA))
		return -EMSGSIZE;
	/* cannot overflow: with data, p->len <= ODSM_WIRE_MAX_DATA */
	if (len != ODSM_WIRE_RW_SIZE + (with_data ? p->len : 0))
		return -EMSGSIZE;
	switch (p->flags) {
	case 0:
		break;
	case ODSM_WIRE_RW_CHECK:
		if (with_data)
			return -EPROTO;
		break;
	case ODSM_WIRE_RW_OWNER | ODSM_WIRE_RW_IF_EMPTY:	/* a WRITE's */
	case ODSM_WIRE_RW_OWNER:	/* one whole owner box */
		if ((p->flags & ODSM_WIRE_RW_IF_EMPTY) && !with_data)
			return -EPROTO;
		if (p->len != ODSM_WIRE_BOX_SIZE ||
		    p->gaddr % ODSM_WIRE_BOX_SIZE)
			return -EPROTO;
		break;
	default:
		return -EPROTO;
	}
	if (p->gaddr >= WIRE_ADDR_LIMIT || p->len > WIRE_ADDR_LIMIT - p->gaddr)
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_alloc(u8 *buf, const struct odsm_wire_alloc *p)
{
	wire_put_le64(buf, p->size);
	wire_put_le32(buf + 8, p->align);
	wire_put_le32(buf + 12, p->flags);
	return ODSM_WIRE_ALLOC_SIZE;
}

int odsm_wire_get_alloc(const u8 *buf, u32 len, struct odsm_wire_alloc *p)
{
	if (len != ODSM_WIRE_ALLOC_SIZE)
		return -EMSGSIZE;
	p->size = wire_get_le64(buf);
	p->align = wire_get_le32(buf + 8);
	p->flags = wire_get_le32(buf + 12);
	if (p->size == 0)
		return -EPROTO;
	if (p->align && (!is_power_of_2(p->align) ||
			 p->align > WIRE_MAX_ALIGN))
		return -EPROTO;
	if (p->flags & ~ODSM_WIRE_ALLOC_FLAGS)
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_alloc_reply(u8 *buf, const struct odsm_wire_alloc_reply *p)
{
	wire_put_le64(buf, p->gaddr);
	wire_put_le64(buf + 8, p->usable);
	return ODSM_WIRE_ALLOC_REPLY_SIZE;
}

int odsm_wire_get_alloc_reply(const u8 *buf, u32 len,
			      struct odsm_wire_alloc_reply *p)
{
	if (len != ODSM_WIRE_ALLOC_REPLY_SIZE)
		return -EMSGSIZE;
	p->gaddr = wire_get_le64(buf);
	p->usable = wire_get_le64(buf + 8);
	return 0;
}

u32 odsm_wire_put_free(u8 *buf, const struct odsm_wire_free *p)
{
	wire_put_le64(buf, p->gaddr);
	return ODSM_WIRE_FREE_SIZE;
}

int odsm_wire_get_free(const u8 *buf, u32 len, struct odsm_wire_free *p)
{
	if (len != ODSM_WIRE_FREE_SIZE)
		return -EMSGSIZE;
	p->gaddr = wire_get_le64(buf);
	return 0;
}

u32 odsm_wire_put_atomic(u8 *buf, const struct odsm_wire_atomic *p)
{
	wire_put_le64(buf, p->gaddr);
	wire_put_le32(buf + 8, p->op);
	wire_put_le32(buf + 12, p->flags);
	wire_put_le64(buf + 16, p->operand);
	wire_put_le64(buf + 24, p->compare);
	return ODSM_WIRE_ATOMIC_SIZE;
}

int odsm_wire_get_atomic(const u8 *buf, u32 len, struct odsm_wire_atomic *p)
{
	if (len != ODSM_WIRE_ATOMIC_SIZE)
		return -EMSGSIZE;
	p->gaddr = wire_get_le64(buf);
	p->op = wire_get_le32(buf + 8);
	p->flags = wire_get_le32(buf + 12);
	p->operand = wire_get_le64(buf + 16);
	p->compare = wire_get_le64(buf + 24);
	if (p->op != ODSM_WIRE_FETCH_ADD && p->op != ODSM_WIRE_CMP_SWAP)
		return -EPROTO;
	if ((p->flags & ~ODSM_WIRE_ATOMIC_F_ALL) || (p->gaddr & 7))
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_atomic_reply(u8 *buf, const struct odsm_wire_atomic_reply *p)
{
	wire_put_le64(buf, p->old);
	return ODSM_WIRE_ATOMIC_REPLY_SIZE;
}

int odsm_wire_get_atomic_reply(const u8 *buf, u32 len,
			       struct odsm_wire_atomic_reply *p)
{
	if (len != ODSM_WIRE_ATOMIC_REPLY_SIZE)
		return -EMSGSIZE;
	p->old = wire_get_le64(buf);
	return 0;
}

u32 odsm_wire_put_wake(u8 *buf, const struct odsm_wire_wake *p)
{
	wire_put_le64(buf, p->gaddr);
	wire_put_le32(buf + 8, p->nr);
	wire_put_le32(buf + 12, p->flags);
	return ODSM_WIRE_WAKE_SIZE;
}

int odsm_wire_get_wake(const u8 *buf, u32 len, struct odsm_wire_wake *p)
{
	if (len != ODSM_WIRE_WAKE_SIZE)
		return -EMSGSIZE;
	p->gaddr = wire_get_le64(buf);
	p->nr = wire_get_le32(buf + 8);
	p->flags = wire_get_le32(buf + 12);
	if ((p->gaddr & 3) || p->gaddr >> 48 ||
	    p->nr > ODSM_WIRE_WAKE_NR_MAX || p->flags)
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_wake_reply(u8 *buf, const struct odsm_wire_wake_reply *p)
{
	wire_put_le32(buf, p->woken);
	wire_put_le32(buf + 4, p->reserved);
	return ODSM_WIRE_WAKE_REPLY_SIZE;
}

int odsm_wire_get_wake_reply(const u8 *buf, u32 len,
			     struct odsm_wire_wake_reply *p)
{
	if (len != ODSM_WIRE_WAKE_REPLY_SIZE)
		return -EMSGSIZE;
	p->woken = wire_get_le32(buf);
	p->reserved = wire_get_le32(buf + 4);
	if (p->woken > ODSM_WIRE_WAKE_NR_MAX || p->reserved)
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_fetch(u8 *buf, const struct odsm_wire_fetch *p)
{
	wire_put_le64(buf, p->gaddr);
	wire_put_le64(buf + 8, p->offset);
	wire_put_le32(buf + 16, p->len);
	wire_put_le32(buf + 20, p->whole);
	return ODSM_WIRE_FETCH_SIZE;
}

int odsm_wire_get_fetch(const u8 *buf, u32 len, struct odsm_wire_fetch *p)
{
	if (len != ODSM_WIRE_FETCH_SIZE)
		return -EMSGSIZE;
	p->gaddr = wire_get_le64(buf);
	p->offset = wire_get_le64(buf + 8);
	p->len = wire_get_le32(buf + 16);
	p->whole = wire_get_le32(buf + 20);
	if (p->len > ODSM_WIRE_MAX_DATA || p->whole > ODSM_WIRE_MAX_DATA)
		return -EMSGSIZE;
	if (p->offset >= WIRE_ADDR_LIMIT)
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_fetch_reply(u8 *buf, const struct odsm_wire_fetch_reply *p)
{
	wire_put_le64(buf, p->size);
	wire_put_le16(buf + 8, p->color);
	wire_put_le16(buf + 10, p->reserved);
	wire_put_le32(buf + 12, p->len);
	return ODSM_WIRE_FETCH_REPLY_SIZE;
}

int odsm_wire_get_fetch_reply(const u8 *buf, u32 len,
			      struct odsm_wire_fetch_reply *p)
{
	if (len < ODSM_WIRE_FETCH_REPLY_SIZE)
		return -EMSGSIZE;
	p->size = wire_get_le64(buf);
	p->color = wire_get_le16(buf + 8);
	p->reserved = wire_get_le16(buf + 10);
	p->len = wire_get_le32(buf + 12);
	if (p->len > ODSM_WIRE_MAX_DATA ||
	    len != ODSM_WIRE_FETCH_REPLY_SIZE + p->len)
		return -EMSGSIZE;
	if (p->reserved || p->len > p->size)
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_fetch_many(u8 *buf, const struct odsm_wire_fetch_many *p,
			     const u64 *gaddr)
{
	u32 i;

	wire_put_le32(buf, p->count);
	wire_put_le32(buf + 4, p->len);
	for (i = 0; i < p->count; i++)
		wire_put_le64(buf + ODSM_WIRE_FETCH_MANY_HDR_SIZE + 8 * i,
			      gaddr[i]);
	return ODSM_WIRE_FETCH_MANY_HDR_SIZE + 8 * p->count;
}

int odsm_wire_get_fetch_many(const u8 *buf, u32 len,
			     struct odsm_wire_fetch_many *p)
{
	if (len < ODSM_WIRE_FETCH_MANY_HDR_SIZE)
		return -EMSGSIZE;
	p->count = wire_get_le32(buf);
	p->len = wire_get_le32(buf + 4);
	if (!p->count || p->count > ODSM_WIRE_FETCH_MANY_MAX ||
	    len != ODSM_WIRE_FETCH_MANY_HDR_SIZE + 8 * p->count)
		return -EMSGSIZE;
	if (!p->len || p->len > ODSM_WIRE_FETCH_MANY_LEN ||
	    odsm_wire_fetch_many_room(p->count, p->len) > ODSM_WIRE_MAX_DATA)
		return -EPROTO;
	return 0;
}

u64 odsm_wire_fetch_many_room(u32 count, u32 len)
{
	return (u64)count * (ODSM_WIRE_FETCH_ITEM_SIZE +
			     odsm_wire_fetch_item_padded(len));
}

u64 odsm_wire_fetch_many_addr(const u8 *buf, u32 i)
{
	return wire_get_le64(buf + ODSM_WIRE_FETCH_MANY_HDR_SIZE + 8 * i);
}

void odsm_wire_put_fetch_item(u8 *buf, const struct odsm_wire_fetch_item *p)
{
	wire_put_le64(buf, p->size);
	wire_put_le16(buf + 8, p->color);
	wire_put_le16(buf + 10, p->reserved);
	wire_put_le32(buf + 12, p->len);
	wire_put_le32(buf + 16, (u32)p->status);
	wire_put_le32(buf + 20, p->reserved2);
}

void odsm_wire_get_fetch_item(const u8 *buf, u32 i,
			      struct odsm_wire_fetch_item *p, u32 *data_off)
{
	const u8 *b = buf + i * ODSM_WIRE_FETCH_ITEM_SIZE;

	p->size = wire_get_le64(b);
	p->color = wire_get_le16(b + 8);
	p->reserved = wire_get_le16(b + 10);
	p->len = wire_get_le32(b + 12);
	p->status = (s32)wire_get_le32(b + 16);
	p->reserved2 = wire_get_le32(b + 20);
	if (data_off && !p->status)
		*data_off += odsm_wire_fetch_item_padded(p->len);
}

int odsm_wire_check_fetch_many_reply(const u8 *buf, u32 len, u32 count,
				     u32 want)
{
	struct odsm_wire_fetch_item it;
	u64 end = (u64)count * ODSM_WIRE_FETCH_ITEM_SIZE;
	u32 i, off = 0;

	if (!count || count > ODSM_WIRE_FETCH_MANY_MAX || !want ||
	    want > ODSM_WIRE_FETCH_MANY_LEN || len < end)
		return -EMSGSIZE;
	for (i = 0; i < count; i++) {
		/* no data_off yet: len is checked before it is added */
		odsm_wire_get_fetch_item(buf, i, &it, NULL);
		if (it.reserved || it.reserved2 || it.status > 0 ||
		    it.status < ODSM_WIRE_STATUS_MIN)
			return -EPROTO;
		if (it.status ? it.size || it.color || it.len :
		    !it.size || it.len != (it.size < want ? it.size : want))
			return -EPROTO;
		off += odsm_wire_fetch_item_padded(it.len); /* <= 64 * 4096 */
	}
	return end + off == len ? 0 : -EMSGSIZE;
}

u32 odsm_wire_put_map(u8 *buf, const struct odsm_wire_map *p)
{
	wire_put_le64(buf, p->gaddr);
	return ODSM_WIRE_MAP_SIZE;
}

static bool wire_map_addr_ok(u64 gaddr)
{
	return gaddr < WIRE_ADDR_LIMIT && !(gaddr % ODSM_WIRE_MAP_LEN);
}

int odsm_wire_get_map(const u8 *buf, u32 len, struct odsm_wire_map *p)
{
	if (len != ODSM_WIRE_MAP_SIZE)
		return -EMSGSIZE;
	p->gaddr = wire_get_le64(buf);
	return wire_map_addr_ok(p->gaddr) ? 0 : -EPROTO;
}

u32 odsm_wire_put_map_reply(u8 *buf, const struct odsm_wire_map_reply *p)
{
	wire_put_le64(buf, p->gaddr);
	wire_put_le64(buf + 8, p->iova);
	wire_put_le32(buf + 16, p->len);
	wire_put_le32(buf + 20, p->rkey);
	wire_put_le32(buf + 24, p->flags);
	wire_put_le32(buf + 28, p->reserved);
	return ODSM_WIRE_MAP_REPLY_SIZE;
}

int odsm_wire_get_map_reply(const u8 *buf, u32 len,
			    struct odsm_wire_map_reply *p)
{
	if (len != ODSM_WIRE_MAP_REPLY_SIZE)
		return -EMSGSIZE;
	p->gaddr = wire_get_le64(buf);
	p->iova = wire_get_le64(buf + 8);
	p->len = wire_get_le32(buf + 16);
	p->rkey = wire_get_le32(buf + 20);
	p->flags = wire_get_le32(buf + 24);
	p->reserved = wire_get_le32(buf + 28);
	if ((p->flags & ~ODSM_WIRE_MAP_F_ALL) || p->reserved)
		return -EPROTO;
	if (!wire_map_addr_ok(p->gaddr) || p->len != ODSM_WIRE_MAP_LEN ||
	    p->iova % 4096 || p->iova > ~0ULL - (ODSM_WIRE_MAP_LEN - 1))
		return -EPROTO;
	/* the words past the block must not wrap either */
	if ((p->flags & ODSM_WIRE_MAP_F_PUB) &&
	    p->iova > ~0ULL - (ODSM_WIRE_MAP_LEN + ODSM_WIRE_MAP_PUB_LEN - 1))
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_aqp(u8 *buf, const struct odsm_wire_aqp *p)
{
	wire_put_le32(buf, p->qpn);
	wire_put_le32(buf + 4, p->psn);
	wire_put_le32(buf + 8, p->depth);
	wire_put_le32(buf + 12, p->reserved);
	return ODSM_WIRE_AQP_SIZE;
}

int odsm_wire_get_aqp(const u8 *buf, u32 len, struct odsm_wire_aqp *p)
{
	if (len != ODSM_WIRE_AQP_SIZE)
		return -EMSGSIZE;
	p->qpn = wire_get_le32(buf);
	p->psn = wire_get_le32(buf + 4);
	p->depth = wire_get_le32(buf + 8);
	p->reserved = wire_get_le32(buf + 12);
	if (!p->qpn || p->qpn > ODSM_WIRE_AQP_24BIT ||
	    p->psn > ODSM_WIRE_AQP_24BIT || !p->depth ||
	    p->depth > ODSM_WIRE_AQP_DEPTH_MAX || p->reserved)
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_keys(u8 *buf, const struct odsm_wire_keys *p)
{
	wire_put_le32(buf, p->nr);
	wire_put_le32(buf + 4, p->reserved);
	return ODSM_WIRE_KEYS_HDR_SIZE;
}

int odsm_wire_get_keys(const u8 *buf, u32 len, struct odsm_wire_keys *p)
{
	if (len < ODSM_WIRE_KEYS_HDR_SIZE)
		return -EMSGSIZE;
	p->nr = wire_get_le32(buf);
	p->reserved = wire_get_le32(buf + 4);
	if (!p->nr || p->nr > ODSM_WIRE_KEYS_MAX || p->reserved)
		return -EPROTO;
	if (len != ODSM_WIRE_KEYS_HDR_SIZE + p->nr * ODSM_WIRE_MAP_REPLY_SIZE)
		return -EMSGSIZE;
	return 0;
}

u32 odsm_wire_put_keys_ask(u8 *buf, const struct odsm_wire_keys_ask *p)
{
	wire_put_le64(buf, p->gaddr);
	wire_put_le32(buf + 8, p->nr);
	wire_put_le32(buf + 12, p->reserved);
	return ODSM_WIRE_KEYS_ASK_SIZE;
}

int odsm_wire_get_keys_ask(const u8 *buf, u32 len,
			   struct odsm_wire_keys_ask *p)
{
	if (len != ODSM_WIRE_KEYS_ASK_SIZE)
		return -EMSGSIZE;
	p->gaddr = wire_get_le64(buf);
	p->nr = wire_get_le32(buf + 8);
	p->reserved = wire_get_le32(buf + 12);
	if (!wire_map_addr_ok(p->gaddr) || !p->nr ||
	    p->nr > ODSM_WIRE_KEYS_ASK_MAX || p->reserved)
		return -EPROTO;
	return 0;
}

u32 odsm_wire_put_deleg(u8 *buf, const struct odsm_wire_deleg *p)
{
	wire_put_le64(buf, p->endpoint);
	wire_put_le32(buf + 8, p->slot_size);
	wire_put_le32(buf + 12, p->wait_ms);
	return ODSM_WIRE_DELEG_SIZE;
}

int odsm_wire_get_deleg(const u8 *buf, u32 len, struct odsm_wire_deleg *p)
{
	u32 s;

	if (len < ODSM_WIRE_DELEG_SIZE + ODSM_WIRE_DSLOT_MIN ||
	    len > ODSM_WIRE_DELEG_SIZE + ODSM_WIRE_DSLOT_MAX)
		return -EMSGSIZE;
	p->endpoint = wire_get_le64(buf);
	p->slot_size = wire_get_le32(buf + 8);
	p->wait_ms = wire_get_le32(buf + 12);
	s = p->slot_size;
	if (!p->wait_ms || p->wait_ms > ODSM_WIRE_DELEG_WAIT_MAX ||
	    s < 256 || s > ODSM_WIRE_DSLOT_MAX || (s & (s - 1)))
		return -EPROTO;
	if (len - ODSM_WIRE_DELEG_SIZE > s)
		return -EMSGSIZE;
	return 0;
}
