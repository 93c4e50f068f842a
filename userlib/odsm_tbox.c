// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm tied allocation (odsm_tbox.h): groups are ordinary heap
 * objects behind ordinary owner boxes, so the kernel's coherence rules
 * apply to them unchanged -- one colored address, one cached copy per
 * version, one move per mutable borrow -- and the children ride along
 * as bytes.  Nothing here enters the kernel but the group's own borrow;
 * a child is found by arithmetic on the bytes that borrow holds.
 */
#include <errno.h>
#include <string.h>
#include "odsm.h"
#include "odsm_tbox_int.h"

int odsm_tgroup_new_on(odsm_box *grp, unsigned int node, size_t parent_size,
		       size_t arena_size)
{
	struct tg_hdr h;
	size_t size;
	int ret;

	if (!grp)
		return -EINVAL;
	size = odsm__tg_size(parent_size, arena_size);
	if (!size)
		return -E2BIG;
	ret = odsm_box_new_on(grp, node, size, ODSM_ALLOC_ZERO, NULL);
	if (ret)
		return ret;
	/*
	 * The id is the first colored address: the allocator never hands
	 * it out again, so no two groups share one.  A raw write is right
	 * here: nobody has the address yet.
	 */
	odsm__tg_init(&h, (uint32_t)size, grp->g, parent_size);
	ret = odsm_write(grp->g, &h, sizeof(h));
	if (ret) {
		odsm_free(grp->g);
		grp->g = 0;
		grp->ext = 0;
	}
	return ret;
}

int odsm_tgroup_new(odsm_box *grp, size_t parent_size, size_t arena_size)
{
	if (!odsm_rt.tag)
		return -EBADF;	/* before odsm_init(): no node id yet */
	return odsm_tgroup_new_on(grp, odsm_rt.info.node_id, parent_size,
				  arena_size);
}

int odsm_tgroup_drop(odsm_box *grp)
{
	uint32_t dead = TG_DEAD, was;
	struct odsm_obj_info oi;
	char *magic;
	int ret;

	if (!grp || !grp->g)
		return -EINVAL;
	if (!odsm_is_local(grp->g))
		return odsm_box_drop(grp);	/* the home refuses a stale one */
	/*
	 * A local group reads as freed from now on: a borrow through a stale
	 * box of it, which reads the bytes in place (the fast path checks
	 * no color), is -ESTALE while the slot keeps the mark (its page
	 * may go, or the slot be reused: then nothing is promised, as for
	 * any local object).  Only for the group itself, and only if it
	 * goes: a stale box's address may hold another object now, whose
	 * bytes are not ours to mark, and a drop refused (a checked borrow
	 * still out) leaves the group as it was.
	 */
	ret = odsm_obj_info(grp->g, &oi);
	if (ret)
		return ret;
	if (odsm_color_of(grp->g) < oi.alloc_color)
		return -ESTALE;
	magic = (char *)odsm_ptr(grp->g) + offsetof(struct tg_hdr, magic);
	memcpy(&was, magic, sizeof(was));
	memcpy(magic, &dead, sizeof(dead));
	ret = odsm_box_drop(grp);
	if (ret)
		memcpy(magic, &was, sizeof(was));
	return ret;
}

int odsm_tbox_new(odsm_mut *gm, size_t size, odsm_tbox *c, void **p)
{
	uint32_t off;
	void *g;
	int ret;

	if (!gm || !c || !p || !gm->g)
		return -EINVAL;
	*p = NULL;
	ret = odsm_mut_get(gm, &g);
	if (!ret)
		ret = odsm__tg_check(g);
	if (!ret)
		ret = odsm__tg_carve(g, size, &off);
	if (ret)
		return ret;
	c->gid = ((const struct tg_hdr *)g)->gid;
	c->off = off;
	c->size = (uint32_t)size;
	*p = (char *)g + off;
	return 0;
}

int odsm_tbox_get(odsm_ref *gr, const odsm_tbox *c, const void **p)
{
	const void *g;
	int ret;

	if (!gr || !c || !p || !gr->g)
		return -EINVAL;
	*p = NULL;
	/* the group's borrow holds its bytes: no lookup, no system call */
	ret = odsm_ref_get(gr, &g);
	if (!ret)
		ret = odsm__tg_check(g);
	if (!ret)
		ret = odsm__tg_resolve(g, c);
	if (!ret)
		*p = (const char *)g + c->off;
	return ret;
}

int odsm_tbox_get_mut(odsm_mut *gm, const odsm_tbox *c, void **p)
{
	void *g;
	int ret;

	if (!gm || !c || !p || !gm->g)
		return -EINVAL;
	*p = NULL;
	ret = odsm_mut_get(gm, &g);
	if (!ret)
		ret = odsm__tg_check(g);
	if (!ret)
		ret = odsm__tg_resolve(g, c);
	if (!ret)
		*p = (char *)g + c->off;
	return ret;
}

int odsm_tgroup_stat(odsm_ref *gr, uint32_t *children, uint32_t *used,
		     uint32_t *size)
{
	const struct tg_hdr *h;
	const void *g;
	int ret;

	if (!gr || !gr->g)
		return -EINVAL;
	ret = odsm_ref_get(gr, &g);
	if (!ret)
		ret = odsm__tg_check(g);
	if (ret)
		return ret;
	h = g;
	if (children)
		*children = h->nchild;
	if (used)
		*used = h->used;
	if (size)
		*size = h->size;
	return 0;
}

int odsm_tgroup_grow(odsm_box *grp, size_t arena_size)
{
	const struct tg_hdr *h;
	odsm_box nb = { 0 };
	size_t size;
	void *src, *dst;
	odsm_mut m;
	int ret;

	if (!grp || !grp->g)
		return -EINVAL;
	/* the group comes here first, so the copy below is a local one */
	ret = odsm_tgroup_borrow_mut(grp, &m, &src);
	if (ret)
		return ret;
	/* here now: its header is at its (local) address */
	(void)src;
	h = odsm_ptr(m.g);
	size = odsm__tg_size(h->parent, arena_size);
	ret = size ? 0 : -E2BIG;
	if (!ret && size < h->size)
		ret = -EINVAL;		/* it would shrink */
	if (!ret && size == h->size)
		goto out;		/* room enough already */
	if (!ret)
		ret = odsm_box_new(&nb, size, ODSM_ALLOC_ZERO | ODSM_BOX_HERE);
	if (!ret) {
		/* raw, like odsm_box_new_on(): nobody has its address yet */
		dst = odsm_ptr(nb.g);
		ret = odsm__tg_grow(dst, (uint32_t)size, h);
	}
	if (ret) {
		if (nb.g)
			odsm_box_drop(&nb);
		goto out;
	}
	odsm_return_mut(&m);
	ret = odsm_tgroup_drop(grp);
	if (ret) {
		/* the old one stays the group; the copy goes */
		odsm_box_drop(&nb);
		return ret;
	}
	*grp = nb;
	return 0;
out:
	odsm_return_mut(&m);
	return ret;
}
