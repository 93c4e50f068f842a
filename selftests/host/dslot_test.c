// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of kmod/odsm_dslot.c, the delegation slot codec: batches
 * built and parsed back, the limits a client meets (argument or result too
 * long, slot full), every kind of malformed request batch rejected whole,
 * response batches, and random and mutated slots that must never make the
 * parser describe bytes outside the slot (ASan watches the reads).
 */
#include <stddef.h>

#include "odsm_dslot.h"

#include "ksft_host.h"

#define SLOT	1024U
#define MAXV	64U

static struct odsm_dreq req(u16 kind, u64 op, u32 arg_len, u32 ret_max,
			    u32 tag)
{
	struct odsm_dreq r = { .op = op, .obj = 7 | (u64)3 << 32,
			       .arg_len = arg_len, .ret_max = ret_max,
			       .kind = kind, .tag = tag };
	return r;
}

/* A slot-sized, 8-aligned buffer with one valid APPLY of 8 arg bytes. */
static u64 *one_apply(void)
{
	static u64 buf[SLOT / 8];
	struct odsm_dbatch b;
	struct odsm_dreq r = req(ODSM_DREQ_APPLY, 42, 8, 8, 1);
	u64 arg = 5;

	memset(buf, 0, sizeof(buf));
	odsm_dbatch_init(&b, buf, SLOT);
	if (odsm_dbatch_add(&b, &r, &arg))
		abort();
	odsm_dbatch_seal(&b);
	return buf;
}

static int parse(const void *slot)
{
	struct odsm_dreq_view v[MAXV];
	u32 n;

	return odsm_dslot_parse_req(slot, SLOT, v, MAXV, &n);
}

TEST(layout_is_fixed)
{
	/* the format is ABI: sizes and offsets never change */
	ASSERT_EQ(16U, ODSM_DSLOT_HDR);
	ASSERT_EQ(32U, ODSM_DREQ_HDR);
	ASSERT_EQ(16U, ODSM_DRESP_HDR);
	ASSERT_EQ(16U, (u32)sizeof(struct odsm_dwith));
	ASSERT_EQ(16U, (u32)sizeof(struct odsm_dentrust));
	ASSERT_EQ(28U, (u32)offsetof(struct odsm_dreq, tag));
	ASSERT_FALSE(odsm_dslot_size_ok(128));
	ASSERT_FALSE(odsm_dslot_size_ok(1000));
	ASSERT_TRUE(odsm_dslot_size_ok(1024));
	ASSERT_FALSE(odsm_dslot_size_ok(1U << 17));
}

TEST(batch_round_trip)
{
	u64 buf[SLOT / 8] = { 0 };
	struct odsm_dreq_view v[MAXV];
	struct odsm_dbatch b;
	struct odsm_dreq r;
	u8 arg[40];
	u32 n, i;

	for (i = 0; i < sizeof(arg); i++)
		arg[i] = (u8)i;
	odsm_dbatch_init(&b, buf, SLOT);
	for (i = 0; i < 5; i++) {
		r = req(ODSM_DREQ_APPLY, 100 + i, i * 7, 8, 1000 + i);
		ASSERT_EQ(0, odsm_dbatch_add(&b, &r, arg));
	}
	odsm_dbatch_seal(&b);
	ASSERT_EQ(0, odsm_dslot_parse_req(buf, SLOT, v, MAXV, &n));
	ASSERT_EQ(5U, n);
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(100 + i, v[i].op);
		EXPECT_EQ(i * 7, v[i].arg_len);
		EXPECT_EQ(1000 + i, v[i].tag);
		EXPECT_EQ(0U, v[i].arg_off % 8);
		EXPECT_EQ(0, memcmp((u8 *)buf + v[i].arg_off, arg, i * 7));
	}
}

TEST(empty_batch_is_valid)
{
	u64 buf[SLOT / 8] = { 0 };
	struct odsm_dreq_view v[MAXV];
	u32 n = 9;

	ASSERT_EQ(0, odsm_dslot_parse_req(buf, SLOT, v, MAXV, &n));
	ASSERT_EQ(0U, n);
}

