/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Include the kernel's kselftest harness in a host unit test built with
 * -Wall -Wextra -Werror.  The harness (tools/testing/selftests of 6.1) is
 * only -Wall clean: its TEST() wrappers and timeout handler have unused
 * parameters, so that one warning is off for the whole test file (the
 * wrappers are expanded at every TEST(), not inside the header).
 */
#ifndef _ODSM_KSFT_HOST_H
#define _ODSM_KSFT_HOST_H

#pragma GCC diagnostic ignored "-Wunused-parameter"

#include "kselftest_harness.h"

#endif /* _ODSM_KSFT_HOST_H */
