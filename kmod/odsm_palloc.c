// SPDX-License-Identifier: GPL-2.0
/*
 * Partition allocator bookkeeping; see odsm_palloc.h for the model.
 */
#include "odsm_palloc.h"
#include "odsm_addr.h"

#define NO_BLOCK	(-1)

static inline bool bit_test(const unsigned long *map, u32 i)
{
	return map[i / BITS_PER_LONG] & (1UL << (i % BITS_PER_LONG));
}

static inline void bit_set(unsigned long *map, u32 i)
{
	map[i / BITS_PER_LONG] |= 1UL << (i % BITS_PER_LONG);
}

static inline void bit_clear(unsigned long *map, u32 i)
{
	map[i / BITS_PER_LONG] &= ~(1UL << (i % BITS_PER_LONG));
}

static inline u32 longs_for(u32 bits)
{
	return (bits + BITS_PER_LONG - 1) / BITS_PER_LONG;
}

int odsm_palloc_init(struct odsm_palloc *pa, u64 base, u64 size)
{
	u32 i;

	if (size == 0 || size % ODSM_BLOCK_SIZE || base % ODSM_BLOCK_SIZE)
		return -EINVAL;
	memset(pa, 0, sizeof(*pa));
	pa->base = base;
	pa->size = size;
	pa->nr_blocks = (u32)(size >> ODSM_BLOCK_SHIFT);
	pa->free_blocks = pa->nr_blocks;
	pa->blocks = odsm_zalloc_array(pa->nr_blocks, sizeof(*pa->blocks));
	if (!pa->blocks)
		return -ENOMEM;
	for (i = 0; i < ODSM_NR_CLASSES; i++) {
		pa->partial[i] = NO_BLOCK;
		pa->emptied[i] = NO_BLOCK;
	}
	return 0;
}

void odsm_palloc_destroy(struct odsm_palloc *pa)
{
	u32 i;

	if (!pa->blocks)
		return;
	for (i = 0; i < pa->nr_blocks; i++)
		if (pa->blocks[i].kind == ODSM_BLK_SLAB ||
		    pa->blocks[i].kind == ODSM_BLK_FREE)
			odsm_free_array(pa->blocks[i].slab);
	odsm_free_array(pa->blocks);
	pa->blocks = NULL;
}

u64 odsm_palloc_max_alloc(const struct odsm_palloc *pa)
{
	return pa->size;
}

static inline u64 block_addr(const struct odsm_palloc *pa, u32 b)
{
	return pa->base + ((u64)b << ODSM_BLOCK_SHIFT);
}

/* ---- partial lists -------------------------------------------------- */

static void partial_push(struct odsm_palloc *pa, u32 b)
{
	struct odsm_block *blk = &pa->blocks[b];
	s32 head = pa->partial[blk->cls];

	blk->prev = NO_BLOCK;
	blk->next = head;
	if (head != NO_BLOCK)
		pa->blocks[head].prev = (s32)b;
	pa->partial[blk->cls] = (s32)b;
}

static void partial_remove(struct odsm_palloc *pa, u32 b)
{
	struct odsm_block *blk = &pa->blocks[b];

	if (blk->prev != NO_BLOCK)
		pa->blocks[blk->prev].next = blk->next;
	else
		pa->partial[blk->cls] = blk->next;
	if (blk->next != NO_BLOCK)
		pa->blocks[blk->next].prev = blk->prev;
	blk->prev = NO_BLOCK;
	blk->next = NO_BLOCK;
}

/* ---- block runs ------------------------------------------------------ */

/* Next-fit search for nr contiguous free blocks; returns the first or -1. */
static s64 find_run(struct odsm_palloc *pa, u32 nr)
{
	u32 start = pa->rover, scanned = 0, run = 0, first = 0, i;

	if (nr > pa->free_blocks)
		return -1;
	for (i = start; scanned < pa->nr_blocks + nr; scanned++) {
		if (i == pa->nr_blocks) {	/* wrap: a run never spans the end */
			i = 0;
			run = 0;
		}
		if (pa->blocks[i].kind == ODSM_BLK_FREE) {
			if (run++ == 0)
				first = i;
			if (run == nr) {
				pa->rover = (first + nr) % pa->nr_blocks;
				return first;
			}
		} else {
			run = 0;
		}
		i++;
	}
	return -1;
}

