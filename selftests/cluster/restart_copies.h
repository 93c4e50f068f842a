/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two copies of one colored address on node 0: what
 * cluster_returnpick_test and cluster_mutpick_test share.  The home is
 * the rig's fake node (rig.fake_peer=1), spoken for by node 1: it serves
 * FETCHes of its object O (4 KiB) as incarnation 1, then restarts as
 * incarnation 2, whose O has other bytes at the same colored address.
 * Node 0 borrows O under each: copy 1 (incarnation 1's, an orphan once
 * the home restarted, still borrowed) and copy 2 (incarnation 2's).
 *
 * Each program has four words of its own (struct rc_words): a
 * directory's words outlive the program that wrote them.
 *
 * Include after odsm_cluster.h, fake_peer.h and fake_node.h.
 */
#ifndef _ODSM_RESTART_COPIES_H
#define _ODSM_RESTART_COPIES_H

struct rc_words {
	unsigned int ready;	/* node 0: 1 once it is ready for the home */
	unsigned int up;	/* node 1: the fake home's incarnation (1, 2)
				 * that completed a handshake
				 */
	unsigned int held;	/* node 0: 1 once it holds copy 1 */
	unsigned int done;	/* node 0: 1 once it is done with the home */
};

#define O_SIZE		KiB(4)
#define O_OFF		MiB(2)		/* O, in the fake's partition */
#define O_COLOR		5U
#define TAG_O1		11		/* incarnation 1's bytes */
#define TAG_O2		12		/* incarnation 2's */
#define FETCH_LEN	24U		/* gaddr, offset, len, whole */
#define FETCH_REPLY_LEN	16U		/* size, color, reserved, len */

static inline uint64_t o_addr(void)
{
	return c_part(C.nodes - 1) + O_OFF;
}

static inline uint64_t o_colored(void)
{
	return o_addr() | (uint64_t)O_COLOR << ODSM_COLOR_SHIFT;
}

/* ---- node 1: the fake home ----------------------------------------------- */

/* The FETCH in p: O's bytes of the incarnation tagged tag, or -ESTALE. */
static inline int rc_fetch(struct fake_peer *fp, unsigned int tag,
			   const struct fp_hdr *h, const uint8_t *p)
{
	static uint8_t r[FETCH_REPLY_LEN + O_SIZE];
	uint64_t g = get64(p), off = get64(p + 8);
	uint32_t n, i;

	if (h->len != FETCH_LEN || odsm_addr_of(g) != o_addr() ||
	    odsm_color_of(g) < O_COLOR || off >= O_SIZE)
		return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, -ESTALE,
			       NULL, 0);
	n = (uint32_t)(O_SIZE - off);	/* the rest, whole: it is small */
	memset(r, 0, FETCH_REPLY_LEN);
	put64(r, O_SIZE);
	r[8] = (uint8_t)O_COLOR;
	put32(r + 12, n);
	for (i = 0; i < n; i++)
		r[FETCH_REPLY_LEN + i] = c_pat(C.nodes - 1, tag, off + i);
	return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, 0, r,
		       FETCH_REPLY_LEN + n);
}

/* The requests the home serves: FETCHes of O, its bytes tagged *ctx. */
static inline int rc_serve(struct fake_peer *fp, const struct fp_hdr *h,
			   const uint8_t *p, void *ctx)
{
	return h->type == T_FETCH ? rc_fetch(fp, *(unsigned int *)ctx, h, p) :
				    -ENOSYS;
}

/* Node 1: incarnation 1 until node 0 holds copy 1, then incarnation 2. */
static inline void rc_fake_home(struct __test_metadata *_metadata,
				const struct rc_words *w)
{
	uint64_t inc1 = 0x3a11000000000001ULL ^ c_now_ms() << 8;
	unsigned int tag = TAG_O1;
	struct fake_peer fp;
	int ret;

	ASSERT_EQ(0, c_poll(0, w->ready, 1, 120, NULL));
	ret = c_fake_node_up(&fp, inc1);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 1: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, w->up, 1));
	ret = c_fake_home(&fp, w->held, 120, rc_serve, &tag);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 1 serving: %s", strerror(-ret));
	/* the restart: the old connection goes, a new incarnation dials */
	fp_close(&fp);
	ret = c_fake_node_up(&fp, inc1 + 0x100);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 2: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, w->up, 2));
	tag = TAG_O2;
	ret = c_fake_home(&fp, w->done, 120, rc_serve, &tag);
	EXPECT_EQ(0, ret) TH_LOG("incarnation 2 serving: %s", strerror(-ret));
	fp_close(&fp);
}

/* ---- node 0: the module under test ----------------------------------------- */

/* A BORROW of O into *b: 0 or -errno. */
static inline int borrow_o(struct odsm_borrow *b)
{
	*b = (struct odsm_borrow){ .gaddr = o_colored() };
	return ioctl(odsm_rt.fd, ODSM_IOC_BORROW, b) ? -errno : 0;
}

/* A RETURN of O's copy at addr: 0 or -errno. */
static inline int return_o(uint64_t addr)
{
	struct odsm_borrow b = { .gaddr = o_colored(), .addr = addr };

	return ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &b) ? -errno : 0;
}

/* Do the bytes at addr hold incarnation tag's O? */
static inline bool holds(uint64_t addr, unsigned int tag)
{
	return c_check((const uint8_t *)(uintptr_t)addr, O_SIZE,
		       C.nodes - 1, tag) < 0;
}

/*
 * Node 0's first two steps: copy 1 into *b1 under incarnation 1, the
 * home's restart, copy 2 into *b2 under incarnation 2.
 */
static inline void rc_two_copies(struct __test_metadata *_metadata,
				 const struct rc_words *w,
				 struct odsm_borrow *b1, struct odsm_borrow *b2)
{
	uint64_t end;
	int ret;

	ASSERT_EQ(0, c_put(C.self, w->ready, 1));
	ASSERT_EQ(0, c_poll(1, w->up, 1, 120, NULL));
	ASSERT_TRUE(c_fake_node_is_up());

	/* 1. copy 1, incarnation 1's */
	ret = borrow_o(b1);
	ASSERT_EQ(0, ret) TH_LOG("borrow of O: %s", odsm_strerror(ret));
	ASSERT_EQ(O_SIZE, b1->size);
	ASSERT_TRUE(holds(b1->addr, TAG_O1));

	/* 2. the home restarts; copy 2, incarnation 2's */
	ASSERT_EQ(0, c_put(C.self, w->held, 1));
	ret = c_poll(1, w->up, 2, 120, NULL);
	end = c_now_ms() + 10000;
	while (!ret && !c_fake_node_is_up() && c_now_ms() < end)
		c_sleep_ms(20);
	ASSERT_TRUE(!ret && c_fake_node_is_up()) {
		c_put(C.self, w->done, 1);
		TH_LOG("incarnation 2 of the home did not come up");
	}
	ret = borrow_o(b2);
	ASSERT_EQ(0, ret) TH_LOG("borrow of O again: %s", odsm_strerror(ret));
	EXPECT_EQ((uint32_t)ODSM_BORROWED_MISS, b2->result);
	EXPECT_NE(b1->addr, b2->addr);
	EXPECT_TRUE(holds(b2->addr, TAG_O2));
	EXPECT_TRUE(holds(b1->addr, TAG_O1)) {
		TH_LOG("copy 1, still borrowed, changed");
	}
}

#endif /* _ODSM_RESTART_COPIES_H */
