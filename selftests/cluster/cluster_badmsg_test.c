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
 * The wire header (kmod/odsm_wire.h), little-endian, 32 bytes: magic u32
 * 0x4d53444f @0, version u8 = 5 @4, type u8 @5, flags u16 @6, src u32 @8,
 * dst u32 @12, seq u64 @16, len u32 @24, status s32 @28.  HELLO is type 1
 * with 104 payload bytes: node_id u32, nr_nodes u32, heap_base u64,
 * part_size u64, incarnation u64, step u32 (1 offer, 2 challenge, 3 proof),
 * reserved u32, nonce[32] @40, proof[32] @72.  READ is type 4 with 16:
 * gaddr u64, len u32, flags u32.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include "odsm_cluster.h"

#define W_MAGIC_LE	0x4d53444fU
#define T_HELLO		1
#define T_READ		4
#define HDR		32
#define HELLO_LEN	104
#define VERSION		5
#define H_STEP		(HDR + 32)
#define H_NONCE		(HDR + 40)
#define H_PROOF		(HDR + 72)

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

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static void hdr(uint8_t *p, uint32_t magic, uint8_t version, uint8_t type,
		uint32_t src, uint32_t dst, uint32_t len)
{
	memset(p, 0, HDR);
	put32(p, magic);
	p[4] = version;
	p[5] = type;
	put16(p + 6, 0);
	put32(p + 8, src);
	put32(p + 12, dst);
	put64(p + 16, 0);
	put32(p + 24, len);
	put32(p + 28, 0);
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

/* ---- HMAC-SHA256, to check node 0's challenge with the real key ------- */

struct sha256 {
	uint32_t h[8];
	uint8_t buf[64];
	uint64_t len;
	unsigned int n;
};

static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned int n)
{
	return x >> n | x << (32 - n);
}

static void sha_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h, t1, t2;
	unsigned int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = w[i - 16] + (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^
				    w[i - 15] >> 3) + w[i - 7] +
		       (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10);
	a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
	e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
		     ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		h = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
	s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

static void sha_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->n = 0;
}

static void sha_update(struct sha256 *s, const uint8_t *p, size_t n)
{
	while (n--) {
		s->buf[s->n++] = *p++;
		s->len++;
		if (s->n == 64) {
			sha_block(s, s->buf);
			s->n = 0;
		}
	}
}

static void sha_final(struct sha256 *s, uint8_t out[32])
{
	uint64_t bits = s->len * 8;
	uint8_t pad = 0x80, zero = 0, l[8];
	unsigned int i;

	sha_update(s, &pad, 1);
	while (s->n != 56)
		sha_update(s, &zero, 1);
	for (i = 0; i < 8; i++)
		l[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha_update(s, l, 8);
	for (i = 0; i < 32; i++)
		out[i] = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}

static void hmac_sha256(const uint8_t *key, size_t klen, const uint8_t *msg,
			size_t mlen, uint8_t out[32])
{
	uint8_t k[64] = { 0 }, pad[64], inner[32];
	struct sha256 s;
	unsigned int i;

	if (klen > 64) {
		sha_init(&s);
		sha_update(&s, key, klen);
		sha_final(&s, k);
	} else {
		memcpy(k, key, klen);
	}
	for (i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	sha_init(&s);
	sha_update(&s, pad, 64);
	sha_update(&s, msg, mlen);
	sha_final(&s, inner);
	for (i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	sha_init(&s);
	sha_update(&s, pad, 64);
	sha_update(&s, inner, 32);
	sha_final(&s, out);
}

/* The cluster key the scenario joined with; its length, or -1. */
static int read_key(uint8_t *key)
{
	const char *path = getenv("ODSM_KEY_FILE");
	FILE *f;
	size_t n;

	if (!path || !*path)
		return -1;
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(key, 1, 65, f);
	fclose(f);
	return n >= 16 && n <= 64 ? (int)n : -1;
}

/* The 104 bytes a proof is the HMAC of (wire-protocol.rst, "The proof"). */
static void auth_input(uint8_t *a, uint32_t step, uint32_t prover,
		       uint32_t verifier, uint64_t dinc, uint64_t ainc,
		       const uint8_t *dnonce, const uint8_t *anonce)
{
	memset(a, 0, 104);
	put32(a, W_MAGIC_LE);
	a[4] = VERSION;
	put32(a + 8, step);
	put32(a + 12, prover);
	put32(a + 16, verifier);
	put64(a + 24, dinc);
	put64(a + 32, ainc);
	memcpy(a + 40, dnonce, 32);
	memcpy(a + 72, anonce, 32);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* the valid proof for the A_KEY_CHECK connection, and its challenge nonce */
static uint8_t valid_proof[32], valid_anonce[32];
static int have_valid;

static int recv_exact(int fd, uint8_t *buf, size_t len, unsigned int secs)
{
	uint64_t end = c_now_ms() + secs * 1000ULL;
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(end - c_now_ms());

		if (left <= 0 || poll(&p, 1, left) == 0)
			return -ETIMEDOUT;
		r = recv(fd, buf + got, len - got, 0);
		if (r == 0)
			return -ECONNRESET;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0)
			got += (size_t)r;
	}
	return 0;
}

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

static int dial_node0(struct sockaddr_in *to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)to, sizeof(*to))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
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

		fd = dial_node0(&to);
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
