// SPDX-License-Identifier: GPL-2.0
/*
 * Malformed and forged messages: node 1 opens plain user-space TCP
 * connections to node 0's cluster port and sends what no module would:
 * garbage, bad headers, a header cut short, HELLOs with identities or
 * geometries that do not hold, an absurd length, a request before any
 * HELLO, and nothing at all.  After each one node 0 must close that
 * connection without answering a byte, keep serving node 1's module (a
 * real remote read), and count the message in its
 * /sys/kernel/odsm/stats/bad_msgs.
 *
 * Then the handshake's authentication, without the cluster key: a valid
 * offer (node 0 answers it with its challenge, and nothing else), followed
 * by a request, a proof of zeros, a wrong proof, node 0's own challenge
 * reflected back, a second offer, or silence.  Each is refused: the connection
 * is closed, nothing is served, /sys/kernel/odsm/stats/auth_failures
 * counts it, and node 1's real connection never notices (its peers_down
 * does not move).  Last, with the cluster key (ODSM_KEY_FILE, which the
 * scenario passes): node 0's challenge proof is checked against an
 * HMAC-SHA256 computed here from wire-protocol.rst's layout, and the
 * valid proof for that connection (never sent: it would be accepted) is
 * then replayed on a new connection with the same offer, and refused.
 *
 * Node 1 cannot read node 0's sysfs, so the check is split: both nodes run
 * this program.  Node 0 takes the counter before each case and after, and
 * publishes the difference in its directory; node 1 waits for that before
 * the next case.  Everything goes through the heap.  Other nodes SKIP, and
 * so does everyone on a cluster that does not run over TCP.
 *
 * The wire layouts and the HMAC are fake_peer.h's.
 */
#include "odsm_cluster.h"
#include "fake_peer.h"	/* the wire layouts, HMAC-SHA256, the key */

FIXTURE(cl)
{
	int unused;
};

FIXTURE_SETUP(cl)
{
}

FIXTURE_TEARDOWN(cl)
{
}

/* A HELLO from node id to node 0, claiming nr nodes and this geometry. */
static size_t hello(uint8_t *p, uint32_t id, uint32_t nr, uint64_t base,
		    uint64_t part)
{
	unsigned int i;

	hdr(p, W_MAGIC_LE, VERSION, T_HELLO, id, 0, HELLO_LEN);
	put32(p + HDR, id);
	put32(p + HDR + 4, nr);
	put64(p + HDR + 8, base);
	put64(p + HDR + 16, part);
	put64(p + HDR + 24, 0x0123456789abcdefULL);
	put32(p + H_STEP, 1);			/* an offer */
	for (i = 0; i < 32; i++) {
		p[H_NONCE + i] = (uint8_t)(i * 7 + 3);
		p[H_PROOF + i] = 0;
	}
	return HDR + HELLO_LEN;
}

/* What follows node 0's challenge in the authentication cases. */
enum auth_kind {
	A_NONE = 0,		/* not an authentication case */
	A_READ,			/* a request instead of the proof */
	A_ZERO_PROOF,		/* a proof of zeros (no proof) */
	A_WRONG_PROOF,		/* a made-up proof */
	A_REFLECT,		/* node 0's challenge, nonce and proof, back */
	A_OFFER_AGAIN,		/* a second offer */
	A_SILENT,		/* nothing: the handshake is never finished */
	A_KEY_CHECK,		/* with the key: check the challenge, hang up */
	A_REPLAY_VALID,		/* the valid proof of the previous connection */
};

struct bad_case {
	const char *name;
	size_t len;		/* bytes to send (0: send nothing) */
	int hang_up;		/* we close right after sending */
	enum auth_kind auth;	/* an offer, node 0's challenge, then this */
	int unauthenticated;	/* a request before any handshake */
	uint8_t msg[160];
};