TEST(client_limits)
{
	u64 buf[SLOT / 8];
	struct odsm_dbatch b;
	struct odsm_dreq r;
	static u8 arg[SLOT];
	int i, ret;

	odsm_dbatch_init(&b, buf, SLOT);
	/* longest argument and result fit an empty slot, one more does not */
	r = req(ODSM_DREQ_APPLY, 1, odsm_dslot_max_arg(SLOT) + 1, 0, 0);
	EXPECT_EQ(-E2BIG, odsm_dbatch_add(&b, &r, arg));
	r = req(ODSM_DREQ_APPLY, 1, 0, odsm_dslot_max_ret(SLOT) + 1, 0);
	EXPECT_EQ(-E2BIG, odsm_dbatch_add(&b, &r, arg));
	r = req(ODSM_DREQ_APPLY, 1, odsm_dslot_max_arg(SLOT), 0, 0);
	EXPECT_EQ(0, odsm_dbatch_add(&b, &r, arg));
	r = req(ODSM_DREQ_APPLY, 1, 0, 0, 0);
	EXPECT_EQ(-ENOSPC, odsm_dbatch_add(&b, &r, arg));
	EXPECT_EQ(1U, b.count);

	/* results reserve their room: a full response slot means full */
	odsm_dbatch_init(&b, buf, SLOT);
	r = req(ODSM_DREQ_APPLY, 1, 0, odsm_dslot_max_ret(SLOT), 0);
	EXPECT_EQ(0, odsm_dbatch_add(&b, &r, arg));
	r = req(ODSM_DREQ_APPLY, 1, 0, 0, 0);
	EXPECT_EQ(-ENOSPC, odsm_dbatch_add(&b, &r, arg));

	/* the count: records of no argument fill it */
	odsm_dbatch_init(&b, buf, SLOT);
	for (i = 0;; i++) {
		r = req(ODSM_DREQ_APPLY, 1, 0, 0, i);
		ret = odsm_dbatch_add(&b, &r, arg);
		if (ret)
			break;
	}
	EXPECT_EQ(-ENOSPC, ret);
	EXPECT_EQ(odsm_dslot_max_count(SLOT), (u32)i);
	odsm_dbatch_seal(&b);
	EXPECT_EQ(0, parse(buf));
}

TEST(malformed_header)
{
	struct odsm_dslot_hdr *h = (struct odsm_dslot_hdr *)one_apply();

	ASSERT_EQ(0, parse(h));
	h->count = 2;
	EXPECT_EQ(-EBADMSG, parse(h));
	h = (struct odsm_dslot_hdr *)one_apply();
	h->count = 0xffff;
	EXPECT_EQ(-EBADMSG, parse(h));
	h = (struct odsm_dslot_hdr *)one_apply();
	h->len = SLOT;		/* past the slot */
	EXPECT_EQ(-EBADMSG, parse(h));
	h = (struct odsm_dslot_hdr *)one_apply();
	h->len += 4;		/* unaligned */
	EXPECT_EQ(-EBADMSG, parse(h));
	h = (struct odsm_dslot_hdr *)one_apply();
	h->len += 8;		/* trailing bytes no record accounts for */
	EXPECT_EQ(-EBADMSG, parse(h));
	h = (struct odsm_dslot_hdr *)one_apply();
	h->flags = 2;		/* a flag no one defined */
	EXPECT_EQ(-EBADMSG, parse(h));
	h = (struct odsm_dslot_hdr *)one_apply();
	h->flags = ODSM_DSLOT_F_GATEWAY | 0x8000;
	EXPECT_EQ(-EBADMSG, parse(h));
}

/* The one request flag: the gateway takes the batch; still a batch. */
TEST(gateway_flag)
{
	struct odsm_dslot_hdr *h = (struct odsm_dslot_hdr *)one_apply();

	h->flags = ODSM_DSLOT_F_GATEWAY;
	EXPECT_EQ(0, parse(h));
}

