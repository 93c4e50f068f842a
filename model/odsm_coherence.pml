/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * odsm's coherence protocol as kmod/ and userlib/ implement it, for spin.
 * model/README.rst says how to run it and what it leaves out;
 * Documentation/odsm/design.rst ("The protocol, model-checked") maps each
 * step to the code it stands for and to DRust's proof (Appendix C).
 *
 * Three nodes, each with a partition of NS slots.  A slot is a slab slot of
 * kmod/odsm_palloc.c: its color gen[] (the allocation color while the slot
 * is live, the floor once it is free), its copied bit, and the bytes of
 * what lives there, an object or a copy in that node's cache.  A colored
 * address is MK(slot, color), printed as slot.color.  The objects:
 *
 *   P  owned by a box in a directory on node 0 (an object no node caches:
 *      nodes read it with odsm_read and write it back by address); P's
 *      bytes hold an owner box, P.field, that owns X
 *   X  owned by P.field
 *   Q  owned by node 1's private box q (the U bit, Algorithm 7's kept
 *      copy); node 1 lends shared borrows of Q to nodes 0 and 2
 *
 * Each node runs a program that does, in any order and interleaved with
 * the others, what its role allows:
 *
 *   R   any node: a shared borrow of P through the directory, and of X
 *       through P.field (odsm_borrow_field): in place when local, else the
 *       node cache (a hit, or a miss: FETCH at the home, then insert)
 *   W0  node 0: odsm_box_write through the directory box (Algorithm 8 on
 *       a box in the heap), and of X through P.field
 *   MP  nodes 1, 2: odsm_borrow_mut_at(directory) on P: a move when P is
 *       remote (take-over of an idle copy of exactly P's colored address,
 *       else FETCH + a new slot, and the free of the original queued at
 *       the owner's color), the bump; odsm_borrow_mut_field on X (returned
 *       by a plain store into P.field); WRITE_BACK into the directory
 *   D   node 2: odsm_borrow_mut_at(&P.field), the box named by address:
 *       READ_OWNER and WRITE_BACK at P's home, refused (-EBUSY) once a
 *       copy of P was handed out
 *   QR QW QM QL QD QN  node 1 on Q: box_read (kept copy), box_write (a
 *       move with the held reference, a bump once per epoch: U),
 *       borrow_mut + return_mut (the owner continues the mut's epoch),
 *       lend (odsm_borrow clears U), drop (free at the owner's color),
 *       new_on any node
 *   L   nodes 0, 2: read the Q lent to them, return it
 *   EV  any node: its idle copies leave the cache (budget, shrinker)
 *   RS  node 2's module restarts: a new incarnation, its allocator starts
 *       over at color 0; each peer sees it down until it authenticates
 *       the new incarnation, and forgets every copy of its objects then
 *   Freer  the queued frees of moved originals, each at its home, later
 *
 * The programs keep Rust's discipline, in ghost variables: mutby[o] is the
 * node holding o mutably (or NONE), readers[o] the shared borrows of o
 * out; nobody reads o while another node holds it mutably or writes it
 * while a shared borrow is out.  The protocol must then give (DRust,
 * Appendix C):
 *
 *   single_writer_multiple_reader  no node reads bytes of an object that
 *       another node holds mutably, and a write, a move or a take-over
 *       acts only on the object's one current instance
 *   data_value  every read, take-over and move gets the last completed
 *       write of the object it means (a slot's ghost "fresh" bit says its
 *       bytes are that; a write of o clears it everywhere else, a store
 *       into P.field being a write of P), and no home refuses the current
 *       colored address of a live object
 *
 * Each is an assertion on a variable of that name, so spin's report names
 * the one that fails.  The mutants (-DMUTANT_...):
 *
 *   NO_COLOR_BUMP          odsm__bump() does nothing
 *   NO_COLOR_FLOOR         a new object starts at color 0, not at its
 *                          address's floor (palloc slab_alloc)
 *   HEAP_BOX_KEEPS_U       a box in the heap keeps the U bit
 *                          (odsm_box_write, odsm_return_mut into P.field)
 *   NO_FORGET_ON_RESTART   peer_authed() does not odsm_cache_forget() a
 *                          peer that came back with a new incarnation
 *   NO_OWNER_REFUSAL       odsm_heap_owner_rw() does not refuse (-EBUSY) a
 *                          box inside a copied object: issue 11's bug
 *   HIT_WITHOUT_HOME       a cached copy is served while its home is not up
 *                          as the incarnation it was fetched from (issue
 *                          12's gap 1: a peer forgets a restarted node's
 *                          copies only when it authenticates the new
 *                          incarnation, and served hits before that)
 *   FREE_ANY_INCARNATION   the queued free of a moved original reaches the
 *                          home whatever its incarnation (gap 2, finding 6)
 *   OVERFLOW_LOSES         (implies OVERFLOW) a mutable borrow's first
 *                          access bumps the color of an object it just
 *                          moved onto the last color; the move on color
 *                          overflow fails (-ENOMEM), the borrow fails, is
 *                          not out, and the owner still names the freed
 *                          original (gap 3)
 *
 * Bounds: OPS operations in all (an L, a free of a moved original and an
 * authentication cost none), at most one restart, colors up to MAXC (a
 * path whose bump would pass it stops).  -DONLY_PX checks P and X alone
 * (no Q; node 2 starts empty), -DONLY_Q checks Q alone (P and X sit on node
 * 0); each affords a deeper bound.  -DALLOC_ANY lets an allocation take any
 * free slot instead of the lowest.
 *
 * -DOVERFLOW models the move on color overflow (odsm__bump_overflow),
 * with colors 0..1 (MAXC 1), which may fail (-ENOMEM).
 *
 * The three gaps that the first version of this model found in the code
 * (issue 12) are closed; each is a mutant above.
 */

#define NN	3		/* nodes */
#define NS	3		/* slots per partition */
#define NA	9		/* addresses */
#define NIL	255
#define NONE	255
#define AD(g)	((g) % 16)	/* the address of a colored address */
#define CO(g)	((g) / 16)	/* its color */
#define MK(a, c)	((c) * 16 + (a))
#define HOME(a)	((a) / NS)

#ifndef OPS
#define OPS	5
#endif
#ifdef MUTANT_OVERFLOW_LOSES
#define OVERFLOW
#endif
#ifdef MUTANT_ONESIDED_UNMARKED
#define ONESIDED
#endif
#ifndef MAXC
#ifdef OVERFLOW
#define MAXC	1
#else
#define MAXC	14		/* < 15: NIL is MK(15, 15) */
#endif
#endif

#define SFREE	0		/* palloc: free (gen is the floor) */
#define SOBJ	1		/* live object (gen is its allocation color) */
#define SCOPY	2		/* live slot: a copy in this node's cache */

#define P	0
#define X	1
#define Q	2

#define OK	0
#define REFUSED	1		/* -ESTALE / -EINVAL from the home */
#define DOWN	2		/* -EHOSTDOWN */
#define NOMEM	3		/* -ENOMEM */
#define BUSY	4		/* -EBUSY */

/*
 * An operation is one d_step: one transition, nothing stored in between.
 * -DALLOC_ANY needs atomic, as its allocations choose.
 */
#ifdef ALLOC_ANY
#define STEP	atomic
#else
#define STEP	d_step
#endif

#ifdef ONLY_Q
#define PX_ON	0
#else
#define PX_ON	1
#endif
#ifdef ONLY_PX
#define Q_ON	0
#else
#define Q_ON	1
#endif

typedef slot_t {
	byte st;	/* SFREE, SOBJ, SCOPY */
	byte gen;	/* palloc gen[slot]: color while live, floor when free */
	bit copied;	/* the home served a FETCH of it (palloc copied bit) */
	byte field;	/* the bytes: the owner box P.field, its g ... */
	bit fu;		/* ... and its U bit */
	byte ckey;	/* cache: the remote colored address this copies */
	byte crefs;	/* cache: references */
	bit orphan;	/* cache: out of the index, freed on its last return */
	byte gobj;	/* ghost: the object whose bytes these are */
	bit fresh;	/* ghost: they are its last completed write */
};

slot_t slot[NA];
byte dir_g;		/* the directory box on node 0: owner of P */
bit dir_u;
byte q_g;		/* node 1's private box: owner of Q */
bit q_u;
byte q_copy;		/* its kept copy (Algorithm 7), or NIL */
byte pend[NA];		/* a queued free of a moved original: its color, or NIL */
byte pfrom[NA];		/* ... queued by that node */
byte spend[NA];		/* node 2's addresses: a free queued for its former
			 * incarnation, still waiting after the restart */
byte sfrom[NA];
byte npend;
byte lent[NN];		/* a shared borrow of Q lent to that node, or NIL */
byte pin;		/* D is out: the program does not move P meanwhile */
byte ops = OPS;
byte restarts;
bit bounded;		/* this path passed the bounds: it stops */
/*
 * Node n (0, 1) has authenticated node 2's current incarnation: it sees
 * node 2 up.  A restart clears both (the old incarnation's connections
 * die with it); each peer's handshake with the new one sets its own.
 */
bit auth[2];
#define UP(x, y)	((x) == (y) || ((x) != 2 && (y) != 2) || auth[(x) + (y) - 2])
#define GO	(ops > 0 && !bounded)

/* ghost: the discipline and the truth */
byte inst[3];		/* the slot of each object's current instance */
byte mutby[3];		/* the node holding it mutably, or NONE */
byte readers[3];	/* shared borrows of it out */

hidden byte single_writer_multiple_reader;
hidden byte data_value;
hidden byte sc_i, sc_t;	/* scratch, within one step */

/* ---- the home's allocator (kmod/odsm_palloc.c) ----------------------- */

/*
 * Free a live slot at color c (slab_free): the floor becomes c + 1; past
 * MAXC the slot is retired, never handed out again.
 */
inline slot_free(sl, c)
{
	slot[sl].gen = c + 1;
	slot[sl].st = SFREE;
	slot[sl].copied = 0;
	slot[sl].field = 0;
	slot[sl].fu = 0;
	slot[sl].ckey = NIL;
	slot[sl].crefs = 0;
	slot[sl].orphan = 0;
	slot[sl].gobj = NONE;
	slot[sl].fresh = 0
}

/* a new object at a free slot starts at the slot's floor (slab_alloc) */
inline slot_alloc(sl)
{
#ifdef MUTANT_NO_COLOR_FLOOR
	slot[sl].gen = 0;
#endif
	slot[sl].st = SOBJ;
	slot[sl].copied = 0
}

#define FREESLOT(a)	(slot[a].st == SFREE && slot[a].gen <= MAXC)

/* a free slot of the partition at base (the lowest), or NIL */
inline pick_free(base)
{
	s = NIL;
#ifdef ALLOC_ANY
	if
	:: FREESLOT(base) -> s = base
	:: FREESLOT(base + 1) -> s = base + 1
	:: FREESLOT(base + 2) -> s = base + 2
	:: else -> skip
	fi
#else
	if
	:: FREESLOT(base) -> s = base
	:: else ->
		if
		:: FREESLOT(base + 1) -> s = base + 1
		:: else ->
			if
			:: FREESLOT(base + 2) -> s = base + 2
			:: else -> skip
			fi
		fi
	fi
#endif
}

/* ---- the node cache (kmod/odsm_cache.c), on node n -------------------- */

#ifndef MUTANT_HIT_WITHOUT_HOME
#define SERVED(gg)	UP(n, HOME(AD(gg)))
#else
#define SERVED(gg)	1
#endif

/*
 * odsm_cindex_find: the indexed copy of exactly gg, served only while its
 * home is up as the incarnation it was fetched from (current_locked();
 * a copy of a former incarnation is forgotten when the new one
 * authenticates, so here: while its home is up)
 */
inline lookup(gg)
{
	s = NIL;
	sc_i = n * NS;
	do
	:: sc_i < n * NS + NS ->
		if
		:: slot[sc_i].st == SCOPY && slot[sc_i].ckey == gg &&
		   !slot[sc_i].orphan && SERVED(gg) -> s = sc_i
		:: else -> skip
		fi;
		sc_i++
	:: else -> break
	od;
	sc_i = 0
}

#define IDLE(a)	(slot[a].st == SCOPY && slot[a].crefs == 0 && !slot[a].orphan)
#define IDLE_COPIES	(IDLE(n * NS) || IDLE(n * NS + 1) || IDLE(n * NS + 2))

/* trim_locked(0): every idle copy goes; the reaper frees its slot */
inline trim()
{
	sc_i = n * NS;
	do
	:: sc_i < n * NS + NS ->
		if
		:: IDLE(sc_i) -> slot_free(sc_i, slot[sc_i].gen)
		:: else -> skip
		fi;
		sc_i++
	:: else -> break
	od;
	sc_i = 0
}

/* odsm_heap_alloc here, the cache trimmed on -ENOMEM (make_copy, move_here) */
inline alloc_local()
{
	pick_free(n * NS);
	if
	:: s == NIL -> trim(); pick_free(n * NS)
	:: else -> skip
	fi;
	if
	:: s != NIL -> slot_alloc(s)
	:: else -> skip
	fi
}

/* odsm_cache_forget(2) on node m: idle copies go, referenced ones orphan */
inline forget(m)
{
#ifndef MUTANT_NO_FORGET_ON_RESTART
	sc_i = m * NS;
	do
	:: sc_i < m * NS + NS ->
		if
		:: slot[sc_i].st == SCOPY && !slot[sc_i].orphan &&
		   HOME(AD(slot[sc_i].ckey)) == 2 ->
			if
			:: slot[sc_i].crefs == 0 -> slot_free(sc_i, slot[sc_i].gen)
			:: else -> slot[sc_i].orphan = 1
			fi
		:: else -> skip
		fi;
		sc_i++
	:: else -> break
	od;
	sc_i = 0
#else
	skip
#endif
}

/*
 * FETCH at the home (odsm_heap_fetch): object_at() under the heap lock (a
 * live slot whose allocation color is at most gg's), the bytes, and the
 * copied mark, in one step.
 */
inline fetch(gg)
{
	sc_t = AD(gg);
	if
	:: !UP(n, HOME(sc_t)) -> r = DOWN
	:: else ->
		if
		:: slot[sc_t].st != SFREE && CO(gg) >= slot[sc_t].gen ->
			r = OK;
			f_field = slot[sc_t].field;
			f_fu = slot[sc_t].fu;
			f_obj = slot[sc_t].gobj;
			f_fresh = slot[sc_t].fresh;
			slot[sc_t].copied = 1
		:: else -> r = REFUSED
		fi
	fi;
	sc_t = 0
}

/*
 * A one-sided miss (odsm_onesided_copy(), -DONESIDED: every shared-borrow
 * miss tries it first): the home's published word of the slot, the
 * slot's bytes, the word again, kept only if both words agree and say
 * live, copied, and of a color the pointer may carry.  Every allocation,
 * free and first copy there changes the word, so kept bytes are the
 * slot's at one instant: one step.  It sets no copied mark (the home's
 * CPU is not asked), so a slot without one goes to the FETCH.
 */
#ifdef MUTANT_ONESIDED_UNMARKED
#define OS_MARKED(sl)	1
#else
#define OS_MARKED(sl)	slot[sl].copied
#endif

inline osfetch(gg)
{
	sc_t = AD(gg);
	if
	:: UP(n, HOME(sc_t)) && slot[sc_t].st != SFREE &&
	   CO(gg) >= slot[sc_t].gen && OS_MARKED(sc_t) ->
		r = OK;
		f_field = slot[sc_t].field;
		f_fu = slot[sc_t].fu;
		f_obj = slot[sc_t].gobj;
		f_fresh = slot[sc_t].fresh
	:: else ->
		fetch(gg)
	fi;
	sc_t = 0
}

#ifdef ONESIDED
#define miss_fetch(gg)	osfetch(gg)
#else
#define miss_fetch(gg)	fetch(gg)
#endif

/* ---- the invariants --------------------------------------------------- */

/* node n reads the bytes at slot sl as object o */
inline check_read(o, sl)
{
	sc_t = slot[sl].gobj;
	if
	:: sc_t != NONE ->
		single_writer_multiple_reader =
			(mutby[sc_t] == NONE || mutby[sc_t] == n)
	:: else -> single_writer_multiple_reader = 1
	fi;
	assert(single_writer_multiple_reader);
	data_value = (slot[sl].gobj == o && slot[sl].fresh);
	if
	:: !data_value ->
		printf("  node %d reads slot %d: not the last write of %d\n",
		       n, sl, o)
	:: else -> skip
	fi;
	assert(data_value);
	sc_t = 0
}

/* a home refused the current colored address of a live object */
inline refused(gg)
{
	printf("  home %d refused %d.%d\n", HOME(AD(gg)), AD(gg), CO(gg));
	data_value = 0;
	assert(data_value)
}

/* every slot holding o's bytes is now of an old version */
inline stale_all(o)
{
	sc_i = 0;
	do
	:: sc_i < NA ->
		if
		:: slot[sc_i].gobj == o -> slot[sc_i].fresh = 0
		:: else -> skip
		fi;
		sc_i++
	:: else -> break
	od;
	sc_i = 0
}

/* node n writes object o, at colored address gg, through its borrow or owner */
inline do_write(o, gg)
{
	single_writer_multiple_reader =
		(readers[o] == 0 && mutby[o] == n && AD(gg) == inst[o] &&
		 HOME(AD(gg)) == n && slot[AD(gg)].st == SOBJ);
	assert(single_writer_multiple_reader);
	stale_all(o);
	slot[AD(gg)].fresh = 1;
	printf("  node %d writes %d at %d.%d\n", n, o, AD(gg), CO(gg))
}

/* the owner box inside P, at slot pl, becomes gg: a write of P's bytes */
inline box_store(pl, gg)
{
	single_writer_multiple_reader =
		(readers[P] == 0 && pl == inst[P] && slot[pl].st == SOBJ);
	assert(single_writer_multiple_reader);
	stale_all(P);
	slot[pl].field = gg;
	slot[pl].fresh = 1
}

/*
 * odsm__bump(): the next color.  Past MAXC: odsm__bump_overflow ->
 * odsm_move (odsm_heap_move: a new object here, no cache trim, the old one
 * freed at MAXC and so retired) with -DOVERFLOW; otherwise the path stops.
 */
inline bump(gg, o)
{
#ifndef MUTANT_NO_COLOR_BUMP
	if
	:: CO(gg) < MAXC -> gg = gg + 16
	:: else ->
#ifdef OVERFLOW
		pick_free(n * NS);
		if
		:: s != NIL ->
			slot_alloc(s);
			slot[s].field = slot[AD(gg)].field;
			slot[s].fu = slot[AD(gg)].fu;
			slot[s].gobj = slot[AD(gg)].gobj;
			slot[s].fresh = slot[AD(gg)].fresh;
			slot_free(AD(gg), CO(gg));
			inst[o] = s;
			printf("  node %d: color overflow, %d moves to %d.%d\n",
			       n, o, s, slot[s].gen);
			gg = MK(s, slot[s].gen)
		:: else ->
			printf("  node %d: color overflow, no room: -ENOMEM\n", n);
			r = NOMEM
		fi;
		s = NIL
#else
		bounded = 1
#endif
	fi
#else
	skip
#endif
}

/*
 * odsm_mut_get(): a move onto the last color is not bumped (its colored
 * address is new: no copy of it exists), so no move on color overflow can
 * fail after the original was freed.  mv: this access moved the object.
 */
#ifndef MUTANT_OVERFLOW_LOSES
#define MOVED_LAST(gg)	(mv && CO(gg) == MAXC)
#else
#define MOVED_LAST(gg)	0
#endif

/* ---- shared borrows: odsm_ref_get -> ODSM_IOC_BORROW -> odsm_cache_borrow */

/*
 * A local object is read in place (libodsm, no kernel); a remote one is
 * looked up by colored address: a hit takes a reference and reads, a miss
 * FETCHes at the home.
 */
inline ref_borrow1(gg, o, l, lref)
{
	l = NIL;
	lref = 0;
	r = OK;
	if
	:: HOME(AD(gg)) == n ->
		printf("  node %d borrows %d at %d.%d: local\n",
		       n, o, AD(gg), CO(gg));
		l = AD(gg);
		check_read(o, l)
	:: else ->
		lookup(gg);
		if
		:: s != NIL ->
			printf("  node %d borrows %d at %d.%d: hit, slot %d\n",
			       n, o, AD(gg), CO(gg), s);
			slot[s].crefs++;
			l = s;
			lref = 1;
			check_read(o, l)
		:: else ->
			printf("  node %d borrows %d at %d.%d: miss\n",
			       n, o, AD(gg), CO(gg));
			miss_fetch(gg);
			if
			:: r == REFUSED -> refused(gg)
			:: else -> skip
			fi
		fi;
		s = NIL
	fi
}

/*
 * The rest of a miss: a slot here, indexed with one reference (make_copy's
 * allocation, insert_locked).  The code drops the cache lock between the
 * FETCH and this; nothing another node may do in between changes the
 * outcome (the borrower holds o shared: nobody writes, moves or frees it,
 * and its home does not restart while it holds it), so the model joins them.
 */
inline ref_borrow2(gg, o, l, lref)
{
	if
	:: l == NIL && r == OK ->
		alloc_local();
		if
		:: s != NIL ->
			slot[s].st = SCOPY;
			slot[s].ckey = gg;
			slot[s].crefs = 1;
			slot[s].field = f_field;
			slot[s].fu = f_fu;
			slot[s].gobj = f_obj;
			slot[s].fresh = f_fresh;
			l = s;
			lref = 1;
			check_read(o, l)
		:: else -> r = NOMEM
		fi;
		s = NIL;
		f_field = 0;
		f_fu = 0;
		f_obj = 0;
		f_fresh = 0
	:: else -> skip
	fi
}

/* odsm_return -> ODSM_IOC_RETURN -> entry_put_locked */
inline ref_return(sl)
{
	slot[sl].crefs--;
	if
	:: slot[sl].orphan && slot[sl].crefs == 0 -> slot_free(sl, slot[sl].gen)
	:: else -> skip
	fi
}

/* ---- mutable borrows: ODSM_IOC_BORROW_MUT (kmod/odsm_borrow.c) --------- */

/*
 * The remote object o at gg moves to node n: odsm_cache_take (the caller's
 * own reference hs with ODSM_MUT_HELD_REF, else an idle copy of exactly
 * gg), else move_here (FETCH, a new slot, the bytes); then free_original
 * queues the free of the original at its home, at gg's color.  gg becomes
 * the new colored address.
 */
inline move_here(gg, o, hs)
{
	s = NIL;
	if
	:: hs != NIL ->
		if
		:: !slot[hs].orphan && slot[hs].crefs == 1 && SERVED(gg) ->
			s = hs;
			slot[hs].crefs = 0
		:: else ->
			ref_return(hs)	/* consumed all the same */
		fi
	:: else ->
		lookup(gg);
		if
		:: s != NIL && slot[s].crefs != 0 -> s = NIL
		:: else -> skip
		fi
	fi;
	if
	:: s != NIL ->		/* the copy becomes the object: mut_taken */
		single_writer_multiple_reader = (AD(gg) == inst[o]);
		assert(single_writer_multiple_reader);
		data_value = (slot[s].gobj == o && slot[s].fresh);
		assert(data_value);
		slot[s].st = SOBJ;
		slot[s].ckey = NIL;
		slot[s].crefs = 0;
		slot[s].orphan = 0;
		r = OK;
		printf("  node %d takes over its copy of %d at %d.%d: slot %d\n",
		       n, o, AD(gg), CO(gg), s)
	:: else ->		/* mut_moves */
		fetch(gg);
		if
		:: r == OK ->
			single_writer_multiple_reader = (AD(gg) == inst[o]);
			assert(single_writer_multiple_reader);
			data_value = (f_obj == o && f_fresh);
			assert(data_value);
			alloc_local();
			if
			:: s != NIL ->
				slot[s].field = f_field;
				slot[s].fu = f_fu;
				slot[s].gobj = f_obj;
				slot[s].fresh = f_fresh;
				printf("  node %d moves %d from %d.%d to slot %d\n",
				       n, o, AD(gg), CO(gg), s)
			:: else -> r = NOMEM	/* nothing moved */
			fi
		:: r == REFUSED -> refused(gg)
		:: else -> skip
		fi;
		f_field = 0;
		f_fu = 0;
		f_obj = 0;
		f_fresh = 0
	fi;
	if
	:: r == OK ->
		assert(pend[AD(gg)] == NIL);
		pend[AD(gg)] = CO(gg);
		pfrom[AD(gg)] = n;
		npend++;
		inst[o] = s;
		gg = MK(s, slot[s].gen)
	:: else -> skip
	fi;
	s = NIL
}

/*
 * When node 2 may restart: it holds no live object (losing one is lost
 * data, not a coherence question), nobody lent it Q, and it flushed its
 * own queued frees (odsm_borrow_flush on leave).  Frees of moved originals
 * queued for it elsewhere may still wait: each names the incarnation it
 * was queued for, and reaches no other (odsm_rpc_inc).  The peers see
 * node 2 down from the restart on, until each authenticates the new
 * incarnation and forgets the old one's copies (peer_authed ->
 * odsm_cache_forget); a copy is served only while its home is up (as the
 * copy's incarnation), so an address of the new incarnation learnt
 * through a third node before that misses.  What the model takes for
 * granted: a peer sees the old incarnation's connection die before the
 * new incarnation hands out addresses.
 */
#define NOTHING_ON_2	(inst[P] < 2 * NS && inst[X] < 2 * NS && \
			 (inst[Q] == NONE || inst[Q] < 2 * NS) && lent[2] == NIL)
#define RESTART_OK	(NOTHING_ON_2 && \
			 (pend[0] == NIL || pfrom[0] != 2) && \
			 (pend[1] == NIL || pfrom[1] != 2) && \
			 (pend[2] == NIL || pfrom[2] != 2) && \
			 (pend[3] == NIL || pfrom[3] != 2) && \
			 (pend[4] == NIL || pfrom[4] != 2) && \
			 (pend[5] == NIL || pfrom[5] != 2))

