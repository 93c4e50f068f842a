// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm: the out-of-line parts — opening and mapping the heap, the
 * allocation ioctls, the slow paths of the inline borrows, and messages.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_hits_int.h"

struct odsm_runtime odsm_rt = { .fd = -1 };

static int xioctl(unsigned long cmd, void *arg)
{
	if (odsm_rt.fd < 0)
		return -EBADF;
	return ioctl(odsm_rt.fd, cmd, arg) ? -errno : 0;
}

/*
 * A tag for this process's copy words, 1..0xffff and not the last one
 * (odsm_fini() closed the file its references belonged to).
 */
static uint64_t new_tag(uint64_t old)
{
	uint16_t t = 0;

	if (getrandom(&t, sizeof(t), GRND_NONBLOCK) != sizeof(t))
		t = (uint16_t)(getpid() * 2654435761u ^ (unsigned int)time(NULL));
	while (!t || t == old)
		t = (uint16_t)(t * 40503u + 1);
	return t;
}

static uint64_t last_tag;

/*
 * A forked child shares its parent's file and the references on it, but
 * not the parent's table of hits (odsm_hits.c): with the parent's tag, a
 * return of an inherited borrow would give back a reference the parent
 * still counts on (a copy then evicted under the parent's reader, or
 * under the child's own later borrow of it).  The child draws a tag of
 * its own: inherited copy words become foreign to it (never read through,
 * never returned; it borrows anew), and the parent's references stay the
 * parent's.
 */
static void odsm_atfork_child(void)
{
	if (odsm_rt.tag)
		odsm_rt.tag = last_tag = new_tag(odsm_rt.tag);
}

/* at load: a fork before odsm_init() finds nothing to do */
__attribute__((constructor)) static void odsm_atfork_register(void)
{
	pthread_atfork(NULL, NULL, odsm_atfork_child);
}

int odsm_init(void)
{
	const char *path = getenv("ODSM_DEVICE");
	struct odsm_info info;
	void *p;
	int fd, ret;

	if (odsm_rt.fd >= 0)
		return -EALREADY;
	fd = open(path ? path : ODSM_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, ODSM_IOC_INFO, &info)) {
		ret = -errno;
		goto err;
	}
	if (info.abi_version != ODSM_ABI_VERSION) {
		ret = -EPROTO;
		goto err;
	}
	p = mmap((void *)(uintptr_t)info.heap_base, info.heap_size,
		 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		goto err;
	}
	odsm_rt.fd = fd;
	odsm_rt.info = info;
	odsm_rt.local_lo = info.heap_base + (uint64_t)info.node_id * info.part_size;
	odsm_rt.local_hi = odsm_rt.local_lo + info.part_size;
	odsm_rt.tag = last_tag = new_tag(last_tag);
	/* without the page (an older module) every borrow asks the kernel */
	odsm__hits_init(fd);
	return 0;
err:
	close(fd);
	return ret;
}

void odsm_fini(void)
{
	if (odsm_rt.fd < 0)
		return;
	munmap((void *)(uintptr_t)odsm_rt.info.heap_base, odsm_rt.info.heap_size);
	odsm__hits_fini();
	close(odsm_rt.fd);
	odsm_rt.fd = -1;
	odsm_rt.local_lo = odsm_rt.local_hi = 0;
	odsm_rt.tag = 0;	/* the references went with the file */
}