TEST(caller_room_and_slot_size)
{
	struct odsm_dreq_view v[1];
	void *slot = one_apply();
	u32 n;

	/* more records than the caller has room for */
	EXPECT_EQ(0, odsm_dslot_parse_req(slot, SLOT, v, 1, &n));
	EXPECT_EQ(-EBADMSG, odsm_dslot_parse_req(slot, SLOT, v, 0, &n));
	EXPECT_EQ(0U, n);
	/* a slot size no slot has */
	EXPECT_EQ(-EBADMSG, odsm_dslot_parse_req(slot, 1000, v, 1, &n));
}

TEST(malformed_record)
{
	struct odsm_dreq *r;

#define REC() (r = (struct odsm_dreq *)((u8 *)one_apply() + ODSM_DSLOT_HDR))
#define BAD() EXPECT_EQ(-EBADMSG, parse((u8 *)r - ODSM_DSLOT_HDR))
	REC();
	r->kind = 0;
	BAD();
	REC();
	r->kind = ODSM_DREQ_KIND_MAX;
	BAD();
	REC();
	r->op = 0;
	BAD();
	REC();
	r->flags = 2;
	BAD();
	REC();
	r->arg_len = 9;		/* past the header's len */
	BAD();
	REC();
	r->arg_len = 0xfffffff8;
	BAD();
	REC();
	r->arg_len = 0;		/* leaves 8 bytes unaccounted */
	BAD();
	REC();
	r->ret_max = odsm_dslot_max_ret(SLOT) + 1;
	BAD();
	REC();
	r->kind = ODSM_DREQ_APPLY_WITH;	/* needs a 16-byte odsm_dwith */
	BAD();
	REC();
	r->kind = ODSM_DREQ_ENTRUST;	/* needs a 16-byte odsm_dentrust */
	BAD();
	REC();
	r->kind = ODSM_DREQ_FREE;	/* carries no argument */
	BAD();
#undef REC
#undef BAD
}

/* Records that each fit but whose answers together could not. */
TEST(results_that_cannot_be_answered)
{
	u64 buf[SLOT / 8] = { 0 };
	struct odsm_dslot_hdr *h = (struct odsm_dslot_hdr *)buf;
	struct odsm_dreq r = req(ODSM_DREQ_APPLY, 1, 0, SLOT / 2, 0);
	u8 *p = (u8 *)buf + ODSM_DSLOT_HDR;

	memcpy(p, &r, sizeof(r));
	memcpy(p + ODSM_DREQ_HDR, &r, sizeof(r));
	h->count = 2;
	h->len = 2 * ODSM_DREQ_HDR;
	EXPECT_EQ(-EBADMSG, parse(buf));
	h->count = 1;
	h->len = ODSM_DREQ_HDR;
	EXPECT_EQ(0, parse(buf));
}

TEST(response_round_trip_and_rejects)
{
	u64 buf[SLOT / 8] = { 0 };
	struct odsm_dslot_hdr *h = (struct odsm_dslot_hdr *)buf;
	struct odsm_dresp_view v[4];
	struct odsm_drbatch b;
	s32 st;
	u8 *p;
	int i;

	odsm_drbatch_init(&b, buf, SLOT);
	for (i = 0; i < 3; i++) {
		p = odsm_drbatch_ret(&b, 24);
		ASSERT_NE(NULL, p);
		memset(p, 'a' + i, i * 5);
		ASSERT_EQ(0, odsm_drbatch_add(&b, -i, 77 + i, i * 5));
	}
	odsm_drbatch_seal(&b, 0);
	ASSERT_EQ(0, odsm_dslot_parse_resp(buf, SLOT, 3, v, &st));
	ASSERT_EQ(0, st);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-i, v[i].status);
		EXPECT_EQ((u32)i * 5, v[i].ret_len);
		EXPECT_EQ(77U + i, v[i].tag);
		if (i)
			EXPECT_EQ('a' + i, ((u8 *)buf)[v[i].ret_off]);
	}
	/* the wrong count, then a record claiming bytes past len */
	EXPECT_EQ(-EBADMSG, odsm_dslot_parse_resp(buf, SLOT, 2, v, &st));
	((struct odsm_dresp *)((u8 *)buf + ODSM_DSLOT_HDR))->ret_len = SLOT;
	EXPECT_EQ(-EBADMSG, odsm_dslot_parse_resp(buf, SLOT, 3, v, &st));

	/* a rejected batch: a status, no records */
	odsm_drbatch_init(&b, buf, SLOT);
	odsm_drbatch_seal(&b, -EBADMSG);
	ASSERT_EQ(0, odsm_dslot_parse_resp(buf, SLOT, 3, v, &st));
	EXPECT_EQ(-EBADMSG, st);
	h->status = 5;	/* never positive */
	EXPECT_EQ(-EBADMSG, odsm_dslot_parse_resp(buf, SLOT, 0, v, &st));
}