/* The cases, built for this cluster's geometry; their number. */
static unsigned int build_cases(struct bad_case *c)
{
	unsigned int n = 0, i;
	uint32_t other;

	/* (i) garbage: 64 bytes that are no header */
	c[n].name = "garbage";
	for (i = 0; i < 64; i++)
		c[n].msg[i] = (uint8_t)(i * 37 + 11);
	c[n++].len = 64;

	/* (ii) a well-formed HELLO under a bad magic */
	c[n].name = "bad magic";
	c[n].len = hello(c[n].msg, 1, C.nodes, C.in.heap_base, C.in.part_size);
	put32(c[n].msg, 0x4d53444eU);
	n++;

	/* (iii) a bad version */
	c[n].name = "bad version";
	c[n].len = hello(c[n].msg, 1, C.nodes, C.in.heap_base, C.in.part_size);
	c[n].msg[4] = VERSION + 1;
	n++;

	/* (iv) 20 bytes of a header, then the connection closes */
	c[n].name = "truncated header";
	hello(c[n].msg, 1, C.nodes, C.in.heap_base, C.in.part_size);
	c[n].hang_up = 1;
	c[n++].len = 20;

	/* (v) a HELLO from a node id past the cluster */
	c[n].name = "node id >= nr_nodes";
	c[n].len = hello(c[n].msg, C.nodes, C.nodes, C.in.heap_base,
			 C.in.part_size);
	n++;

	/* (vi) another node's identity from node 1's address: node 2 when
	 * there is one, else the receiver's own
	 */
	other = C.nodes > 2 ? 2 : 0;
	c[n].name = other ? "node 2's HELLO from node 1's address" :
			    "node 0's own HELLO from node 1's address";
	c[n].len = hello(c[n].msg, other, C.nodes, C.in.heap_base,
			 C.in.part_size);
	n++;

	/* (vii) node 1, from node 1's address, with another geometry */
	c[n].name = "HELLO with another partition size";
	c[n].len = hello(c[n].msg, 1, C.nodes, C.in.heap_base,
			 C.in.part_size * 2);
	n++;

	/* (viii) a HELLO header announcing a gigabyte of payload */
	c[n].name = "oversized len";
	hello(c[n].msg, 1, C.nodes, C.in.heap_base, C.in.part_size);
	put32(c[n].msg + 24, 1U << 30);
	c[n++].len = HDR + HELLO_LEN;

	/* (ix) a well-formed READ of node 0's directory, without a HELLO */
	c[n].name = "READ before HELLO";
	hdr(c[n].msg, W_MAGIC_LE, VERSION, T_READ, 1, 0, 16);
	put64(c[n].msg + 16, 1);		/* seq */
	put64(c[n].msg + HDR, c_word(0, W_MAGIC));
	put32(c[n].msg + HDR + 8, 8);
	c[n].unauthenticated = 1;
	c[n++].len = HDR + 16;

	/* (x) a connection that never says anything */
	c[n].name = "silent connection";
	c[n++].len = 0;

	/* (xi) an offer that carries a proof: malformed */
	c[n].name = "offer with a proof";
	c[n].len = hello(c[n].msg, 1, C.nodes, C.in.heap_base, C.in.part_size);
	c[n].msg[H_PROOF + 5] = 1;
	n++;

	/* the authentication cases: a valid offer first */
	static const struct { enum auth_kind kind; const char *name; } auth[] = {
		{ A_READ, "READ after the challenge, without a proof" },
		{ A_ZERO_PROOF, "proof of zeros" },
		{ A_WRONG_PROOF, "wrong proof" },
		{ A_REFLECT, "node 0's challenge reflected as the proof" },
		{ A_OFFER_AGAIN, "a second offer instead of the proof" },
		{ A_SILENT, "no proof at all (silence after the challenge)" },
		{ A_KEY_CHECK, "challenge checked with the key, then hang up" },
		{ A_REPLAY_VALID, "a valid proof of an earlier connection replayed" },
	};
	for (i = 0; i < sizeof(auth) / sizeof(auth[0]); i++) {
		c[n].name = auth[i].name;
		c[n].auth = auth[i].kind;
		c[n].len = hello(c[n].msg, 1, C.nodes, C.in.heap_base,
				 C.in.part_size);
		c[n].hang_up = auth[i].kind == A_KEY_CHECK;
		n++;
	}
	return n;
}

