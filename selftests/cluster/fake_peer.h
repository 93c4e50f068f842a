/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A peer in user space: a test program that speaks odsm's wire protocol
 * (Documentation/odsm/wire-protocol.rst) over plain TCP, to send a node
 * what no module would.  Header only, no dependency but libc: the wire
 * header and HELLO layouts, little-endian field access, HMAC-SHA256, the
 * cluster key (ODSM_KEY_FILE), and a fake peer that dials a node (from an
 * address of its choice), completes the authenticated handshake as any
 * node id the cluster's address table gives that address, and then sends
 * and receives arbitrary messages.
 *
 * The wire header (kmod/odsm_wire.h), little-endian, 32 bytes: magic u32
 * 0x4d53444f @0, version u8 (VERSION) @4, type u8 @5, flags u16 @6, src u32 @8,
 * dst u32 @12, seq u64 @16, len u32 @24, status s32 @28.  HELLO is type 1
 * with 104 payload bytes: node_id u32, nr_nodes u32, heap_base u64,
 * part_size u64, incarnation u64, step u32 (1 offer, 2 challenge, 3 proof),
 * reserved u32, nonce[32] @40, proof[32] @72.  READ is type 4 and WRITE
 * type 6, with 16 bytes: gaddr u64, len u32, flags u32 (WRITE: then its
 * data).  A proof is HMAC-SHA256(key, A), A the 104 bytes of
 * wire-protocol.rst's "The proof" (fp_auth_input()).
 *
 * Everything here returns 0 or -errno and never exits: the caller asserts.
 */
#ifndef _ODSM_FAKE_PEER_H
#define _ODSM_FAKE_PEER_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FP_UNUSED	__attribute__((unused))

#define W_MAGIC_LE	0x4d53444fU
#define VERSION		13
#define HDR		32
#define HELLO_LEN	104
#define H_STEP		(HDR + 32)
#define H_NONCE		(HDR + 40)
#define H_PROOF		(HDR + 72)
#define F_REPLY		0x0001

enum {
	T_HELLO = 1, T_PING, T_PONG, T_READ, T_READ_REPLY, T_WRITE,
	T_WRITE_REPLY, T_ALLOC, T_ALLOC_REPLY, T_FREE, T_FREE_REPLY,
	T_ATOMIC, T_ATOMIC_REPLY, T_FETCH, T_FETCH_REPLY, T_MAP,
	T_MAP_REPLY, T_KEYS, T_DELEG, T_DELEG_REPLY, T_FETCH_MANY,
	T_FETCH_MANY_REPLY, T_WAKE, T_WAKE_REPLY, T_AQP, T_AQP_REPLY,
};

#define FP_MAX_DATA	(256U << 10)	/* ODSM_WIRE_MAX_DATA */

/* ---- little-endian fields --------------------------------------------- */

static FP_UNUSED void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static FP_UNUSED void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static FP_UNUSED void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static FP_UNUSED uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static FP_UNUSED uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* A header of any content, seq 0 and status 0. */
static FP_UNUSED void hdr(uint8_t *p, uint32_t magic, uint8_t version,
			  uint8_t type, uint32_t src, uint32_t dst,
			  uint32_t len)
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

/* The fields of a received header. */
struct fp_hdr {
	uint32_t magic;
	uint8_t version, type;
	uint16_t flags;
	uint32_t src, dst;
	uint64_t seq;
	uint32_t len;
	int32_t status;
};

static FP_UNUSED void fp_parse_hdr(const uint8_t *p, struct fp_hdr *h)
{
	h->magic = get32(p);
	h->version = p[4];
	h->type = p[5];
	h->flags = (uint16_t)(p[6] | p[7] << 8);
	h->src = get32(p + 8);
	h->dst = get32(p + 12);
	h->seq = get64(p + 16);
	h->len = get32(p + 24);
	h->status = (int32_t)get32(p + 28);
}

/* ---- HMAC-SHA256 ---------------------------------------------------------- */

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

static FP_UNUSED uint32_t ror(uint32_t x, unsigned int n)
{
	return x >> n | x << (32 - n);
}

static FP_UNUSED void sha_block(struct sha256 *s, const uint8_t *p)
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

static FP_UNUSED void sha_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->n = 0;
}