/* ---- slabs ----------------------------------------------------------- */

static struct odsm_slab *slab_new(u32 nr_slots, u32 floor)
{
	u32 words = longs_for(nr_slots);
	size_t gen_bytes = ((size_t)nr_slots * sizeof(u16) + sizeof(long) - 1) &
			   ~(sizeof(long) - 1);
	size_t bytes = sizeof(struct odsm_slab) + gen_bytes +
		       3 * words * sizeof(long);
	struct odsm_slab *s = odsm_zalloc_array(1, bytes);
	u32 i;

	if (!s)
		return NULL;
	s->nr_slots = nr_slots;
	s->live = (unsigned long *)((char *)s->gen + gen_bytes);
	s->retired = s->live + words;
	s->copied = s->retired + words;
	for (i = 0; i < nr_slots; i++)
		s->gen[i] = (u16)floor;
	return s;
}

/*
 * A free block may keep the slab it last was (its history): the next color
 * of every slot.  Fold it into the block's floor and drop it, when the block
 * becomes something else than a slab of that class.
 */
static void history_consume(struct odsm_block *blk)
{
	struct odsm_slab *h = blk->slab;
	u32 i;

	if (!h)
		return;
	for (i = 0; i < h->nr_slots; i++)
		blk->floor = odsm_max_u32(blk->floor, h->gen[i]);
	odsm_free_array(h);
	blk->slab = NULL;
}

static int slab_alloc(struct odsm_palloc *pa, int cls, u64 *cgaddr)
{
	struct odsm_block *blk;
	struct odsm_slab *s;
	s32 b = pa->partial[cls];
	u32 slot, i;

	if (b == NO_BLOCK) {
		s64 nb = pa->emptied[cls];

		/* the block this class last left keeps its per-slot colors */
		if (nb == NO_BLOCK || pa->blocks[nb].kind != ODSM_BLK_FREE ||
		    !pa->blocks[nb].slab || pa->blocks[nb].cls != cls)
			nb = find_run(pa, 1);
		if (nb < 0)
			return -ENOMEM;
		b = (s32)nb;
		blk = &pa->blocks[b];
		if (blk->slab && blk->cls == cls) {
			/* same class again: every slot keeps its own colors */
			s = blk->slab;
		} else {
			history_consume(blk);
			s = slab_new(odsm_class_slots(cls), blk->floor);
			if (!s)
				return -ENOMEM;
		}
		blk->kind = ODSM_BLK_SLAB;
		blk->cls = (u8)cls;
		blk->slab = s;
		pa->free_blocks--;
		partial_push(pa, (u32)b);
	}
	blk = &pa->blocks[b];
	s = blk->slab;
	for (i = 0; i < s->nr_slots; i++) {
		slot = (s->hint + i) % s->nr_slots;
		if (!bit_test(s->live, slot))
			break;
	}
	/* a slab on the partial list has a free slot */
	if (i == s->nr_slots)
		return -ENOMEM;
	bit_set(s->live, slot);
	bit_clear(s->copied, slot);
	s->used++;
	s->hint = (slot + 1) % s->nr_slots;
	if (s->used == s->nr_slots)
		partial_remove(pa, (u32)b);
	*cgaddr = odsm_with_color(block_addr(pa, (u32)b) +
				  (u64)slot * odsm_class_size[cls], s->gen[slot]);
	return 0;
}

/* ---- the interface -------------------------------------------------- */