/* ---- the operations ---------------------------------------------------- */

/* R: &P through the directory, and with wx &X through P.field (R1; R2; R3) */
inline op_R1()
{
	ops--;
	printf("node %d: R\n", n);
	readers[P]++;
	g = dir_g;		/* odsm_read of the directory box */
	ref_borrow1(g, P, l, lref)
}

inline op_R2(wx)
{
	ref_borrow2(g, P, l, lref);
	if
	:: wx && l != NIL && mutby[X] == NONE ->
		/* odsm_borrow_field: the box read out of P's bytes */
		hx = 1;
		readers[X]++;
		fg = slot[l].field;
		ref_borrow1(fg, X, l2, lref2)
	:: else -> skip
	fi
}

inline op_R3()
{
	if
	:: hx -> ref_borrow2(fg, X, l2, lref2)
	:: else -> skip
	fi;
	/* odsm_return of both */
	if
	:: lref2 -> ref_return(l2)
	:: else -> skip
	fi;
	if
	:: hx -> readers[X]--
	:: else -> skip
	fi;
	if
	:: lref -> ref_return(l)
	:: else -> skip
	fi;
	readers[P]--;
	g = 0; fg = 0; l = 0; l2 = 0; r = 0;
	lref = 0; lref2 = 0; hx = 0
}