const char *odsm_strerror(int err)
{
	switch (-err) {
	case 0:
		return "success";
	case EINVAL:
		return "invalid argument: a bad size, alignment, flag or node, or an address where no object starts (or a range not inside one partition's objects)";
	case ENOMEM:
		return "out of memory: this node's partition has no room for the object";
	case EBUSY:
		return "busy: the owner box is inside an object other nodes hold copies of (change it through a mutable borrow of that object: odsm_borrow_mut_field), or the heap is mapped or holds objects (reconfiguring), or the node already joined a cluster";
	case EEXIST:
		return "already there: the owner box already owns an object, or the heap's address range is in use in this process";
	case EALREADY:
		return "odsm_init() was already called";
	case EBADF:
		return "odsm_init() has not been called";
	case EPROTO:
		return "the odsm module speaks another ABI version than this library";
	case ENOENT:
		return "no /dev/odsm: is the odsm module loaded?";
	case EACCES:
		return "permission denied on /dev/odsm";
	case EPERM:
		return "operation not permitted: reconfiguring needs CAP_SYS_ADMIN";
	case ESTALE:
		return "stale address: the object was moved or freed since this colored address was read (read its owner box again)";
	case ENOTRECOVERABLE:
		return "borrow check: the borrow discipline was broken (see the message on stderr)";
	case EHOSTDOWN:
		return "the node that holds the object is down";
	case ETIMEDOUT:
		return "the node that holds the object did not answer in time";
	case EPROTONOSUPPORT:
		return "this module has no such transport";
	case EADDRINUSE:
		return "this node's cluster address (host:port) is already in use";
	case EADDRNOTAVAIL:
		return "this node's cluster address is not an address of this machine";
	case ENOKEY:
		return "no cluster key given: every node must join with the same key";
	default:
		return strerror(-err);
	}
}

int odsm_alloc(size_t size, size_t align, unsigned int flags, uint64_t *cg)
{
	struct odsm_alloc a = { .size = size, .align = (uint32_t)align,
				.flags = flags };
	int ret;

	if (align > UINT32_MAX)
		return -EINVAL;
	ret = xioctl(ODSM_IOC_ALLOC, &a);
	if (!ret)
		*cg = a.gaddr;
	return ret;
}

int odsm_free(uint64_t cg)
{
	struct odsm_free f = { .gaddr = cg };

	return xioctl(ODSM_IOC_FREE, &f);
}

int odsm_obj_info(uint64_t cg, struct odsm_obj_info *oi)
{
	memset(oi, 0, sizeof(*oi));
	oi->gaddr = cg;
	return xioctl(ODSM_IOC_OBJ_INFO, oi);
}

int odsm_move(uint64_t *cg)
{
	struct odsm_move m = { .gaddr = *cg };
	int ret = xioctl(ODSM_IOC_MOVE, &m);

	if (!ret)
		*cg = m.new_gaddr;
	return ret;
}

/*
 * An ioctl on odsm_rt.fd when odsm_init() opened it, else on a descriptor
 * opened for this one call: for tools that do not map the heap.
 */
static int dev_ioctl(unsigned long cmd, void *arg)
{
	const char *path = getenv("ODSM_DEVICE");
	int fd = odsm_rt.fd, ret = 0;

	if (fd < 0)
		fd = open(path ? path : ODSM_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the ioctl's own answer when it succeeds (ODSM_IOC_WAKE's count) */
	ret = ioctl(fd, cmd, arg);
	if (ret < 0)
		ret = -errno;
	if (fd != odsm_rt.fd)
		close(fd);
	return ret;
}

int odsm_set_config(const struct odsm_config *c)
{
	struct odsm_config copy = *c;

	return dev_ioctl(ODSM_IOC_SET_CONFIG, &copy);
}

int odsm_join(unsigned int transport, const struct odsm_node_addr *nodes,
	      unsigned int nr, const void *key, unsigned int key_len,
	      unsigned int heartbeat_ms, unsigned int timeout_ms)
{
	struct odsm_join j = {
		.transport = transport,
		.nr_nodes = nr,
		.nodes = (uint64_t)(uintptr_t)nodes,
		.heartbeat_ms = heartbeat_ms,
		.timeout_ms = timeout_ms,
		.key = (uint64_t)(uintptr_t)key,
		.key_len = key_len,
	};

	return dev_ioctl(ODSM_IOC_JOIN, &j);
}

int odsm_leave(void)
{
	return dev_ioctl(ODSM_IOC_LEAVE, NULL);
}

int odsm_status(struct odsm_peer_info *out, unsigned int *nr,
		unsigned int *transport)
{
	struct odsm_status st = { .nr = out ? *nr : 0,
				  .peers = (uint64_t)(uintptr_t)out };
	int ret = dev_ioctl(ODSM_IOC_STATUS, &st);

	if (ret)
		return ret;
	*nr = st.nr;
	if (transport)
		*transport = st.transport;
	return 0;
}

