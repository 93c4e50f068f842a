// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of kmod/odsm_wire.c: the wire form of every header and
 * payload (golden bytes pin the little-endian layout), every validation
 * rule, truncated payloads, and a fuzz run checked against an independent
 * reference of the rules.  Every decoder reads from a heap buffer of exactly
 * the length it is given, so AddressSanitizer catches any read past it.
 */
#include "odsm_wire.h"

#include <limits.h>
#include <stdio.h>

#include "ksft_host.h"

/* the receiving node of most tests: node 2 of 4, hearing from node 1 */
#define SELF		2U
#define NR		4U
#define PEER		1U

#define STATUS_MIN	(-4095)

/* ---- an independent reference of the format and its rules -------------- */

static u64 ref_le(const u8 *p, unsigned int n)
{
	u64 v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void ref_put_le(u8 *p, u64 v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++, v >>= 8)
		p[i] = v & 0xff;
}

static bool ref_is_reply(unsigned int type)
{
	switch (type) {
	case ODSM_MSG_PONG:
	case ODSM_MSG_READ_REPLY:
	case ODSM_MSG_WRITE_REPLY:
	case ODSM_MSG_ALLOC_REPLY:
	case ODSM_MSG_FREE_REPLY:
	case ODSM_MSG_ATOMIC_REPLY:
	case ODSM_MSG_FETCH_REPLY:
	case ODSM_MSG_MAP_REPLY:
	case ODSM_MSG_DELEG_REPLY:
	case ODSM_MSG_FETCH_MANY_REPLY:
	case ODSM_MSG_WAKE_REPLY:
	case ODSM_MSG_AQP_REPLY:
		return true;
	}
	return false;
}

/* payload bounds of a type when its status is 0 */
static void ref_bounds(unsigned int type, u32 *min, u32 *max)
{
	switch (type) {
	case ODSM_MSG_HELLO:
		*min = *max = 104;
		break;
	case ODSM_MSG_PING:
	case ODSM_MSG_MAP:
		*min = *max = 8;
		break;
	case ODSM_MSG_MAP_REPLY:
		*min = *max = 32;
		break;
	case ODSM_MSG_KEYS:
		*min = 8 + 32;
		*max = 8 + 4096 * 32;
		break;
	case ODSM_MSG_PONG:
	case ODSM_MSG_READ:
	case ODSM_MSG_ALLOC:
	case ODSM_MSG_ALLOC_REPLY:
	case ODSM_MSG_WAKE:
	case ODSM_MSG_AQP:
	case ODSM_MSG_AQP_REPLY:
	case ODSM_MSG_KEYS_ASK:
		*min = *max = 16;
		break;
	case ODSM_MSG_READ_REPLY:
		*min = 0;
		*max = 256 * 1024;
		break;
	case ODSM_MSG_WRITE:
		*min = 16;
		*max = 16 + 256 * 1024;
		break;
	case ODSM_MSG_FREE:
	case ODSM_MSG_ATOMIC_REPLY:
	case ODSM_MSG_WAKE_REPLY:
		*min = *max = 8;
		break;
	case ODSM_MSG_ATOMIC:
		*min = *max = 32;
		break;
	case ODSM_MSG_FETCH:
		*min = *max = 24;
		break;
	case ODSM_MSG_FETCH_REPLY:
		*min = 16;
		*max = 16 + 256 * 1024;
		break;
	case ODSM_MSG_DELEG:		/* the fixed part, then a batch */
		*min = 16 + 16;
		*max = 16 + 65536;
		break;
	case ODSM_MSG_DELEG_REPLY:	/* a response batch */
		*min = 16;
		*max = 65536;
		break;
	case ODSM_MSG_FETCH_MANY:	/* count, len, 1..64 addresses */
		*min = 8 + 8;
		*max = 8 + 64 * 8;
		break;
	case ODSM_MSG_FETCH_MANY_REPLY:	/* items, then their data */
		*min = 24;
		*max = 256 * 1024;
		break;
	default:	/* WRITE_REPLY, FREE_REPLY */
		*min = *max = 0;
		break;
	}
}

/* 0, -EPROTO or -EMSGSIZE for 32 raw header bytes */
static int ref_check_hdr(const u8 *b, u32 self, u32 nr)
{
	u32 magic = ref_le(b, 4), src = ref_le(b + 8, 4);
	u32 dst = ref_le(b + 12, 4), len = ref_le(b + 24, 4);
	u16 flags = ref_le(b + 6, 2);
	s64 status = (s32)(u32)ref_le(b + 28, 4);
	unsigned int type = b[5];
	bool reply = flags & 1;
	u32 min, max;

	if (b[0] != 'O' || b[1] != 'D' || b[2] != 'S' || b[3] != 'M' ||
	    magic != 0x4d53444f || b[4] != 13)
		return -EPROTO;
	if (type < 1 || type > 27 || (flags & ~1) ||
	    reply != ref_is_reply(type))
		return -EPROTO;
	if (src >= nr || src == self || dst != self)
		return -EPROTO;
	if (status > 0 || status < -4095 || (!reply && status != 0))
		return -EPROTO;
	if (status < 0)
		return len == 0 ? 0 : -EMSGSIZE;
	ref_bounds(type, &min, &max);
	return len >= min && len <= max ? 0 : -EMSGSIZE;
}

/* a valid header of type from PEER to SELF */
static struct odsm_wire_hdr mk_hdr(unsigned int type, u32 len)
{
	struct odsm_wire_hdr h = {
		.magic = ODSM_WIRE_MAGIC,
		.version = ODSM_WIRE_VERSION,
		.type = type,
		.flags = ref_is_reply(type) ? ODSM_WIRE_F_REPLY : 0,
		.src_node = PEER,
		.dst_node = SELF,
		.seq = 0x0102030405060708ULL,
		.len = len,
		.status = 0,
	};
	return h;
}

/* put h, then get it back as node self of nr */
static int put_get(const struct odsm_wire_hdr *h, u32 self, u32 nr)
{
	u8 *raw = malloc(ODSM_WIRE_HDR_SIZE);
	struct odsm_wire_hdr out;
	int ret;

	odsm_wire_put_hdr(raw, h);
	ret = odsm_wire_get_hdr(raw, &out, self, nr);
	free(raw);
	return ret;
}

static int hdr_ret(const struct odsm_wire_hdr *h)
{
	return put_get(h, SELF, NR);
}

/* a copy of buf in a heap buffer of exactly len bytes (NULL for 0) */
static u8 *exact(const u8 *buf, u32 len)
{
	u8 *p;

	if (!len)
		return NULL;
	p = malloc(len);
	memcpy(p, buf, len);
	return p;
}

/* ---- the constants are part of the wire format ------------------------- */

TEST(constants)
{
	u8 raw[4];

	ASSERT_EQ(32, ODSM_WIRE_HDR_SIZE);
	ASSERT_EQ(13, ODSM_WIRE_VERSION);
	ref_put_le(raw, ODSM_WIRE_MAGIC, 4);
	ASSERT_EQ(0, memcmp(raw, "ODSM", 4));
	ASSERT_EQ(262144U, ODSM_WIRE_MAX_DATA);
	ASSERT_GE(ODSM_WIRE_MAX_PAYLOAD, ODSM_WIRE_RW_SIZE + ODSM_WIRE_MAX_DATA);
	ASSERT_EQ(1, ODSM_WIRE_F_REPLY);

	ASSERT_EQ(1, ODSM_MSG_HELLO);
	ASSERT_EQ(2, ODSM_MSG_PING);
	ASSERT_EQ(3, ODSM_MSG_PONG);
	ASSERT_EQ(4, ODSM_MSG_READ);
	ASSERT_EQ(5, ODSM_MSG_READ_REPLY);
	ASSERT_EQ(6, ODSM_MSG_WRITE);
	ASSERT_EQ(7, ODSM_MSG_WRITE_REPLY);
	ASSERT_EQ(8, ODSM_MSG_ALLOC);
	ASSERT_EQ(9, ODSM_MSG_ALLOC_REPLY);
	ASSERT_EQ(10, ODSM_MSG_FREE);
	ASSERT_EQ(11, ODSM_MSG_FREE_REPLY);
	ASSERT_EQ(12, ODSM_MSG_ATOMIC);
	ASSERT_EQ(13, ODSM_MSG_ATOMIC_REPLY);
	ASSERT_EQ(14, ODSM_MSG_FETCH);
	ASSERT_EQ(15, ODSM_MSG_FETCH_REPLY);
	ASSERT_EQ(16, ODSM_MSG_MAP);
	ASSERT_EQ(17, ODSM_MSG_MAP_REPLY);
	ASSERT_EQ(18, ODSM_MSG_KEYS);
	ASSERT_EQ(19, ODSM_MSG_DELEG);
	ASSERT_EQ(20, ODSM_MSG_DELEG_REPLY);
	ASSERT_EQ(21, ODSM_MSG_FETCH_MANY);
	ASSERT_EQ(22, ODSM_MSG_FETCH_MANY_REPLY);
	ASSERT_EQ(23, ODSM_MSG_WAKE);
	ASSERT_EQ(24, ODSM_MSG_WAKE_REPLY);
	ASSERT_EQ(25, ODSM_MSG_AQP);
	ASSERT_EQ(26, ODSM_MSG_AQP_REPLY);
	ASSERT_EQ(27, ODSM_MSG_KEYS_ASK);
	ASSERT_EQ(28, ODSM_MSG_TYPE_MAX);
	ASSERT_EQ(16, ODSM_WIRE_KEYS_ASK_SIZE);
	ASSERT_EQ(256U, ODSM_WIRE_KEYS_ASK_MAX);
	ASSERT_EQ(16, ODSM_WIRE_AQP_SIZE);
	ASSERT_EQ(16, ODSM_WIRE_WAKE_SIZE);
	ASSERT_EQ(8, ODSM_WIRE_WAKE_REPLY_SIZE);
	ASSERT_EQ(8, ODSM_WIRE_FETCH_MANY_HDR_SIZE);
	ASSERT_EQ(24, ODSM_WIRE_FETCH_ITEM_SIZE);
	ASSERT_EQ(64U, ODSM_WIRE_FETCH_MANY_MAX);
	ASSERT_EQ(4096U, ODSM_WIRE_FETCH_MANY_LEN);
	ASSERT_EQ(16, ODSM_WIRE_DELEG_SIZE);
	ASSERT_EQ(8, ODSM_WIRE_KEYS_HDR_SIZE);
	ASSERT_EQ(4096U, ODSM_WIRE_KEYS_MAX);
	ASSERT_EQ(8, ODSM_WIRE_MAP_SIZE);
	ASSERT_EQ(32, ODSM_WIRE_MAP_REPLY_SIZE);
	ASSERT_EQ(1, ODSM_WIRE_MAP_F_ATOMIC);
	ASSERT_EQ(2, ODSM_WIRE_MAP_F_PUB);
	ASSERT_EQ(4, ODSM_WIRE_MAP_F_INORDER);
	ASSERT_EQ(4096U, ODSM_WIRE_MAP_PUB_LEN);
	ASSERT_EQ(1, ODSM_WIRE_ATOMIC_F_NIC);
	ASSERT_EQ(65536U, ODSM_WIRE_MAP_LEN);

	ASSERT_EQ(104, ODSM_WIRE_HELLO_SIZE);
	ASSERT_EQ(104, ODSM_WIRE_AUTH_SIZE);
	ASSERT_EQ(32, ODSM_WIRE_NONCE_SIZE);
	ASSERT_EQ(32, ODSM_WIRE_PROOF_SIZE);
	ASSERT_EQ(1, ODSM_HELLO_OFFER);
	ASSERT_EQ(2, ODSM_HELLO_CHALLENGE);
	ASSERT_EQ(3, ODSM_HELLO_PROOF);
	ASSERT_EQ(8, ODSM_WIRE_PING_SIZE);
	ASSERT_EQ(16, ODSM_WIRE_PONG_SIZE);
	ASSERT_EQ(16, ODSM_WIRE_RW_SIZE);
	ASSERT_EQ(16, ODSM_WIRE_ALLOC_SIZE);
	ASSERT_EQ(16, ODSM_WIRE_ALLOC_REPLY_SIZE);
	ASSERT_EQ(8, ODSM_WIRE_FREE_SIZE);
	ASSERT_EQ(32, ODSM_WIRE_ATOMIC_SIZE);
	ASSERT_EQ(8, ODSM_WIRE_ATOMIC_REPLY_SIZE);
	ASSERT_EQ(24, ODSM_WIRE_FETCH_SIZE);
	ASSERT_EQ(16, ODSM_WIRE_FETCH_REPLY_SIZE);

	ASSERT_EQ(1, ODSM_WIRE_FETCH_ADD);
	ASSERT_EQ(2, ODSM_WIRE_CMP_SWAP);
	ASSERT_EQ(1, ODSM_WIRE_ALLOC_ZERO);
	ASSERT_EQ(1, ODSM_WIRE_ALLOC_FLAGS);
}

