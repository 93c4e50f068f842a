// SPDX-License-Identifier: GPL-2.0
/*
 * QEMU 7.2's TCG (Debian 12's qemu) leaves impossible flags after
 * CMPXCHG16B.  Its helper computes the flags other than ZF from the
 * emulated CPU's saved condition-code operation, which the translator does
 * not bring up to date before calling it (older QEMU did; 8.0 inlined the
 * instruction).  After an instruction that leaves the saved operation at
 * "flags as stored" (POPF, IRET) and an ADD, the helper returns the ADD's
 * operand as the flags: the low half of a register, bits 22-31 included,
 * which no x86 CPU sets.  An interrupt before the next flag-setting
 * instruction pushes those flags, and its IRET loads TF, NT, DF, AC from
 * them.  Linux's slab fast path uses CMPXCHG16B; the guests of 6.12 died
 * of double faults and debug traps there with flags like 1f7b6202 (the
 * low half of RDI).  So the rig gives its guests -cpu max,-cx16 (run.sh).
 *
 *   gcc -O2 -o /tmp/cx16 tools/rig/qemu-bugs/cmpxchg16b-flags.c
 *   /tmp/cx16                         # real CPU: exit 0
 *   qemu-x86_64 -cpu max /tmp/cx16    # QEMU 7.2: flags 0x1f341742, exit 1
 *
 * (qemu-x86_64 is Debian's qemu-user; it shares the translator with
 * qemu-system-x86_64.)
 */
#include <stdint.h>
#include <stdio.h>

int main(void)
{
	static unsigned __int128 mem = (unsigned __int128)2 << 64 | 1;
	unsigned long flags, first = 0, bad = 0;
	int i;

	for (i = 0; i < 1000; i++) {
		uint64_t ptr = 0xffff88801f341500ull + i * 64;
		uint64_t a = 1, d = 2, x = 5;

		__asm__ volatile("push $0x202\n\tpopf\n\t"
				 "add %[p], %[x]\n\t"
				 "lock cmpxchg16b %[m]\n\t"
				 "pushf\n\tpop %[f]\n\t"
				 : [f] "=&r"(flags), [x] "+r"(x),
				   [m] "+m"(mem),
				   "+a"(a), "+d"(d)
				 : [p] "r"(ptr), "b"(1ull), "c"(2ull)
				 : "cc", "memory");
		if (i == 0)
			first = flags;
		if (flags & ~0x3fffffUL)	/* bits 22-63 are reserved */
			bad++;
	}
	printf("flags after CMPXCHG16B: %#lx; %lu of 1000 with reserved bits set\n",
	       first, bad);
	return bad != 0;
}