/* W0: node 0 writes P through the directory box, a box in the heap */
inline op_W0(wx)
{
	ops--;
	printf("node 0: W0 (odsm_box_write of the directory box)\n");
	mutby[P] = 0;
	if
	:: HOME(AD(dir_g)) != 0 -> move_here(dir_g, P, NIL)
	:: else -> r = OK
	fi;
	if
	:: r == OK && !dir_u -> bump(dir_g, P)
	:: else -> skip
	fi;
	if
	:: r == OK ->
#ifdef MUTANT_HEAP_BOX_KEEPS_U
		dir_u = 1;
#endif
		do_write(P, dir_g);
		if
		:: wx && mutby[X] == NONE && readers[X] == 0 ->
			/* odsm_box_write(&p->field): the box in P */
			mutby[X] = 0;
			pa = AD(dir_g);
			xg = slot[pa].field;
			if
			:: HOME(AD(xg)) != 0 -> move_here(xg, X, NIL)
			:: else -> r = OK
			fi;
			if
			:: r == OK ->
				box_store(pa, xg);	/* the move's new g */
				if
				:: !slot[pa].fu -> bump(xg, X)
				:: else -> skip
				fi;
				box_store(pa, xg)
			:: else -> skip
			fi;
			if
			:: r == OK ->
#ifdef MUTANT_HEAP_BOX_KEEPS_U
				slot[pa].fu = 1;
#endif
				do_write(X, xg)
			:: else -> skip
			fi;
			mutby[X] = NONE
		:: else -> skip
		fi
	:: else -> skip
	fi;
	mutby[P] = NONE;
	pa = 0; xg = 0; r = 0
}