static bool hello_eq(const struct odsm_wire_hello *a,
		     const struct odsm_wire_hello *b)
{
	return a->node_id == b->node_id && a->nr_nodes == b->nr_nodes &&
	       a->heap_base == b->heap_base && a->part_size == b->part_size &&
	       a->incarnation == b->incarnation && a->step == b->step &&
	       !memcmp(a->nonce, b->nonce, sizeof(a->nonce)) &&
	       !memcmp(a->proof, b->proof, sizeof(a->proof));
}

/* ---- golden bytes -------------------------------------------------------- */

TEST(hdr_golden)
{
	static const u8 golden[ODSM_WIRE_HDR_SIZE] = {
		'O', 'D', 'S', 'M',		/* magic */
		0x0d,				/* version */
		0x05,				/* type: READ_REPLY */
		0x01, 0x00,			/* flags: REPLY */
		0x44, 0x33, 0x22, 0x11,		/* src_node */
		0x88, 0x77, 0x66, 0x55,		/* dst_node */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* seq */
		0x00, 0x00, 0x00, 0x00,		/* len */
		0xfe, 0xff, 0xff, 0xff,		/* status: -2 */
	};
	struct odsm_wire_hdr h = {
		.magic = ODSM_WIRE_MAGIC,
		.version = 13,
		.type = ODSM_MSG_READ_REPLY,
		.flags = ODSM_WIRE_F_REPLY,
		.src_node = 0x11223344,
		.dst_node = 0x55667788,
		.seq = 0x0102030405060708ULL,
		.len = 0,
		.status = -2,
	}, out;
	u8 raw[ODSM_WIRE_HDR_SIZE + 8];
	unsigned int i;

	memset(raw, 0xa5, sizeof(raw));
	odsm_wire_put_hdr(raw, &h);
	for (i = 0; i < ODSM_WIRE_HDR_SIZE; i++) {
		EXPECT_EQ(golden[i], raw[i]) TH_LOG("byte %u", i);
	}
	for (; i < sizeof(raw); i++) {
		EXPECT_EQ(0xa5, raw[i]) TH_LOG("put_hdr wrote byte %u", i);
	}

	memset(&out, 0, sizeof(out));
	ASSERT_EQ(0, odsm_wire_get_hdr(golden, &out, 0x55667788, 0xffffffff));
	ASSERT_EQ(ODSM_WIRE_MAGIC, out.magic);
	ASSERT_EQ(13, out.version);
	ASSERT_EQ(ODSM_MSG_READ_REPLY, out.type);
	ASSERT_EQ(ODSM_WIRE_F_REPLY, out.flags);
	ASSERT_EQ(0x11223344U, out.src_node);
	ASSERT_EQ(0x55667788U, out.dst_node);
	ASSERT_EQ(0x0102030405060708ULL, out.seq);
	ASSERT_EQ(0U, out.len);
	ASSERT_EQ(-2, out.status);
	ASSERT_TRUE(odsm_wire_hdr_is_reply(golden));
}

/* odsm_wire_hdr_is_reply() reads the flag, and only the flag */
TEST(hdr_is_reply)
{
	struct odsm_wire_hdr h = mk_hdr(ODSM_MSG_FETCH, ODSM_WIRE_FETCH_SIZE);
	u8 raw[ODSM_WIRE_HDR_SIZE];

	odsm_wire_put_hdr(raw, &h);
	ASSERT_FALSE(odsm_wire_hdr_is_reply(raw));
	h.type = ODSM_MSG_FETCH_REPLY;
	h.flags = ODSM_WIRE_F_REPLY;
	odsm_wire_put_hdr(raw, &h);
	ASSERT_TRUE(odsm_wire_hdr_is_reply(raw));
	/* a forged one is still a reply here, refused by get_hdr */
	h.magic = 0;
	odsm_wire_put_hdr(raw, &h);
	ASSERT_TRUE(odsm_wire_hdr_is_reply(raw));
	ASSERT_EQ(-EPROTO, odsm_wire_get_hdr(raw, &h, SELF, NR));
}

/* a failing header is still decoded, so its sender can be reported */
TEST(hdr_filled_on_failure)
{
	u8 raw[ODSM_WIRE_HDR_SIZE];
	struct odsm_wire_hdr h = mk_hdr(ODSM_MSG_HELLO, ODSM_WIRE_HELLO_SIZE), out;

	h.version = 14;
	odsm_wire_put_hdr(raw, &h);
	memset(&out, 0, sizeof(out));
	ASSERT_EQ(-EPROTO, odsm_wire_get_hdr(raw, &out, SELF, NR));
	ASSERT_EQ(ODSM_WIRE_MAGIC, out.magic);
	ASSERT_EQ(14, out.version);
	ASSERT_EQ(ODSM_MSG_HELLO, out.type);
	ASSERT_EQ(PEER, out.src_node);
	ASSERT_EQ(SELF, out.dst_node);
	ASSERT_EQ(104U, out.len);
}

TEST(payload_golden)
{
	static const u8 golden[ODSM_WIRE_ATOMIC_SIZE] = {
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,	/* gaddr */
		0x02, 0x00, 0x00, 0x00,				/* op */
		0x00, 0x00, 0x00, 0x00,				/* reserved */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,	/* operand */
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21,	/* compare */
	};
	static const u8 hello_golden[ODSM_WIRE_HELLO_SIZE] = {
		0x04, 0x03, 0x02, 0x01,				/* node_id */
		0x08, 0x07, 0x06, 0x05,				/* nr_nodes */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,	/* heap_base */
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21,	/* part_size */
		0x38, 0x37, 0x36, 0x35, 0x34, 0x33, 0x32, 0x31,	/* incarnation */
		0x02, 0x00, 0x00, 0x00,				/* step */
		0x00, 0x00, 0x00, 0x00,				/* reserved */
		0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,	/* nonce */
		0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,
		0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,
		0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
		0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,	/* proof */
		0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f,
		0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,
		0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f,
	};
	struct odsm_wire_atomic a = {
		.gaddr = 0x0102030405060708ULL,
		.op = ODSM_WIRE_CMP_SWAP,
		.operand = 0x1112131415161718ULL,
		.compare = 0x2122232425262728ULL,
	}, a2;
	struct odsm_wire_hello he = {
		.node_id = 0x01020304,
		.nr_nodes = 0x05060708,
		.heap_base = 0x1112131415161718ULL,
		.part_size = 0x2122232425262728ULL,
		.incarnation = 0x3132333435363738ULL,
		.step = ODSM_HELLO_CHALLENGE,
	}, he2;
	u8 raw[128];
	unsigned int i;
	u8 *p;

	for (i = 0; i < ODSM_WIRE_NONCE_SIZE; i++) {
		he.nonce[i] = (u8)(0x40 + i);
		he.proof[i] = (u8)(0x80 + i);
	}

	memset(raw, 0xa5, sizeof(raw));
	ASSERT_EQ(32U, odsm_wire_put_atomic(raw, &a));
	ASSERT_EQ(0, memcmp(raw, golden, sizeof(golden)));
	ASSERT_EQ(0xa5, raw[32]);
	p = exact(golden, sizeof(golden));
	ASSERT_EQ(0, odsm_wire_get_atomic(p, sizeof(golden), &a2));
	free(p);
	ASSERT_EQ(a.gaddr, a2.gaddr);
	ASSERT_EQ(a.op, a2.op);
	ASSERT_EQ(0U, a2.flags);
	ASSERT_EQ(a.operand, a2.operand);
	ASSERT_EQ(a.compare, a2.compare);

	memset(raw, 0xa5, sizeof(raw));
	ASSERT_EQ(104U, odsm_wire_put_hello(raw, &he));
	ASSERT_EQ(0, memcmp(raw, hello_golden, sizeof(hello_golden)));
	ASSERT_EQ(0xa5, raw[104]);
	p = exact(hello_golden, sizeof(hello_golden));
	ASSERT_EQ(0, odsm_wire_get_hello(p, sizeof(hello_golden), &he2));
	free(p);
	ASSERT_TRUE(hello_eq(&he, &he2));
}

/* what a handshake proof is the HMAC of: every byte pinned */
TEST(auth_golden)
{
	static const u8 golden[ODSM_WIRE_AUTH_SIZE] = {
		'O', 'D', 'S', 'M',				/* magic */
		0x0d, 0x00, 0x00, 0x00,				/* version, 0 */
		0x03, 0x00, 0x00, 0x00,				/* step */
		0x04, 0x03, 0x02, 0x01,				/* prover */
		0x08, 0x07, 0x06, 0x05,				/* verifier */
		0x00, 0x00, 0x00, 0x00,				/* 0 */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,	/* dialer_inc */
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21,	/* acceptor_inc */
		0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,	/* dialer nonce */
		0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,
		0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57,
		0x58, 0x59, 0x5a, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
		0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,	/* acceptor nonce */
		0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f,
		0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,
		0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f,
	};
	u8 dn[ODSM_WIRE_NONCE_SIZE], an[ODSM_WIRE_NONCE_SIZE];
	struct odsm_wire_auth a = {
		.step = ODSM_HELLO_PROOF,
		.prover = 0x01020304,
		.verifier = 0x05060708,
		.dialer_inc = 0x1112131415161718ULL,
		.acceptor_inc = 0x2122232425262728ULL,
		.dialer_nonce = dn,
		.acceptor_nonce = an,
	};
	u8 raw[ODSM_WIRE_AUTH_SIZE + 8], other[ODSM_WIRE_AUTH_SIZE];
	unsigned int i;

	for (i = 0; i < ODSM_WIRE_NONCE_SIZE; i++) {
		dn[i] = (u8)(0x40 + i);
		an[i] = (u8)(0x80 + i);
	}
	memset(raw, 0xa5, sizeof(raw));
	ASSERT_EQ(104U, odsm_wire_put_auth(raw, &a));
	for (i = 0; i < ODSM_WIRE_AUTH_SIZE; i++) {
		EXPECT_EQ(golden[i], raw[i]) TH_LOG("byte %u", i);
	}
	for (; i < sizeof(raw); i++) {
		EXPECT_EQ(0xa5, raw[i]) TH_LOG("put_auth wrote byte %u", i);
	}
	/* the reflection of a proof (the other step, the other direction)
	 * and the swap of the nonces are different inputs
	 */
	a.step = ODSM_HELLO_CHALLENGE;
	odsm_wire_put_auth(other, &a);
	ASSERT_NE(0, memcmp(raw, other, sizeof(other)));
	a.step = ODSM_HELLO_PROOF;
	a.prover = 0x05060708;
	a.verifier = 0x01020304;
	odsm_wire_put_auth(other, &a);
	ASSERT_NE(0, memcmp(raw, other, sizeof(other)));
	a.prover = 0x01020304;
	a.verifier = 0x05060708;
	a.dialer_nonce = an;
	a.acceptor_nonce = dn;
	odsm_wire_put_auth(other, &a);
	ASSERT_NE(0, memcmp(raw, other, sizeof(other)));
}

/* ---- round trips --------------------------------------------------------- */

TEST(hdr_round_trip_every_type)
{
	static const s32 statuses[] = { 0, -1, -2, -22, -4095 };
	unsigned int type, s, k;

	for (type = 1; type < ODSM_MSG_TYPE_MAX; type++) {
		u32 min, max;

		ref_bounds(type, &min, &max);
		for (s = 0; s < ARRAY_SIZE(statuses); s++) {
			u32 lens[2] = { min, max };

			if (statuses[s] && !ref_is_reply(type))
				continue;
			if (statuses[s])
				lens[0] = lens[1] = 0;
			for (k = 0; k < 2; k++) {
				struct odsm_wire_hdr h = {
					.magic = ODSM_WIRE_MAGIC,
					.version = ODSM_WIRE_VERSION,
					.type = type,
					.flags = ref_is_reply(type) ?
						 ODSM_WIRE_F_REPLY : 0,
					.src_node = 0x01020304,
					.dst_node = 0x05060708,
					.seq = 0x0102030405060708ULL ^
					       ((u64)type << 56) ^ k,
					.len = lens[k],
					.status = statuses[s],
				}, out;
				u8 raw[ODSM_WIRE_HDR_SIZE], again[ODSM_WIRE_HDR_SIZE];

				odsm_wire_put_hdr(raw, &h);
				memset(&out, 0xcc, sizeof(out));
				ASSERT_EQ(0, odsm_wire_get_hdr(raw, &out, 0x05060708,
							       0x7fffffff))
					TH_LOG("type %u len %u status %d", type,
					       lens[k], statuses[s]);
				ASSERT_EQ(h.magic, out.magic);
				ASSERT_EQ(h.version, out.version);
				ASSERT_EQ(h.type, out.type);
				ASSERT_EQ(h.flags, out.flags);
				ASSERT_EQ(h.src_node, out.src_node);
				ASSERT_EQ(h.dst_node, out.dst_node);
				ASSERT_EQ(h.seq, out.seq);
				ASSERT_EQ(h.len, out.len);
				ASSERT_EQ(h.status, out.status);
				/* the reference reads the same fields */
				ASSERT_EQ(h.seq, ref_le(raw + 16, 8));
				ASSERT_EQ(h.len, ref_le(raw + 24, 4));
				ASSERT_EQ((u32)h.status, ref_le(raw + 28, 4));
				odsm_wire_put_hdr(again, &out);
				ASSERT_EQ(0, memcmp(raw, again, sizeof(raw)));
			}
		}
	}
}

