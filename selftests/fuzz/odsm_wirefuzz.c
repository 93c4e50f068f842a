// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-wirefuzz: a hostile peer of one node, over TCP, in a rig guest
 * (tools/rig/scenarios/fuzz.sh runs it on node 1 against node 0).
 *
 * The cluster has one node more than the rig (the fake node, the last
 * id), whose address is an alias of this machine: fake_peer.h speaks for
 * it.  Each episode, drawn from a generator seeded with --seed (a problem
 * prints the seed and episode: --seed S --episodes N replays the same
 * sequence), is one of
 *   without the key:  garbage, a bad header or an absurd length before any
 *     HELLO, an offer then silence, a request before the proof, a wrong
 *     proof, the node's own challenge reflected, HELLOs out of order or of
 *     another geometry, a replayed proof, a HELLO for the fake node from
 *     this machine's own address or for the real node 1 from the alias
 *     (the wrong address), a connect flood;
 *   with the key (authenticated as the fake node):  floods of requests,
 *     replies of the wrong type, sequence or length, requests of bad
 *     lengths (FETCH_MANY's counts and lengths near their bounds among
 *     them), KEYS at and past their limits, MAPs of fresh and lazy
 *     blocks, a second HELLO, PINGs and PONGs of the wrong size, a header
 *     naming other nodes, a restart (a new incarnation dialling while
 *     the old connection is up) in the middle of a request, and forged
 *     DELEG batches (endpoints of any partition, slot sizes that are not
 *     one, headers and records whose counts, lengths, kinds and flags
 *     lie, or random bytes: each dropped and counted, or -ESRCH), and
 *     FETCH_MANY of an object of ours 63 times at 41 bytes, whose reply
 *     pads each item to 8 bytes (first of all, then among the others).
 * After every few episodes, and at the end, the node must still serve: an
 * authenticated READ of its directory word gets its answer in time.
 *
 * A problem: the node stops serving, a handshake with the right key fails,
 * or a kernel report on this node (the target's own log is judged by the
 * rig).  Output: FUZZ_OPS lines per episode kind and FUZZ_RESULT.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include "fake_peer.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

enum ep {
	E_GARBAGE, E_BAD_HDR, E_HUGE_LEN, E_SILENT_OFFER, E_REQ_BEFORE_PROOF,
	E_WRONG_PROOF, E_REFLECT, E_OUT_OF_ORDER, E_BAD_GEOMETRY, E_REPLAY,
	E_WRONG_ADDR, E_CONNECT_FLOOD,
	/* authenticated */
	E_REQ_FLOOD, E_BAD_REPLY, E_BAD_REQ, E_KEYS, E_MAP, E_SECOND_HELLO,
	E_BAD_PING, E_OTHER_NODES, E_RESTART, E_DELEG, E_PADDED, E_SERVE, NEP
};

static const char *const ep_name[NEP] = {
	"garbage", "bad_header", "huge_len", "silent_offer",
	"req_before_proof", "wrong_proof", "reflect", "hello_order",
	"bad_geometry", "replay", "wrong_addr", "connect_flood",
	"req_flood", "bad_reply", "bad_request", "keys", "map",
	"second_hello", "bad_ping", "other_nodes", "restart", "deleg",
	"padded_fetch_many", "serve_check",
};

static uint64_t tried[NEP], problems;
static uint64_t opt_seed, opt_episodes = UINT64_MAX, episode;
static unsigned int opt_secs = 30, opt_timeout_ms = 5000;
static int opt_only = -1;	/* --only NAME: every episode of that kind */
static struct sockaddr_in target;
static uint32_t fake_ip, own_ip;
static uint32_t nr_nodes, fake_id;
static uint64_t heap_base = 0x100000000000ULL, part_size = 1ULL << 30;
static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void problem(const char *what, int err)
{
	problems++;
	printf("FUZZ_PROBLEM seed=%" PRIu64 " episode=%" PRIu64 ": %s: %s (replay: odsm-wirefuzz --seed %"
	       PRIu64 " --episodes %" PRIu64 " ...)\n", opt_seed, episode, what,
	       err ? strerror(err < 0 ? -err : err) : "", opt_seed, episode + 1);
	fflush(stdout);
}