int odsm_palloc_alloc(struct odsm_palloc *pa, u64 size, u32 align,
		      u64 *cgaddr, u64 *usable)
{
	struct odsm_block *blk;
	u32 nr, i, color = 0;
	s64 first;
	int cls, ret;

	if (size == 0 || size > pa->size)
		return -EINVAL;
	if (align && (!is_power_of_2(align) || align > ODSM_MAX_ALIGN))
		return -EINVAL;

	cls = odsm_size_to_class(size, align);
	if (cls >= 0) {
		ret = slab_alloc(pa, cls, cgaddr);
		if (ret)
			return ret;
		*usable = odsm_class_size[cls];
		pa->objects++;
		pa->bytes += *usable;
		return 0;
	}

	nr = (u32)((size + ODSM_BLOCK_SIZE - 1) >> ODSM_BLOCK_SHIFT);
	first = find_run(pa, nr);
	if (first < 0)
		return -ENOMEM;
	/* the object starts above every color any of its blocks had */
	for (i = 0; i < nr; i++) {
		history_consume(&pa->blocks[first + i]);
		color = odsm_max_u32(color, pa->blocks[first + i].floor);
	}
	blk = &pa->blocks[first];
	blk->kind = ODSM_BLK_HEAD;
	blk->nr = nr;
	blk->size = size;
	blk->color = (u16)color;
	blk->copied = 0;
	for (i = 1; i < nr; i++) {
		pa->blocks[first + i].kind = ODSM_BLK_TAIL;
		pa->blocks[first + i].nr = i;	/* back to the head */
	}
	pa->free_blocks -= nr;
	*usable = (u64)nr << ODSM_BLOCK_SHIFT;
	*cgaddr = odsm_with_color(block_addr(pa, (u32)first), (u16)color);
	pa->objects++;
	pa->bytes += *usable;
	return 0;
}

/* Block index of an uncolored in-partition address, or -1. */
static s64 block_of(const struct odsm_palloc *pa, u64 addr)
{
	if (addr < pa->base || addr - pa->base >= pa->size)
		return -1;
	return (s64)((addr - pa->base) >> ODSM_BLOCK_SHIFT);
}

static int slab_free(struct odsm_palloc *pa, u32 b, u64 off, u16 color,
		     struct odsm_release *rel)
{
	struct odsm_block *blk = &pa->blocks[b];
	struct odsm_slab *s = blk->slab;
	u32 cs = odsm_class_size[blk->cls], slot;

	if (off % cs)
		return -EINVAL;
	slot = (u32)(off / cs);
	if (slot >= s->nr_slots || !bit_test(s->live, slot) ||
	    bit_test(s->retired, slot) || color < s->gen[slot])
		return -EINVAL;

	pa->objects--;
	pa->bytes -= cs;
	bit_clear(s->copied, slot);
	if (color == ODSM_COLOR_MAX) {
		/* every color used at this address: never reuse it (the slot
		 * stays counted in used, so the slab is never freed either)
		 */
		bit_set(s->retired, slot);
		pa->slots_retired++;
		return 0;
	}
	if (s->used == s->nr_slots)
		partial_push(pa, b);
	s->gen[slot] = color + 1;
	bit_clear(s->live, slot);
	s->used--;
	if (s->used)
		return 0;

	/* empty slab: the block is free, and keeps the slab as its history
	 * so that a slab of the same class there goes on per slot
	 */
	partial_remove(pa, b);
	s->hint = 0;
	blk->kind = ODSM_BLK_FREE;
	pa->emptied[blk->cls] = (s32)b;
	pa->free_blocks++;
	rel->first_block = b;
	rel->nr_blocks = 1;
	return 0;
}

int odsm_palloc_free(struct odsm_palloc *pa, u64 cgaddr,
		     struct odsm_release *rel)
{
	u64 addr = odsm_clear_color(cgaddr);
	u16 color = odsm_color(cgaddr);
	struct odsm_block *blk;
	s64 b = block_of(pa, addr);
	u32 i, nr;

	rel->nr_blocks = 0;
	if (b < 0)
		return -EINVAL;
	blk = &pa->blocks[b];
	if (blk->kind == ODSM_BLK_SLAB)
		return slab_free(pa, (u32)b, addr - block_addr(pa, (u32)b),
				 color, rel);
	if (blk->kind != ODSM_BLK_HEAD || addr != block_addr(pa, (u32)b) ||
	    color < blk->color)
		return -EINVAL;

	nr = blk->nr;
	pa->objects--;
	pa->bytes -= (u64)nr << ODSM_BLOCK_SHIFT;
	for (i = 0; i < nr; i++) {
		struct odsm_block *t = &pa->blocks[b + i];

		t->nr = 0;
		t->size = 0;
		t->color = 0;
		t->copied = 0;
		if (color == ODSM_COLOR_MAX) {
			t->kind = ODSM_BLK_RETIRED;
			t->floor = ODSM_COLOR_RETIRED;
			pa->blocks_retired++;
		} else {
			t->kind = ODSM_BLK_FREE;
			t->floor = odsm_max_u32(t->floor, (u32)color + 1);
			pa->free_blocks++;
		}
	}
	rel->first_block = (u32)b;
	rel->nr_blocks = nr;
	return 0;
}