/*
 * Put p with put(), check it wrote exactly size bytes, and hand back an
 * exact-size heap copy of the wire form.
 */
#define PUT_EXACT(put, p, size) ({					\
	u8 __raw[128];							\
	unsigned int __i;						\
									\
	memset(__raw, 0xa5, sizeof(__raw));				\
	ASSERT_EQ((u32)(size), put(__raw, p));				\
	for (__i = (size); __i < sizeof(__raw); __i++) {		\
		ASSERT_EQ(0xa5, __raw[__i]) TH_LOG("wrote byte %u", __i); \
	}								\
	exact(__raw, size);						\
})

TEST(payload_round_trips)
{
	struct odsm_wire_hello he = {
		.node_id = 0x01020304, .nr_nodes = 0x05060708,
		.heap_base = 0x1112131415161718ULL,
		.part_size = 0x2122232425262728ULL,
		.incarnation = 0x3132333435363738ULL,
		.step = ODSM_HELLO_PROOF,
		.nonce = { 1, 2, 3 }, .proof = { 4, 5, 6 },
	}, he2;
	struct odsm_wire_ping pi = { .send_ns = 0x0102030405060708ULL }, pi2;
	struct odsm_wire_pong po = {
		.free_bytes = 0x0102030405060708ULL,
		.echo_ns = 0x1112131415161718ULL,
	}, po2;
	struct odsm_wire_alloc al = {
		.size = 0x0102030405060708ULL, .align = 4096,
		.flags = ODSM_WIRE_ALLOC_ZERO,
	}, al2;
	struct odsm_wire_alloc_reply ar = {
		.gaddr = 0x0102030405060708ULL,
		.usable = 0x1112131415161718ULL,
	}, ar2;
	struct odsm_wire_free fr = { .gaddr = 0x0102030405060708ULL }, fr2;
	struct odsm_wire_atomic at = {
		.gaddr = 0xf1f2f3f4f5f6f7f8ULL, .op = ODSM_WIRE_FETCH_ADD,
		.operand = 0x0102030405060708ULL,
		.compare = 0x1112131415161718ULL,
	}, at2;
	struct odsm_wire_atomic_reply ax = { .old = 0x0102030405060708ULL },
		ax2;
	u8 *p;

	p = PUT_EXACT(odsm_wire_put_hello, &he, 104);
	ASSERT_EQ(0, odsm_wire_get_hello(p, 104, &he2));
	free(p);
	ASSERT_TRUE(hello_eq(&he, &he2));
	ASSERT_EQ(he.node_id, he2.node_id);
	ASSERT_EQ(he.nr_nodes, he2.nr_nodes);
	ASSERT_EQ(he.heap_base, he2.heap_base);
	ASSERT_EQ(he.part_size, he2.part_size);
	ASSERT_EQ(he.incarnation, he2.incarnation);

	p = PUT_EXACT(odsm_wire_put_ping, &pi, 8);
	ASSERT_EQ(0x08, p[0]);
	ASSERT_EQ(0x01, p[7]);
	ASSERT_EQ(0, odsm_wire_get_ping(p, 8, &pi2));
	free(p);
	ASSERT_EQ(pi.send_ns, pi2.send_ns);

	p = PUT_EXACT(odsm_wire_put_pong, &po, 16);
	ASSERT_EQ(po.free_bytes, ref_le(p, 8));
	ASSERT_EQ(po.echo_ns, ref_le(p + 8, 8));
	ASSERT_EQ(0, odsm_wire_get_pong(p, 16, &po2));
	free(p);
	ASSERT_EQ(po.free_bytes, po2.free_bytes);
	ASSERT_EQ(po.echo_ns, po2.echo_ns);

	p = PUT_EXACT(odsm_wire_put_alloc, &al, 16);
	ASSERT_EQ(al.size, ref_le(p, 8));
	ASSERT_EQ(al.align, ref_le(p + 8, 4));
	ASSERT_EQ(al.flags, ref_le(p + 12, 4));
	ASSERT_EQ(0, odsm_wire_get_alloc(p, 16, &al2));
	free(p);
	ASSERT_EQ(al.size, al2.size);
	ASSERT_EQ(al.align, al2.align);
	ASSERT_EQ(al.flags, al2.flags);

	p = PUT_EXACT(odsm_wire_put_alloc_reply, &ar, 16);
	ASSERT_EQ(ar.gaddr, ref_le(p, 8));
	ASSERT_EQ(ar.usable, ref_le(p + 8, 8));
	ASSERT_EQ(0, odsm_wire_get_alloc_reply(p, 16, &ar2));
	free(p);
	ASSERT_EQ(ar.gaddr, ar2.gaddr);
	ASSERT_EQ(ar.usable, ar2.usable);

	p = PUT_EXACT(odsm_wire_put_free, &fr, 8);
	ASSERT_EQ(fr.gaddr, ref_le(p, 8));
	ASSERT_EQ(0, odsm_wire_get_free(p, 8, &fr2));
	free(p);
	ASSERT_EQ(fr.gaddr, fr2.gaddr);

	p = PUT_EXACT(odsm_wire_put_atomic, &at, 32);
	ASSERT_EQ(0, odsm_wire_get_atomic(p, 32, &at2));
	free(p);
	ASSERT_EQ(at.gaddr, at2.gaddr);
	ASSERT_EQ(at.op, at2.op);
	ASSERT_EQ(at.flags, at2.flags);
	ASSERT_EQ(at.operand, at2.operand);
	ASSERT_EQ(at.compare, at2.compare);

	p = PUT_EXACT(odsm_wire_put_atomic_reply, &ax, 8);
	ASSERT_EQ(ax.old, ref_le(p, 8));
	ASSERT_EQ(0, odsm_wire_get_atomic_reply(p, 8, &ax2));
	free(p);
	ASSERT_EQ(ax.old, ax2.old);
}

TEST(rw_round_trip)
{
	struct odsm_wire_rw rd = {
		.gaddr = 0x0000a1a2a3a4a5a8ULL, .len = 0x0003f1f2,
	}, wr = {
		.gaddr = 0x0000010203040506ULL, .len = 0x123,
	}, out;
	u8 *raw = malloc(ODSM_WIRE_RW_SIZE + 0x123), *p;
	u32 i;

	p = PUT_EXACT(odsm_wire_put_rw, &rd, 16);
	ASSERT_EQ(rd.gaddr, ref_le(p, 8));
	ASSERT_EQ(rd.len, ref_le(p + 8, 4));
	ASSERT_EQ(0U, ref_le(p + 12, 4));
	memset(&out, 0xcc, sizeof(out));
	ASSERT_EQ(0, odsm_wire_get_rw(p, 16, false, &out));
	free(p);
	ASSERT_EQ(rd.gaddr, out.gaddr);
	ASSERT_EQ(rd.len, out.len);
	ASSERT_EQ(0U, out.flags);

	/* WRITE: the fixed part, then exactly len bytes of data */
	ASSERT_EQ(16U, odsm_wire_put_rw(raw, &wr));
	for (i = 0; i < wr.len; i++)
		raw[16 + i] = (u8)i;
	memset(&out, 0xcc, sizeof(out));
	ASSERT_EQ(0, odsm_wire_get_rw(raw, 16 + wr.len, true, &out));
	ASSERT_EQ(wr.gaddr, out.gaddr);
	ASSERT_EQ(wr.len, out.len);
	free(raw);

	/* the largest of each */
	rd.gaddr = 0;
	rd.len = ODSM_WIRE_MAX_DATA;
	raw = malloc(ODSM_WIRE_RW_SIZE + ODSM_WIRE_MAX_DATA);
	odsm_wire_put_rw(raw, &rd);
	ASSERT_EQ(0, odsm_wire_get_rw(raw, 16, false, &out));
	ASSERT_EQ(0, odsm_wire_get_rw(raw, 16 + ODSM_WIRE_MAX_DATA, true,
				      &out));
	ASSERT_EQ(ODSM_WIRE_MAX_DATA, out.len);
	free(raw);
}

/* ---- header validation --------------------------------------------------- */

TEST(hdr_valid_baseline)
{
	unsigned int type;

	for (type = 1; type < ODSM_MSG_TYPE_MAX; type++) {
		struct odsm_wire_hdr h;
		u32 min, max;

		ref_bounds(type, &min, &max);
		h = mk_hdr(type, min);
		ASSERT_EQ(0, hdr_ret(&h)) TH_LOG("type %u", type);
		h.len = max;
		ASSERT_EQ(0, hdr_ret(&h)) TH_LOG("type %u", type);
	}
}

TEST(hdr_bad_magic)
{
	struct odsm_wire_hdr h = mk_hdr(ODSM_MSG_PING, 8);
	u8 raw[ODSM_WIRE_HDR_SIZE];
	struct odsm_wire_hdr out;
	unsigned int i, bit;

	/* every bit of the magic matters */
	for (i = 0; i < 4; i++) {
		for (bit = 0; bit < 8; bit++) {
			odsm_wire_put_hdr(raw, &h);
			raw[i] ^= 1U << bit;
			ASSERT_EQ(-EPROTO, odsm_wire_get_hdr(raw, &out, SELF,
							     NR));
		}
	}
	/* the byte-swapped magic: a big-endian writer */
	h.magic = 0x4f44534d;
	ASSERT_EQ(-EPROTO, hdr_ret(&h));
	h.magic = 0;
	ASSERT_EQ(-EPROTO, hdr_ret(&h));
}

/* WAKE and its reply: golden bytes, every field's bound */
TEST(wake)
{
	static const u8 golden[16] = {
		0x04, 0x03, 0x02, 0x01, 0x00, 0x10, 0x00, 0x00, /* gaddr */
		0x03, 0x00, 0x00, 0x00,				/* nr */
		0x00, 0x00, 0x00, 0x00,				/* flags */
	};
	static const u8 rgolden[8] = {
		0x02, 0x00, 0x00, 0x00,				/* woken */
		0x00, 0x00, 0x00, 0x00,				/* reserved */
	};
	struct odsm_wire_wake w = { .gaddr = 0x100001020304ULL, .nr = 3 }, out;
	struct odsm_wire_wake_reply r = { .woken = 2 }, rout;
	u8 raw[16];

	ASSERT_EQ(16U, odsm_wire_put_wake(raw, &w));
	ASSERT_EQ(0, memcmp(raw, golden, 16));
	ASSERT_EQ(0, odsm_wire_get_wake(golden, 16, &out));
	ASSERT_EQ(w.gaddr, out.gaddr);
	ASSERT_EQ(3U, out.nr);
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_wake(golden, 15, &out));
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_wake(golden, 8, &out));
	/* not 4-aligned; 2^48 and above; nr past INT_MAX; flags */
	w.gaddr |= 2;
	odsm_wire_put_wake(raw, &w);
	EXPECT_EQ(-EPROTO, odsm_wire_get_wake(raw, 16, &out));
	w.gaddr = 1ULL << 48;
	odsm_wire_put_wake(raw, &w);
	EXPECT_EQ(-EPROTO, odsm_wire_get_wake(raw, 16, &out));
	w.gaddr = 0x100001020304ULL;
	w.nr = 0x80000000U;
	odsm_wire_put_wake(raw, &w);
	EXPECT_EQ(-EPROTO, odsm_wire_get_wake(raw, 16, &out));
	w.nr = 0x7fffffffU;
	odsm_wire_put_wake(raw, &w);
	EXPECT_EQ(0, odsm_wire_get_wake(raw, 16, &out));
	w.nr = 0;
	w.flags = 1;
	odsm_wire_put_wake(raw, &w);
	EXPECT_EQ(-EPROTO, odsm_wire_get_wake(raw, 16, &out));

	ASSERT_EQ(8U, odsm_wire_put_wake_reply(raw, &r));
	ASSERT_EQ(0, memcmp(raw, rgolden, 8));
	ASSERT_EQ(0, odsm_wire_get_wake_reply(rgolden, 8, &rout));
	ASSERT_EQ(2U, rout.woken);
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_wake_reply(rgolden, 7, &rout));
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_wake_reply(rgolden, 16, &rout));
	r.woken = 0x80000000U;
	odsm_wire_put_wake_reply(raw, &r);
	EXPECT_EQ(-EPROTO, odsm_wire_get_wake_reply(raw, 8, &rout));
	r.woken = 1;
	r.reserved = 1;
	odsm_wire_put_wake_reply(raw, &r);
	EXPECT_EQ(-EPROTO, odsm_wire_get_wake_reply(raw, 8, &rout));
}