/* a fake peer for the fake node, with a fresh incarnation and nonce */
static void fresh(struct fake_peer *fp, uint32_t self)
{
	unsigned int i;

	fp_init(fp, self, nr_nodes, heap_base, part_size);
	fp->inc = rnd() | 1;
	for (i = 0; i < 32; i++)
		fp->nonce[i] = (uint8_t)rnd();
}

/* a raw connection from src (no handshake) */
static int dial(uint32_t src)
{
	return fp_dial(&target, src);
}

/* wait until the node closes fd (what it must do with a bad peer), at
 * most secs; whatever it sends meanwhile is read and dropped
 */
static void drain(int fd, unsigned int secs)
{
	uint8_t buf[4096];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t end = fp_now_ms() + secs * 1000ULL;

	while (fp_now_ms() < end) {
		if (poll(&p, 1, 100) > 0 && read(fd, buf, sizeof(buf)) <= 0)
			break;
	}
	close(fd);
}

static void send_raw(int fd, const void *p, size_t n)
{
	if (send_all(fd, p, n))
		return;	/* closed on us: fine */
}

/* the offer of fp on a raw connection; the node's challenge into ch */
static int offer(struct fake_peer *fp, int fd, uint8_t *ch)
{
	uint8_t msg[HDR + HELLO_LEN];

	fp_hello(fp, msg, 0, 1, NULL);
	if (send_all(fd, msg, sizeof(msg)))
		return -EPIPE;
	return recv_exact(fd, ch, HDR + HELLO_LEN, 5);
}

/* ---- episodes without the key ------------------------------------------ */

static void ep_unauth(enum ep e)
{
	uint8_t buf[8192], ch[HDR + HELLO_LEN], msg[HDR + HELLO_LEN], proof[32];
	struct fake_peer fp;
	int fd, i, n;

	fresh(&fp, fake_id);
	fd = dial(fake_ip);
	if (fd < 0)
		return;
	switch (e) {
	case E_GARBAGE:
		n = 1 + (int)below(sizeof(buf));
		for (i = 0; i < n; i++)
			buf[i] = (uint8_t)rnd();
		send_raw(fd, buf, (size_t)n);
		break;
	case E_BAD_HDR:
		hdr(buf, below(4) ? W_MAGIC_LE : (uint32_t)rnd(),
		    below(4) ? VERSION : (uint8_t)rnd(), (uint8_t)below(24),
		    below(2) ? fake_id : (uint32_t)rnd(), below(2) ? 0 : (uint32_t)rnd(),
		    (uint32_t)below(200));
		put16(buf + 6, (uint16_t)rnd());
		n = HDR + (int)below(200);
		send_raw(fd, buf, (size_t)(below(3) ? n : (int)below(HDR)));
		break;
	case E_HUGE_LEN:
		hdr(buf, W_MAGIC_LE, VERSION, (uint8_t)(1 + below(T_DELEG_REPLY)), fake_id, 0,
		    below(2) ? 0xffffffffU : FP_MAX_DATA + 64 + 1 + (uint32_t)below(1 << 20));
		send_raw(fd, buf, HDR);
		break;
	case E_SILENT_OFFER:
		offer(&fp, fd, ch);
		break;	/* then nothing: the node's deadline closes it */
	case E_REQ_BEFORE_PROOF:
		if (offer(&fp, fd, ch))
			break;
		fp.fd = fd;
		fp.peer = 0;
		fp_read_req(&fp, heap_base, 8);
		fp.fd = -1;
		break;
	case E_WRONG_PROOF:
		if (offer(&fp, fd, ch))
			break;
		for (i = 0; i < 32; i++)
			proof[i] = below(2) ? 0 : (uint8_t)rnd();
		fp_hello(&fp, msg, 0, 3, proof);
		send_raw(fd, msg, sizeof(msg));
		break;
	case E_REFLECT:
		if (offer(&fp, fd, ch))
			break;
		/* the node's own challenge, back at it, as from us */
		put32(ch + 8, fake_id);
		put32(ch + 12, 0);
		send_raw(fd, ch, sizeof(ch));
		break;
	case E_OUT_OF_ORDER: {
		static const uint32_t steps[] = { 0, 2, 3, 4, 0xffffffffU };

		fp_hello(&fp, msg, 0, steps[below(ARRAY_SIZE(steps))], NULL);
		send_raw(fd, msg, sizeof(msg));
		if (below(2)) {	/* and two offers in a row */
			fp_hello(&fp, msg, 0, 1, NULL);
			send_raw(fd, msg, sizeof(msg));
			send_raw(fd, msg, sizeof(msg));
		}
		break;
	}
	case E_BAD_GEOMETRY:
		fp_hello(&fp, msg, 0, 1, NULL);
		switch (below(6)) {
		case 0: put32(msg + HDR + 4, nr_nodes + 1); break;
		case 1: put64(msg + HDR + 8, heap_base + part_size); break;
		case 2: put64(msg + HDR + 16, part_size * 2); break;
		case 3: put32(msg + HDR, nr_nodes + (uint32_t)below(300)); break;
		case 4: msg[4] = VERSION + 1; break;
		default: put32(msg + 24, HELLO_LEN - 1 - (uint32_t)below(HELLO_LEN)); break;
		}
		send_raw(fd, msg, sizeof(msg));
		break;
	default:
		break;
	}
	drain(fd, 1);
}

