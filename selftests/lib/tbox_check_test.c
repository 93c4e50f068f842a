// SPDX-License-Identifier: GPL-2.0
/*
 * Tied allocation in a program built with ODSM_CHECK, against the fake
 * /dev/odsm: the group borrows (inline in odsm_tbox.h) are recorded by
 * the checking mode like any borrow, so the program's own odsm_return()
 * and odsm_return_mut() of them are no misuse, and a real misuse of one
 * (a double return, a mutable borrow while a shared one is out) is
 * caught.  When the borrows were taken inside the library (built without
 * ODSM_CHECK) the first plain return was reported as a return of a
 * borrow never taken.
 */
#define ODSM_CHECK
#include <stdlib.h>
#include "odsm.h"

#include "ksft_host.h"
#include "fake_odsm.h"
#include "check_capture.h"

struct tparent {
	odsm_tbox kid[2];
};

TEST(checked_group_borrows)
{
	const struct tparent *tp;
	struct tparent *wp;
	odsm_box g;
	odsm_ref r;
	odsm_mut m;
	const void *p;
	uint64_t v0;
	FILE *err;
	void *w;
	int saved, i;

	fk_init();
	ASSERT_EQ(0, ck_capture_start(&err, &saved));
	v0 = violations();
	ASSERT_EQ(0, odsm_tgroup_new(&g, sizeof(*wp), 2 * (ODSM_TBOX_HDR + 32)));
	ASSERT_EQ(0, odsm_tgroup_borrow_mut(&g, &m, (void **)&wp));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, odsm_tbox_new(&m, 32, &wp->kid[i], &w));
		memset(w, i + 1, 32);
	}
	EXPECT_EQ(0, odsm_return_mut(&m));
	ASSERT_EQ(0, odsm_tgroup_borrow(&g, &r, (const void **)&tp));
	ASSERT_EQ(0, odsm_tbox_get(&r, &tp->kid[1], &p));
	EXPECT_EQ(2, ((const uint8_t *)p)[31]);
	/* a mutable borrow while the shared one is out: caught */
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_tgroup_borrow_mut(&g, &m, &w));
	EXPECT_EQ(NULL, w);
	EXPECT_EQ(v0 + 1, violations());
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(v0 + 1, violations()) TH_LOG("%s", printed(err));
	/* and a double return of it */
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_return(&r));
	EXPECT_EQ(v0 + 2, violations());
	/* a drop while a borrow is out: refused, and the group stays whole
	 * (it was marked dead first: every later borrow was -ESTALE)
	 */
	ASSERT_EQ(0, odsm_tgroup_borrow(&g, &r, (const void **)&tp));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_tgroup_drop(&g));
	EXPECT_EQ(v0 + 3, violations());
	EXPECT_EQ(0, odsm_return(&r));
	ASSERT_EQ(0, odsm_tgroup_borrow(&g, &r, (const void **)&tp));
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(0, odsm_tgroup_drop(&g));
	EXPECT_EQ(v0 + 3, violations()) TH_LOG("%s", printed(err));
	ck_capture_stop(err, saved);
	fk_fini();
}

TEST_HARNESS_MAIN