/* AQP (and its reply, laid out alike): golden bytes, every field's bound */
TEST(aqp)
{
	static const u8 golden[16] = {
		0x56, 0x34, 0x12, 0x00,				/* qpn */
		0xcc, 0xbb, 0xaa, 0x00,				/* psn */
		0x03, 0x00, 0x00, 0x00,				/* depth */
		0x00, 0x00, 0x00, 0x00,				/* reserved */
	};
	static const struct {
		struct odsm_wire_aqp a;
		int ret;
	} cases[] = {
		{ { 0, 1, 1, 0 }, -EPROTO },
		{ { 1U << 24, 1, 1, 0 }, -EPROTO },
		{ { 0xffffff, 1U << 24, 1, 0 }, -EPROTO },
		{ { 0xffffff, 0xffffff, 1, 0 }, 0 },
		{ { 1, 0, 0, 0 }, -EPROTO },
		{ { 1, 0, 256, 0 }, -EPROTO },
		{ { 1, 0, 255, 0 }, 0 },
		{ { 1, 0, 1, 1 }, -EPROTO },
	};
	struct odsm_wire_aqp a = { .qpn = 0x123456, .psn = 0xaabbcc,
				   .depth = 3 }, out;
	unsigned int i;
	u8 raw[16];

	ASSERT_EQ(16U, odsm_wire_put_aqp(raw, &a));
	ASSERT_EQ(0, memcmp(raw, golden, 16));
	ASSERT_EQ(0, odsm_wire_get_aqp(golden, 16, &out));
	ASSERT_EQ(0x123456U, out.qpn);
	ASSERT_EQ(0xaabbccU, out.psn);
	ASSERT_EQ(3U, out.depth);
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_aqp(golden, 15, &out));
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_aqp(golden, 32, &out));
	/* qpn 0 and past 24 bits; psn past 24 bits; depth 0 and past 255 */
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		odsm_wire_put_aqp(raw, &cases[i].a);
		EXPECT_EQ(cases[i].ret, odsm_wire_get_aqp(raw, 16, &out))
			TH_LOG("case %u", i);
	}
}

/* FETCH_MANY and its reply: golden bytes, bounds, every malformed reply */
TEST(fetch_many)
{
	static const u8 golden[8 + 16] = {
		0x02, 0x00, 0x00, 0x00,				/* count */
		0x00, 0x08, 0x00, 0x00,				/* len 2048 */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,	/* gaddr 0 */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,	/* gaddr 1 */
	};
	const u64 g[2] = { 0x0102030405060708ULL, 0x1112131415161718ULL };
	struct odsm_wire_fetch_many fm = { .count = 2, .len = 2048 }, out;
	struct odsm_wire_fetch_item it;
	u8 raw[8 + 64 * 8 + 8], rep[3 * 24 + 8 + 2048 + 8];
	u32 off, n;

	memset(raw, 0xa5, sizeof(raw));
	ASSERT_EQ(24U, odsm_wire_put_fetch_many(raw, &fm, g));
	ASSERT_EQ(0, memcmp(golden, raw, sizeof(golden)));
	ASSERT_EQ(0xa5, raw[24]);
	ASSERT_EQ(0, odsm_wire_get_fetch_many(raw, 24, &out));
	ASSERT_EQ(2U, out.count);
	ASSERT_EQ(2048U, out.len);
	ASSERT_EQ(g[1], odsm_wire_fetch_many_addr(raw, 1));
	/* the length must be the count's */
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_fetch_many(raw, 16, &out));
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_fetch_many(raw, 32, &out));
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_fetch_many(raw, 4, &out));
	/* count 0 and 65; len 0 and 4097; 64 of 4096 overflow a reply */
	fm.count = 0;
	n = odsm_wire_put_fetch_many(raw, &fm, g);
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_fetch_many(raw, n, &out));
	fm.count = 65;
	ref_put_le(raw, 65, 4);
	EXPECT_EQ(-EMSGSIZE, odsm_wire_get_fetch_many(raw, 8 + 65 * 8, &out));
	ref_put_le(raw, 1, 4);
	ref_put_le(raw + 4, 0, 4);
	EXPECT_EQ(-EPROTO, odsm_wire_get_fetch_many(raw, 16, &out));
	ref_put_le(raw + 4, 4097, 4);
	EXPECT_EQ(-EPROTO, odsm_wire_get_fetch_many(raw, 16, &out));
	ref_put_le(raw + 4, 4096, 4);
	EXPECT_EQ(0, odsm_wire_get_fetch_many(raw, 16, &out));
	ref_put_le(raw, 64, 4);
	EXPECT_EQ(-EPROTO, odsm_wire_get_fetch_many(raw, 8 + 64 * 8, &out));
	ref_put_le(raw + 4, 2048, 4);
	EXPECT_EQ(0, odsm_wire_get_fetch_many(raw, 8 + 64 * 8, &out));
	/* the room a reply takes counts each item's padding: 63 items of
	 * 41 bytes take 63 x (24 + 48), not 63 x (24 + 41) (the owner's
	 * buffer was sized so before 2026-12-02, and written past)
	 */
	EXPECT_EQ(63ULL * 72, odsm_wire_fetch_many_room(63, 41));
	EXPECT_EQ(64ULL * 4096, odsm_wire_fetch_many_room(64, 4072));
	EXPECT_EQ(64ULL * 4096, odsm_wire_fetch_many_room(64, 4065));
	EXPECT_EQ(64ULL * (24 + 4080), odsm_wire_fetch_many_room(64, 4073));
	ref_put_le(raw + 4, 4065, 4);
	EXPECT_EQ(0, odsm_wire_get_fetch_many(raw, 8 + 64 * 8, &out));
	ref_put_le(raw + 4, 4073, 4);
	EXPECT_EQ(-EPROTO, odsm_wire_get_fetch_many(raw, 8 + 64 * 8, &out));

	/* a reply to 3 of 2048: 5 bytes, a refusal, 2048 of 3000 */
	memset(rep, 0, sizeof(rep));
	it = (struct odsm_wire_fetch_item){ .size = 5, .color = 3, .len = 5 };
	odsm_wire_put_fetch_item(rep, &it);
	it = (struct odsm_wire_fetch_item){ .status = -ESTALE };
	odsm_wire_put_fetch_item(rep + 24, &it);
	it = (struct odsm_wire_fetch_item){ .size = 3000, .len = 2048 };
	odsm_wire_put_fetch_item(rep + 48, &it);
	n = 72 + 8 + 2048;
	ASSERT_EQ(0, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	off = 72;
	odsm_wire_get_fetch_item(rep, 0, &it, &off);
	EXPECT_EQ(80U, off);
	EXPECT_EQ(3, it.color);
	odsm_wire_get_fetch_item(rep, 1, &it, &off);
	EXPECT_EQ(80U, off);
	EXPECT_EQ(-ESTALE, it.status);
	odsm_wire_get_fetch_item(rep, 2, &it, &off);
	EXPECT_EQ(n, off);
	/* short, long, or answering another count or len */
	EXPECT_EQ(-EMSGSIZE, odsm_wire_check_fetch_many_reply(rep, n - 8, 3, 2048));
	EXPECT_EQ(-EMSGSIZE, odsm_wire_check_fetch_many_reply(rep, n + 8, 3, 2048));
	EXPECT_EQ(-EMSGSIZE, odsm_wire_check_fetch_many_reply(rep, 40, 3, 2048));
	EXPECT_NE(0, odsm_wire_check_fetch_many_reply(rep, n, 2, 2048));
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 4096));
	EXPECT_EQ(-EMSGSIZE, odsm_wire_check_fetch_many_reply(rep, n, 0, 2048));
	EXPECT_EQ(-EMSGSIZE, odsm_wire_check_fetch_many_reply(rep, n, 3, 0));
	/* each field of an item, broken in turn */
	rep[10] = 1;				/* reserved */
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	rep[10] = 0;
	rep[20] = 1;				/* reserved2 */
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	rep[20] = 0;
	ref_put_le(rep + 12, 6, 4);		/* len past the size */
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	ref_put_le(rep + 12, 0xfffffff8, 4);	/* a len that would wrap */
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	ref_put_le(rep + 12, 5, 4);
	ref_put_le(rep + 24 + 16, 1, 4);	/* a positive status */
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	ref_put_le(rep + 24 + 16, (u32)-5000, 4);	/* below STATUS_MIN */
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	ref_put_le(rep + 24 + 16, (u32)-ESTALE, 4);
	ref_put_le(rep + 24 + 12, 8, 4);	/* a refusal with data */
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	ref_put_le(rep + 24 + 12, 0, 4);
	ref_put_le(rep + 24, 9, 8);		/* ... or with a size */
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	ref_put_le(rep + 24, 0, 8);
	ref_put_le(rep, 0, 8);			/* a success of no object */
	EXPECT_EQ(-EPROTO, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
	ref_put_le(rep, 5, 8);
	ASSERT_EQ(0, odsm_wire_check_fetch_many_reply(rep, n, 3, 2048));
}

TEST(hdr_bad_version)
{
	struct odsm_wire_hdr h = mk_hdr(ODSM_MSG_HELLO, ODSM_WIRE_HELLO_SIZE);
	unsigned int v;

	for (v = 0; v < 256; v++) {
		h.version = v;
		ASSERT_EQ(v == ODSM_WIRE_VERSION ? 0 : -EPROTO, hdr_ret(&h))
			TH_LOG("version %u", v);
	}
}

TEST(hdr_unknown_type)
{
	struct odsm_wire_hdr h = mk_hdr(ODSM_MSG_WRITE_REPLY, 0);
	unsigned int type;

	h.type = 0;
	ASSERT_EQ(-EPROTO, hdr_ret(&h));
	h.flags = 0;
	ASSERT_EQ(-EPROTO, hdr_ret(&h));
	for (type = ODSM_MSG_TYPE_MAX; type < 256; type++) {
		h.type = type;
		h.flags = 0;
		ASSERT_EQ(-EPROTO, hdr_ret(&h)) TH_LOG("type %u", type);
		h.flags = ODSM_WIRE_F_REPLY;
		ASSERT_EQ(-EPROTO, hdr_ret(&h)) TH_LOG("type %u", type);
	}
}

TEST(hdr_reply_flag_mismatch)
{
	unsigned int type;

	for (type = 1; type < ODSM_MSG_TYPE_MAX; type++) {
		struct odsm_wire_hdr h;
		u32 min, max;

		ref_bounds(type, &min, &max);
		h = mk_hdr(type, min);
		h.flags ^= ODSM_WIRE_F_REPLY;
		ASSERT_EQ(-EPROTO, hdr_ret(&h)) TH_LOG("type %u", type);
	}
}

TEST(hdr_unknown_flags)
{
	unsigned int type, bit;

	for (type = 1; type < ODSM_MSG_TYPE_MAX; type++) {
		u32 min, max;

		ref_bounds(type, &min, &max);
		for (bit = 1; bit < 16; bit++) {
			struct odsm_wire_hdr h = mk_hdr(type, min);

			h.flags |= 1U << bit;
			ASSERT_EQ(-EPROTO, hdr_ret(&h))
				TH_LOG("type %u flag bit %u", type, bit);
		}
	}
}

TEST(hdr_len_bounds)
{
	unsigned int type;

	for (type = 1; type < ODSM_MSG_TYPE_MAX; type++) {
		struct odsm_wire_hdr h = mk_hdr(type, 0);
		u32 min, max, l;

		ref_bounds(type, &min, &max);
		/* every length up to 64 bytes past the largest fixed one */
		for (l = 0; l < 64; l++) {
			h.len = l;
			ASSERT_EQ(l >= min && l <= max ? 0 : -EMSGSIZE,
				  hdr_ret(&h)) TH_LOG("type %u len %u", type, l);
		}
		if (min) {
			h.len = min - 1;
			ASSERT_EQ(-EMSGSIZE, hdr_ret(&h)) TH_LOG("type %u", type);
		}
		h.len = max + 1;
		ASSERT_EQ(-EMSGSIZE, hdr_ret(&h)) TH_LOG("type %u", type);
		h.len = ODSM_WIRE_MAX_PAYLOAD + 1;
		ASSERT_EQ(-EMSGSIZE, hdr_ret(&h)) TH_LOG("type %u", type);
		h.len = 0x80000000U;
		ASSERT_EQ(-EMSGSIZE, hdr_ret(&h)) TH_LOG("type %u", type);
		h.len = UINT_MAX;
		ASSERT_EQ(-EMSGSIZE, hdr_ret(&h)) TH_LOG("type %u", type);
	}
}

TEST(hdr_error_reply_has_no_payload)
{
	unsigned int type;

	for (type = 1; type < ODSM_MSG_TYPE_MAX; type++) {
		struct odsm_wire_hdr h = mk_hdr(type, 0);
		u32 min, max;

		if (!ref_is_reply(type))
			continue;
		ref_bounds(type, &min, &max);
		h.status = -5;
		ASSERT_EQ(0, hdr_ret(&h)) TH_LOG("type %u", type);
		h.len = 1;
		ASSERT_EQ(-EMSGSIZE, hdr_ret(&h)) TH_LOG("type %u", type);
		h.len = max ? max : 8;
		ASSERT_EQ(-EMSGSIZE, hdr_ret(&h)) TH_LOG("type %u", type);
	}
}