static FP_UNUSED void sha_update(struct sha256 *s, const uint8_t *p, size_t n)
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

static FP_UNUSED void sha_final(struct sha256 *s, uint8_t out[32])
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

static FP_UNUSED void hmac_sha256(const uint8_t *key, size_t klen,
				  const uint8_t *msg, size_t mlen,
				  uint8_t out[32])
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

/* The cluster key the scenario joined with (ODSM_KEY_FILE): its length,
 * or -1.
 */
static FP_UNUSED int read_key(uint8_t *key)
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
static FP_UNUSED void auth_input(uint8_t *a, uint32_t step, uint32_t prover,
				 uint32_t verifier, uint64_t dinc,
				 uint64_t ainc, const uint8_t *dnonce,
				 const uint8_t *anonce)
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

/* ---- sockets ---------------------------------------------------------- */

static FP_UNUSED uint64_t fp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Receive exactly len bytes within secs: 0, -ETIMEDOUT, -ECONNRESET. */
static FP_UNUSED int recv_exact(int fd, uint8_t *buf, size_t len,
				unsigned int secs)
{
	uint64_t end = fp_now_ms() + secs * 1000ULL;
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(end - fp_now_ms());

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

/* Send all of buf (blocking): 0 or -errno. */
static FP_UNUSED int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * A TCP connection to to, from address src (network order; 0: any, e.g.
 * an alias address of this machine to speak for another node): the file
 * descriptor, or -errno.
 */
static FP_UNUSED int fp_dial(const struct sockaddr_in *to, uint32_t src)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (src) {
		struct sockaddr_in from = { .sin_family = AF_INET };

		from.sin_addr.s_addr = src;
		if (bind(fd, (struct sockaddr *)&from, sizeof(from)))
			goto err;
	}
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)))
		goto err;
	return fd;
err:
	one = -errno;
	close(fd);
	return one;
}

/* ---- the fake peer ------------------------------------------------------ */

struct fake_peer {
	int fd;
	uint32_t self;		/* the node id it speaks for */
	uint32_t peer;		/* the node it dialled */
	uint32_t nr_nodes;
	uint64_t heap_base, part_size;
	uint64_t inc, peer_inc;	/* incarnations: its own, the peer's */
	uint8_t nonce[32], peer_nonce[32];
	uint8_t key[65];
	int klen;		/* -1: no key */
	uint64_t next_seq;
	uint32_t reply_len;	/* fp_reply(): the reply's whole payload */
};

/*
 * Set up a fake peer speaking for node self of a cluster of nr_nodes with
 * this geometry, with the key of ODSM_KEY_FILE (klen -1 if none).
 */
static FP_UNUSED void fp_init(struct fake_peer *fp, uint32_t self,
			      uint32_t nr_nodes, uint64_t heap_base,
			      uint64_t part_size)
{
	unsigned int i;

	memset(fp, 0, sizeof(*fp));
	fp->fd = -1;
	fp->self = self;
	fp->nr_nodes = nr_nodes;
	fp->heap_base = heap_base;
	fp->part_size = part_size;
	srand((unsigned int)(fp_now_ms() ^ (uint64_t)getpid() << 16));
	fp->inc = (uint64_t)rand() << 32 ^ (uint64_t)rand() << 8 ^ 0x9e37;
	for (i = 0; i < 32; i++)
		fp->nonce[i] = (uint8_t)rand();
	fp->klen = read_key(fp->key);
	fp->next_seq = 1;
}

/* A HELLO of this step from fp to dst into p (HDR + HELLO_LEN bytes). */
static FP_UNUSED size_t fp_hello(const struct fake_peer *fp, uint8_t *p,
				 uint32_t dst, uint32_t step,
				 const uint8_t *proof)
{
	hdr(p, W_MAGIC_LE, VERSION, T_HELLO, fp->self, dst, HELLO_LEN);
	put32(p + HDR, fp->self);
	put32(p + HDR + 4, fp->nr_nodes);
	put64(p + HDR + 8, fp->heap_base);
	put64(p + HDR + 16, fp->part_size);
	put64(p + HDR + 24, fp->inc);
	put32(p + H_STEP, step);
	put32(p + H_STEP + 4, 0);
	memcpy(p + H_NONCE, fp->nonce, 32);
	if (proof)
		memcpy(p + H_PROOF, proof, 32);
	else
		memset(p + H_PROOF, 0, 32);
	return HDR + HELLO_LEN;
}

