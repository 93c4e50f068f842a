/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm remote execution: run a registered operation on a worker of
 * another node (spawn_on), or of the node that holds an object
 * (spawn_to), and wait for its result from any thread (join).
 *
 * Built on delegation (odsm_deleg.h): every process of the application
 * starts one runtime with launch workers in its node's partition
 * (odsm_spawn_start), publishes the address it gets (a directory word, a
 * name), and tells the library where each other node's is
 * (odsm_spawn_peer).  A spawn is an odsm_deleg_launch() to that node's
 * runtime, made by a courier thread of the caller's process, so the
 * caller gets a handle at once.  Operations are named by registered ids
 * (the same on every node), never by code pointers; arguments are bytes
 * (fat pointers, small values).
 *
 * Documentation/odsm/libodsm.rst ("Remote execution") has the rules;
 * programs.rst how to start a program on N nodes.
 *
 * Every function returns 0 (odsm_task_join: the operation's own result) or a
 * negative errno value:
 *   -ENOENT       no runtime known for that node (odsm_spawn_peer)
 *   -EINVAL       a bad node, an empty box, a NULL handle
 *   -E2BIG        argument longer than ODSM_SPAWN_ARG_MAX
 *   -EBADRQC      the node's process never registered the operation
 *   -EHOSTDOWN    task_join: the node went down (or -ETIMEDOUT: it did not
 *                 answer within the cluster's timeout; an operation must
 *                 finish within 3/4 of it)
 *   -EOWNERDEAD   task_join: the runtime's process died
 */
#ifndef ODSM_SPAWN_H
#define ODSM_SPAWN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct odsm_box;
struct odsm_deleg;

#define ODSM_SPAWN_ARG_MAX	448	/* argument bytes a spawn carries */
#define ODSM_SPAWN_RET_MAX	256	/* result bytes join can return */
#define ODSM_SPAWN_NODES	64	/* nodes the table knows */

/*
 * What a spawned operation gets as its obj argument (an odsm_deleg_fn
 * registered with odsm_deleg_register): the colored address of the
 * object spawn_to named (0 for spawn_on), which it reads through
 * odsm_borrow_field() or odsm_read() on its node, and that node's id.
 */
struct odsm_spawn_ctx {
	uint64_t obj;
	unsigned int node;
};

/*
 * Start this process's runtime: workers launch workers (1..64; they run
 * the operations other nodes spawn here) in a delegation runtime in this
 * node's partition.  *addr gets the global address to publish; every
 * process passes it to odsm_spawn_peer() for this node.  -EALREADY when
 * started.  Register the operations before.
 */
int odsm_spawn_start(unsigned int workers, uint64_t *addr);
/*
 * Node node's runtime is at addr (what odsm_spawn_start gave there).
 * Checked: -EINVAL when addr is not in node's partition or holds no
 * runtime.  This node's own is known after odsm_spawn_start.
 */
int odsm_spawn_peer(unsigned int node, uint64_t addr);
/* This process's runtime (for odsm_deleg_entrust), or NULL. */
struct odsm_deleg *odsm_spawn_runtime(void);
/* Stop it; every task must have been joined. */
void odsm_spawn_stop(void);

typedef struct odsm_task odsm_task;

/* Run op with arg_len bytes of arg on a worker of node. */
int odsm_spawn_on(unsigned int node, uint64_t op, const void *arg,
		  size_t arg_len, odsm_task **t);
/*
 * Run op on a worker of the node that holds *b's object; ctx->obj is the
 * object's colored address (b keeps the object: the owner's epoch ends,
 * as odsm_box_share() does).
 */
int odsm_spawn_to(struct odsm_box *b, uint64_t op, const void *arg,
		  size_t arg_len, odsm_task **t);
/*
 * Wait for t and free it: the operation's result, or the runtime's
 * -errno.  ret gets up to *ret_len result bytes (ret_len may be NULL for
 * none; in: room, out: bytes).  Any thread may join a task, once.
 */
int odsm_task_join(odsm_task *t, void *ret, size_t *ret_len);
/* 1 when t finished (join will not wait), 0 when not, -EINVAL. */
int odsm_task_done(const odsm_task *t);
/* The node t runs on. */
unsigned int odsm_task_node(const odsm_task *t);

#ifdef __cplusplus
}
#endif

#endif /* ODSM_SPAWN_H */