TEST(hdr_bad_nodes)
{
	struct odsm_wire_hdr h = mk_hdr(ODSM_MSG_READ, 16);
	u32 src, dst;

	/* every src and dst of a 4-node cluster, as node 2 */
	for (src = 0; src < NR + 2; src++) {
		for (dst = 0; dst < NR + 2; dst++) {
			h.src_node = src;
			h.dst_node = dst;
			ASSERT_EQ(src < NR && src != SELF && dst == SELF ?
				  0 : -EPROTO, hdr_ret(&h))
				TH_LOG("src %u dst %u", src, dst);
		}
	}
	h.dst_node = SELF;
	h.src_node = UINT_MAX;
	ASSERT_EQ(-EPROTO, hdr_ret(&h));
	h.src_node = PEER;
	h.dst_node = UINT_MAX;
	ASSERT_EQ(-EPROTO, hdr_ret(&h));

	/* the last node of the cluster, and a cluster of none */
	h = mk_hdr(ODSM_MSG_READ, 16);
	h.src_node = NR - 1;
	ASSERT_EQ(0, hdr_ret(&h));
	h.src_node = 0;
	h.dst_node = 0;
	ASSERT_EQ(-EPROTO, put_get(&h, 0, 0));
	ASSERT_EQ(-EPROTO, put_get(&h, 0, 1));
	h.src_node = 1;
	ASSERT_EQ(0, put_get(&h, 0, 2));
	ASSERT_EQ(-EPROTO, put_get(&h, 0, 1));
}

TEST(hdr_bad_status)
{
	static const s32 bad_reply[] = {
		1, 2, 4095, INT_MAX, -4096, -4097, -65536, INT_MIN,
	};
	static const s32 bad_req[] = { 1, -1, -22, -4095, INT_MIN, INT_MAX };
	unsigned int type, i;

	for (type = 1; type < ODSM_MSG_TYPE_MAX; type++) {
		struct odsm_wire_hdr h = mk_hdr(type, 0);
		u32 min, max;

		ref_bounds(type, &min, &max);
		if (ref_is_reply(type)) {
			for (i = 0; i < ARRAY_SIZE(bad_reply); i++) {
				h.status = bad_reply[i];
				ASSERT_EQ(-EPROTO, hdr_ret(&h))
					TH_LOG("type %u status %d", type,
					       bad_reply[i]);
			}
			h.status = -1;
			ASSERT_EQ(0, hdr_ret(&h));
			h.status = STATUS_MIN;
			ASSERT_EQ(0, hdr_ret(&h));
		} else {
			h.len = min;
			for (i = 0; i < ARRAY_SIZE(bad_req); i++) {
				h.status = bad_req[i];
				ASSERT_EQ(-EPROTO, hdr_ret(&h))
					TH_LOG("type %u status %d", type,
					       bad_req[i]);
			}
		}
	}
}

/*
 * A peer's status becomes its caller's errno: every errno a user may see
 * passes, the kernel's own (-ERESTARTSYS and up, which would make the
 * system-call layer restart the ioctl, or io_uring wait for a completion
 * that never comes) are -EPROTO.
 */
TEST(reply_status_errno)
{
	static const s32 kept[] = { 0, -1, -EAGAIN, -ESTALE, -EHOSTDOWN,
				    -133, -511 };
	static const s32 internal[] = { -512, -513, -514, -515, -516, -517,
					-524, -529, -530, -531, -4095 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kept); i++)
		EXPECT_EQ(kept[i], odsm_wire_errno(kept[i]));
	for (i = 0; i < ARRAY_SIZE(internal); i++)
		EXPECT_EQ(-EPROTO, odsm_wire_errno(internal[i]))
			TH_LOG("status %d", internal[i]);
}

/* ---- payload validation -------------------------------------------------- */

typedef int (*get_fn)(const u8 *buf, u32 len, void *out);

#define GET_WRAP(name)							\
static int get_##name(const u8 *b, u32 l, void *o)			\
{									\
	return odsm_wire_get_##name(b, l, o);				\
}
GET_WRAP(hello)
GET_WRAP(ping)
GET_WRAP(pong)
GET_WRAP(alloc)
GET_WRAP(alloc_reply)
GET_WRAP(free)
GET_WRAP(atomic)
GET_WRAP(atomic_reply)

static int get_read(const u8 *b, u32 l, void *o)
{
	return odsm_wire_get_rw(b, l, false, o);
}

static int get_write(const u8 *b, u32 l, void *o)
{
	return odsm_wire_get_rw(b, l, true, o);
}

static const struct {
	const char *name;
	get_fn get;
	u32 size;	/* the fixed wire size */
} decoders[] = {
	{ "hello", get_hello, 104 },
	{ "ping", get_ping, 8 },
	{ "pong", get_pong, 16 },
	{ "read", get_read, 16 },
	{ "write", get_write, 16 },
	{ "alloc", get_alloc, 16 },
	{ "alloc_reply", get_alloc_reply, 16 },
	{ "free", get_free, 8 },
	{ "atomic", get_atomic, 32 },
	{ "atomic_reply", get_atomic_reply, 8 },
};

/* a valid wire form of decoders[i] (size bytes; WRITE announces 0 data) */
static void valid_payload(unsigned int i, u8 *raw)
{
	memset(raw, 0, 160);
	switch (i) {
	case 0:					/* hello: node 1 of 4 */
		raw[0] = 1;
		raw[4] = 4;
		raw[32] = ODSM_HELLO_OFFER;
		break;
	case 3:					/* read: 8 bytes */
		raw[8] = 8;
		break;
	case 5:					/* alloc: 64 bytes */
		raw[0] = 64;
		break;
	case 8:					/* atomic: fetch-add */
		raw[8] = ODSM_WIRE_FETCH_ADD;
		break;
	}
}

TEST(payload_truncated_and_long)
{
	union {
		struct odsm_wire_hello he;
		struct odsm_wire_atomic at;
		struct odsm_wire_rw rw;
		u64 pad[8];
	} out;
	unsigned int i;
	u8 raw[160];
	u32 l;

	for (i = 0; i < ARRAY_SIZE(decoders); i++) {
		u32 size = decoders[i].size;
		u8 *p;

		valid_payload(i, raw);
		if (i == 4) {		/* write: announce 8 data bytes */
			raw[8] = 8;
			size += 8;
		}
		p = exact(raw, size);
		ASSERT_EQ(0, decoders[i].get(p, size, &out))
			TH_LOG("%s", decoders[i].name);
		free(p);
		/* every shorter length; NULL for none, as receivers pass */
		for (l = 0; l < size; l++) {
			p = exact(raw, l);
			ASSERT_EQ(-EMSGSIZE, decoders[i].get(p, l, &out))
				TH_LOG("%s len %u", decoders[i].name, l);
			free(p);
		}
		/* longer by a little and by a lot */
		for (l = size + 1; l < 160; l++) {
			p = exact(raw, l);
			ASSERT_EQ(-EMSGSIZE, decoders[i].get(p, l, &out))
				TH_LOG("%s len %u", decoders[i].name, l);
			free(p);
		}
	}
}

TEST(hello_fields)
{
	struct odsm_wire_hello he = { .node_id = 3, .nr_nodes = 4,
				      .step = ODSM_HELLO_OFFER }, out;
	u8 raw[ODSM_WIRE_HELLO_SIZE];
	unsigned int step;

	odsm_wire_put_hello(raw, &he);
	ASSERT_EQ(0, odsm_wire_get_hello(raw, 104, &out));
	he.node_id = 4;
	odsm_wire_put_hello(raw, &he);
	ASSERT_EQ(-EPROTO, odsm_wire_get_hello(raw, 104, &out));
	he.node_id = 0;
	he.nr_nodes = 0;
	odsm_wire_put_hello(raw, &he);
	ASSERT_EQ(-EPROTO, odsm_wire_get_hello(raw, 104, &out));
	he.node_id = UINT_MAX;
	he.nr_nodes = UINT_MAX;
	odsm_wire_put_hello(raw, &he);
	ASSERT_EQ(-EPROTO, odsm_wire_get_hello(raw, 104, &out));

	/* steps 1..3 only */
	he.node_id = 1;
	he.nr_nodes = 2;
	for (step = 0; step < 6; step++) {
		he.step = step;
		odsm_wire_put_hello(raw, &he);
		ASSERT_EQ(step >= 1 && step <= 3 ? 0 : -EPROTO,
			  odsm_wire_get_hello(raw, 104, &out))
			TH_LOG("step %u", step);
	}
	raw[32] = 0;
	raw[33] = 1;			/* step 256 */
	ASSERT_EQ(-EPROTO, odsm_wire_get_hello(raw, 104, &out));
	/* the reserved word */
	he.step = ODSM_HELLO_PROOF;
	odsm_wire_put_hello(raw, &he);
	raw[39] = 1;
	ASSERT_EQ(-EPROTO, odsm_wire_get_hello(raw, 104, &out));
	/* an offer carries no proof; a challenge or a proof may be anything */
	he.proof[31] = 1;
	for (step = 1; step <= 3; step++) {
		he.step = step;
		odsm_wire_put_hello(raw, &he);
		ASSERT_EQ(step == ODSM_HELLO_OFFER ? -EPROTO : 0,
			  odsm_wire_get_hello(raw, 104, &out))
			TH_LOG("step %u", step);
	}
	/* the old 32-byte HELLO of version 1 */
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_hello(raw, 32, &out));
}

static int rw_ret(u64 gaddr, u32 len, u32 flags, bool write, u32 wlen)
{
	struct odsm_wire_rw rw = { gaddr, len, flags }, out;
	u8 *raw = malloc(wlen < 16 ? 16 : wlen);
	int ret;

	memset(raw, 0, wlen < 16 ? 16 : wlen);
	odsm_wire_put_rw(raw, &rw);
	ret = odsm_wire_get_rw(raw, wlen, write, &out);
	free(raw);
	return ret;
}