int odsm_read(uint64_t gaddr, void *buf, size_t len)
{
	struct odsm_rw r = { .gaddr = gaddr, .buf = (uint64_t)(uintptr_t)buf,
			     .len = len };

	return dev_ioctl(ODSM_IOC_READ, &r);
}

int odsm_write(uint64_t gaddr, const void *buf, size_t len)
{
	struct odsm_rw r = { .gaddr = gaddr, .buf = (uint64_t)(uintptr_t)buf,
			     .len = len };

	return dev_ioctl(ODSM_IOC_WRITE, &r);
}

int odsm_word_wait(uint64_t gaddr, unsigned int size, uint64_t expect,
		   uint64_t timeout_ns)
{
	struct odsm_wait w = { .gaddr = gaddr, .expect = expect,
			       .timeout_ns = timeout_ns, .size = size };

	return dev_ioctl(ODSM_IOC_WAIT, &w);
}

int odsm_word_wake(uint64_t gaddr, unsigned int nr)
{
	struct odsm_wake w = { .gaddr = gaddr, .nr = nr };

	return dev_ioctl(ODSM_IOC_WAKE, &w);
}

static int atomic_op(uint64_t gaddr, uint32_t op, uint32_t flags,
		     uint64_t operand, uint64_t compare, uint64_t *old)
{
	struct odsm_atomic a = { .gaddr = gaddr, .op = op, .flags = flags,
				 .operand = operand, .compare = compare };
	int ret = dev_ioctl(ODSM_IOC_ATOMIC, &a);

	if (!ret && old)
		*old = a.old;
	return ret;
}

int odsm_fetch_add(uint64_t gaddr, uint64_t add, uint64_t *old)
{
	return atomic_op(gaddr, ODSM_ATOMIC_FETCH_ADD, 0, add, 0, old);
}

int odsm_cmp_swap(uint64_t gaddr, uint64_t expect, uint64_t desired,
		  uint64_t *old)
{
	return atomic_op(gaddr, ODSM_ATOMIC_CMP_SWAP, 0, desired, expect, old);
}

int odsm_fetch_add_nic(uint64_t gaddr, uint64_t add, uint64_t *old)
{
	return atomic_op(gaddr, ODSM_ATOMIC_FETCH_ADD, ODSM_ATOMIC_F_NIC, add,
			 0, old);
}

int odsm_cmp_swap_nic(uint64_t gaddr, uint64_t expect, uint64_t desired,
		      uint64_t *old)
{
	return atomic_op(gaddr, ODSM_ATOMIC_CMP_SWAP, ODSM_ATOMIC_F_NIC,
			 desired, expect, old);
}

static int alloc_placed(unsigned int node, size_t size, size_t align,
			unsigned int flags, uint64_t *cg)
{
	struct odsm_alloc a = { .size = size, .align = (uint32_t)align,
				.flags = flags, .node = node };
	int ret;

	if (align > UINT32_MAX)
		return -EINVAL;
	ret = dev_ioctl(ODSM_IOC_ALLOC, &a);
	if (!ret)
		*cg = a.gaddr;
	return ret;
}

int odsm_alloc_on(unsigned int node, size_t size, size_t align,
		  unsigned int flags, uint64_t *cg)
{
	return alloc_placed(node, size, align, flags | ODSM_ALLOC_ON_NODE, cg);
}

int odsm_alloc_anywhere(size_t size, size_t align, unsigned int flags,
			uint64_t *cg)
{
	return alloc_placed(0, size, align, flags | ODSM_ALLOC_ANYWHERE, cg);
}

/* The color is spent: move the object and start over at the new address. */
int odsm__bump_overflow(uint64_t *g)
{
	return odsm_move(g);
}

/* ---- the remote cases of the inline borrows -------------------------- */