/* a proof the node accepted once, sent again on a new connection */
static void ep_replay(void)
{
	uint8_t ch[HDR + HELLO_LEN], msg[HDR + HELLO_LEN], a[104], p[32];
	struct fake_peer fp;
	int fd;

	fresh(&fp, fake_id);
	fd = dial(fake_ip);
	if (fd < 0 || offer(&fp, fd, ch)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	/* the valid proof for this connection's challenge, never sent on it */
	auth_input(a, 3, fake_id, 0, fp.inc, get64(ch + HDR + 24), fp.nonce, ch + H_NONCE);
	hmac_sha256(fp.key, (size_t)fp.klen, a, sizeof(a), p);
	close(fd);
	fd = dial(fake_ip);
	if (fd < 0)
		return;
	if (!offer(&fp, fd, ch)) {
		fp_hello(&fp, msg, 0, 3, p);
		send_raw(fd, msg, sizeof(msg));
	}
	drain(fd, 1);
}

/* the right key, the wrong address: the fake node from this machine's own
 * address, or the real node 1 from the alias
 */
static void ep_wrong_addr(void)
{
	struct fake_peer fp;
	int ret;

	if (below(2)) {
		fresh(&fp, fake_id);
		ret = fp_connect(&fp, 0, &target, own_ip);
	} else {
		fresh(&fp, 1);
		ret = fp_connect(&fp, 0, &target, fake_ip);
	}
	if (!ret) {
		/* the handshake itself may finish; nothing may be served */
		int32_t st;
		uint8_t b[8];
		uint64_t seq = fp_read_req(&fp, heap_base, 8);

		if (seq && fp_reply(&fp, seq, &st, b, sizeof(b), 2) == 0)
			problem("wrong_addr: a peer at the wrong address was served", 0);
	}
	fp_close(&fp);
}

static void ep_connect_flood(void)
{
	int fds[64], n = 8 + (int)below(56), i;

	for (i = 0; i < n; i++)
		fds[i] = dial(below(2) ? fake_ip : own_ip);
	usleep(200000 + (useconds_t)below(500000));
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* ---- authenticated episodes ------------------------------------------------ */

static int auth(struct fake_peer *fp)
{
	int ret, i;

	fresh(fp, fake_id);
	/* the node may still hold our previous connection a moment */
	for (i = 0; i < 20; i++) {
		ret = fp_connect(fp, 0, &target, fake_ip);
		if (ret != -ECONNRESET && ret != -EPIPE && ret != -ETIMEDOUT)
			break;
		usleep(100000);
	}
	return ret;
}

/* Does the node still serve? An authenticated READ of its directory. */
static bool serve_check(void)
{
	struct fake_peer fp;
	int32_t st = -1;
	uint8_t b[8];
	uint64_t seq;
	int ret, tries;

	tried[E_SERVE]++;
	for (tries = 0; tries < 3; tries++) {
		ret = auth(&fp);
		if (ret) {
			usleep(500000);
			continue;
		}
		seq = fp_read_req(&fp, heap_base, 8);
		ret = seq ? fp_reply(&fp, seq, &st, b, sizeof(b),
				     opt_timeout_ms / 1000 + 5) : -EPIPE;
		fp_close(&fp);
		if (!ret)
			return true;
		usleep(500000);
	}
	problem("serve_check: the node did not answer an authenticated READ", ret);
	return false;
}

static void payload(uint8_t *p, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static uint64_t pick_gaddr(void)
{
	const uint64_t a[] = {
		heap_base, heap_base + 8, heap_base + part_size - 8,
		heap_base + part_size, heap_base + (rnd() % part_size),
		heap_base + 64 * 1024 * below(64), heap_base - 8, 0, ~0ULL,
		heap_base + (uint64_t)fake_id * part_size,
	};

	return a[below(ARRAY_SIZE(a))] | (below(3) ? 0 : rnd() << 48);
}

/*
 * A forged DELEG: the fixed part (endpoint, slot size, a word that must
 * be 0), then a batch: random bytes, or a header and records built to be
 * right or wrong in one field (uapi/linux/odsm_deleg.h).
 */
static uint32_t forge_deleg(uint8_t *m, uint32_t room)
{
	static const uint32_t slots[] = { 256, 1024, 4096, 65536, 0, 300,
					  131072 };
	uint32_t slot = slots[below(ARRAY_SIZE(slots))], blen, off, i, n;
	uint32_t max = room - 16;

	put64(m, below(3) ? heap_base + 4096 * below(64) : pick_gaddr());
	put32(m + 8, slot);
	/* wait_ms: mostly one the node takes (1 .. 45000) */
	put32(m + 12, below(8) ? 1 + (uint32_t)below(2000) : (uint32_t)rnd());
	blen = slot >= 16 && slot <= max ? slot : 1024;
	if (below(4) == 0) {
		/* random bytes, of a length right or not */
		blen = below(2) ? 16 + (uint32_t)below(blen) : (uint32_t)below(max);
		payload(m + 16, blen);
		return 16 + blen;
	}
	n = (uint32_t)below(6);
	off = 16 + 16;
	for (i = 0; i < n && off + 32 + 16 <= 16 + blen; i++) {
		uint32_t al = below(3) ? 8 : (uint32_t)rnd() % 2048;

		put64(m + off, below(8) ? 1 + rnd() : 0);		/* op */
		put64(m + off + 8, below(2) ? below(4) : rnd());	/* obj */
		put32(m + off + 16, al);				/* arg_len */
		put32(m + off + 20, below(3) ? 8 : (uint32_t)rnd());	/* ret_max */
		put16(m + off + 24, (uint16_t)below(8));		/* kind */
		put16(m + off + 26, below(8) ? 0 : (uint16_t)rnd());	/* flags */
		put32(m + off + 28, i);					/* tag */
		off += 32;
		if (al <= 8)
			off += 8;
	}
	put32(m + 16, (uint32_t)rnd());					/* seq */
	put16(m + 20, (uint16_t)(below(4) ? i : rnd() % 64));		/* count */
	put16(m + 22, below(8) ? 0 : (uint16_t)rnd());			/* flags */
	put32(m + 24, below(4) ? off - 32 : (uint32_t)rnd() % (2 * blen)); /* len */
	put32(m + 28, below(8) ? 0 : (uint32_t)rnd());			/* status */
	return below(6) ? off : off + (uint32_t)below(64);
}

/*
 * A request of ours and its reply: 0 with the reply's status and payload
 * (up to cap bytes), or a problem reported and -errno.
 */
static int ask(struct fake_peer *fp, uint8_t type, const void *p, uint32_t len,
	       int32_t *st, void *r, uint32_t cap, const char *what)
{
	uint64_t seq = fp->next_seq++;
	int ret;

	ret = fp_send(fp, type, 0, seq, 0, p, len);
	if (!ret)
		ret = fp_reply(fp, seq, st, r, cap, opt_timeout_ms / 1000 + 5);
	if (ret)
		problem(what, ret);
	return ret;
}

/*
 * FETCH_MANY of an object we allocate (64 bytes), 63 times at 41 bytes:
 * the owner pads each item's data to a multiple of 8, so its reply is 63
 * x (24 + 48) bytes, 441 more than 63 x (24 + 41).  Before 2026-12-02 its
 * buffer was sized without the padding and written past; the fuzz
 * guests' slub_debug red zones report that.  Every item must be the
 * object's 41 bytes, and the reply exactly that long.
 */
static void padded_fetch_many(struct fake_peer *fp)
{
	static uint8_t m[8 + 63 * 8], r[63 * (24 + 48) + 64];
	uint8_t a[16] = { 0 }, ar[16];
	uint32_t k, want = 63 * 24;
	uint64_t g;
	int32_t st;

	put64(a, 64);
	put32(a + 12, 1);	/* zeroed */
	if (ask(fp, T_ALLOC, a, sizeof(a), &st, ar, sizeof(ar),
		"padded_fetch_many: ALLOC not answered"))
		return;
	if (st)		/* the partition full of the other fuzzer's */
		return;
	g = get64(ar);
	put32(m, 63);
	put32(m + 4, 41);
	for (k = 0; k < 63; k++)
		put64(m + 8 + 8 * k, g);
	memset(r, 0xa5, sizeof(r));
	if (ask(fp, T_FETCH_MANY, m, sizeof(m), &st, r, sizeof(r),
		"padded_fetch_many: FETCH_MANY not answered"))
		return;
	if (st) {
		problem("padded_fetch_many: FETCH_MANY refused whole", st);
		return;
	}
	/* an item refused (the object freed by the node's own fuzzer) has
	 * no data; every other is the object's first 41 bytes, padded
	 */
	for (k = 0; k < 63; k++) {
		if (get32(r + 24 * k + 16))
			continue;
		if (get64(r + 24 * k) != 64 || get32(r + 24 * k + 12) != 41) {
			problem("padded_fetch_many: an item is not the object's 41 bytes",
				-EPROTO);
			return;
		}
		want += 48;
	}
	if (fp->reply_len != want)
		problem("padded_fetch_many: the reply's length is not its items' padded",
			-EPROTO);
	ask(fp, T_FREE, ar, 8, &st, NULL, 0, "padded_fetch_many: FREE not answered");
}

static void ep_auth(enum ep e)
{
	static uint8_t big[FP_MAX_DATA + 128];
	struct fake_peer fp, fp2;
	uint8_t p[64];
	uint32_t n, i, len;
	int ret;

	ret = auth(&fp);
	if (ret) {
		problem("handshake with the key failed", ret);
		return;
	}
	switch (e) {
	case E_REQ_FLOOD:
		/* requests, never reading a reply: what the node queues for
		 * us must stay bounded (bounded here too: at most 64 MiB of
		 * answers asked for)
		 */
		n = 16 + (uint32_t)below(240);
		for (i = 0; i < n; i++) {
			len = below(2) ? 8 : FP_MAX_DATA;
			if (!fp_read_req(&fp, heap_base, len))
				break;
		}
		break;
	case E_BAD_REPLY: {
		static const uint8_t replies[] = {
			T_PONG, T_READ_REPLY, T_WRITE_REPLY, T_ALLOC_REPLY,
			T_FREE_REPLY, T_ATOMIC_REPLY, T_FETCH_REPLY, T_MAP_REPLY,
			T_FETCH_MANY_REPLY, T_WAKE_REPLY,
		};

		n = 1 + (uint32_t)below(32);
		for (i = 0; i < n; i++) {
			len = (uint32_t)below(4) ? (uint32_t)below(64) : (uint32_t)below(FP_MAX_DATA + 64);
			payload(big, len < 4096 ? len : 4096);
			if (fp_send(&fp, replies[below(ARRAY_SIZE(replies))],
				    below(4) ? F_REPLY : (uint16_t)rnd(),
				    below(2) ? rnd() : below(8), (int32_t)(below(2) ? 0 : rnd()),
				    big, len))
				break;
		}
		break;
	}
	case E_BAD_REQ: {
		static const uint8_t reqs[] = {
			T_READ, T_WRITE, T_ALLOC, T_FREE, T_ATOMIC, T_FETCH, T_MAP,
			T_PING, T_FETCH_MANY, T_WAKE, 0, 19, 200,
		};
		static const uint32_t lens[] = {
			0, 1, 7, 8, 15, 16, 17, 23, 24, 25, 31, 32, 33, 104,
			FP_MAX_DATA, FP_MAX_DATA + 16, FP_MAX_DATA + 64,
		};

		n = 1 + (uint32_t)below(16);
		for (i = 0; i < n; i++) {
			uint8_t t = reqs[below(ARRAY_SIZE(reqs))];

			len = lens[below(ARRAY_SIZE(lens))];
			payload(big, len < 4096 ? len : 4096);
			put64(big, pick_gaddr());
			if (len >= 16) {
				/* a length field that may or may not match */
				put32(big + 8, below(2) ? len - 16 : (uint32_t)rnd());
				put32(big + 12, (uint32_t)below(8));
			}
			if (t == T_FETCH_MANY && below(2)) {
				/* counts and lengths near their bounds, the
				 * payload the count's or not, addresses of any
				 * partition
				 */
				uint32_t c = 1 + (uint32_t)below(70), k;

				put32(big, below(4) ? c : (uint32_t)rnd());
				put32(big + 4, (uint32_t)below(4200));
				len = below(4) ? 8 + 8 * c : (uint32_t)below(600);
				for (k = 0; 8 + 8 * k + 8 <= len; k++)
					put64(big + 8 + 8 * k, pick_gaddr());
			}
			if (t == T_WAKE && below(2)) {
				/* words of any partition, aligned or not,
				 * nr and flags near their bounds
				 */
				put64(big, pick_gaddr() + (below(4) ? 0 :
							   below(4)));
				put32(big + 8, below(2) ? (uint32_t)below(3) :
					       0x7fffffffU + (uint32_t)below(2));
				put32(big + 12, below(4) ? 0 : (uint32_t)rnd());
				len = below(4) ? 16 : (uint32_t)below(24);
			}
			if (fp_send(&fp, t, 0, fp.next_seq++, 0, big, len))
				break;
		}
		break;
	}
	case E_KEYS: {
		/* nr at and past its limits; the entries as MAP_REPLYs */
		static const uint32_t nrs[] = { 0, 1, 2, 4096, 4097, 0xffffffffU };
		uint32_t nr = nrs[below(ARRAY_SIZE(nrs))], ents;

		ents = nr > 8000 ? (uint32_t)below(16) : nr;
		if (below(3) == 0 && ents)
			ents--;	/* one short */
		len = 8 + 32 * ents;
		if (len > sizeof(big))
			len = sizeof(big) - sizeof(big) % 32;
		payload(big, len);
		put32(big, nr);
		put32(big + 4, below(2) ? 0 : (uint32_t)rnd());
		for (i = 0; i < ents && 8 + 32 * i + 32 <= len; i++) {
			put64(big + 8 + 32 * i, heap_base + (uint64_t)fake_id * part_size +
			      65536ULL * below(16384));
			put32(big + 8 + 32 * i + 16, below(2) ? 65536 : (uint32_t)rnd());
		}
		fp_send(&fp, T_KEYS, 0, fp.next_seq++, 0, big, len);
		break;
	}
	case E_MAP:
		/* blocks fresh (no object), holding the directory, lazy
		 * (large objects), misaligned, other partitions
		 */
		n = 1 + (uint32_t)below(32);
		for (i = 0; i < n; i++) {
			put64(p, below(4) ? heap_base + 65536ULL * below(16384) : pick_gaddr());
			if (fp_send(&fp, T_MAP, 0, fp.next_seq++, 0, p,
				    below(6) ? 8 : (uint32_t)below(16)))
				break;
		}
		break;
	case E_SECOND_HELLO: {
		uint8_t msg[HDR + HELLO_LEN];

		fp_hello(&fp, msg, 0, 1 + (uint32_t)below(3), NULL);
		send_raw(fp.fd, msg, sizeof(msg));
		break;
	}
	case E_BAD_PING:
		len = (uint32_t)below(2) ? 8 + (uint32_t)below(3) * 8 : (uint32_t)below(40);
		payload(p, sizeof(p));
		fp_send(&fp, below(2) ? T_PING : T_PONG, below(2) ? 0 : F_REPLY,
			rnd(), 0, p, len > sizeof(p) ? sizeof(p) : len);
		break;
	case E_OTHER_NODES: {
		uint8_t h[HDR + 16];

		hdr(h, W_MAGIC_LE, VERSION, T_READ, below(2) ? 1 : (uint32_t)below(300),
		    below(2) ? 1 : (uint32_t)below(300), 16);
		put64(h + 16, fp.next_seq++);
		put64(h + HDR, heap_base);
		put32(h + HDR + 8, 8);
		send_raw(fp.fd, h, sizeof(h));
		break;
	}
	case E_DELEG:
		n = 1 + (uint32_t)below(16);
		for (i = 0; i < n; i++) {
			len = forge_deleg(big, 65536 + 16 + 64);
			if (fp_send(&fp, T_DELEG, 0, fp.next_seq++, 0, big, len))
				break;
		}
		break;
	case E_PADDED:
		padded_fetch_many(&fp);
		break;
	case E_RESTART:
		/* a request under way, then the same node again with a new
		 * incarnation while the first connection is still open
		 */
		fp_read_req(&fp, heap_base, FP_MAX_DATA);
		if (auth(&fp2) == 0) {
			int32_t st;
			uint8_t b[8];
			uint64_t seq = fp_read_req(&fp2, heap_base, 8);

			/* no request sent is ENOTCONN; else the reply's wait */
			ret = seq ? fp_reply(&fp2, seq, &st, b, sizeof(b),
					     opt_timeout_ms / 1000 + 5) : -ENOTCONN;
			if (ret)
				problem("restart: the new incarnation was not served", ret);
			fp_close(&fp2);
		} else {
			problem("restart: the new incarnation's handshake failed", 0);
		}
		break;
	default:
		break;
	}
	if (fp.fd >= 0)
		drain(fp.fd, below(3) ? 0 : 1);
	fp.fd = -1;
}

/* first lines of reports: one problem per report (see odsm_fuzz.c) */
static const char *const kpat[] = {
	"WARNING:", "BUG:", "BUG ", "Oops", "KFENCE:", "general protection",
	"blocked for more than", "soft lockup", "self-detected stall",
};

static void kmsg_scan(int fd)
{
	char rec[2048];
	ssize_t n;
	size_t i;

	if (fd < 0)
		return;
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			break;
		rec[n] = 0;
		for (i = 0; i < ARRAY_SIZE(kpat); i++)
			if (strstr(rec, kpat[i])) {
				rec[strcspn(rec, "\n")] = 0;
				problem("kernel report on this node", 0);
				printf("FUZZ_KERNEL %s\n", rec);
				break;
			}
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", 1, NULL, 's' }, { "episodes", 1, NULL, 'n' },
		{ "secs", 1, NULL, 't' }, { "target", 1, NULL, 'T' },
		{ "fake-ip", 1, NULL, 'f' }, { "own-ip", 1, NULL, 'o' },
		{ "nodes", 1, NULL, 'N' }, { "key-file", 1, NULL, 'k' },
		{ "timeout-ms", 1, NULL, 'm' }, { "heap-base", 1, NULL, 'b' },
		{ "part-size", 1, NULL, 'p' }, { "only", 1, NULL, 'O' }, { 0 }
	};
	char tgt[64] = "10.0.0.1:7100", *colon;
	struct in_addr ia;
	uint64_t end, t0;
	int o, kfd, e;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 's': opt_seed = strtoull(optarg, NULL, 0); break;
		case 'n': opt_episodes = strtoull(optarg, NULL, 0); opt_secs = 100000; break;
		case 't': opt_secs = (unsigned int)atoi(optarg); break;
		case 'T': snprintf(tgt, sizeof(tgt), "%s", optarg); break;
		case 'f': inet_pton(AF_INET, optarg, &ia); fake_ip = ia.s_addr; break;
		case 'o': inet_pton(AF_INET, optarg, &ia); own_ip = ia.s_addr; break;
		case 'N': nr_nodes = (uint32_t)atoi(optarg); break;
		case 'k': setenv("ODSM_KEY_FILE", optarg, 1); break;
		case 'm': opt_timeout_ms = (unsigned int)atoi(optarg); break;
		case 'b': heap_base = strtoull(optarg, NULL, 0); break;
		case 'p': part_size = strtoull(optarg, NULL, 0); break;
		case 'O':
			for (e = 0; e < E_SERVE; e++)
				if (!strcmp(optarg, ep_name[e]))
					opt_only = e;
			if (opt_only < 0) {
				fprintf(stderr, "odsm-wirefuzz: no episode kind '%s'\n", optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: odsm-wirefuzz --target IP:PORT --fake-ip IP --own-ip IP --nodes N\n"
				"       --key-file F [--seed S] [--secs T | --episodes N] [--timeout-ms N]\n"
				"       [--only KIND]   (one episode kind, e.g. restart: to chase one problem)\n");
			return 2;
		}
	}
	if (nr_nodes < 2 || !fake_ip || !own_ip) {
		fprintf(stderr, "odsm-wirefuzz: --nodes (with the fake node), --fake-ip and --own-ip are required\n");
		return 2;
	}
	fake_id = nr_nodes - 1;
	colon = strchr(tgt, ':');
	memset(&target, 0, sizeof(target));
	target.sin_family = AF_INET;
	target.sin_port = htons(colon ? (uint16_t)atoi(colon + 1) : 7100);
	if (colon)
		*colon = 0;
	inet_pton(AF_INET, tgt, &target.sin_addr);
	rng = opt_seed * 0x9e3779b97f4a7c15ULL + 0x1234567;
	if (!rng)
		rng = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kfd >= 0)
		lseek(kfd, 0, SEEK_END);
	printf("FUZZ_START mode=wire seed=%" PRIu64 " secs=%u target=%s fake_node=%u (replay: odsm-wirefuzz --seed %"
	       PRIu64 " ...)\n", opt_seed, opt_secs, tgt, fake_id, opt_seed);
	t0 = fp_now_ms();
	end = t0 + opt_secs * 1000ULL;
	if (!serve_check())
		goto out;
	/* once for sure, then among the others */
	if (opt_only < 0) {
		tried[E_PADDED]++;
		ep_auth(E_PADDED);
	}
	for (episode = 0; episode < opt_episodes && fp_now_ms() < end; episode++) {
		e = (int)below(E_SERVE);
		if (opt_only >= 0)
			e = opt_only;
		tried[e]++;
		switch (e) {
		case E_REPLAY:
			ep_replay();
			break;
		case E_WRONG_ADDR:
			ep_wrong_addr();
			break;
		case E_CONNECT_FLOOD:
			ep_connect_flood();
			break;
		default:
			if (e < E_REQ_FLOOD)
				ep_unauth((enum ep)e);
			else
				ep_auth((enum ep)e);
		}
		if (episode % 8 == 7 && !serve_check())
			break;
		kmsg_scan(kfd);
	}
	/* the node forgets what we did: a last check after its deadlines */
	usleep(200000);
	serve_check();
out:
	kmsg_scan(kfd);
	for (e = 0; e < NEP; e++)
		if (tried[e])
			printf("FUZZ_OPS wire.%-16s tried=%" PRIu64 "\n", ep_name[e], tried[e]);
	printf("FUZZ_RESULT mode=wire seed=%" PRIu64 " secs=%" PRIu64 " episodes=%" PRIu64
	       " problems=%" PRIu64 "\n", opt_seed, (fp_now_ms() - t0) / 1000, episode, problems);
	return problems != 0;
}
