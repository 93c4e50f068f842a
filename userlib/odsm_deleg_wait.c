// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm delegation: sleeping until a word changes, and waking those
 * that sleep on it (the slots' sequence words, a trustee's wake word, a
 * remote job's done word).
 *
 * A word in plain shared memory (odsm_deleg_arena_mem) is a shared
 * futex.  A word of the heap cannot be one: the kernel keys a shared
 * futex by its page's page-cache mapping, and the heap's pages are the
 * module's own, with none, so FUTEX_WAIT fails with EFAULT.  A word of
 * this node's partition sleeps in the module instead (ODSM_IOC_WAIT,
 * woken by ODSM_IOC_WAKE: the same protocol as a futex's).  Under a
 * module without those calls (-ENOTTY, remembered) and for a word of
 * another partition, a waiter naps, so that an idle trustee (no
 * timeout: 1 ms naps) or a client past its spinning (100 us naps) does
 * not spin on the CPU; a wakeup then comes up to a nap late.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_deleg_int.h"

#define DG_NAP_IDLE_NS	1000000L
#define DG_NAP_WAIT_NS	100000L
/*
 * The longest sleep in the module, even when the caller sets no limit:
 * a waker that stores without ODSM_IOC_WAKE (a process of the node with
 * an older libodsm, whose FUTEX_WAKE fails on heap words) is seen that
 * late, not never.  Every caller looks at its word again after a wait.
 */
#define DG_KWAIT_MAX_NS	100000000L

/*
 * 1 once the module said it has no ODSM_IOC_WAIT (an older module):
 * heap words nap, and nobody calls ODSM_IOC_WAKE.
 */
static int dg_nomod;
/*
 * 1: this process's waits on heap words nap although the module could
 * sleep them (ODSM_WAIT_NAP in the environment, to compare the two:
 * wait_test's measurement); its wakes still go to the module, for the
 * other processes' waiters.  -1 until the first look.
 */
static int dg_napenv = -1;

/* A word the module can wake: of this node's partition. */
static bool dg_kwake_ok(const uint32_t *w)
{
	return !__atomic_load_n(&dg_nomod, __ATOMIC_RELAXED) &&
	       odsm_is_local((uint64_t)(uintptr_t)w);
}

/* A word this process sleeps on in the module. */
bool dg_kwait_ok(const uint32_t *w)
{
	int nap = __atomic_load_n(&dg_napenv, __ATOMIC_RELAXED);

	if (nap < 0) {
		nap = !!getenv("ODSM_WAIT_NAP");
		__atomic_store_n(&dg_napenv, nap, __ATOMIC_RELAXED);
	}
	return !nap && dg_kwake_ok(w);
}

static void dg_nap(const uint32_t *w, uint32_t val, long timeout_ns)
{
	struct timespec nap = { 0, timeout_ns ? DG_NAP_WAIT_NS :
						DG_NAP_IDLE_NS };

	if (__atomic_load_n(w, __ATOMIC_ACQUIRE) == val)
		nanosleep(&nap, NULL);
}

/* ODSM_IOC_WAIT; -ENOTTY from an older module, then never again */
static int dg_kwait_word(uint32_t *w, uint32_t val, long timeout_ns)
{
	struct odsm_wait wt = {
		.gaddr = (uint64_t)(uintptr_t)w,
		.expect = val,
		.timeout_ns = timeout_ns > 0 ? (uint64_t)timeout_ns : 0,
		.size = sizeof(*w),
	};

	if (!ioctl(odsm_rt.fd, ODSM_IOC_WAIT, &wt))
		return 0;
	if (errno == ENOTTY)
		__atomic_store_n(&dg_nomod, 1, __ATOMIC_RELAXED);
	return -errno;
}

/*
 * Sleep while *w == val, at most timeout_ns (0: no limit).  0 when woken
 * or after DG_KWAIT_MAX_NS in the module (the caller looks at the word
 * again), -EAGAIN when it did not hold val, -ETIMEDOUT, -EINTR; for a
 * word that naps, 0 after the nap.
 */
int dg_futex_wait(uint32_t *w, uint32_t val, long timeout_ns)
{
	struct timespec ts = { timeout_ns / 1000000000L,
			       timeout_ns % 1000000000L };
	int ret;

	if (dg_kwait_ok(w)) {
		ret = dg_kwait_word(w, val, timeout_ns > 0 &&
				   timeout_ns < DG_KWAIT_MAX_NS ?
				   timeout_ns : DG_KWAIT_MAX_NS);
		/* the cap is no timeout the caller asked for */
		if (ret == -ETIMEDOUT &&
		    (timeout_ns <= 0 || timeout_ns > DG_KWAIT_MAX_NS))
			return 0;
		/* -EINVAL: not in a block that holds objects: naps */
		if (ret != -ENOTTY && ret != -EINVAL)
			return ret;
		dg_nap(w, val, timeout_ns);
		return 0;
	}
	if (!syscall(SYS_futex, w, FUTEX_WAIT, val, timeout_ns ? &ts : NULL,
		     NULL, 0))
		return 0;
	if (errno != EFAULT)
		return -errno;
	dg_nap(w, val, timeout_ns);
	return 0;
}

/* Wake up to n (INT_MAX: every) sleepers on *w, after the store to it. */
void dg_futex_wake(uint32_t *w, int n)
{
	struct odsm_wake wk = {
		.gaddr = (uint64_t)(uintptr_t)w,
		.nr = n == INT_MAX ? 0 : (uint32_t)n,
	};

	if (dg_kwake_ok(w)) {
		if (ioctl(odsm_rt.fd, ODSM_IOC_WAKE, &wk) >= 0 ||
		    errno != ENOTTY)
			return;
		__atomic_store_n(&dg_nomod, 1, __ATOMIC_RELAXED);
	}
	syscall(SYS_futex, w, FUTEX_WAKE, n, NULL, NULL, 0);
}