int odsm__ref_fetch(odsm_ref *r)
{
	struct odsm_borrow b = { .gaddr = r->g };
	uint64_t copy, epoch;
	int ret;

	if (!odsm_in_heap(r->g))
		return -EINVAL;
	/* a copy this process references already: no system call */
	if (odsm__hit_get(r->g, &copy)) {
		r->ext = odsm__copy_word(copy) | ODSM_EXT_HIT;
		return 0;
	}
	/* before the BORROW: a forget after it makes the record unusable */
	epoch = odsm__hits_epoch();
	ret = xioctl(ODSM_IOC_BORROW, &b);
	if (ret)
		return ret;
	r->ext = odsm__copy_word(b.addr);
	/* a local object (a race with a move here) is not a copy */
	if (b.result != ODSM_BORROWED_LOCAL &&
	    odsm__hit_record(r->g, b.addr, epoch))
		r->ext |= ODSM_EXT_HIT;
	return 0;
}

int odsm__box_fetch(odsm_box *b)
{
	struct odsm_borrow br = { .gaddr = b->g };
	int ret;

	if (!odsm_in_heap(b->g))
		return -EINVAL;
	ret = xioctl(ODSM_IOC_BORROW, &br);
	if (ret)
		return ret;
	b->ext = odsm__copy_word(br.addr) | (b->ext & ODSM_EXT_U);
	return 0;
}

/*
 * Move the remote object at *g here.  copy_ext, when not NULL, is the ext
 * word of an owner box that may hold a cached copy of exactly *g: the
 * kernel may take it over (ODSM_MUT_HELD_REF); it is consumed either way.
 * The kernel consumes a held reference even when the move then fails, so
 * the copy word goes on error too: a word that outlived its reference
 * would be read later (Algorithm 7) while the slot serves someone else.
 * After a move any copy word there is of an older version, another
 * process's included: it goes too.
 */
int odsm__move_here(uint64_t *g, uint64_t *copy_ext)
{
	struct odsm_borrow_mut m = { .gaddr = *g };
	bool held = copy_ext && odsm__copy_of(*copy_ext);
	int ret;

	if (!odsm_in_heap(*g))
		return -EINVAL;
	odsm__hit_release(*g);
	if (held) {
		/* that copy, not any of *g's (a home's former incarnation's) */
		m.flags = ODSM_MUT_HELD_REF;
		m.addr = odsm__copy_of(*copy_ext);
	}
	ret = xioctl(ODSM_IOC_BORROW_MUT, &m);
	if (copy_ext && (held || !ret))
		*copy_ext &= ODSM_EXT_U;
	if (ret)
		return ret;
	*g = m.new_gaddr;
	return 0;
}

/*
 * Drop the reference *ext holds on the cached copy of g, if this process
 * holds it (a copy word of another process is only forgotten).
 */
int odsm__drop_copy(uint64_t g, uint64_t *ext)
{
	struct odsm_borrow b = { .gaddr = g, .addr = odsm__copy_of(*ext) };
	int ret = 0;

	if (b.addr)
		ret = xioctl(ODSM_IOC_RETURN, &b);
	*ext &= ODSM_EXT_U;
	return ret;
}

/* The remote half of odsm_return(). */
int odsm__drop_ref(odsm_ref *r)
{
	uint64_t c = odsm__copy_of(r->ext);

	if (c && (r->ext & ODSM_EXT_HIT)) {
		/* (a child made by fork() has a tag of its own: an
		 * inherited word is foreign to it and never comes here)
		 */
		odsm__hit_return(r->g, c);
		r->ext = 0;
		return 0;
	}
	return odsm__drop_copy(r->g, &r->ext);
}

int odsm__move_here_kept(uint64_t *g)
{
	struct odsm_borrow_mut m = { .gaddr = *g,
				     .flags = ODSM_MUT_KEEP_ORIGINAL };
	int ret;

	if (!odsm_in_heap(*g))
		return -EINVAL;
	odsm__hit_release(*g);
	ret = xioctl(ODSM_IOC_BORROW_MUT, &m);
	if (ret)
		return ret;
	*g = m.new_gaddr;
	return 0;
}

int odsm__write_back_moved(uint64_t owner, uint64_t g)
{
	struct odsm_write_back w = { .owner = owner, .g = g,
				     .flags = ODSM_WB_FREE_OLD };

	return xioctl(ODSM_IOC_WRITE_BACK, &w);
}

