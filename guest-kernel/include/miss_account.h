/*
 * miss_account.h — counting the TLB misses and faults one client's code
 * takes (seed 003: a tracer that causes interrupts of its own perturbs
 * the program it traces; counting them makes that visible).
 *
 * A client registers one code range (its text) and, per CPU, one data
 * range (e.g. its trace buffer). The arch then counts, per CPU, every
 * trap whose trapping PC lies in the code range: instruction-TLB misses,
 * data-TLB misses (and, of those, the ones whose address lies in that
 * CPU's data range), register-window spills and fills (sparc64: the
 * calls of the client's code ran out of windows), and any other
 * synchronous fault. Beside them it counts every TLB miss whatever took
 * it, so a run can show that misses happened at all. On sun4u every TLB miss is a software trap of our own
 * (trap_table.S), so every count is exact; an arch whose TLB is refilled
 * by hardware (i386) sees no misses and counts faults only
 * (miss_account_tlb_visible says which).
 *
 * The miss handlers read the ranges and bump the counters with physical
 * loads and stores, so the struct lives in identity-mapped memory and its
 * layout is fixed: MA_* below are its offsets for assembly, checked
 * against the C struct in miss_account.c. The cost on every miss is a
 * compare and an increment (about a dozen instructions); a miss the client
 * took costs another increment, its page's entry in seen[] and the data
 * range's compare.
 *
 * The DTLB handler also keeps the pages of the client's last
 * MC_SEEN_SLOTS misses (seen[], seen_n of them so far), so the client can
 * tell which of its pages the misses were on (and lock them, mm.h).
 *
 * The kernel never names the client: the tracer registers its own text
 * and its buffers (tracer/core/probe.c, buffer.c).
 */
#ifndef MISS_ACCOUNT_H
#define MISS_ACCOUNT_H

/* struct miss_account: the code range, then one struct miss_cpu per CPU. */
#define MA_CODE_LO     0x00
#define MA_CODE_LEN    0x08      /* 0: nothing registered, nothing counted */
#define MA_SERVE_XO    0x10      /* 1: serve the code range's reads of
				    execute-only pages (miss_account_serve_xo) */
#define MA_CPU0        0x20
#define MA_CPU_SIZE    0xe8
/* struct miss_cpu */
#define MC_DATA_LO     0x00
#define MC_DATA_LEN    0x08
#define MC_ITLB        0x10      /* ITLB misses at a PC in the code range */
#define MC_DTLB        0x18      /* DTLB misses at a PC in the code range */
#define MC_DTLB_DATA   0x20      /* of those, on an address in the data range */
#define MC_FAULTS      0x28      /* other synchronous traps at such a PC */
#define MC_ITLB_ALL    0x30      /* every ITLB miss, whoever took it */
#define MC_DTLB_ALL    0x38      /* every DTLB miss, whoever took it */
#define MC_XO_SERVED   0x40      /* of MC_DTLB, reads of execute-only pages served */
#define MC_SEEN_N      0x48      /* pages written into MC_SEEN so far */
#define MC_SEEN        0x50      /* the last MC_SEEN_SLOTS pages of MC_DTLB misses */
#define MC_SEEN_SLOTS  16
#define MC_WINDOW      0xd0      /* register-window spills and fills at such a PC */
#define MC_FAULT_PF    0xd8      /* of MC_FAULTS, page faults (i386 #PF) */
#define MC_FAULT_GP    0xe0      /* of MC_FAULTS, protection faults (i386 #GP) */

#ifndef __ASSEMBLY__
#include <stdbool.h>
#include <stdint.h>
#include "arch.h"                /* KERNEL_MAX_CPUS */

struct miss_cpu {
	uint64_t data_lo, data_len;
	uint64_t itlb, dtlb, dtlb_data, faults;
	uint64_t itlb_all, dtlb_all;
	uint64_t xo_served;
	uint64_t seen_n, seen[MC_SEEN_SLOTS];
	uint64_t window;
	uint64_t fault_pf, fault_gp;
};

struct miss_account {
	uint64_t code_lo, code_len;
	uint64_t serve_xo, reserved;
	struct miss_cpu cpu[KERNEL_MAX_CPUS];
};
extern struct miss_account miss_account;

/* The code range [lo, hi) whose misses and faults are counted. */
void miss_account_code(uintptr_t lo, uintptr_t hi);
/* cpu's data range [lo, hi); lo == hi: none. */
void miss_account_data(unsigned cpu, uintptr_t lo, uintptr_t hi);
/* A copy of cpu's counters. */
void miss_account_read(unsigned cpu, struct miss_cpu *out);
/* Zero every CPU's counters (the ranges stay). */
void miss_account_reset(void);
/* Seed 003's Fig. 2, the page-fault-handler extension: with on, a data
 * access from the code range to an execute-only page (mm.h) is served —
 * the DTLB miss handler loads the page's translation and counts it in
 * xo_served — instead of faulting as anyone else's does. */
void miss_account_serve_xo(bool on);
/* The kinds of fault a dispatch tells apart (the rest are `other`). */
enum miss_fault_kind { MISS_FAULT_OTHER, MISS_FAULT_PAGE, MISS_FAULT_PROTECTION };
/* For the arch's trap dispatch: a synchronous trap other than a TLB miss,
 * of that kind, was taken at pc on cpu. Inline, so that every trap of
 * code outside the range (a probe's above all) pays a compare and no
 * call; one from inside it is counted out of line. */
void miss_account_fault_counted(unsigned cpu, enum miss_fault_kind kind);
static inline void miss_account_fault(unsigned cpu, uintptr_t pc,
				      enum miss_fault_kind kind)
{
	if (pc - miss_account.code_lo < miss_account.code_len)
		miss_account_fault_counted(cpu, kind);
}
/* True if the arch's TLB misses are software traps that it counts. */
extern const bool miss_account_tlb_visible;
#endif

#endif