/* MP: node n: odsm_borrow_mut_at(directory) on P; with wx, X through it */
inline op_MP(wx)
{
	ops--;
	printf("node %d: MP (odsm_borrow_mut_at of the directory box)\n", n);
	mutby[P] = n;
	mg = dir_g;		/* READ_OWNER at node 0 */
	if			/* odsm_mut_get */
	:: HOME(AD(mg)) != n -> move_here(mg, P, NIL); mv = (r == OK)
	:: else -> r = OK
	fi;
	if
	:: r == OK && !MOVED_LAST(mg) -> bump(mg, P)	/* a new mut: U clear */
	:: else -> skip
	fi;
	mv = 0;
	if
	:: r == OK ->
		do_write(P, mg);
		if
		:: wx && mutby[X] == NONE && readers[X] == 0 ->
			/* odsm_borrow_mut_field(&m, P.field) */
			mutby[X] = n;
			xg = slot[AD(mg)].field;
			if
			:: HOME(AD(xg)) != n -> move_here(xg, X, NIL); mv = (r == OK)
			:: else -> r = OK
			fi;
			if
			:: r == OK && !MOVED_LAST(xg) -> bump(xg, X)
			:: else -> skip
			fi;
			mv = 0;
			if
			:: r == OK ->
				do_write(X, xg);
				/* odsm_return_mut: a plain store into P.field,
				 * a box in the heap: no U
				 */
				box_store(AD(mg), xg);
#ifdef MUTANT_HEAP_BOX_KEEPS_U
				slot[AD(mg)].fu = 1
#else
				slot[AD(mg)].fu = 0
#endif
			:: else -> skip	/* failed: the borrow is not out */
			fi;
			mutby[X] = NONE;
			r = OK
		:: else -> skip
		fi;
		/* odsm_return_mut: WRITE_BACK at node 0, ext 0 */
		dir_g = mg;
		dir_u = 0
	:: else -> skip		/* failed: the borrow is not out */
	fi;
	mutby[P] = NONE;
	mg = 0; xg = 0; r = 0
}

