/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A window of calls in flight: up to depth started, finished in the order
 * they were started, each in its own slot (0 .. depth - 1) of the caller's
 * array.  The chunks of a large FETCH (odsm_fetch_rest()) and the
 * FETCH_MANYs of a prefetch (odsm_ioc_prefetch()) both go out this way.
 *
 * Pure logic: the host test (selftests/host/window_test.c) runs it with
 * scripted calls.
 */
#ifndef _ODSM_WINDOW_H
#define _ODSM_WINDOW_H

#include "odsm_portable.h"

struct odsm_window_ops {
	/*
	 * Start the next call in slot; out: how many are in flight now.
	 * 1: started; 0: none to start now (the window starts more once
	 * one has finished, and ends when none is in flight); -errno: stop
	 * starting, the error is the run's.
	 */
	int (*start)(void *ctx, unsigned int slot, unsigned int out);
	/*
	 * Finish the call in slot (wait for it, use its result).  failed:
	 * the run has an error already, so its result is not to be used.
	 * A negative return is the run's error if it has none yet.
	 */
	int (*finish)(void *ctx, unsigned int slot, bool failed);
};

/*
 * Run calls until start has none left and none is in flight: 0, or the
 * first error of a start or a finish.  After an error nothing more is
 * started, and every call started is still finished.
 */
static inline int odsm_window_run(const struct odsm_window_ops *ops,
				  void *ctx, unsigned int depth)
{
	unsigned int head = 0, tail = 0, out = 0;
	int ret = 0, r;

	if (!depth)
		return -EINVAL;
	for (;;) {
		while (!ret && out < depth) {
			r = ops->start(ctx, tail, out);
			if (r < 0)
				ret = r;
			if (r <= 0)
				break;
			tail = (tail + 1) % depth;
			out++;
		}
		if (!out)
			return ret;
		r = ops->finish(ctx, head, ret != 0);
		if (r < 0 && !ret)
			ret = r;
		head = (head + 1) % depth;
		out--;
	}
}

#endif /* _ODSM_WINDOW_H */