/*
 * The slot of the slab (or slab history) of block b that addr falls in;
 * *rem: addr's offset into that slot (0 at its start).
 */
static u32 slot_of(const struct odsm_palloc *pa, u32 b, u64 addr, u64 *rem)
{
	u32 cs = odsm_class_size[pa->blocks[b].cls];
	u64 off = addr - block_addr(pa, b);

	*rem = off % cs;
	return (u32)(off / cs);
}

int odsm_palloc_lookup(const struct odsm_palloc *pa, u64 cgaddr,
		       struct odsm_objinfo *oi)
{
	u64 addr = odsm_clear_color(cgaddr), rem;
	const struct odsm_block *blk;
	s64 b = block_of(pa, addr);

	if (b < 0)
		return -EINVAL;
	blk = &pa->blocks[b];
	if (blk->kind == ODSM_BLK_SLAB) {
		const struct odsm_slab *s = blk->slab;
		u32 cs = odsm_class_size[blk->cls];
		u32 slot = slot_of(pa, (u32)b, addr, &rem);

		if (rem || slot >= s->nr_slots ||
		    !bit_test(s->live, slot) || bit_test(s->retired, slot))
			return -EINVAL;
		oi->addr = addr;
		oi->size = cs;
		oi->usable = cs;
		oi->color = s->gen[slot];
		oi->copied = bit_test(s->copied, slot);
		return 0;
	}
	if (blk->kind != ODSM_BLK_HEAD || addr != block_addr(pa, (u32)b))
		return -EINVAL;
	oi->addr = addr;
	oi->size = blk->size;
	oi->usable = (u64)blk->nr << ODSM_BLOCK_SHIFT;
	oi->color = blk->color;
	oi->copied = blk->copied;
	return 0;
}

int odsm_palloc_containing(const struct odsm_palloc *pa, u64 addr,
			   struct odsm_objinfo *oi)
{
	s64 b = block_of(pa, addr);
	u64 rem;

	if (b < 0)
		return -EINVAL;
	if (pa->blocks[b].kind == ODSM_BLK_SLAB) {
		slot_of(pa, (u32)b, addr, &rem);
		return odsm_palloc_lookup(pa, addr - rem, oi);
	}
	/* a tail knows how far back its head is (no walk under the lock) */
	if (pa->blocks[b].kind == ODSM_BLK_TAIL) {
		if (pa->blocks[b].nr > b)
			return -EINVAL;
		b -= pa->blocks[b].nr;
	}
	if (pa->blocks[b].kind != ODSM_BLK_HEAD)
		return -EINVAL;
	if (odsm_palloc_lookup(pa, block_addr(pa, (u32)b), oi) ||
	    addr - oi->addr >= oi->usable)
		return -EINVAL;
	return 0;
}

void odsm_palloc_set_copied(struct odsm_palloc *pa, u64 addr)
{
	struct odsm_block *blk;
	s64 b = block_of(pa, addr);
	u64 rem;
	u32 slot;

	if (b < 0)
		return;
	blk = &pa->blocks[b];
	if (blk->kind == ODSM_BLK_SLAB) {
		slot = slot_of(pa, (u32)b, addr, &rem);
		if (!rem && slot < blk->slab->nr_slots &&
		    bit_test(blk->slab->live, slot))
			bit_set(blk->slab->copied, slot);
	} else if (blk->kind == ODSM_BLK_HEAD &&
		   addr == block_addr(pa, (u32)b)) {
		blk->copied = 1;
	}
}

/* A slot of a slab (live or not) that an object of color c has outlived. */
static bool slot_stale(const struct odsm_slab *s, u32 cs, u64 off, u16 c)
{
	u32 slot = (u32)(off / cs);

	if (off % cs || slot >= s->nr_slots)
		return false;
	return bit_test(s->retired, slot) || c < s->gen[slot];
}