/* D, first half: READ_OWNER of P.field at P's home, the move, the write */
inline op_D1()
{
	ops--;
	pa = AD(dir_g);		/* the box's address, from odsm_read */
	printf("node 2: D (odsm_borrow_mut_at of the box in P at slot %d)\n",
	       pa);
	if
	:: !UP(2, HOME(pa)) -> r = DOWN
	:: else ->
		/* odsm_owner_rw_local: -EINVAL for no object or a copy; then
		 * odsm_heap_owner_rw: -EBUSY for a copied object
		 */
		if
		:: slot[pa].st != SOBJ -> r = REFUSED
#ifndef MUTANT_NO_OWNER_REFUSAL
		:: slot[pa].st == SOBJ && slot[pa].copied ->
			printf("  home %d: READ_OWNER refused, -EBUSY\n",
			       HOME(pa));
			r = BUSY
		:: slot[pa].st == SOBJ && !slot[pa].copied ->
#else
		:: slot[pa].st == SOBJ ->
#endif
			r = OK;
			xg = slot[pa].field
		fi
	fi;
	if
	:: r == OK ->
		mutby[X] = 2;
		pin++;
		if
		:: HOME(AD(xg)) != 2 -> move_here(xg, X, NIL); mv = (r == OK)
		:: else -> r = OK
		fi;
		if
		:: r == OK && !MOVED_LAST(xg) -> bump(xg, X)
		:: else -> skip
		fi;
		mv = 0;
		if
		:: r == OK -> do_write(X, xg)
		:: else ->	/* failed: the borrow is not out */
			mutby[X] = NONE;
			pin--
		fi
	:: else -> skip
	fi
}