/* the valid proof for the A_KEY_CHECK connection, and its challenge nonce */
static uint8_t valid_proof[32], valid_anonce[32];
static int have_valid;

/*
 * The offer was sent: take node 0's challenge (a HELLO of step 2 from node
 * 0 to node 1) and send what the case says; 0, or -1 after saying why.
 */
static int auth_follow_up(struct __test_metadata *_metadata, int fd,
			  const struct bad_case *c)
{
	uint8_t ch[HDR + HELLO_LEN], msg[HDR + HELLO_LEN];
	size_t len = sizeof(msg);
	int ret;

	ret = recv_exact(fd, ch, sizeof(ch), 10);
	EXPECT_EQ(0, ret) {
		TH_LOG("%s: no challenge from node 0: %s", c->name,
		       strerror(-ret));
		return -1;
	}
	EXPECT_EQ(T_HELLO, ch[5]);
	EXPECT_EQ(VERSION, ch[4]);
	EXPECT_EQ(HELLO_LEN, ch[24]);
	EXPECT_EQ(2, ch[H_STEP]) {
		TH_LOG("%s: node 0 answered the offer with step %u", c->name,
		       ch[H_STEP]);
		return -1;
	}
	memcpy(msg, c->msg, sizeof(msg));
	put32(msg + H_STEP, 3);
	switch (c->auth) {
	case A_READ:
		hdr(msg, W_MAGIC_LE, VERSION, T_READ, 1, 0, 16);
		put64(msg + 16, 1);
		put64(msg + HDR, c_word(0, W_MAGIC));
		put32(msg + HDR + 8, 8);
		len = HDR + 16;
		break;
	case A_ZERO_PROOF:
		break;
	case A_WRONG_PROOF:
		memset(msg + H_PROOF, 0x5a, 32);
		break;
	case A_REFLECT:
		memcpy(msg + H_NONCE, ch + H_NONCE, 32);
		memcpy(msg + H_PROOF, ch + H_PROOF, 32);
		break;
	case A_OFFER_AGAIN:
		put32(msg + H_STEP, 1);
		break;
	case A_KEY_CHECK: {
		uint8_t key[65], a[104], want[32];
		int klen = read_key(key);

		len = 0;
		ASSERT_LT(0, klen) {
			TH_LOG("no cluster key: ODSM_KEY_FILE must name the key file the cluster joined with");
		}
		/* node 0's proof, as wire-protocol.rst says it is made */
		auth_input(a, 2, 0, 1, get64(c->msg + HDR + 24),
			   get64(ch + HDR + 24), c->msg + H_NONCE, ch + H_NONCE);
		hmac_sha256(key, (size_t)klen, a, sizeof(a), want);
		EXPECT_EQ(0, memcmp(want, ch + H_PROOF, 32)) {
			TH_LOG("node 0's challenge proof is not HMAC-SHA256(key, the documented input)");
		}
		/* ours: valid on this connection only */
		auth_input(a, 3, 1, 0, get64(c->msg + HDR + 24),
			   get64(ch + HDR + 24), c->msg + H_NONCE, ch + H_NONCE);
		hmac_sha256(key, (size_t)klen, a, sizeof(a), valid_proof);
		memcpy(valid_anonce, ch + H_NONCE, 32);
		have_valid = 1;
		memset(key, 0, sizeof(key));
		break;
	}
	case A_REPLAY_VALID:
		/* the same offer as then; node 0's nonce is new */
		ASSERT_TRUE(have_valid);
		EXPECT_NE(0, memcmp(valid_anonce, ch + H_NONCE, 32));
		memcpy(msg + H_PROOF, valid_proof, 32);
		break;
	case A_SILENT:
	case A_NONE:
		len = 0;
		break;
	}
	if (len)
		EXPECT_EQ((ssize_t)len, send(fd, msg, len, MSG_NOSIGNAL));
	return 0;
}

