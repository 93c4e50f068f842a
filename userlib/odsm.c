// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm: the out-of-line parts — opening and mapping the heap, the
 * allocation ioctls, the slow paths of the inline borrows, and messages.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "odsm.h"

struct odsm_runtime odsm_rt = { .fd = -1 };

static int xioctl(unsigned long cmd, void *arg)
{
	if (odsm_rt.fd < 0)
		return -EBADF;
	return ioctl(odsm_rt.fd, cmd, arg) ? -errno : 0;
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
	close(odsm_rt.fd);
	odsm_rt.fd = -1;
	odsm_rt.local_lo = odsm_rt.local_hi = 0;
}

const char *odsm_strerror(int err)
{
	switch (-err) {
	case 0:
		return "success";
	case EINVAL:
		return "invalid argument: a bad size, alignment or flag, or an address that is not a live object of this node";
	case ENOMEM:
		return "out of memory: this node's partition has no room for the object";
	case EBUSY:
		return "busy: the heap is mapped or holds objects";
	case EEXIST:
		return "the heap's address range is already in use in this process";
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
	case EREMOTE:
		return "the object lives on another node; this build reaches only the local partition";
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

int odsm_set_config(const struct odsm_config *c)
{
	struct odsm_config copy = *c;
	int fd = odsm_rt.fd, ret = 0;

	if (fd < 0)
		fd = open(getenv("ODSM_DEVICE") ? getenv("ODSM_DEVICE") :
			  ODSM_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, ODSM_IOC_SET_CONFIG, &copy))
		ret = -errno;
	if (fd != odsm_rt.fd)
		close(fd);
	return ret;
}

/* The color is spent: move the object and start over at the new address. */
int odsm__bump_overflow(uint64_t *g)
{
	return odsm_move(g);
}

int odsm__remote(uint64_t cg)
{
	(void)cg;
	return -EREMOTE;
}

int odsm_box_new(odsm_box *b, size_t size, unsigned int flags)
{
	uint64_t cg;
	int ret = odsm_alloc(size, 0, flags, &cg);

	if (ret)
		return ret;
	b->g = cg;
	b->ext = 0;
	return 0;
}

int odsm_box_drop(odsm_box *b)
{
	int ret = odsm_free(b->g);

	if (!ret)
		b->g = b->ext = 0;
	return ret;
}