/* D, second half: odsm_return_mut, WRITE_BACK at P's home, same check */
inline op_D2()
{
	if
	:: mutby[X] == 2 && r == OK ->
		if
#ifndef MUTANT_NO_OWNER_REFUSAL
		:: (UP(2, HOME(pa)) && slot[pa].st == SOBJ &&
		    !slot[pa].copied) ->
#else
		:: (UP(2, HOME(pa)) && slot[pa].st == SOBJ) ->
#endif
			printf("  home %d: WRITE_BACK of %d.%d into P\n",
			       HOME(pa), AD(xg), CO(xg));
			box_store(pa, xg);
			slot[pa].fu = 0;
			mutby[X] = NONE
		:: else ->	/* refused: the borrow stays out */
			printf("  home %d: WRITE_BACK refused\n", HOME(pa))
		fi;
		pin--
	:: else -> skip
	fi;
	pa = 0; xg = 0; r = 0
}

/* QR: node 1 reads Q through its box (Algorithm 7) */
inline op_QR()
{
	ops--;
	printf("node 1: QR (odsm_box_read)\n");
	if
	:: HOME(AD(q_g)) == 1 ->
		l = AD(q_g);
		check_read(Q, l)
	:: HOME(AD(q_g)) != 1 && q_copy != NIL ->
		l = q_copy;	/* the copy the box keeps */
		check_read(Q, l)
	:: HOME(AD(q_g)) != 1 && q_copy == NIL ->
		ref_borrow1(q_g, Q, l, lref)
	fi
}

inline op_QR2()
{
	ref_borrow2(q_g, Q, l, lref);
	if
	:: lref -> q_copy = l	/* kept, with its reference */
	:: else -> skip
	fi;
	l = 0; lref = 0; r = 0
}

/* QW: node 1 writes Q through its box (Algorithm 8) */
inline op_QW()
{
	ops--;
	printf("node 1: QW (odsm_box_write)\n");
	mutby[Q] = 1;
	if
	:: HOME(AD(q_g)) != 1 ->
		move_here(q_g, Q, q_copy);
		q_copy = NIL
	:: else -> r = OK
	fi;
	if
	:: r == OK && !q_u ->
		bump(q_g, Q);
		q_u = (r == OK)		/* a private box keeps U */
	:: else -> skip
	fi;
	if
	:: r == OK -> do_write(Q, q_g)
	:: else -> skip
	fi;
	mutby[Q] = NONE;
	r = 0
}