/*
 * Dial node peer at to (from src, 0 for any) and complete the handshake
 * as the dialer: offer, node peer's challenge (whose proof is checked),
 * our proof.  0 once done (the node then counts us up), -EACCES when the
 * challenge's proof is wrong, -ENOKEY without a key, -errno.
 */
static FP_UNUSED int fp_connect(struct fake_peer *fp, uint32_t peer,
				const struct sockaddr_in *to, uint32_t src)
{
	uint8_t msg[HDR + HELLO_LEN], ch[HDR + HELLO_LEN], a[104], p[32];
	struct fp_hdr h;
	int ret;

	if (fp->klen < 0)
		return -ENOKEY;
	fp->peer = peer;
	fp->fd = fp_dial(to, src);
	if (fp->fd < 0)
		return fp->fd;
	fp_hello(fp, msg, peer, 1, NULL);
	ret = send_all(fp->fd, msg, sizeof(msg));
	if (!ret)
		ret = recv_exact(fp->fd, ch, sizeof(ch), 10);
	if (ret)
		goto err;
	fp_parse_hdr(ch, &h);
	if (h.magic != W_MAGIC_LE || h.type != T_HELLO || h.len != HELLO_LEN ||
	    h.src != peer || get32(ch + H_STEP) != 2) {
		ret = -EPROTO;
		goto err;
	}
	fp->peer_inc = get64(ch + HDR + 24);
	memcpy(fp->peer_nonce, ch + H_NONCE, 32);
	/* the acceptor proves first: step 2, prover peer, verifier us */
	auth_input(a, 2, peer, fp->self, fp->inc, fp->peer_inc, fp->nonce,
		   fp->peer_nonce);
	hmac_sha256(fp->key, (size_t)fp->klen, a, sizeof(a), p);
	if (memcmp(p, ch + H_PROOF, 32)) {
		ret = -EACCES;
		goto err;
	}
	auth_input(a, 3, fp->self, peer, fp->inc, fp->peer_inc, fp->nonce,
		   fp->peer_nonce);
	hmac_sha256(fp->key, (size_t)fp->klen, a, sizeof(a), p);
	fp_hello(fp, msg, peer, 3, p);
	ret = send_all(fp->fd, msg, sizeof(msg));
	if (ret)
		goto err;
	return 0;
err:
	close(fp->fd);
	fp->fd = -1;
	return ret;
}

/*
 * Send a message of any type, flags, seq and status with len payload
 * bytes (payload may be NULL: zeros).  0 or -errno.
 */
static FP_UNUSED int fp_send(struct fake_peer *fp, uint8_t type,
			     uint16_t flags, uint64_t seq, int32_t status,
			     const void *payload, uint32_t len)
{
	static uint8_t zeros[4096];
	uint8_t h[HDR];
	uint32_t off, n;
	int ret;

	hdr(h, W_MAGIC_LE, VERSION, type, fp->self, fp->peer, len);
	put16(h + 6, flags);
	put64(h + 16, seq);
	put32(h + 28, (uint32_t)status);
	ret = send_all(fp->fd, h, HDR);
	if (ret || !len)
		return ret;
	if (payload)
		return send_all(fp->fd, payload, len);
	for (off = 0; off < len && !ret; off += n) {
		n = len - off < sizeof(zeros) ? len - off : sizeof(zeros);
		ret = send_all(fp->fd, zeros, n);
	}
	return ret;
}

/* A READ request of len bytes at the colored address gaddr: its seq, or
 * 0 after a send error.
 */
static FP_UNUSED uint64_t fp_read_req(struct fake_peer *fp, uint64_t gaddr,
				      uint32_t len)
{
	uint8_t p[16];
	uint64_t seq = fp->next_seq++;

	put64(p, gaddr);
	put32(p + 8, len);
	put32(p + 12, 0);
	return fp_send(fp, T_READ, 0, seq, 0, p, sizeof(p)) ? 0 : seq;
}

/* A WRITE request of dlen bytes of data (NULL: zeros) at gaddr: its seq,
 * or 0 after a send error.
 */