/*
 * Wait until node 0 ends the connection: 0 when it closed (or reset) it
 * within secs without sending a byte; -EBADMSG if it sent something;
 * -ETIMEDOUT if it kept it open.
 */
static int wait_closed(int fd, unsigned int secs, size_t *got)
{
	uint64_t end = c_now_ms() + secs * 1000ULL;
	uint8_t buf[256];
	ssize_t n;

	*got = 0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(end - c_now_ms());

		if (left <= 0 || poll(&p, 1, left) == 0)
			return -ETIMEDOUT;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return *got ? -EBADMSG : 0;
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			*got += (size_t)n;
	}
}

/* Node 1: send every case to node 0 and see it refused. */
static uint64_t stat_of(const char *name);

static void attacker(struct __test_metadata *_metadata)
{
	struct bad_case cases[24];
	struct odsm_peer_info p[ODSM_MAX_NODES];
	unsigned int nr = ODSM_MAX_NODES, n, k;
	struct sockaddr_in to = { .sin_family = AF_INET };
	uint64_t v, ack, down0, down1;
	size_t got;
	int fd, ret;

	memset(cases, 0, sizeof(cases));
	n = build_cases(cases);
	/* one directory word per case, below W_DOWN_SEEN */
	ASSERT_GE((uint64_t)(W_DOWN_SEEN - W_BAD_DELTA - 1), (uint64_t)n);
	ASSERT_EQ(0, odsm_status(p, &nr, NULL));
	to.sin_addr.s_addr = p[0].ipv4;
	to.sin_port = htons((uint16_t)C.port);
	down0 = stat_of("peers_down");
	ASSERT_NE(UINT64_MAX, down0);
	/* node 0 took its counter: go */
	ASSERT_EQ(0, c_poll(0, W_BAD_READY, 0, 120, NULL));

	for (k = 1; k <= n; k++) {
		const struct bad_case *c = &cases[k - 1];
		unsigned int secs;

		fd = fp_dial(&to, 0);
		ASSERT_LE(0, fd) {
			TH_LOG("connecting to node 0's port %u: %s", C.port,
			       strerror(-fd));
		}
		if (c->len)
			ASSERT_EQ((ssize_t)c->len,
				  send(fd, c->msg, c->len, MSG_NOSIGNAL));
		if (c->auth && auth_follow_up(_metadata, fd, c)) {
			close(fd);
		} else if (c->hang_up) {
			/* the truncated header: we end it */
			close(fd);
		} else {
			/* node 0 hangs up on it, without a word; a silent
			 * connection gets a timeout and a few heartbeats
			 */
			secs = c->len && c->auth != A_SILENT ? 10 :
			       (C.timeout_ms + 999) / 1000 + 10;
			ret = wait_closed(fd, secs, &got);
			EXPECT_EQ(0, ret) {
				TH_LOG("case %u (%s): node 0 %s", k, c->name,
				       ret == -EBADMSG ? "answered it" :
				       ret == -ETIMEDOUT ? "kept the connection open" :
				       strerror(-ret));
			}
			close(fd);
		}
		/* and node 0 still serves node 1's module */
		ret = c_get(0, W_MAGIC, &v);
		EXPECT_EQ(0, ret) {
			TH_LOG("case %u (%s): node 0 no longer serves: %s", k,
			       c->name, odsm_strerror(ret));
		}
		EXPECT_EQ(C_DIR_MAGIC ^ 0, v);
		/* let node 0 count it */
		ASSERT_EQ(0, c_put(C.self, W_BAD_SENT, k));
		ASSERT_EQ(0, c_poll(0, W_BAD_ACK, k, 120, &ack));
		ASSERT_EQ(0, c_get(0, W_BAD_DELTA + k, &v));
		TH_LOG("case %u (%s): bad_msgs +%" PRIu64 ", auth_failures +%" PRIu64 " on node 0",
		       k, c->name, v & 0xffffffff, v >> 32);
		/* counted where it belongs */
		if (c->auth || c->unauthenticated) {
			EXPECT_LT((uint64_t)0, v >> 32) {
				TH_LOG("case %u (%s) not counted in auth_failures",
				       k, c->name);
			}
		} else {
			EXPECT_LT((uint64_t)0, v & 0xffffffff) {
				TH_LOG("case %u (%s) not counted in bad_msgs",
				       k, c->name);
			}
		}
	}
	ASSERT_EQ(0, c_put(C.self, W_BAD_DONE, n));
	/* the real connection to node 0 was never knocked off */
	down1 = stat_of("peers_down");
	EXPECT_EQ(down0, down1) {
		TH_LOG("node 1 saw a peer go down %" PRIu64 " times during the cases",
		       down1 - down0);
	}
}