/* QM: node 1: odsm_borrow_mut(&q), a write, odsm_return_mut */
inline op_QM()
{
	ops--;
	printf("node 1: QM (odsm_borrow_mut, odsm_return_mut)\n");
	mutby[Q] = 1;
	mg = q_g;
	mu = 0;
	if
	:: HOME(AD(mg)) != 1 ->
		move_here(mg, Q, q_copy);	/* owner->g == m.g */
		mv = (r == OK);
		q_copy = NIL
	:: else -> r = OK
	fi;
	if
	:: r == OK && !MOVED_LAST(mg) -> bump(mg, Q)
	:: else -> skip
	fi;
	mv = 0;
	if
	:: r == OK ->
		mu = 1;
		do_write(Q, mg);
		/* odsm_return_mut: a plain store into the private box; the
		 * owner continues the mut's epoch (its U)
		 */
		q_g = mg;
		q_u = mu
	:: else -> skip		/* failed: the borrow is not out */
	fi;
	mutby[Q] = NONE;
	mg = 0; mu = 0; r = 0
}

/* QL: node 1 lends &Q to node k: odsm_borrow clears U */
inline op_QL(k)
{
	ops--;
	printf("node 1: QL (odsm_borrow, lent to node %d)\n", k);
	q_u = 0;
	readers[Q]++;
	lent[k] = q_g
}

/* L: node n reads the Q lent to it and returns it */
inline op_L()
{
	printf("node %d: L (borrows what node 1 lent)\n", n);
	g = lent[n];
	ref_borrow1(g, Q, l, lref)
}

inline op_L2()
{
	ref_borrow2(g, Q, l, lref);
	if
	:: lref -> ref_return(l)
	:: else -> skip
	fi;
	readers[Q]--;
	lent[n] = NIL;
	g = 0; l = 0; lref = 0; r = 0
}

/* QD: node 1: odsm_box_drop(&q) */
inline op_QD()
{
	ops--;
	printf("node 1: QD (odsm_box_drop of %d.%d)\n", AD(q_g), CO(q_g));
	if
	:: q_copy != NIL ->	/* this node's copy goes first */
		ref_return(q_copy);
		q_copy = NIL
	:: else -> skip
	fi;
	/* FREE at the home, at the owner's color */
	sc_t = AD(q_g);
	if
	:: slot[sc_t].st == SOBJ && CO(q_g) >= slot[sc_t].gen ->
		slot_free(sc_t, CO(q_g))
	:: else -> refused(q_g)
	fi;
	sc_t = 0;
	stale_all(Q);		/* Q is gone: no copy of it is current */
	q_g = NIL;
	q_u = 0;
	inst[Q] = NONE
}

/* QN: node 1: odsm_box_new_on(&q, h, size, 0, init) */
inline op_QN(h)
{
	ops--;
	if
	:: UP(1, h) ->
		pick_free(h * NS);
		if
		:: s != NIL ->
			slot_alloc(s);
			slot[s].gobj = Q;
			slot[s].fresh = 1;
			inst[Q] = s;
			q_g = MK(s, slot[s].gen);
			q_u = 0;
			printf("node 1: QN (odsm_box_new_on node %d): %d.%d\n",
			       h, s, slot[s].gen)
		:: else -> skip	/* -ENOMEM */
		fi
	:: else -> skip
	fi;
	s = NIL
}

/* RS: node 2's module restarts */
inline op_RS()
{
	ops--;
	restarts++;
	printf("node 2: RS (restart: a new incarnation)\n");
	sc_i = 2 * NS;
	do
	:: sc_i < 3 * NS ->
		slot_free(sc_i, 0);
		slot[sc_i].gen = 0;	/* the allocator starts over */
		sc_i++
	:: else -> break
	od;
	sc_i = 2 * NS;
	do		/* frees queued for the former incarnation */
	:: sc_i < 3 * NS ->
		if
		:: pend[sc_i] != NIL ->
			spend[sc_i] = pend[sc_i];
			sfrom[sc_i] = pfrom[sc_i];
			pend[sc_i] = NIL;
			pfrom[sc_i] = 0;
			npend--
		:: else -> skip
		fi;
		sc_i++
	:: else -> break
	od;
	sc_i = 0;
	auth[0] = 0;
	auth[1] = 0
}

/*
 * A node's program.  Each operation is one step, except D, whose READ_OWNER
 * and WRITE_BACK another node's copy of P may come between (the write-back
 * must then be refused).  Within a mutable borrow (W0, MP, QM) or a shared
 * one (R, L, QR) the discipline keeps every other node off the object, so
 * nothing they may do in between changes the outcome: the borrow, its reads
 * or writes and its return are one step.  The queued free of a moved
 * original is the Freer's, at any later point.
 *
 * D names a box by address, which libodsm.rst allows only in objects nobody
 * borrows: the kernel refuses it (-EBUSY) in an object it copied to a peer,
 * but cannot see a shared borrow in place at the home.  So the program
 * takes no D while a shared borrow of P is out, and waits with its
 * write-back until none is; a copy made meanwhile still gets it refused.
 */
