/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A fake /dev/odsm for host tests of libodsm: the library (userlib/odsm.c
 * and odsm_check.c) is compiled with -Dioctl=fake_ioctl, and this file
 * answers its ioctls with the semantics uapi/linux/odsm.h promises, on a
 * two-partition "heap" of anonymous memory in this process: node 0 (this
 * node) and node 1 (remote: its objects are made here directly, as if
 * another node had allocated them).  It models the node cache of shared
 * borrows (one open file: references are counts), moves and take-overs of
 * mutable borrows, write-backs, and frees; and it counts every call, so a
 * test can assert which paths enter the kernel and which do not.
 *
 * Not thread-safe by itself: one mutex around every call.
 */
#ifndef FAKE_ODSM_H
#define FAKE_ODSM_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include "odsm.h"

#define FK_PART		(4ULL << 20)
#define FK_MAX_OBJ	4096
#define FK_MAX_COPY	1024

struct fk_obj {
	uint64_t addr, size;
	uint16_t color;		/* allocation color */
	bool live;
	bool copied;		/* a copy of it was handed out (a miss) */
};

struct fk_copy {
	uint64_t key;		/* the remote colored address */
	uint64_t slot;		/* where the copy is, in node 0's partition */
	uint64_t size;
	unsigned int refs;
	bool used;
};

struct fk_stats {
	unsigned long calls;		/* every ioctl */
	unsigned long borrows, hits, misses, returns;
	unsigned long muts, moved, taken, held;
	unsigned long writebacks, frees, remote_frees, reads, allocs, infos;
	unsigned long atomics, statuses;
};

static struct {
	pthread_mutex_t lock;
	uint64_t base;
	uint64_t next[2];		/* bump allocators, per partition */
	uint16_t next_color;
	struct fk_obj obj[FK_MAX_OBJ];
	unsigned int nr_obj;
	struct fk_copy copy[FK_MAX_COPY];
	struct fk_stats st;
	int fail_borrow, fail_mut;	/* the next such call fails with it */
	bool node1_down;		/* ODSM_IOC_STATUS: node 1 is down */
	int fail_move;			/* every MOVE fails with it */
	int fail_read, fail_write;	/* the next READ / WRITE fails */
	unsigned int fail_skip;		/* ... after this many went through */
	/* ODSM_IOC_DELEG_CALL: the test plays the other node (under lock) */
	int (*deleg_call)(struct odsm_deleg_call *a);
	unsigned long move_calls;
	unsigned int last_alloc_flags;	/* of the last ODSM_IOC_ALLOC */
	uint64_t last_wb[3];		/* owner, g, ext of the last write-back */
	uint32_t last_mut_flags;
	uint64_t last_mut_addr;		/* the held copy it named */
	unsigned int peer_state;	/* what ODSM_IOC_STATUS says of node 1 */
	unsigned int nodes;		/* ... of nodes 0..nodes-1 (0: 2); every
					 * node past 0 is in peer_state
					 */
	uint32_t peer_inc;		/* ... and was seen last as this
					 * incarnation (node K: peer_inc + K;
					 * 0: not said), and before that as
					 */
	uint32_t peer_inc_before;	/* this one (+ K; 0: none) */
} fk = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t fk_part(unsigned int node)
{
	return fk.base + node * FK_PART;
}

static struct fk_obj *fk_find(uint64_t cg)
{
	uint64_t a = odsm_addr_of(cg);
	unsigned int i;

	for (i = 0; i < fk.nr_obj; i++)
		if (fk.obj[i].live && fk.obj[i].addr == a)
			return &fk.obj[i];
	return NULL;
}

/* a new object in node's partition; its colored address */
static uint64_t fk_new_obj_locked(unsigned int node, uint64_t size)
{
	struct fk_obj *o = &fk.obj[fk.nr_obj++];
	uint64_t a = fk.next[node];

	fk.next[node] += (size + 15) & ~15ULL;
	if (fk.next[node] > fk_part(node) + FK_PART || fk.nr_obj > FK_MAX_OBJ)
		abort();
	o->addr = a;
	o->size = size;
	o->color = fk.next_color;
	fk.next_color += 7;
	o->live = true;
	o->copied = false;
	return a | (uint64_t)o->color << ODSM_COLOR_SHIFT;
}