static uint64_t stat_of(const char *name)
{
	char path[128];
	FILE *f;
	unsigned long long v = UINT64_MAX;

	snprintf(path, sizeof(path), "/sys/kernel/odsm/stats/%s", name);
	f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = UINT64_MAX;
		fclose(f);
	}
	return v;
}

/* what node 0 counts for a case: bad_msgs and auth_failures */
static uint64_t bad_msgs(void)
{
	return stat_of("bad_msgs");
}

static uint64_t auth_failures(void)
{
	return stat_of("auth_failures");
}

/* Node 0: count each case, then check the total. */
static void target(struct __test_metadata *_metadata)
{
	struct bad_case cases[24];
	uint64_t first, before, now, k, n, sent, end, a_before, a_now;
	unsigned int state[ODSM_MAX_NODES];

	memset(cases, 0, sizeof(cases));
	n = build_cases(cases);
	/* one directory word per case, below W_DOWN_SEEN */
	ASSERT_GE((uint64_t)(W_DOWN_SEEN - W_BAD_DELTA - 1), (uint64_t)n);
	first = before = bad_msgs();
	a_before = auth_failures();
	ASSERT_NE(UINT64_MAX, first);
	ASSERT_NE(UINT64_MAX, a_before);
	ASSERT_EQ(0, c_put(C.self, W_BAD_READY, first + 1));
	for (k = 1; k <= n; k++) {
		ASSERT_EQ(0, c_poll(1, W_BAD_SENT, k, 180, &sent)) {
			TH_LOG("node 1 never sent case %" PRIu64, k);
		}
		/* the receiver may still be on its way to counting it */
		end = c_now_ms() + 3000;
		do {
			now = bad_msgs();
			a_now = auth_failures();
			if (now > before || a_now > a_before)
				break;
			c_sleep_ms(50);
		} while (c_now_ms() < end);
		EXPECT_TRUE(now > before || a_now > a_before) {
			TH_LOG("case %" PRIu64 " (%s) was not counted", k,
			       cases[k - 1].name);
		}
		ASSERT_EQ(0, c_put(C.self, W_BAD_DELTA + k,
				   (now - before) | (a_now - a_before) << 32));
		before = now;
		a_before = a_now;
		ASSERT_EQ(0, c_put(C.self, W_BAD_ACK, k));
	}
	ASSERT_EQ(0, c_poll(1, W_BAD_DONE, 0, 120, &sent));
	EXPECT_EQ(n, sent);
	EXPECT_LE(first + 1, bad_msgs());
	/* the real peers never noticed */
	ASSERT_EQ(0, c_states(state, C.nodes));
	for (k = 1; k < C.nodes; k++)
		EXPECT_EQ((unsigned int)ODSM_PEER_UP, state[k]);
}

TEST_F_TIMEOUT(cl, forged_messages, 600)
{
	C_BEGIN();
	if (C.transport != ODSM_TRANSPORT_TCP)
		SKIP(return, "the cluster does not run over TCP: no stream to forge into");
	if (C.self > 1)
		SKIP(return, "only node 0 (target) and node 1 (sender) take part");
	ASSERT_EQ(0, c_dir_wait(0, 120));
	ASSERT_EQ(0, c_dir_wait(1, 120));
	if (C.self == 0)
		target(_metadata);
	else
		attacker(_metadata);
}

TEST_HARNESS_MAIN