/*
 * A well-formed response may still not answer its requests: a record out
 * of its request's place, or a result longer than the room asked for.
 */
TEST(answers_match_their_requests)
{
	struct odsm_dreq_view q[2] = {
		{ .tag = 5, .ret_max = 16 }, { .tag = 6, .ret_max = 0 },
	};
	struct odsm_dresp_view r[2] = {
		{ .tag = 5, .ret_len = 16 }, { .tag = 6, .ret_len = 0 },
	};

	EXPECT_EQ(0, odsm_dslot_answers(q, r, 2));
	EXPECT_EQ(0, odsm_dslot_answers(q, r, 0));
	r[0].ret_len = 17;
	EXPECT_EQ(-EBADMSG, odsm_dslot_answers(q, r, 2));
	r[0].ret_len = 1;
	r[1].tag = 5;
	EXPECT_EQ(-EBADMSG, odsm_dslot_answers(q, r, 2));
	r[1].tag = 6;
	r[1].ret_len = 1;
	EXPECT_EQ(-EBADMSG, odsm_dslot_answers(q, r, 2));
}

/*
 * Random slots and single-word mutations of valid ones: the parser
 * either rejects them or describes only bytes inside the slot, with every
 * reservation answerable.
 */
TEST(random_and_mutated_slots)
{
	static u64 buf[SLOT / 8];
	struct odsm_dreq_view v[MAXV];
	u64 x = 0x9e3779b97f4a7c15ULL;
	u32 n, i, k, ok = 0, resp;
	struct odsm_dbatch b;
	struct odsm_dreq r;
	u8 arg[64] = { 0 };
	int it;

	for (it = 0; it < 200000; it++) {
		if (it % 2) {
			for (i = 0; i < SLOT / 8; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				buf[i] = x & (it % 4 == 1 ? 0x000000ff000000ffULL
							 : ~0ULL);
			}
		} else {
			odsm_dbatch_init(&b, buf, SLOT);
			for (k = 0; k < 1 + (u32)it % 9; k++) {
				r = req(1 + k % 5, 1 + k, (k * 13) % 64,
					k * 8, k);
				if (r.kind == ODSM_DREQ_APPLY_WITH ||
				    r.kind == ODSM_DREQ_ENTRUST)
					r.arg_len = 16;
				if (r.kind == ODSM_DREQ_FREE)
					r.arg_len = 0;
				odsm_dbatch_add(&b, &r, arg);
			}
			odsm_dbatch_seal(&b);
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[(x >> 8) % 24] ^= x;
		}
		if (odsm_dslot_parse_req(buf, SLOT, v, MAXV, &n))
			continue;
		ok++;
		resp = 0;
		for (i = 0; i < n; i++) {
			ASSERT_LE(v[i].arg_off + v[i].arg_len, SLOT);
			ASSERT_GE(v[i].arg_off, ODSM_DSLOT_HDR + ODSM_DREQ_HDR);
			resp += ODSM_DRESP_HDR + odsm_dslot_pad(v[i].ret_max);
		}
		ASSERT_LE(resp, SLOT - ODSM_DSLOT_HDR);
	}
	/* the mutations leave some batches valid: the check above ran */
	ASSERT_GT(ok, 1000U);
}

TEST_HARNESS_MAIN