TEST(rw_fields)
{
	const u64 top = 1ULL << 48;
	const u32 max = ODSM_WIRE_MAX_DATA;

	/* READ: fixed size, 1..MAX_DATA bytes */
	ASSERT_EQ(0, rw_ret(0x1000, 1, 0, false, 16));
	ASSERT_EQ(0, rw_ret(0x1000, max, 0, false, 16));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, 0, 0, false, 16));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, max + 1, 0, false, 16));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, UINT_MAX, 0, false, 16));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, 8, 0, false, 24));
	ASSERT_EQ(-EPROTO, rw_ret(0x1000, 8, 2, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(0x1000, 8, 3, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(0x1000, 8, 4, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(0x1000, 8, 0x80000000U, false, 16));

	/* READ with CHECK: no data moves, so any length 1..U32_MAX */
	ASSERT_EQ(1, ODSM_WIRE_RW_CHECK);
	ASSERT_EQ(0, rw_ret(0x1000, 8, ODSM_WIRE_RW_CHECK, false, 16));
	ASSERT_EQ(0, rw_ret(0x1000, max + 1, ODSM_WIRE_RW_CHECK, false, 16));
	ASSERT_EQ(0, rw_ret(0x1000, UINT_MAX, ODSM_WIRE_RW_CHECK, false, 16));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, 0, ODSM_WIRE_RW_CHECK, false, 16));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, 8, ODSM_WIRE_RW_CHECK, false, 24));
	ASSERT_EQ(-EPROTO, rw_ret(top - 8, 9, ODSM_WIRE_RW_CHECK, false, 16));
	ASSERT_EQ(0, rw_ret(top - UINT_MAX, UINT_MAX, ODSM_WIRE_RW_CHECK,
			    false, 16));
	/* and never on a WRITE */
	ASSERT_EQ(-EPROTO, rw_ret(0x1000, 8, ODSM_WIRE_RW_CHECK, true, 24));

	/* OWNER: one whole 16-aligned owner box, read or written */
	ASSERT_EQ(2, ODSM_WIRE_RW_OWNER);
	ASSERT_EQ(16, ODSM_WIRE_BOX_SIZE);
	ASSERT_EQ(0, rw_ret(0x1010, 16, ODSM_WIRE_RW_OWNER, false, 16));
	ASSERT_EQ(0, rw_ret(0x1010, 16, ODSM_WIRE_RW_OWNER, true, 32));
	ASSERT_EQ(-EPROTO, rw_ret(0x1008, 16, ODSM_WIRE_RW_OWNER, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(0x1008, 16, ODSM_WIRE_RW_OWNER, true, 32));
	ASSERT_EQ(-EPROTO, rw_ret(0x1010, 8, ODSM_WIRE_RW_OWNER, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(0x1010, 32, ODSM_WIRE_RW_OWNER, true, 48));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1010, 16, ODSM_WIRE_RW_OWNER, true, 31));
	ASSERT_EQ(-EPROTO, rw_ret(0x1010, 16, ODSM_WIRE_RW_OWNER |
				  ODSM_WIRE_RW_CHECK, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(top, 16, ODSM_WIRE_RW_OWNER, false, 16));
	/* IF_EMPTY: with OWNER on a WRITE only */
	ASSERT_EQ(4, ODSM_WIRE_RW_IF_EMPTY);
	ASSERT_EQ(0, rw_ret(0x1010, 16, ODSM_WIRE_RW_OWNER |
			    ODSM_WIRE_RW_IF_EMPTY, true, 32));
	ASSERT_EQ(-EPROTO, rw_ret(0x1010, 16, ODSM_WIRE_RW_OWNER |
				  ODSM_WIRE_RW_IF_EMPTY, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(0x1010, 16, ODSM_WIRE_RW_IF_EMPTY, true, 32));

	/* WRITE: exactly the data it announces */
	ASSERT_EQ(0, rw_ret(0x1000, 1, 0, true, 17));
	ASSERT_EQ(0, rw_ret(0x1000, 100, 0, true, 116));
	ASSERT_EQ(0, rw_ret(0x1000, max, 0, true, 16 + max));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, 100, 0, true, 115));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, 100, 0, true, 117));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, 100, 0, true, 16));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, 0, 0, true, 16));
	ASSERT_EQ(-EMSGSIZE, rw_ret(0x1000, max + 1, 0, true, 17 + max));
	ASSERT_EQ(-EPROTO, rw_ret(0x1000, 100, 2, true, 116));

	/* uncolored, and within the 48-bit address space */
	ASSERT_EQ(0, rw_ret(top - 1, 1, 0, false, 16));
	ASSERT_EQ(0, rw_ret(top - 8, 8, 0, true, 24));
	ASSERT_EQ(0, rw_ret(0, max, 0, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(top - 8, 9, 0, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(top, 1, 0, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(0x0001000000001000ULL, 8, 0, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(~0ULL, 1, 0, false, 16));
	ASSERT_EQ(-EPROTO, rw_ret(~0ULL - 7, 8, 0, true, 24));
}

static int alloc_ret(u64 size, u32 align, u32 flags)
{
	struct odsm_wire_alloc al = { size, align, flags }, out;
	u8 raw[16];

	odsm_wire_put_alloc(raw, &al);
	return odsm_wire_get_alloc(raw, 16, &out);
}

TEST(alloc_fields)
{
	u32 a;

	ASSERT_EQ(0, alloc_ret(1, 0, 0));
	ASSERT_EQ(0, alloc_ret(~0ULL, 0, ODSM_WIRE_ALLOC_ZERO));
	ASSERT_EQ(-EPROTO, alloc_ret(0, 0, 0));
	for (a = 1; a <= 8192; a++) {
		ASSERT_EQ(is_power_of_2(a) && a <= 4096 ? 0 : -EPROTO,
			  alloc_ret(64, a, 0)) TH_LOG("align %u", a);
	}
	ASSERT_EQ(-EPROTO, alloc_ret(64, 0x80000000U, 0));
	ASSERT_EQ(-EPROTO, alloc_ret(64, UINT_MAX, 0));
	for (a = 1; a < 32; a++) {
		ASSERT_EQ(-EPROTO, alloc_ret(64, 16, 1U << a))
			TH_LOG("flag bit %u", a);
	}
}

static int atomic_ret(u64 gaddr, u32 op, u32 flags)
{
	struct odsm_wire_atomic at = { gaddr, op, flags, 5, 6 }, out;
	u8 raw[32];

	odsm_wire_put_atomic(raw, &at);
	return odsm_wire_get_atomic(raw, 32, &out);
}

TEST(atomic_fields)
{
	u32 op, i;

	for (op = 0; op < 300; op++) {
		ASSERT_EQ(op == ODSM_WIRE_FETCH_ADD || op == ODSM_WIRE_CMP_SWAP ?
			  0 : -EPROTO, atomic_ret(0x1000, op, 0))
			TH_LOG("op %u", op);
	}
	ASSERT_EQ(-EPROTO, atomic_ret(0x1000, UINT_MAX, 0));
	for (i = 1; i < 8; i++) {
		ASSERT_EQ(-EPROTO, atomic_ret(0x1000 + i, ODSM_WIRE_CMP_SWAP, 0))
			TH_LOG("gaddr +%u", i);
	}
	ASSERT_EQ(0, atomic_ret(0xfffffffffffffff8ULL, ODSM_WIRE_CMP_SWAP, 0));
	/* F_NIC is the one flag */
	ASSERT_EQ(0, atomic_ret(0x1000, ODSM_WIRE_FETCH_ADD,
				ODSM_WIRE_ATOMIC_F_NIC));
	for (i = 1; i < 32; i++) {
		ASSERT_EQ(-EPROTO, atomic_ret(0x1000, ODSM_WIRE_FETCH_ADD, 1U << i))
			TH_LOG("flag bit %u", i);
	}
}

/* MAP: golden bytes, and every rule of the request and its reply */
TEST(map_fields)
{
	static const u8 golden[32] = {
		0x00, 0x00, 0x01, 0x00, 0x10, 0x71, 0x00, 0x00,	/* gaddr */
		0x00, 0x30, 0x02, 0x01, 0x88, 0xff, 0xff, 0xff,	/* iova */
		0x00, 0x00, 0x01, 0x00, 0x44, 0x33, 0x22, 0x11,	/* len, rkey */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* flags, 0 */
	};
	struct odsm_wire_map m = { .gaddr = 0x0000711000010000ULL }, mo;
	struct odsm_wire_map_reply r = { .gaddr = 0x0000711000010000ULL,
					 .iova = 0xffffff8801023000ULL,
					 .len = 65536, .rkey = 0x11223344,
					 .flags = ODSM_WIRE_MAP_F_ATOMIC };
	struct odsm_wire_map_reply ro;
	unsigned int i;
	u8 raw[32];

	ASSERT_EQ(8U, odsm_wire_put_map(raw, &m));
	ASSERT_EQ(0, memcmp(raw, golden, 8));
	ASSERT_EQ(0, odsm_wire_get_map(raw, 8, &mo));
	ASSERT_EQ(m.gaddr, mo.gaddr);
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_map(raw, 7, &mo));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_map(raw, 9, &mo));
	m.gaddr += 4096;		/* not a block */
	odsm_wire_put_map(raw, &m);
	ASSERT_EQ(-EPROTO, odsm_wire_get_map(raw, 8, &mo));
	m.gaddr = 1ULL << 48;		/* past any heap */
	odsm_wire_put_map(raw, &m);
	ASSERT_EQ(-EPROTO, odsm_wire_get_map(raw, 8, &mo));

	ASSERT_EQ(32U, odsm_wire_put_map_reply(raw, &r));
	ASSERT_EQ(0, memcmp(raw, golden, 32));
	ASSERT_EQ(0, odsm_wire_get_map_reply(raw, 32, &ro));
	ASSERT_EQ(r.gaddr, ro.gaddr);
	ASSERT_EQ(r.iova, ro.iova);
	ASSERT_EQ(r.len, ro.len);
	ASSERT_EQ(r.rkey, ro.rkey);
	ASSERT_EQ(r.flags, ro.flags);
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_map_reply(raw, 31, &ro));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_map_reply(raw, 33, &ro));
	r.flags = ODSM_WIRE_MAP_F_INORDER;	/* a responder in order */
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(0, odsm_wire_get_map_reply(raw, 32, &ro));
	ASSERT_EQ((u32)ODSM_WIRE_MAP_F_INORDER, ro.flags);
	for (i = 3; i < 32; i++) {	/* unknown flags */
		r.flags = 1U << i;
		odsm_wire_put_map_reply(raw, &r);
		ASSERT_EQ(-EPROTO, odsm_wire_get_map_reply(raw, 32, &ro))
			TH_LOG("flag bit %u", i);
	}
	r.flags = 0;
	r.reserved = 1;
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(-EPROTO, odsm_wire_get_map_reply(raw, 32, &ro));
	r.reserved = 0;
	r.len = 4096;			/* only whole blocks */
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(-EPROTO, odsm_wire_get_map_reply(raw, 32, &ro));
	r.len = 65536;
	r.iova += 8;			/* not page aligned */
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(-EPROTO, odsm_wire_get_map_reply(raw, 32, &ro));
	r.iova = 0xffffffffffff1000ULL;	/* its last byte wraps */
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(-EPROTO, odsm_wire_get_map_reply(raw, 32, &ro));
	r.iova = ~0ULL - 65535;	/* the last block that fits */
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(0, odsm_wire_get_map_reply(raw, 32, &ro));
	/* with the published words after it, the block and the page must fit */
	r.flags = ODSM_WIRE_MAP_F_PUB;
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(-EPROTO, odsm_wire_get_map_reply(raw, 32, &ro));
	r.iova = ~0ULL - 65535 - 4096;
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(0, odsm_wire_get_map_reply(raw, 32, &ro));
	ASSERT_EQ((u32)ODSM_WIRE_MAP_F_PUB, ro.flags);
	r.flags = ODSM_WIRE_MAP_F_ATOMIC | ODSM_WIRE_MAP_F_PUB;
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(0, odsm_wire_get_map_reply(raw, 32, &ro));
	r.iova += 4096;
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(-EPROTO, odsm_wire_get_map_reply(raw, 32, &ro));
	r.flags = 0;
	r.gaddr += 512;
	odsm_wire_put_map_reply(raw, &r);
	ASSERT_EQ(-EPROTO, odsm_wire_get_map_reply(raw, 32, &ro));
}

/* KEYS: golden head, its count against its length, reserved */
TEST(keys_fields)
{
	static const u8 golden[8] = { 0x02, 0x00, 0x00, 0x00, 0, 0, 0, 0 };
	struct odsm_wire_keys k = { .nr = 2 }, ko;
	u8 raw[8 + 2 * 32];
	u32 nr;

	memset(raw, 0, sizeof(raw));
	ASSERT_EQ(8U, odsm_wire_put_keys(raw, &k));
	ASSERT_EQ(0, memcmp(raw, golden, 8));
	ASSERT_EQ(0, odsm_wire_get_keys(raw, sizeof(raw), &ko));
	ASSERT_EQ(2U, ko.nr);
	/* the length must be exactly the entries the count says */
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_keys(raw, sizeof(raw) - 1, &ko));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_keys(raw, 8 + 32, &ko));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_keys(raw, 7, &ko));
	for (nr = 0; nr < 5000; nr += 7) {
		k.nr = nr;
		odsm_wire_put_keys(raw, &k);
		ASSERT_EQ(nr == 0 || nr > ODSM_WIRE_KEYS_MAX ? -EPROTO :
			  nr == 2 ? 0 : -EMSGSIZE,
			  odsm_wire_get_keys(raw, sizeof(raw), &ko))
			TH_LOG("nr %u", nr);
	}
	k.nr = 2;
	k.reserved = 1;
	odsm_wire_put_keys(raw, &k);
	ASSERT_EQ(-EPROTO, odsm_wire_get_keys(raw, sizeof(raw), &ko));
}

/* KEYS_ASK: golden bytes, its address and count, reserved */
TEST(keys_ask_fields)
{
	static const u8 golden[16] = {
		0x00, 0x00, 0x05, 0x04, 0x03, 0x02, 0x00, 0x00,
		0x40, 0x00, 0x00, 0x00, 0, 0, 0, 0,
	};
	struct odsm_wire_keys_ask a = { .gaddr = 0x020304050000ULL, .nr = 64 };
	struct odsm_wire_keys_ask o;
	u8 raw[16];
	u32 nr;

	ASSERT_EQ(16U, odsm_wire_put_keys_ask(raw, &a));
	ASSERT_EQ(0, memcmp(raw, golden, 16));
	ASSERT_EQ(0, odsm_wire_get_keys_ask(raw, 16, &o));
	ASSERT_EQ(a.gaddr, o.gaddr);
	ASSERT_EQ(64U, o.nr);
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_keys_ask(raw, 15, &o));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_keys_ask(raw, 17, &o));
	for (nr = 0; nr < 300; nr++) {
		a.nr = nr;
		odsm_wire_put_keys_ask(raw, &a);
		ASSERT_EQ(nr == 0 || nr > ODSM_WIRE_KEYS_ASK_MAX ? -EPROTO : 0,
			  odsm_wire_get_keys_ask(raw, 16, &o))
			TH_LOG("nr %u", nr);
	}
	a.nr = 1;
	a.gaddr += 4096;		/* not a block's start */
	odsm_wire_put_keys_ask(raw, &a);
	ASSERT_EQ(-EPROTO, odsm_wire_get_keys_ask(raw, 16, &o));
	a.gaddr = 1ULL << 48;		/* past the address space */
	odsm_wire_put_keys_ask(raw, &a);
	ASSERT_EQ(-EPROTO, odsm_wire_get_keys_ask(raw, 16, &o));
	a.gaddr = 0x10000;
	a.reserved = 1;
	odsm_wire_put_keys_ask(raw, &a);
	ASSERT_EQ(-EPROTO, odsm_wire_get_keys_ask(raw, 16, &o));
}

