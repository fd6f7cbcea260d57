/*
 * miss_account.c — the ranges and counters of miss_account.h.
 *
 * The arch's TLB miss handlers update this struct themselves with
 * physical accesses (sparc64: trap_table.S); C registers the ranges,
 * counts the other faults from the trap dispatch and reads the counters.
 * A range is written length last, after a zero length has switched the
 * old one off, so a miss handler running meanwhile sees the old range,
 * none, or the new one, never half of one.
 */
#include <stddef.h>
#include "miss_account.h"
#include "cpu.h"
#include "notrace.h"

struct miss_account miss_account __attribute__((aligned(64)));

_Static_assert(offsetof(struct miss_account, code_lo) == MA_CODE_LO, "MA_CODE_LO");
_Static_assert(offsetof(struct miss_account, code_len) == MA_CODE_LEN, "MA_CODE_LEN");
_Static_assert(offsetof(struct miss_account, serve_xo) == MA_SERVE_XO, "MA_SERVE_XO");
_Static_assert(offsetof(struct miss_account, cpu) == MA_CPU0, "MA_CPU0");
_Static_assert(offsetof(struct miss_cpu, xo_served) == MC_XO_SERVED, "MC_XO_SERVED");
_Static_assert(offsetof(struct miss_cpu, seen_n) == MC_SEEN_N, "MC_SEEN_N");
_Static_assert(offsetof(struct miss_cpu, seen) == MC_SEEN, "MC_SEEN");
_Static_assert(offsetof(struct miss_cpu, window) == MC_WINDOW, "MC_WINDOW");
_Static_assert(offsetof(struct miss_cpu, fault_pf) == MC_FAULT_PF, "MC_FAULT_PF");
_Static_assert(offsetof(struct miss_cpu, fault_gp) == MC_FAULT_GP, "MC_FAULT_GP");
_Static_assert(sizeof(struct miss_cpu) == MA_CPU_SIZE, "MA_CPU_SIZE");
_Static_assert(offsetof(struct miss_cpu, data_lo) == MC_DATA_LO, "MC_DATA_LO");
_Static_assert(offsetof(struct miss_cpu, data_len) == MC_DATA_LEN, "MC_DATA_LEN");
_Static_assert(offsetof(struct miss_cpu, itlb) == MC_ITLB, "MC_ITLB");
_Static_assert(offsetof(struct miss_cpu, dtlb) == MC_DTLB, "MC_DTLB");
_Static_assert(offsetof(struct miss_cpu, dtlb_data) == MC_DTLB_DATA, "MC_DTLB_DATA");
_Static_assert(offsetof(struct miss_cpu, faults) == MC_FAULTS, "MC_FAULTS");
_Static_assert(offsetof(struct miss_cpu, itlb_all) == MC_ITLB_ALL, "MC_ITLB_ALL");
_Static_assert(offsetof(struct miss_cpu, dtlb_all) == MC_DTLB_ALL, "MC_DTLB_ALL");

#define store_barrier() __asm__ volatile("" ::: "memory")

void miss_account_code(uintptr_t lo, uintptr_t hi)
{
	miss_account.code_len = 0;
	store_barrier();
	miss_account.code_lo = lo;
	store_barrier();
	miss_account.code_len = hi > lo ? hi - lo : 0;
}

void miss_account_data(unsigned cpu, uintptr_t lo, uintptr_t hi)
{
	if (cpu >= KERNEL_MAX_CPUS)
		return;
	struct miss_cpu *c = &miss_account.cpu[cpu];
	c->data_len = 0;
	store_barrier();
	c->data_lo = lo;
	store_barrier();
	c->data_len = hi > lo ? hi - lo : 0;
}

void miss_account_read(unsigned cpu, struct miss_cpu *out)
{
	*out = (struct miss_cpu){ 0 };
	if (cpu < KERNEL_MAX_CPUS)
		*out = *(volatile struct miss_cpu *)&miss_account.cpu[cpu];
}

void miss_account_reset(void)
{
	for (unsigned c = 0; c < KERNEL_MAX_CPUS; c++) {
		struct miss_cpu *m = &miss_account.cpu[c];
		m->itlb = m->dtlb = m->dtlb_data = m->faults = 0;
		m->itlb_all = m->dtlb_all = 0;
		m->xo_served = 0;
		m->window = 0;
		m->fault_pf = m->fault_gp = 0;
	}
}

void miss_account_serve_xo(bool on)
{
	miss_account.serve_xo = on;
}

NOTRACE void miss_account_fault_counted(unsigned cpu, enum miss_fault_kind kind)
{
	if (cpu >= KERNEL_MAX_CPUS)
		return;
	struct miss_cpu *c = &miss_account.cpu[cpu];
	c->faults++;
	if (kind == MISS_FAULT_PAGE)
		c->fault_pf++;
	else if (kind == MISS_FAULT_PROTECTION)
		c->fault_gp++;
}
