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
 * 1: heap words of this partition sleep in the module; 0: they nap,
 * once the module said it has no ODSM_IOC_WAIT (an older module) or
 * when ODSM_WAIT_NAP is set in the environment (to compare the two:
 * wait_test's measurement); -1 until the first look.
 */
static int dg_kwait = -1;

/* A word the module can wait on: of this node's partition. */
static bool dg_kword(const uint32_t *w)
{
	int k = __atomic_load_n(&dg_kwait, __ATOMIC_RELAXED);

	if (k < 0) {
		k = !getenv("ODSM_WAIT_NAP");
		__atomic_store_n(&dg_kwait, k, __ATOMIC_RELAXED);
	}
	return k && odsm_is_local((uint64_t)(uintptr_t)w);
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
		__atomic_store_n(&dg_kwait, 0, __ATOMIC_RELAXED);
	return -errno;
}

/*
 * Sleep while *w == val, at most timeout_ns (0: no limit).  0 when woken
 * (the caller looks at the word again), -EAGAIN when it did not hold val,
 * -ETIMEDOUT, -EINTR; for a word that naps, 0 after the nap.
 */
int dg_futex_wait(uint32_t *w, uint32_t val, long timeout_ns)
{
	struct timespec ts = { timeout_ns / 1000000000L,
			       timeout_ns % 1000000000L };
	int ret;

	if (dg_kword(w)) {
		ret = dg_kwait_word(w, val, timeout_ns);
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

	if (dg_kword(w)) {
		if (ioctl(odsm_rt.fd, ODSM_IOC_WAKE, &wk) >= 0 ||
		    errno != ENOTTY)
			return;
		__atomic_store_n(&dg_kwait, 0, __ATOMIC_RELAXED);
	}
	syscall(SYS_futex, w, FUTEX_WAKE, n, NULL, NULL, 0);
}