proctype Node(byte n)
{
	byte g, fg, l, l2, mg, xg, pa, s, r;
	byte f_field, f_obj;
	bit lref, lref2, hx, mu, mv, f_fu, f_fresh;

end:	do
	:: STEP {
		PX_ON && GO && mutby[P] == NONE ->
		op_R1(); op_R2(0); op_R3()
	   }
	:: STEP {
		PX_ON && GO && mutby[P] == NONE ->
		op_R1(); op_R2(1); op_R3()
	   }
	:: STEP {
		PX_ON && GO && n == 0 && mutby[P] == NONE && readers[P] == 0 &&
		pin == 0 -> op_W0(0)
	   }
	:: STEP {
		PX_ON && GO && n == 0 && mutby[P] == NONE && readers[P] == 0 &&
		pin == 0 -> op_W0(1)
	   }
	:: STEP {
		PX_ON && GO && n != 0 && mutby[P] == NONE && readers[P] == 0 &&
		pin == 0 -> op_MP(0)
	   }
	:: STEP {
		PX_ON && GO && n != 0 && mutby[P] == NONE && readers[P] == 0 &&
		pin == 0 -> op_MP(1)
	   }
	:: STEP {
		PX_ON && GO && n == 2 && mutby[X] == NONE && readers[X] == 0 &&
		mutby[P] == NONE && readers[P] == 0 -> op_D1()
	   }
	   STEP { readers[P] == 0 -> op_D2() }
	:: STEP {
		Q_ON && GO && n == 1 && q_g != NIL && mutby[Q] == NONE ->
		op_QR(); op_QR2()
	   }
	:: STEP {
		Q_ON && GO && n == 1 && q_g != NIL && mutby[Q] == NONE &&
		readers[Q] == 0 -> op_QW()
	   }
	:: STEP {
		Q_ON && GO && n == 1 && q_g != NIL && mutby[Q] == NONE &&
		readers[Q] == 0 -> op_QM()
	   }
	:: STEP {
		Q_ON && GO && n == 1 && q_g != NIL && mutby[Q] == NONE &&
		lent[0] == NIL -> op_QL(0)
	   }
	:: STEP {
		Q_ON && GO && n == 1 && q_g != NIL && mutby[Q] == NONE &&
		lent[2] == NIL -> op_QL(2)
	   }
	:: STEP { n != 1 && lent[n] != NIL -> op_L(); op_L2() }
	:: STEP {
		Q_ON && GO && n == 1 && q_g != NIL && mutby[Q] == NONE &&
		readers[Q] == 0 && UP(1, HOME(AD(q_g))) -> op_QD()
	   }
	:: STEP { Q_ON && GO && n == 1 && q_g == NIL -> op_QN(0) }
	:: STEP { Q_ON && GO && n == 1 && q_g == NIL -> op_QN(1) }
	:: STEP { Q_ON && GO && n == 1 && q_g == NIL -> op_QN(2) }
	:: STEP {
		GO && IDLE_COPIES ->
		ops--;
		printf("node %d: EV (idle copies dropped)\n", n);
		trim()
	   }
	:: STEP { GO && n == 2 && restarts < 1 && RESTART_OK -> op_RS() }
	:: STEP {
		n != 2 && !auth[n] ->
		printf("node %d: authenticates node 2's new incarnation\n", n);
		forget(n);
		auth[n] = 1
	   }
	od
}

/*
 * A free queued for node 2's former incarnation, sent now: it reaches
 * only the incarnation it was queued for (odsm_rpc_inc), so it is
 * dropped (move_frees_stale); with the mutant it frees whatever the new
 * incarnation put at that colored address.
 */
inline free_stale(a)
{
#ifdef MUTANT_FREE_ANY_INCARNATION
	if
	:: UP(sfrom[a], 2) && slot[a].st == SOBJ && spend[a] >= slot[a].gen ->
		printf("home 2: frees %d.%d for its former incarnation\n",
		       a, spend[a]);
		slot_free(a, spend[a])
	:: else -> skip
	fi;
#endif
	spend[a] = NIL;
	sfrom[a] = 0
}

/* frees_fn: the queued free of the moved original at a, at its home */
inline free_original(a)
{
	/* odsm_remote_free: the home's FREE, odsm_heap_free */
	if
	:: UP(pfrom[a], HOME(a)) && slot[a].st == SOBJ && pend[a] >= slot[a].gen ->
		printf("home %d: frees the original %d.%d\n", HOME(a), a, pend[a]);
		slot_free(a, pend[a])
	:: else -> skip		/* refused, down (move_free_errors) or the
				 */
	fi;
	pend[a] = NIL;
	pfrom[a] = 0;
	npend--
}

proctype Freer()
{
end:	do
	:: STEP { pend[0] != NIL -> free_original(0) }
	:: STEP { pend[1] != NIL -> free_original(1) }
	:: STEP { pend[2] != NIL -> free_original(2) }
	:: STEP { pend[3] != NIL -> free_original(3) }
	:: STEP { pend[4] != NIL -> free_original(4) }
	:: STEP { pend[5] != NIL -> free_original(5) }
	:: STEP { pend[6] != NIL -> free_original(6) }
	:: STEP { pend[7] != NIL -> free_original(7) }
	:: STEP { pend[8] != NIL -> free_original(8) }
	:: STEP { spend[6] != NIL -> free_stale(6) }
	:: STEP { spend[7] != NIL -> free_stale(7) }
	:: STEP { spend[8] != NIL -> free_stale(8) }
	od
}

init {
	atomic {
		sc_i = 0;
		do
		:: sc_i < NA ->
			slot[sc_i].ckey = NIL;
			slot[sc_i].gobj = NONE;
			pend[sc_i] = NIL;
			spend[sc_i] = NIL;
			sc_i++
		:: else -> break
		od;
		sc_i = 0;
		/* P and X on node 0, Q on node 2, all at color 0 */
		slot[0].st = SOBJ; slot[0].gobj = P; slot[0].fresh = 1;
		slot[0].field = MK(1, 0);
		slot[1].st = SOBJ; slot[1].gobj = X; slot[1].fresh = 1;
		dir_g = MK(0, 0);
		inst[P] = 0;
		inst[X] = 1;
#ifndef ONLY_PX
		slot[6].st = SOBJ; slot[6].gobj = Q; slot[6].fresh = 1;
		q_g = MK(6, 0);
		inst[Q] = 6;
#else
		q_g = NIL;
		inst[Q] = NONE;
#endif
		q_copy = NIL;
		mutby[P] = NONE; mutby[X] = NONE; mutby[Q] = NONE;
		lent[0] = NIL; lent[1] = NIL; lent[2] = NIL;
		auth[0] = 1;
		auth[1] = 1;
		run Node(0);
		run Node(1);
		run Node(2);
		run Freer()
	}
}