/* DELEG: golden bytes of the fixed part, and its rules */
TEST(deleg_fields)
{
	static const u8 golden[16] = {
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		0x00, 0x04, 0x00, 0x00, 0xa6, 0x0e, 0x00, 0x00,
	};
	struct odsm_wire_deleg d = {
		.endpoint = 0x0102030405060708ULL, .slot_size = 1024,
		.wait_ms = 3750,
	}, o;
	u8 raw[16 + 65536 + 8];
	u32 s, l;

	memset(raw, 0, sizeof(raw));
	ASSERT_EQ(16U, odsm_wire_put_deleg(raw, &d));
	ASSERT_EQ(0, memcmp(raw, golden, 16));
	memset(&o, 0xcc, sizeof(o));
	ASSERT_EQ(0, odsm_wire_get_deleg(raw, 16 + 16, &o));
	ASSERT_EQ(d.endpoint, o.endpoint);
	ASSERT_EQ(1024U, o.slot_size);
	ASSERT_EQ(3750U, o.wait_ms);
	/* a batch of a header .. the slot; not shorter, not longer */
	for (l = 0; l < 16 + 16; l++)
		ASSERT_EQ(-EMSGSIZE, odsm_wire_get_deleg(raw, l, &o));
	ASSERT_EQ(0, odsm_wire_get_deleg(raw, 16 + 1024, &o));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_deleg(raw, 16 + 1025, &o));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_deleg(raw, 16 + 65537, &o));
	/* a slot size: a power of 2 in 256 .. 65536, as odsm_dslot's */
	for (s = 0; s <= 131072; s += (s < 1100 ? 1 : 4093)) {
		bool ok = s >= 256 && s <= 65536 && !(s & (s - 1));

		d.slot_size = s;
		odsm_wire_put_deleg(raw, &d);
		ASSERT_EQ(ok ? 0 : -EPROTO,
			  odsm_wire_get_deleg(raw, 16 + 16, &o))
			TH_LOG("slot_size %u", s);
	}
	d.slot_size = 65536;
	odsm_wire_put_deleg(raw, &d);
	ASSERT_EQ(0, odsm_wire_get_deleg(raw, 16 + 65536, &o));
	/* the sender's wait: 1 .. 3/4 of the longest timeout */
	for (l = 0; l <= ODSM_WIRE_DELEG_WAIT_MAX + 1; l += (l < 8 ? 1 : 4999)) {
		d.wait_ms = l;
		odsm_wire_put_deleg(raw, &d);
		ASSERT_EQ(l ? 0 : -EPROTO,
			  odsm_wire_get_deleg(raw, 16 + 16, &o))
			TH_LOG("wait_ms %u", l);
	}
	ASSERT_EQ(45000, ODSM_WIRE_DELEG_WAIT_MAX);
	d.wait_ms = ODSM_WIRE_DELEG_WAIT_MAX;
	odsm_wire_put_deleg(raw, &d);
	ASSERT_EQ(0, odsm_wire_get_deleg(raw, 16 + 16, &o));
	d.wait_ms = ODSM_WIRE_DELEG_WAIT_MAX + 1;
	odsm_wire_put_deleg(raw, &d);
	ASSERT_EQ(-EPROTO, odsm_wire_get_deleg(raw, 16 + 16, &o));
	raw[15] = 0x80;
	ASSERT_EQ(-EPROTO, odsm_wire_get_deleg(raw, 16 + 16, &o));
}

/* FETCH: golden bytes, and every rule of the request and its reply */
TEST(fetch_fields)
{
	static const u8 golden[24] = {
		0x40, 0x00, 0x00, 0x00, 0x00, 0x10, 0x07, 0x00,	/* gaddr */
		0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* offset */
		0x00, 0x00, 0x04, 0x00,				/* len */
		0x00, 0x40, 0x00, 0x00,				/* whole */
	};
	struct odsm_wire_fetch fe = { .gaddr = 0x0007100000000040ULL,
				      .offset = 0x1000, .len = 256 * 1024,
				      .whole = 0x4000 }, out;
	struct odsm_wire_fetch_reply fr = { .size = 100, .color = 0xbeef,
					    .len = 4 }, rout;
	u8 raw[24 + 8];

	ASSERT_EQ(24U, odsm_wire_put_fetch(raw, &fe));
	ASSERT_EQ(0, memcmp(raw, golden, sizeof(golden)));
	ASSERT_EQ(0, odsm_wire_get_fetch(raw, 24, &out));
	ASSERT_EQ(fe.gaddr, out.gaddr);	/* colored: the color is kept */
	ASSERT_EQ(fe.offset, out.offset);
	ASSERT_EQ(fe.len, out.len);
	ASSERT_EQ(fe.whole, out.whole);
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_fetch(raw, 23, &out));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_fetch(raw, 25, &out));
	fe.len = 0;	/* size only */
	odsm_wire_put_fetch(raw, &fe);
	ASSERT_EQ(0, odsm_wire_get_fetch(raw, 24, &out));
	fe.len = 256 * 1024 + 1;
	odsm_wire_put_fetch(raw, &fe);
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_fetch(raw, 24, &out));
	fe.len = 16;
	fe.offset = 1ULL << 48;
	odsm_wire_put_fetch(raw, &fe);
	ASSERT_EQ(-EPROTO, odsm_wire_get_fetch(raw, 24, &out));
	fe.offset = 0;
	fe.whole = 256 * 1024;
	odsm_wire_put_fetch(raw, &fe);
	ASSERT_EQ(0, odsm_wire_get_fetch(raw, 24, &out));
	fe.whole = 256 * 1024 + 1;
	odsm_wire_put_fetch(raw, &fe);
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_fetch(raw, 24, &out));

	/* what the home answers: the whole rest when whole covers it */
	ASSERT_EQ(512U, odsm_wire_fetch_span(512, 0, 4080, 16368));
	ASSERT_EQ(4096U, odsm_wire_fetch_span(4096, 0, 4080, 16368));
	ASSERT_EQ(16368U, odsm_wire_fetch_span(16368, 0, 4080, 16368));
	ASSERT_EQ(4080U, odsm_wire_fetch_span(16369, 0, 4080, 16368));
	ASSERT_EQ(4080U, odsm_wire_fetch_span(1 << 20, 0, 4080, 16368));
	ASSERT_EQ(96U, odsm_wire_fetch_span(4096, 4000, 0, 100));
	ASSERT_EQ(0U, odsm_wire_fetch_span(4096, 4096, 4080, 0));
	ASSERT_EQ(10U, odsm_wire_fetch_span(4096, 0, 10, 0));

	ASSERT_EQ(16U, odsm_wire_put_fetch_reply(raw, &fr));
	ASSERT_EQ(100U, ref_le(raw, 8));
	ASSERT_EQ(0xbeefU, ref_le(raw + 8, 2));
	ASSERT_EQ(4U, ref_le(raw + 12, 4));
	ASSERT_EQ(0, odsm_wire_get_fetch_reply(raw, 20, &rout));
	ASSERT_EQ(fr.size, rout.size);
	ASSERT_EQ(fr.color, rout.color);
	ASSERT_EQ(fr.len, rout.len);
	/* the data length must be what the message carries */
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_fetch_reply(raw, 19, &rout));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_fetch_reply(raw, 21, &rout));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_fetch_reply(raw, 15, &rout));
	/* never more data than the object has */
	fr.size = 3;
	odsm_wire_put_fetch_reply(raw, &fr);
	ASSERT_EQ(-EPROTO, odsm_wire_get_fetch_reply(raw, 20, &rout));
	fr.size = 100;
	fr.reserved = 1;
	odsm_wire_put_fetch_reply(raw, &fr);
	ASSERT_EQ(-EPROTO, odsm_wire_get_fetch_reply(raw, 20, &rout));
	fr.reserved = 0;
	fr.len = 0xffffffff;	/* a length that would wrap */
	odsm_wire_put_fetch_reply(raw, &fr);
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_fetch_reply(raw, 15, &rout));
	ASSERT_EQ(-EMSGSIZE, odsm_wire_get_fetch_reply(raw, 16, &rout));
}

/* ---- fuzz ---------------------------------------------------------------- */

#define FUZZ_ITERS	1000000U

static u64 rng_state;