static inline uint64_t fk_new_obj(unsigned int node, uint64_t size, int fill)
{
	uint64_t cg;

	pthread_mutex_lock(&fk.lock);
	cg = fk_new_obj_locked(node, size);
	pthread_mutex_unlock(&fk.lock);
	memset(odsm_ptr(cg), fill, size);
	return cg;
}

/* Set up the heap and odsm_rt as odsm_init() would (node 0 of 2). */
static void fk_init(void)
{
	void *p = mmap(NULL, 3 * FK_PART, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		abort();
	memset(&fk.st, 0, sizeof(fk.st));
	fk.base = ((uint64_t)(uintptr_t)p + FK_PART - 1) & ~(FK_PART - 1);
	fk.next[0] = fk_part(0);
	fk.next[1] = fk_part(1);
	fk.next_color = 3;
	fk.nr_obj = 0;
	memset(fk.copy, 0, sizeof(fk.copy));
	fk.fail_borrow = fk.fail_mut = 0;
	fk.fail_read = fk.fail_write = 0;
	fk.fail_skip = 0;
	fk.node1_down = false;
	fk.deleg_call = NULL;
	odsm_rt.fd = 1000;	/* never a real file: fake_ioctl answers */
	memset(&odsm_rt.info, 0, sizeof(odsm_rt.info));
	odsm_rt.info.abi_version = ODSM_ABI_VERSION;
	odsm_rt.info.node_id = 0;
	odsm_rt.info.nr_nodes = 2;
	odsm_rt.info.heap_base = fk.base;
	odsm_rt.info.part_size = FK_PART;
	odsm_rt.info.heap_size = 2 * FK_PART;
	odsm_rt.local_lo = fk_part(0);
	odsm_rt.local_hi = fk_part(0) + FK_PART;
	odsm_rt.tag = 0x5a5a;
	fk.peer_state = ODSM_PEER_UP;
	fk.nodes = 0;
}

static void fk_fini(void)
{
	munmap((void *)(uintptr_t)(fk.base), 2 * FK_PART);
	odsm_rt.fd = -1;
	odsm_rt.tag = 0;
	odsm_rt.local_lo = odsm_rt.local_hi = 0;
	memset(&odsm_rt.info, 0, sizeof(odsm_rt.info));
}

static bool fk_local(uint64_t cg)
{
	uint64_t a = odsm_addr_of(cg);

	return a >= fk_part(0) && a < fk_part(0) + FK_PART;
}

static struct fk_copy *fk_copy_of(uint64_t key)
{
	unsigned int i;

	for (i = 0; i < FK_MAX_COPY; i++)
		if (fk.copy[i].used && fk.copy[i].key == key)
			return &fk.copy[i];
	return NULL;
}

/* the live object cg starts, with a color it may carry */
static struct fk_obj *fk_object(uint64_t cg)
{
	struct fk_obj *o = fk_find(cg);

	if (!o || odsm_color_of(cg) < o->color)
		return NULL;
	return o;
}

static int fk_borrow(struct odsm_borrow *b)
{
	struct fk_copy *c;
	struct fk_obj *o;
	unsigned int i;

	fk.st.borrows++;
	if (fk.fail_borrow) {
		i = (unsigned int)fk.fail_borrow;
		fk.fail_borrow = 0;
		return -(int)i;
	}
	o = fk_object(b->gaddr);
	if (!o)
		return -EINVAL;
	if (fk_local(b->gaddr)) {
		b->addr = o->addr;
		b->size = o->size;
		b->result = ODSM_BORROWED_LOCAL;
		return 0;
	}
	c = fk_copy_of(b->gaddr);
	if (c) {
		fk.st.hits++;
		c->refs++;
		b->result = ODSM_BORROWED_HIT;
	} else {
		for (i = 0; i < FK_MAX_COPY && fk.copy[i].used; i++)
			;
		if (i == FK_MAX_COPY)
			return -ENOMEM;
		c = &fk.copy[i];
		c->used = true;
		c->key = b->gaddr;
		c->size = o->size;
		c->slot = odsm_addr_of(fk_new_obj_locked(0, o->size));
		fk_find(c->slot)->live = false;	/* a slot, not an object */
		memcpy(odsm_ptr(c->slot), odsm_ptr(o->addr), o->size);
		c->refs = 1;
		o->copied = true;
		fk.st.misses++;
		b->result = ODSM_BORROWED_MISS;
	}
	b->addr = c->slot;
	b->size = c->size;
	return 0;
}

static int fk_return(struct odsm_borrow *b)
{
	struct fk_copy *c;

	if (fk_local(b->gaddr))
		return 0;
	c = fk_copy_of(b->gaddr);
	if (!c || !c->refs)
		return -ENOENT;
	c->refs--;
	fk.st.returns++;
	return 0;
}

static int fk_borrow_mut(struct odsm_borrow_mut *m)
{
	struct fk_copy *c;
	struct fk_obj *o;
	int err;

	fk.st.muts++;
	fk.last_mut_flags = m->flags;
	fk.last_mut_addr = m->addr;
	if ((m->flags & ~ODSM_MUT_FLAGS) ||
	    (m->addr && !(m->flags & ODSM_MUT_HELD_REF)) || m->reserved[0])
		return -EINVAL;
	o = fk_object(m->gaddr);
	if (!o)
		return -EINVAL;
	if (fk_local(m->gaddr)) {
		m->new_gaddr = m->gaddr;
		m->size = o->size;
		m->result = ODSM_BORROWED_LOCAL;
		return 0;
	}
	c = fk_copy_of(m->gaddr);
	if (m->flags & ODSM_MUT_HELD_REF) {
		/* the copy it names (one per address here), or any */
		if (!c || !c->refs || (m->addr && m->addr != c->slot))
			return -EINVAL;
		c->refs--;		/* consumed, whatever follows */
		fk.st.held++;
	}
	if (fk.fail_mut) {		/* nothing moves */
		err = fk.fail_mut;
		fk.fail_mut = 0;
		return -err;
	}
	if (c && !c->refs) {		/* the copy becomes the object */
		struct fk_obj *n = &fk.obj[fk.nr_obj++];

		n->addr = c->slot;
		n->size = c->size;
		n->color = fk.next_color;
		fk.next_color += 7;
		n->live = true;
		c->used = false;
		m->new_gaddr = n->addr | (uint64_t)n->color << ODSM_COLOR_SHIFT;
		m->result = ODSM_BORROWED_TAKEN;
		fk.st.taken++;
	} else {
		m->new_gaddr = fk_new_obj_locked(0, o->size);
		memcpy(odsm_ptr(m->new_gaddr), odsm_ptr(o->addr), o->size);
		m->result = ODSM_BORROWED_MOVED;
		fk.st.moved++;
	}
	m->size = o->size;
	/* the original, freed at its home (with KEEP_ORIGINAL: by the
	 * write-back that names the new address)
	 */
	if (!(m->flags & ODSM_MUT_KEEP_ORIGINAL))
		o->live = false;
	return 0;
}

/* The live object holding the 16-byte box at owner, as the home checks it. */
static int fk_owner_box(uint64_t owner)
{
	unsigned int i;

	if (owner % 16 || !odsm_in_heap(owner))
		return -EINVAL;
	for (i = 0; i < fk.nr_obj; i++) {
		struct fk_obj *o = &fk.obj[i];

		if (o->live && owner >= o->addr && owner + 16 <= o->addr + o->size)
			return o->copied ? -EBUSY : 0;
	}
	return -EINVAL;
}

static int fk_ioctl_locked(unsigned long req, void *arg)
{
	int ret;

	switch (req) {
	case ODSM_IOC_READ_OWNER: {
		struct odsm_write_back *w = arg;

		ret = fk_owner_box(w->owner);
		if (ret)
			return ret;
		memcpy(&w->g, odsm_ptr(w->owner), 16);
		fk.st.reads++;
		return 0;
	}
	case ODSM_IOC_OBJ_INFO: {
		struct odsm_obj_info *oi = arg;
		struct fk_obj *o = fk_find(oi->gaddr);
		unsigned int i;

		if (!o) {	/* one lived there: gone (the fake never reuses) */
			for (i = 0; i < fk.nr_obj; i++)
				if (fk.obj[i].addr == odsm_addr_of(oi->gaddr))
					return -ESTALE;
			return -EINVAL;
		}
		oi->size = oi->usable = o->size;
		oi->alloc_color = o->color;
		fk.st.infos++;
		return 0;
	}
	case ODSM_IOC_BORROW:
		return fk_borrow(arg);
	case ODSM_IOC_RETURN:
		return fk_return(arg);
	case ODSM_IOC_BORROW_MUT:
		return fk_borrow_mut(arg);
	case ODSM_IOC_WRITE_BACK: {
		struct odsm_write_back *w = arg;
		uint64_t old_g;

		ret = fk_owner_box(w->owner);
		if (ret)
			return ret;
		if (w->flags & ~ODSM_WB_FLAGS)
			return -EINVAL;
		if ((w->flags & ODSM_WB_IF_EMPTY) &&
		    ((odsm_box *)odsm_ptr(w->owner))->g)
			return -EEXIST;
		old_g = ((odsm_box *)odsm_ptr(w->owner))->g;
		memcpy(odsm_ptr(w->owner), &w->g, 16);
		if ((w->flags & ODSM_WB_FREE_OLD) && old_g &&
		    !fk_local(old_g) && odsm_addr_of(old_g) !=
		    odsm_addr_of(w->g)) {
			struct fk_obj *o = fk_object(old_g);

			if (o)
				o->live = false;	/* freed only now */
		}
		fk.last_wb[0] = w->owner;
		fk.last_wb[1] = w->g;
		fk.last_wb[2] = w->ext;
		fk.st.writebacks++;
		return 0;
	}
	case ODSM_IOC_FREE: {
		struct odsm_free *f = arg;
		struct fk_obj *o = fk_object(f->gaddr);

		if (!o)
			return -EINVAL;
		o->live = false;
		fk.st.frees++;
		fk.st.remote_frees += !fk_local(f->gaddr);
		return 0;
	}
	case ODSM_IOC_ALLOC: {
		struct odsm_alloc *a = arg;

		fk.last_alloc_flags = a->flags;
		if ((a->flags & ODSM_ALLOC_ON_NODE) && a->node > 1)
			return -EINVAL;
		a->gaddr = fk_new_obj_locked(a->flags & ODSM_ALLOC_ON_NODE ?
					     a->node : 0, a->size);
		a->usable = a->size;
		if (a->flags & ODSM_ALLOC_ZERO)
			memset(odsm_ptr(a->gaddr), 0, a->size);
		fk.st.allocs++;
		return 0;
	}
	case ODSM_IOC_MOVE: {
		struct odsm_move *mv = arg;
		struct fk_obj *o = fk_object(mv->gaddr);

		fk.move_calls++;
		if (!o || !fk_local(mv->gaddr))
			return -EINVAL;
		if (fk.fail_move)	/* a full partition: nothing moves */
			return -fk.fail_move;
		mv->new_gaddr = fk_new_obj_locked(0, o->size);
		memcpy(odsm_ptr(mv->new_gaddr), odsm_ptr(o->addr), o->size);
		o->live = false;
		return 0;
	}
	case ODSM_IOC_READ:
	case ODSM_IOC_WRITE: {
		struct odsm_rw *r = arg;

		int *fail = req == ODSM_IOC_READ ? &fk.fail_read :
						   &fk.fail_write;

		if (!odsm_in_heap(r->gaddr))
			return -EINVAL;
		if (*fail && fk.fail_skip) {
			fk.fail_skip--;
		} else if (*fail) {	/* nothing read or written */
			int err = *fail;

			*fail = 0;
			return err;
		}
		if (req == ODSM_IOC_READ)
			memcpy((void *)(uintptr_t)r->buf, odsm_ptr(r->gaddr), r->len);
		else
			memcpy(odsm_ptr(r->gaddr), (void *)(uintptr_t)r->buf, r->len);
		fk.st.reads++;
		return 0;
	}
	case ODSM_IOC_STATUS: {
		/* joined over tcp: node 0 (self) and node 1 (or nodes
		 * 1..fk.nodes-1), whose state the tests set (fk.peer_state;
		 * fk.node1_down: node 1 down whatever it is)
		 */
		struct odsm_status *st = arg;
		struct odsm_peer_info *p = (void *)(uintptr_t)st->peers;
		unsigned int i, n = fk.nodes ? fk.nodes : 2;

		fk.st.statuses++;
		for (i = 0; i < n && i < st->nr && p; i++) {
			memset(&p[i], 0, sizeof(p[i]));
			p[i].node_id = i;
			p[i].state = !i ? ODSM_PEER_SELF :
				     i == 1 && fk.node1_down ? ODSM_PEER_DOWN :
				     fk.peer_state;
			p[i].incarnation =
				(fk.peer_inc ? fk.peer_inc + i : 0) |
				(uint64_t)(fk.peer_inc_before ?
					   fk.peer_inc_before + i : 0) << 32;
		}
		st->nr = n;
		st->transport = ODSM_TRANSPORT_TCP;
		return 0;
	}
	case ODSM_IOC_ATOMIC: {
		/* a word of a live object, either partition; under the one
		 * lock, atomic against every other call
		 */
		struct odsm_atomic *x = arg;
		uint64_t a = odsm_addr_of(x->gaddr), *w;
		unsigned int i;

		if (!odsm_in_heap(x->gaddr) || a % 8 ||
		    (x->flags & ~ODSM_ATOMIC_F_NIC))
			return -EINVAL;
		for (i = 0; i < fk.nr_obj; i++)
			if (fk.obj[i].live && a >= fk.obj[i].addr &&
			    a + 8 <= fk.obj[i].addr + fk.obj[i].size)
				break;
		if (i == fk.nr_obj)
			return -EINVAL;
		w = odsm_ptr(x->gaddr);
		x->old = __atomic_load_n(w, __ATOMIC_SEQ_CST);
		if (x->op == ODSM_ATOMIC_FETCH_ADD)
			__atomic_fetch_add(w, x->operand, __ATOMIC_SEQ_CST);
		else if (x->op != ODSM_ATOMIC_CMP_SWAP)
			return -EINVAL;
		else if (x->old == x->compare)
			__atomic_store_n(w, x->operand, __ATOMIC_SEQ_CST);
		fk.st.atomics++;
		return 0;
	}
	case ODSM_IOC_DELEG_CALL:
		return fk.deleg_call ? fk.deleg_call(arg) : -ENOTTY;
	default:
		return -ENOTTY;
	}
}

int fake_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd != 1000) {
		errno = EBADF;
		return -1;
	}
	pthread_mutex_lock(&fk.lock);
	fk.st.calls++;
	ret = fk_ioctl_locked(req, arg);
	pthread_mutex_unlock(&fk.lock);
	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

static inline struct fk_stats fk_snap(void)
{
	struct fk_stats s;

	pthread_mutex_lock(&fk.lock);
	s = fk.st;
	pthread_mutex_unlock(&fk.lock);
	return s;
}

static inline unsigned int fk_refs(uint64_t key)
{
	struct fk_copy *c;
	unsigned int n;

	pthread_mutex_lock(&fk.lock);
	c = fk_copy_of(key);
	n = c ? c->refs : 0;
	pthread_mutex_unlock(&fk.lock);
	return n;
}

/*
 * Every call of the checking hook (linked with --wrap=odsm__check): a
 * program built without ODSM_CHECK must make none from its inline paths.
 */
static unsigned long fk_checks;
int __real_odsm__check(int event, const void *who, uint64_t g);
int __wrap_odsm__check(int event, const void *who, uint64_t g);

int __wrap_odsm__check(int event, const void *who, uint64_t g)
{
	__atomic_add_fetch(&fk_checks, 1, __ATOMIC_RELAXED);
	return __real_odsm__check(event, who, g);
}

#endif /* FAKE_ODSM_H */