int odsm__write_back(uint64_t owner, uint64_t g, uint64_t ext)
{
	struct odsm_write_back w = { .owner = owner, .g = g, .ext = ext };

	return xioctl(ODSM_IOC_WRITE_BACK, &w);
}

int odsm__read_owner(uint64_t owner, uint64_t *g)
{
	struct odsm_write_back w = { .owner = owner };
	int ret = xioctl(ODSM_IOC_READ_OWNER, &w);

	if (!ret)
		*g = w.g;
	return ret;
}

int odsm_box_new_on(odsm_box *b, unsigned int node, size_t size,
		    unsigned int flags, const void *init)
{
	uint64_t cg;
	int ret;

	if (flags & ~ODSM_ALLOC_ZERO)
		return -EINVAL;
	ret = alloc_placed(node, size, 0, flags | ODSM_ALLOC_ON_NODE, &cg);
	if (ret)
		return ret;
	if (init) {
		ret = odsm_write(cg, init, size);
		if (ret) {
			odsm_free(cg);
			return ret;
		}
	}
	b->g = cg;
	b->ext = 0;
	return 0;
}

int odsm_box_store_at(uint64_t owner, odsm_box *src)
{
	struct odsm_write_back w = { .owner = owner };
	int ret;

	if (owner % 16 || !odsm_in_heap(owner) || !odsm_in_heap(src->g))
		return -EINVAL;
	ret = odsm__check(ODSM_CHK_OWNER_MOVE, src, src->g);
	if (ret)
		return ret;
	/* the home stores it only into an empty box, in one step */
	w.g = src->g;
	w.ext = 0;
	w.flags = ODSM_WB_IF_EMPTY;
	ret = xioctl(ODSM_IOC_WRITE_BACK, &w);
	if (ret)
		return ret;
	if (odsm__copy_of(src->ext))
		odsm__drop_copy(src->g, &src->ext);
	src->g = src->ext = 0;
	return 0;
}

int odsm_drop_copies(uint64_t *dropped, uint64_t *kept)
{
	struct odsm_drop_copies d = { 0 };
	int ret;

	/* this process's idle references first: they are its to give */
	if (odsm_rt.fd >= 0)
		odsm_hits_flush();
	ret = dev_ioctl(ODSM_IOC_DROP_COPIES, &d);
	if (ret)
		return ret;
	if (dropped)
		*dropped = d.dropped;
	if (kept)
		*kept = d.kept;
	return 0;
}

int odsm_prefetch(const uint64_t *g, unsigned int n)
{
	struct odsm_prefetch pf = {
		.gaddrs = (uint64_t)(uintptr_t)g,
		.n = n,
	};
	int ret = dev_ioctl(ODSM_IOC_PREFETCH, &pf);

	return ret ? ret : (int)pf.fetched;
}

int odsm_box_new(odsm_box *b, size_t size, unsigned int flags)
{
	unsigned int aflags = flags & ODSM_ALLOC_ZERO;
	uint64_t cg;
	int ret;

	if ((flags & ~(ODSM_ALLOC_ZERO | ODSM_ALLOC_ANYWHERE | ODSM_BOX_HERE)) ||
	    ((flags & ODSM_BOX_HERE) && (flags & ODSM_ALLOC_ANYWHERE)))
		return -EINVAL;
	if (!(flags & ODSM_BOX_HERE))
		aflags |= ODSM_ALLOC_ANYWHERE;
	ret = odsm_alloc(size, 0, aflags, &cg);
	if (ret)
		return ret;
	b->g = cg;
	b->ext = 0;
	return 0;
}

int odsm_box_drop(odsm_box *b)
{
	int ret;

	/*
	 * Checked in every program: only a program built with ODSM_CHECK
	 * records borrows, and next to the FREE ioctl the lookup is free.
	 */
	ret = odsm__check(ODSM_CHK_OWNER_DROP, b, b->g);
	if (ret)
		return ret;
	/* this node's copy goes first: the object is about to */
	if (odsm__copy_of(b->ext))
		odsm__drop_copy(b->g, &b->ext);
	ret = odsm_free(b->g);
	if (!ret)
		b->g = b->ext = 0;
	return ret;
}
