// SPDX-License-Identifier: GPL-2.0
/*
 * Should the operation this thread runs stop at its next step?  A thread
 * of the caller's stops on a fatal signal.  A kernel worker gets no
 * signal: a service that runs operations for a program on workers
 * (io_uring commands, odsm_uring.c) registers how to tell, from the work
 * item the worker runs, that the program went.  The loops of many round
 * trips (a READ or WRITE by pieces, a FETCH by chunks, a prefetch's
 * batches) ask before each step.  It sits below every layer, so that they
 * ask without calling up into the service that runs them.
 */
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/workqueue.h>
#include "odsm.h"

/* set at the service's init, cleared at its exit (no work runs then) */
static bool (*worker_gone)(struct work_struct *w);

void odsm_abandon_register(bool (*gone)(struct work_struct *w))
{
	WRITE_ONCE(worker_gone, gone);
}

bool odsm_abandoned(void)
{
	bool (*gone)(struct work_struct *w);

	if (fatal_signal_pending(current))
		return true;
	if (!(current->flags & PF_WQ_WORKER))
		return false;
	gone = READ_ONCE(worker_gone);
	return gone && gone(current_work());
}
