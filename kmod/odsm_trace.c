// SPDX-License-Identifier: GPL-2.0
/* The one file that instantiates the tracepoints of odsm_trace.h. */
#define CREATE_TRACE_POINTS
#include "odsm_trace.h"