bool odsm_palloc_stale(const struct odsm_palloc *pa, u64 cgaddr)
{
	u64 addr = odsm_clear_color(cgaddr), off;
	u16 c = odsm_color(cgaddr);
	const struct odsm_block *blk;
	s64 b = block_of(pa, addr);

	if (b < 0)
		return false;
	blk = &pa->blocks[b];
	off = addr - block_addr(pa, (u32)b);
	switch (blk->kind) {
	case ODSM_BLK_SLAB:
		return slot_stale(blk->slab, odsm_class_size[blk->cls], off, c);
	case ODSM_BLK_HEAD:
		return !off && c < blk->color;
	case ODSM_BLK_FREE:
		if (blk->slab &&
		    slot_stale(blk->slab, odsm_class_size[blk->cls], off, c))
			return true;
		return !off && c < blk->floor;
	case ODSM_BLK_RETIRED:
		return true;
	}
	return false;
}

bool odsm_palloc_backed(const struct odsm_palloc *pa, u64 addr)
{
	s64 b = block_of(pa, addr);
	u8 kind;

	if (b < 0)
		return false;
	kind = pa->blocks[b].kind;
	return kind == ODSM_BLK_SLAB || kind == ODSM_BLK_HEAD ||
	       kind == ODSM_BLK_TAIL;
}

int odsm_palloc_free_class(const struct odsm_palloc *pa, u32 b)
{
	const struct odsm_block *blk;

	if (b >= pa->nr_blocks)
		return -1;
	blk = &pa->blocks[b];
	if (blk->kind != ODSM_BLK_FREE || !blk->slab)
		return -1;
	return blk->cls;
}

/* ---- published words (odsm_pubword.h) ---------------------------------- */

/* The slab of block b whose slots have words, or NULL. */
static const struct odsm_slab *pub_slab(const struct odsm_palloc *pa, u32 b)
{
	const struct odsm_block *blk = &pa->blocks[b];

	if (blk->kind != ODSM_BLK_SLAB && blk->kind != ODSM_BLK_FREE)
		return NULL;
	if (!blk->slab || odsm_class_size[blk->cls] < ODSM_PUB_MIN_SLOT)
		return NULL;
	return blk->slab;
}

static u32 pub_word_of(const struct odsm_block *blk,
		       const struct odsm_slab *s, u32 slot)
{
	bool live = blk->kind == ODSM_BLK_SLAB && bit_test(s->live, slot) &&
		    !bit_test(s->retired, slot);

	return odsm_pub_word(blk->cls, live, live && bit_test(s->copied, slot),
			     s->gen[slot]);
}

/*
 * The run word of block b (odsm_pub_run_word()), for a block that is no
 * slab's and no tail: a head's, or "not live" where a head may have been.
 */
static bool pub_run_word(const struct odsm_block *blk, u32 *word)
{
	switch (blk->kind) {
	case ODSM_BLK_HEAD:
		*word = odsm_pub_run_word(true, blk->copied, blk->color);
		return true;
	case ODSM_BLK_FREE:
		if (blk->slab)
			return false;
		*word = odsm_pub_run_word(false, false, (u16)blk->floor);
		return true;
	case ODSM_BLK_RETIRED:
		*word = odsm_pub_run_word(false, false, 0);
		return true;
	}
	return false;
}

bool odsm_palloc_pub_slot(const struct odsm_palloc *pa, u64 addr, u32 *idx,
			  u32 *word)
{
	const struct odsm_slab *s;
	s64 b = block_of(pa, addr);
	u64 rem;
	u32 slot;

	if (b < 0)
		return false;
	s = pub_slab(pa, (u32)b);
	if (!s) {
		if (addr != block_addr(pa, (u32)b) ||
		    !pub_run_word(&pa->blocks[b], word))
			return false;
		*idx = 0;
		return true;
	}
	slot = slot_of(pa, (u32)b, addr, &rem);
	if (rem || slot >= s->nr_slots)
		return false;
	*idx = slot;
	*word = pub_word_of(&pa->blocks[b], s, slot);
	return true;
}

void odsm_palloc_pub_fill(const struct odsm_palloc *pa, u64 addr, u32 *words)
{
	const struct odsm_slab *s;
	s64 b = block_of(pa, addr);
	u32 i;

	memset(words, 0, ODSM_PUB_BYTES);
	if (b < 0)
		return;
	s = pub_slab(pa, (u32)b);
	for (i = 0; s && i < s->nr_slots; i++)
		words[i] = pub_word_of(&pa->blocks[b], s, i);
	if (!s)
		pub_run_word(&pa->blocks[b], &words[0]);
}
