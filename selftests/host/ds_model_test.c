// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of userlib/odsm_ds_model.c, the data structures' cost
 * model and chooser: the predictions are BCL's formulas over fixed
 * component costs (the paper's Cori figures), the chooser picks the
 * cheaper variant for every (operation, promise), switches an operation
 * to one-sided exactly when the owner's request latency grows past that
 * operation's one-sided cost (the attentiveness effect), refuses promises
 * an operation has no variant for; and the calibration's text form.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "odsm_ds.h"
#include "odsm_ds_int.h"

#include "ksft_host.h"

/* BCL's Table I (Cori, microseconds), in ns; a request of 6 us */
static const struct odsm_ds_costs cori = {
	.write_ns = 3000, .read_ns = 3700, .cas_ns = 3800, .fao_ns = 3900,
	.req_ns = 6000, .req_idle_ns = 6000, .gen = 1,
};

static const struct {
	enum odsm_ds_op op;
	enum odsm_ds_promise p;
	double onesided;	/* by hand, from the formulas */
} formulas[] = {
	{ ODSM_DS_INSERT, ODSM_DS_CRW, 3800 + 3000 + 3900 },	/* CAS+W+FAO */
	{ ODSM_DS_INSERT, ODSM_DS_CW, 3800 + 3000 },		/* CAS+W */
	{ ODSM_DS_FIND, ODSM_DS_CRW, 3900 + 3700 + 3900 },	/* FAO+R+FAO */
	{ ODSM_DS_FIND, ODSM_DS_CR, 3700 },			/* R */
	{ ODSM_DS_UPDATE, ODSM_DS_CRW, 3700 + 3800 + 3000 + 3900 },
	{ ODSM_DS_UPDATE, ODSM_DS_CW, 3700 + 3000 },		/* R+W */
	{ ODSM_DS_DELETE, ODSM_DS_CRW, 3700 + 3800 },		/* R+CAS */
	{ ODSM_DS_DELETE, ODSM_DS_CW, 3700 + 3800 },
	{ ODSM_DS_PUSH, ODSM_DS_CRW, 3800 + 3000 + 3800 },	/* CAS+W+CAS-P */
	{ ODSM_DS_PUSH, ODSM_DS_CW, 3800 + 3000 },		/* CAS+W */
	{ ODSM_DS_POP, ODSM_DS_CRW, 3800 + 3700 + 3800 },	/* CAS+R+CAS-P */
	{ ODSM_DS_POP, ODSM_DS_CR, 3800 + 3700 + 3900 },	/* CAS+R+FAO */
};

#define NF (sizeof(formulas) / sizeof(formulas[0]))

TEST(predictions_are_the_formulas)
{
	unsigned int i;

	for (i = 0; i < NF; i++) {
		EXPECT_EQ(formulas[i].onesided,
			  odsm_ds_predict(&cori, formulas[i].op,
					  formulas[i].p, 0));
		EXPECT_EQ(6000.0, odsm_ds_predict(&cori, formulas[i].op,
						  formulas[i].p, 1));
	}
}

TEST(chooser_picks_the_cheaper)
{
	unsigned int i;

	/* at 6 us a request beats every variant but the CR find (3.7) */
	for (i = 0; i < NF; i++) {
		int want = formulas[i].op == ODSM_DS_FIND &&
			   formulas[i].p == ODSM_DS_CR ? 0 : 1;

		EXPECT_EQ(want, odsm_ds_choose(&cori, formulas[i].op,
					       formulas[i].p)) {
			TH_LOG("%s %s", odsm_ds_op_name(formulas[i].op),
			       odsm_ds_promise_name(formulas[i].p));
		}
	}
}

/*
 * The owner gets busy: its requests' latency grows.  Every operation
 * switches to one-sided at its own one-sided cost and stays there.
 */
TEST(switches_when_the_owner_is_busy)
{
	struct odsm_ds_costs c = cori;
	unsigned int i, switched_at[NF] = { 0 };
	double req;

	for (req = 1000; req <= 20000; req += 100) {
		c.req_ns = req;
		for (i = 0; i < NF; i++) {
			int v = odsm_ds_choose(&c, formulas[i].op,
					       formulas[i].p);

			EXPECT_EQ(req < formulas[i].onesided ? 1 : 0, v);
			if (!v && !switched_at[i])
				switched_at[i] = (unsigned int)req;
			if (switched_at[i])
				EXPECT_EQ(0, v);	/* never back */
		}
	}
	for (i = 0; i < NF; i++)
		/* each cost is a multiple of the 100 ns step */
		EXPECT_EQ((unsigned int)formulas[i].onesided, switched_at[i]);
}

/* TCP: each "one-sided" component is a request too; equal costs tie */
TEST(tcp_every_component_a_round_trip)
{
	struct odsm_ds_costs c = {
		.read_ns = 50000, .write_ns = 50000, .cas_ns = 50000,
		.fao_ns = 50000, .req_ns = 50000,
	};
	unsigned int i;

	for (i = 0; i < NF; i++) {
		/* one component (CR find) ties: one-sided, no owner CPU */
		int want = formulas[i].op == ODSM_DS_FIND &&
			   formulas[i].p == ODSM_DS_CR ? 0 : 1;

		EXPECT_EQ(want, odsm_ds_choose(&c, formulas[i].op,
					       formulas[i].p));
	}
}

TEST(promises_without_a_variant)
{
	EXPECT_EQ(-EINVAL, odsm_ds_choose(&cori, ODSM_DS_INSERT, ODSM_DS_CR));
	EXPECT_EQ(-EINVAL, odsm_ds_choose(&cori, ODSM_DS_FIND, ODSM_DS_CW));
	EXPECT_EQ(-EINVAL, odsm_ds_choose(&cori, ODSM_DS_NR_OPS, ODSM_DS_CRW));
	EXPECT_EQ(-EINVAL, odsm_ds_choose(&cori, ODSM_DS_FIND, 7));
	EXPECT_EQ(-1.0, odsm_ds_predict(&cori, ODSM_DS_UPDATE, ODSM_DS_CR, 0));
	EXPECT_EQ(-1.0, odsm_ds_predict(&cori, ODSM_DS_DELETE, ODSM_DS_CR, 1));
	EXPECT_EQ(-EINVAL, odsm_ds_choose(&cori, ODSM_DS_PUSH, ODSM_DS_CR));
	EXPECT_EQ(-EINVAL, odsm_ds_choose(&cori, ODSM_DS_POP, ODSM_DS_CW));
}

/*
 * A structure's chooser: AUTO follows the model and re-decides on new
 * costs (a calibration); a fixed mode keeps its variant whatever they
 * are; promises without a variant stay refused in every mode.
 */
TEST(structures_redecide)
{
	struct odsm_ds_costs busy = cori;
	struct ds_chooser ch = { .mode = ODSM_DS_AUTO };
	unsigned int i, m;

	ds_chooser_set(&ch, &cori);
	for (i = 0; i < NF; i++)
		EXPECT_EQ(odsm_ds_choose(&cori, formulas[i].op, formulas[i].p),
			  ds_chooser_get(&ch, formulas[i].op, formulas[i].p));
	EXPECT_EQ(1, ds_chooser_get(&ch, ODSM_DS_INSERT, ODSM_DS_CRW));
	/* the owner's latency now 12 us: inserts go one-sided */
	busy.req_ns = 12000;
	busy.gen++;
	ds_chooser_set(&ch, &busy);
	EXPECT_EQ(0, ds_chooser_get(&ch, ODSM_DS_INSERT, ODSM_DS_CRW));
	EXPECT_EQ(1, ds_chooser_get(&ch, ODSM_DS_UPDATE, ODSM_DS_CRW));
	EXPECT_EQ(0, ds_chooser_get(&ch, ODSM_DS_POP, ODSM_DS_CRW));
	EXPECT_EQ(2ULL, ch.costs.gen);
	for (m = ODSM_DS_ONESIDED; m <= ODSM_DS_REQUEST; m++) {
		ch.mode = m;
		ds_chooser_set(&ch, &busy);
		for (i = 0; i < NF; i++)
			EXPECT_EQ((int)m, ds_chooser_get(&ch, formulas[i].op,
							 formulas[i].p));
		EXPECT_EQ(-EINVAL, ds_chooser_get(&ch, ODSM_DS_FIND,
						  ODSM_DS_CW));
		EXPECT_EQ(-EINVAL, ds_chooser_get(&ch, ODSM_DS_NR_OPS,
						  ODSM_DS_CRW));
	}
}

TEST(costs_text_round_trip)
{
	struct odsm_ds_costs c = cori, d;
	char buf[512];

	c.gen = 42;
	c.req_ns = 12345;
	ASSERT_EQ(0, odsm_ds_costs_format(&c, buf, sizeof(buf)));
	ASSERT_EQ(0, odsm_ds_costs_parse(buf, &d));
	EXPECT_EQ(0, memcmp(&c, &d, sizeof(c)));
	EXPECT_EQ(-ENOSPC, odsm_ds_costs_format(&c, buf, 20));
}

TEST(costs_text_refused)
{
	static const char *const bad[] = {
		"",
		"read_ns 1\n",					/* missing */
		"read_ns 1\nwrite_ns 1\ncas_ns 1\nfao_ns 1\nreq_ns 1\nreq_idle_ns 1\ngen 1\nread_ns 2\n",
		"read_ns -1\nwrite_ns 1\ncas_ns 1\nfao_ns 1\nreq_ns 1\nreq_idle_ns 1\ngen 1\n",
		"read_ns 1 x\nwrite_ns 1\ncas_ns 1\nfao_ns 1\nreq_ns 1\nreq_idle_ns 1\ngen 1\n",
		"read_ns 1\nwrite_ns 1\ncas_ns 1\nfao_ns 1\nreq_ns 1\nreq_idle_ns 1\ngen 1\nput_ns 1\n",
		"read_ns 1e13\nwrite_ns 1\ncas_ns 1\nfao_ns 1\nreq_ns 1\nreq_idle_ns 1\ngen 1\n",
	};
	struct odsm_ds_costs c = cori;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, odsm_ds_costs_parse(bad[i], &c)) {
			TH_LOG("case %u accepted", i);
		}
	}
	EXPECT_EQ(0, memcmp(&c, &cori, sizeof(c)));	/* untouched */
}

/* the calibration file: saved whole, loaded back, refused when not one */
TEST(costs_file)
{
	struct odsm_ds_costs c = cori, d;
	char dir[] = "/tmp/ds_model_test.XXXXXX", path[64], tmp[80];
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/costs", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	EXPECT_EQ(-ENOENT, odsm_ds_costs_load(path, &d));
	c.gen = 7;
	ASSERT_EQ(0, odsm_ds_costs_save(path, &c));
	EXPECT_NE(0, access(tmp, F_OK));	/* renamed over */
	ASSERT_EQ(0, odsm_ds_costs_load(path, &d));
	EXPECT_EQ(0, memcmp(&c, &d, sizeof(c)));
	f = fopen(path, "w");
	ASSERT_NE(NULL, f);
	fputs("read_ns 1\n", f);
	fclose(f);
	EXPECT_EQ(-EINVAL, odsm_ds_costs_load(path, &d));
	EXPECT_EQ(-ENOENT, odsm_ds_costs_save("/nonexistent/dir/costs", &c));
	unlink(path);
	rmdir(dir);
}

TEST_HARNESS_MAIN