static u64 rnd(void)
{
	/* xorshift64*: fixed seed, the same run everywhere */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static u32 rnd_below(u32 n)
{
	return (u32)(rnd() % n);
}

/* a value near a boundary of an n-byte field */
static u64 rnd_edge(unsigned int n)
{
	static const u64 edges[] = {
		0, 1, 2, 3, 4, 7, 8, 13, 14, 15, 16, 17, 31, 32, 33, 255,
		4095, 4096, 4097, 262144, 262160, 262161,
		0x7fffffff, 0x80000000, 0xfffff001, 0xffffffff,
		0xffffffffffffffffULL,
	};
	u64 v = edges[rnd_below(ARRAY_SIZE(edges))];

	if (rnd() & 1)
		v = -v;		/* e.g. status -1, -4095, -4096 */
	return n == 8 ? v : v & ((1ULL << (8 * n)) - 1);
}

/* a plausible header: valid, then a few fields or bytes disturbed */
static void gen_hdr(u8 *raw, u32 *self, u32 *nr)
{
	static const struct { unsigned int off, n; } fields[] = {
		{ 0, 4 }, { 4, 1 }, { 5, 1 }, { 6, 2 }, { 8, 4 }, { 12, 4 },
		{ 16, 8 }, { 24, 4 }, { 28, 4 },
	};
	unsigned int type = 1 + rnd_below(ODSM_MSG_TYPE_MAX - 1);
	u32 min, max, len;
	unsigned int k, n;
	struct odsm_wire_hdr h;

	*nr = 1 + rnd_below(rnd() & 1 ? 4 : 300);
	*self = rnd_below(*nr);
	ref_bounds(type, &min, &max);
	len = min + rnd_below(max - min + 1);
	h = mk_hdr(type, len);
	h.src_node = rnd_below(*nr);
	h.dst_node = *self;
	h.seq = rnd();
	if (ref_is_reply(type) && rnd_below(4) == 0) {
		h.status = -(s32)(1 + rnd_below(4095));
		h.len = 0;
	}
	odsm_wire_put_hdr(raw, &h);

	n = rnd_below(4);
	for (k = 0; k < n; k++) {
		unsigned int f = rnd_below(ARRAY_SIZE(fields));

		switch (rnd_below(3)) {
		case 0:		/* a random byte */
			raw[rnd_below(ODSM_WIRE_HDR_SIZE)] = (u8)rnd();
			break;
		case 1:		/* a field at an edge */
			ref_put_le(raw + fields[f].off, rnd_edge(fields[f].n),
				   fields[f].n);
			break;
		default:	/* a field off by one */
			ref_put_le(raw + fields[f].off,
				   ref_le(raw + fields[f].off, fields[f].n) +
				   (rnd() & 1 ? 1 : -1), fields[f].n);
			break;
		}
	}
}

TEST(fuzz_hdr)
{
	u32 accepted = 0, rejected = 0, toolong = 0;
	u8 *raw = malloc(ODSM_WIRE_HDR_SIZE);
	unsigned int i, k;

	rng_state = 0x9e3779b97f4a7c15ULL;
	for (i = 0; i < FUZZ_ITERS; i++) {
		struct odsm_wire_hdr h;
		u8 again[ODSM_WIRE_HDR_SIZE];
		u32 self, nr, min, max;
		int ret;

		if (i % 4 == 0) {	/* pure noise */
			for (k = 0; k < ODSM_WIRE_HDR_SIZE; k++)
				raw[k] = (u8)rnd();
			nr = 1 + rnd_below(256);
			self = rnd_below(nr);
		} else {
			gen_hdr(raw, &self, &nr);
		}
		ret = odsm_wire_get_hdr(raw, &h, self, nr);
		ASSERT_EQ(ref_check_hdr(raw, self, nr), ret) TH_LOG("iter %u", i);
		/* every byte is a field: decoding loses nothing */
		odsm_wire_put_hdr(again, &h);
		ASSERT_EQ(0, memcmp(raw, again, sizeof(again)))
			TH_LOG("iter %u", i);
		if (ret == -EMSGSIZE)
			toolong++;
		if (ret) {
			ASSERT_TRUE(ret == -EPROTO || ret == -EMSGSIZE);
			rejected++;
			continue;
		}
		accepted++;
		/* what a receiver may rely on */
		ASSERT_EQ(ODSM_WIRE_MAGIC, h.magic);
		ASSERT_EQ(ODSM_WIRE_VERSION, h.version);
		ASSERT_GE(h.type, 1);
		ASSERT_LT(h.type, ODSM_MSG_TYPE_MAX);
		ASSERT_EQ(0, h.flags & ~ODSM_WIRE_F_REPLY);
		ASSERT_EQ(ref_is_reply(h.type), !!(h.flags & ODSM_WIRE_F_REPLY));
		ASSERT_LT(h.src_node, nr);
		ASSERT_NE(self, h.src_node);
		ASSERT_EQ(self, h.dst_node);
		ASSERT_LE(h.status, 0);
		ASSERT_GE(h.status, STATUS_MIN);
		if (!ref_is_reply(h.type)) {
			ASSERT_EQ(0, h.status);
		}
		ASSERT_LE(h.len, ODSM_WIRE_MAX_PAYLOAD);
		ref_bounds(h.type, &min, &max);
		if (h.status) {
			ASSERT_EQ(0U, h.len);
		} else {
			ASSERT_TRUE(h.len >= min && h.len <= max);
		}
	}
	free(raw);
	TH_LOG("%u accepted, %u rejected (%u for length)", accepted,
	       rejected, toolong);
	/* the fuzz reached both sides of every rule often */
	ASSERT_GT(accepted, FUZZ_ITERS / 10);
	ASSERT_GT(rejected, FUZZ_ITERS / 4);
	ASSERT_GT(toolong, FUZZ_ITERS / 100);
}

/* the type's decoder on an accepted header's payload; <0 for none */
static int decode(const struct odsm_wire_hdr *h, const u8 *p, u32 len,
		  void *out)
{
	switch (h->type) {
	case ODSM_MSG_HELLO:
		return odsm_wire_get_hello(p, len, out);
	case ODSM_MSG_PING:
		return odsm_wire_get_ping(p, len, out);
	case ODSM_MSG_PONG:
		return odsm_wire_get_pong(p, len, out);
	case ODSM_MSG_READ:
		return odsm_wire_get_rw(p, len, false, out);
	case ODSM_MSG_WRITE:
		return odsm_wire_get_rw(p, len, true, out);
	case ODSM_MSG_ALLOC:
		return odsm_wire_get_alloc(p, len, out);
	case ODSM_MSG_ALLOC_REPLY:
		return odsm_wire_get_alloc_reply(p, len, out);
	case ODSM_MSG_FREE:
		return odsm_wire_get_free(p, len, out);
	case ODSM_MSG_ATOMIC:
		return odsm_wire_get_atomic(p, len, out);
	case ODSM_MSG_ATOMIC_REPLY:
		return odsm_wire_get_atomic_reply(p, len, out);
	case ODSM_MSG_FETCH:
		return odsm_wire_get_fetch(p, len, out);
	case ODSM_MSG_FETCH_REPLY:
		return odsm_wire_get_fetch_reply(p, len, out);
	case ODSM_MSG_MAP:
		return odsm_wire_get_map(p, len, out);
	case ODSM_MSG_MAP_REPLY:
		return odsm_wire_get_map_reply(p, len, out);
	case ODSM_MSG_KEYS:
		return odsm_wire_get_keys(p, len, out);
	case ODSM_MSG_KEYS_ASK:
		return odsm_wire_get_keys_ask(p, len, out);
	case ODSM_MSG_WAKE:
		return odsm_wire_get_wake(p, len, out);
	case ODSM_MSG_WAKE_REPLY:
		return odsm_wire_get_wake_reply(p, len, out);
	case ODSM_MSG_AQP:
	case ODSM_MSG_AQP_REPLY:
		return odsm_wire_get_aqp(p, len, out);
	}
	return 1;	/* no fixed payload: READ_REPLY data, empty replies */
}

/* what an accepted payload promises, checked against the raw bytes */
static bool payload_ok(unsigned int type, const u8 *p, u32 len,
		       const void *out)
{
	const struct odsm_wire_hello *he = out;
	const struct odsm_wire_rw *rw = out;
	const struct odsm_wire_alloc *al = out;
	const struct odsm_wire_atomic *at = out;
	const struct odsm_wire_fetch *fe = out;
	const struct odsm_wire_fetch_reply *fr = out;
	const struct odsm_wire_map_reply *mr = out;
	const struct odsm_wire_keys *ks = out;
	const struct odsm_wire_wake *wk = out;
	const struct odsm_wire_wake_reply *wr = out;
	const struct odsm_wire_aqp *aq = out;
	const struct odsm_wire_keys_ask *ka = out;

	switch (type) {
	case ODSM_MSG_HELLO:
		return len == 104 && he->node_id < he->nr_nodes &&
		       he->step >= 1 && he->step <= 3 &&
		       he->step == ref_le(p + 32, 4) && !ref_le(p + 36, 4) &&
		       !memcmp(he->nonce, p + 40, 32) &&
		       !memcmp(he->proof, p + 72, 32) &&
		       (he->step != 1 || !ref_le(p + 72, 8)) &&
		       he->node_id == ref_le(p, 4) &&
		       he->nr_nodes == ref_le(p + 4, 4) &&
		       he->heap_base == ref_le(p + 8, 8) &&
		       he->part_size == ref_le(p + 16, 8) &&
		       he->incarnation == ref_le(p + 24, 8);
	case ODSM_MSG_PING:
	case ODSM_MSG_FREE:
	case ODSM_MSG_ATOMIC_REPLY:
		return len == 8 && *(const u64 *)out == ref_le(p, 8);
	case ODSM_MSG_PONG:
	case ODSM_MSG_ALLOC_REPLY:
		return len == 16 && ((const u64 *)out)[0] == ref_le(p, 8) &&
		       ((const u64 *)out)[1] == ref_le(p + 8, 8);
	case ODSM_MSG_READ:
	case ODSM_MSG_WRITE:
		return rw->gaddr == ref_le(p, 8) && rw->len == ref_le(p + 8, 4) &&
		       rw->len >= 1 &&
		       (rw->flags == 0 ? rw->len <= ODSM_WIRE_MAX_DATA :
			(rw->flags & ~4U) == ODSM_WIRE_RW_OWNER ?
			rw->len == 16 && rw->gaddr % 16 == 0 &&
			(rw->flags == ODSM_WIRE_RW_OWNER ||
			 type == ODSM_MSG_WRITE) :
			type == ODSM_MSG_READ &&
			rw->flags == ODSM_WIRE_RW_CHECK) &&
		       rw->gaddr + rw->len <= (1ULL << 48) &&
		       len == 16 + (type == ODSM_MSG_WRITE ? rw->len : 0);
	case ODSM_MSG_ALLOC:
		return len == 16 && al->size == ref_le(p, 8) && al->size &&
		       al->align == ref_le(p + 8, 4) &&
		       al->flags == ref_le(p + 12, 4) &&
		       (al->align == 0 || (is_power_of_2(al->align) &&
					   al->align <= 4096)) &&
		       (al->flags & ~1U) == 0;
	case ODSM_MSG_ATOMIC:
		return len == 32 && at->gaddr == ref_le(p, 8) &&
		       at->gaddr % 8 == 0 && at->flags <= 1 &&
		       at->flags == ref_le(p + 12, 4) &&
		       (at->op == 1 || at->op == 2) &&
		       at->operand == ref_le(p + 16, 8) &&
		       at->compare == ref_le(p + 24, 8);
	case ODSM_MSG_FETCH:
		return len == 24 && fe->gaddr == ref_le(p, 8) &&
		       fe->offset == ref_le(p + 8, 8) &&
		       fe->offset < (1ULL << 48) &&
		       fe->len == ref_le(p + 16, 4) &&
		       fe->len <= ODSM_WIRE_MAX_DATA &&
		       fe->whole == ref_le(p + 20, 4) &&
		       fe->whole <= ODSM_WIRE_MAX_DATA;
	case ODSM_MSG_FETCH_REPLY:
		return fr->size == ref_le(p, 8) && fr->color == ref_le(p + 8, 2) &&
		       fr->reserved == 0 && fr->len == ref_le(p + 12, 4) &&
		       fr->len <= fr->size && len == 16 + fr->len;
	case ODSM_MSG_MAP:
		return len == 8 && ((const u64 *)out)[0] == ref_le(p, 8) &&
		       ((const u64 *)out)[0] < (1ULL << 48) &&
		       ((const u64 *)out)[0] % 65536 == 0;
	case ODSM_MSG_MAP_REPLY:
		return len == 32 && mr->gaddr == ref_le(p, 8) &&
		       mr->iova == ref_le(p + 8, 8) &&
		       mr->len == ref_le(p + 16, 4) &&
		       mr->rkey == ref_le(p + 20, 4) &&
		       mr->flags <= 1 && mr->flags == ref_le(p + 24, 4) &&
		       mr->reserved == 0 && !ref_le(p + 28, 4) &&
		       mr->gaddr < (1ULL << 48) && mr->gaddr % 65536 == 0 &&
		       mr->len == 65536 && mr->iova % 4096 == 0 &&
		       mr->iova <= ~0ULL - 65535;
	case ODSM_MSG_WAKE:
		return len == 16 && wk->gaddr == ref_le(p, 8) &&
		       wk->nr == ref_le(p + 8, 4) && !ref_le(p + 12, 4) &&
		       wk->gaddr % 4 == 0 && wk->gaddr < (1ULL << 48) &&
		       wk->nr <= 0x7fffffffU && wk->flags == 0;
	case ODSM_MSG_WAKE_REPLY:
		return len == 8 && wr->woken == ref_le(p, 4) &&
		       wr->woken <= 0x7fffffffU && !ref_le(p + 4, 4) &&
		       wr->reserved == 0;
	case ODSM_MSG_AQP:
	case ODSM_MSG_AQP_REPLY:
		return len == 16 && aq->qpn == ref_le(p, 4) &&
		       aq->psn == ref_le(p + 4, 4) &&
		       aq->depth == ref_le(p + 8, 4) && !ref_le(p + 12, 4) &&
		       aq->qpn >= 1 && aq->qpn < (1U << 24) &&
		       aq->psn < (1U << 24) && aq->depth >= 1 &&
		       aq->depth <= 255 && aq->reserved == 0;
	case ODSM_MSG_KEYS:
		return ks->nr == ref_le(p, 4) && ks->nr >= 1 && ks->nr <= 4096 &&
		       ks->reserved == 0 && !ref_le(p + 4, 4) &&
		       len == 8 + ks->nr * 32;
	case ODSM_MSG_KEYS_ASK:
		return len == 16 && ka->gaddr == ref_le(p, 8) &&
		       ka->gaddr % 65536 == 0 && ka->gaddr < (1ULL << 48) &&
		       ka->nr == ref_le(p + 8, 4) && ka->nr >= 1 &&
		       ka->nr <= 256 && !ref_le(p + 12, 4) &&
		       ka->reserved == 0;
	}
	return false;
}

TEST(fuzz_payload)
{
	u32 accepted = 0, decoded = 0;
	unsigned int i, k;
	u8 raw[ODSM_WIRE_HDR_SIZE];
	u8 tmpl[128];

	rng_state = 0x243f6a8885a308d3ULL;
	for (i = 0; i < FUZZ_ITERS; i++) {
		struct odsm_wire_hdr h;
		u64 out[16];
		u32 self, nr, len;
		u8 *p;
		int ret;

		gen_hdr(raw, &self, &nr);
		if (odsm_wire_get_hdr(raw, &h, self, nr))
			continue;
		accepted++;
		/* the header's length, or one near it */
		len = h.len;
		if (rnd_below(4) == 0)
			len = rnd_below(48);
		/* WRITE data is never read: keep the run fast */
		if (len > 4096 && h.type == ODSM_MSG_WRITE)
			len = 16 + rnd_below(4096);
		if (len > 4096)
			len = rnd_below(4096);
		/* noise, or a valid template with a disturbed byte */
		for (k = 0; k < sizeof(tmpl); k++)
			tmpl[k] = (u8)rnd();
		if (rnd() & 1) {
			memset(tmpl, 0, sizeof(tmpl));
			tmpl[0] = rnd() & 1;
			tmpl[4] = 1 + rnd_below(4);
			tmpl[8] = rnd_below(3);
			tmpl[9] = rnd_below(2);
			tmpl[32] = rnd_below(5);	/* a HELLO's step */
			if (h.type == ODSM_MSG_WRITE && len > 16)
				ref_put_le(tmpl + 8, len - 16, 4);
			if (rnd() & 1)
				tmpl[rnd_below(sizeof(tmpl))] = (u8)rnd();
		}
		p = malloc(len ? len : 1);
		for (k = 0; k < len; k++)
			p[k] = k < sizeof(tmpl) ? tmpl[k] : (u8)k;
		memset(out, 0, sizeof(out));
		ret = decode(&h, p, len, out);
		ASSERT_TRUE(ret == 0 || ret == 1 || ret == -EPROTO ||
			    ret == -EMSGSIZE) TH_LOG("type %u ret %d", h.type, ret);
		if (ret == 0) {
			decoded++;
			ASSERT_TRUE(payload_ok(h.type, p, len, out))
				TH_LOG("iter %u type %u len %u", i, h.type, len);
		}
		free(p);
	}
	TH_LOG("%u headers accepted, %u payloads decoded", accepted, decoded);
	/* about 1 in 20 with 26 types: the decoders are reached, often */
	ASSERT_GT(decoded, FUZZ_ITERS / 25);
}

TEST_HARNESS_MAIN