static FP_UNUSED uint64_t fp_write_req(struct fake_peer *fp, uint64_t gaddr,
				       const void *data, uint32_t dlen)
{
	static uint8_t zeros[FP_MAX_DATA];
	uint8_t h[HDR + 16];
	uint64_t seq = fp->next_seq++;

	hdr(h, W_MAGIC_LE, VERSION, T_WRITE, fp->self, fp->peer, 16 + dlen);
	put64(h + 16, seq);
	put64(h + HDR, gaddr);
	put32(h + HDR + 8, dlen);
	put32(h + HDR + 12, 0);
	if (dlen > FP_MAX_DATA)
		return 0;
	if (send_all(fp->fd, h, sizeof(h)) ||
	    send_all(fp->fd, data ? data : zeros, dlen))
		return 0;
	return seq;
}

/* Read and drop n bytes within secs: 0 or -errno. */
static FP_UNUSED int fp_skip(struct fake_peer *fp, uint32_t n,
			     unsigned int secs)
{
	uint8_t sink[4096];
	uint32_t k;
	int ret = 0;

	for (; n && !ret; n -= k) {
		k = n < sizeof(sink) ? n : sizeof(sink);
		ret = recv_exact(fp->fd, sink, k, secs);
	}
	return ret;
}

/*
 * Receive one message within secs: its header into *h, up to cap bytes
 * of its payload into buf (the rest is read and dropped).  0 or -errno.
 */
static FP_UNUSED int fp_recv(struct fake_peer *fp, struct fp_hdr *h,
			     void *buf, uint32_t cap, unsigned int secs)
{
	uint8_t raw[HDR];
	uint32_t n;
	int ret;

	ret = recv_exact(fp->fd, raw, HDR, secs);
	if (ret)
		return ret;
	fp_parse_hdr(raw, h);
	if (h->magic != W_MAGIC_LE || h->version != VERSION)
		return -EPROTO;
	n = h->len < cap ? h->len : cap;
	if (n) {
		ret = recv_exact(fp->fd, buf, n, secs);
		if (ret)
			return ret;
	}
	return fp_skip(fp, h->len - n, secs);
}

/*
 * The reply to the request of seq, answering the PINGs that come before
 * it (so the node keeps us up) and dropping other replies: its status in
 * *status and up to cap payload bytes in buf.  0 or -errno.
 */
static FP_UNUSED int fp_reply(struct fake_peer *fp, uint64_t seq,
			      int32_t *status, void *buf, uint32_t cap,
			      unsigned int secs)
{
	uint64_t end = fp_now_ms() + secs * 1000ULL;
	uint8_t raw[HDR], pong[16];
	struct fp_hdr h;
	uint32_t n;
	int ret;

	for (;;) {
		unsigned int left = (unsigned int)((end - fp_now_ms()) / 1000) + 1;

		if (fp_now_ms() >= end)
			return -ETIMEDOUT;
		ret = recv_exact(fp->fd, raw, HDR, left);
		if (ret)
			return ret;
		fp_parse_hdr(raw, &h);
		if (h.magic != W_MAGIC_LE || h.version != VERSION)
			return -EPROTO;
		if (h.type == T_PING && !(h.flags & F_REPLY) && h.len == 8) {
			/* the node's heartbeat: echo its send_ns */
			memset(pong, 0, sizeof(pong));
			ret = recv_exact(fp->fd, pong, 8, left);
			if (!ret)
				ret = fp_send(fp, T_PONG, F_REPLY, h.seq, 0,
					      pong, sizeof(pong));
			if (ret)
				return ret;
			continue;
		}
		if (!(h.flags & F_REPLY) || h.seq != seq) {
			ret = fp_skip(fp, h.len, left);
			if (ret)
				return ret;
			continue;
		}
		*status = h.status;
		fp->reply_len = h.len;
		n = h.len < cap ? h.len : cap;
		if (n) {
			ret = recv_exact(fp->fd, buf, n, left);
			if (ret)
				return ret;
		}
		return fp_skip(fp, h.len - n, left);
	}
}

static FP_UNUSED void fp_close(struct fake_peer *fp)
{
	if (fp->fd >= 0)
		close(fp->fd);
	fp->fd = -1;
}

#endif /* _ODSM_FAKE_PEER_H */
