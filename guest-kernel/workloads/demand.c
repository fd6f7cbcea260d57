/*
 * demand.c — a workload whose code is paged in on demand: the ground on
 * which a tracer that reads the instruction about to run takes faults of
 * its own, and one that reads the instruction that just ran does not
 * (seed 003's method 4 against its alternative; mm.h's mm_demand).
 *
 * Each of `iters` iterations first evicts demand_step's page (evict=1:
 * not present, as a pager short of memory would leave it), then calls
 * demand_call, which calls demand_step. demand_step lies alone at the
 * start of its own 4 KiB-aligned page, demand_call elsewhere, so the first
 * touch of that page after each eviction is the call's transfer into it:
 * the traced thread's instruction fetch (the kernel serves the #PF and the
 * fetch is retried) — unless a single-stepping tracer read the code there
 * first, at the #DB after the call, in which case the #PF is the
 * tracer's. The kernel's fault counters (miss_account.h: by kind, at a
 * client's PC) are read around the loop, every CPU's summed:
 *   demand evicted=N served=N own_pf=N own_gp=N own_faults=N
 * served is how many of those faults the kernel served (each eviction's
 * first touch: on one CPU, exactly one each); own_* the tracer's. The value
 * is the sum of demand_step's results, checked; the host probes
 * demand_call (`bench itrace --table`). Where the arch has no demand
 * paging (sun4u) evict=1 is refused and evict=0 runs the same loop.
 */
#include "console.h"
#include "cpu.h"
#include "miss_account.h"
#include "mm.h"
#include "workload.h"

static uint64_t demand_calls;

/* Alone at its page's start (4 KiB-aligned, far shorter than a page; see
 * tracer/workloads/tlbwalk.c for why 8 KiB would not do on i386). */
__attribute__((noinline, aligned(4096), section(".text.demand_step")))
uint64_t demand_step(uint64_t x)
{
	uint64_t s = 0;
	demand_calls++;
	for (unsigned i = 0; i < 3; i++)
		s += ((x >> i) & 1) ? i + 2 : 1;
	return s;
}

/* The traced function: a call into the evicted page and back. */
__attribute__((noinline)) uint64_t demand_call(uint64_t x)
{
	uint64_t r = demand_step(x);
	return r + 1;
}

static uint64_t demand_expected(uint64_t x)
{
	uint64_t s = 0;
	for (unsigned i = 0; i < 3; i++)
		s += ((x >> i) & 1) ? i + 2 : 1;
	return s + 1;
}

static void faults_now(uint64_t out[3])
{
	out[0] = out[1] = out[2] = 0;
	for (unsigned c = 0; c < cpu_count(); c++) {
		struct miss_cpu m;
		miss_account_read(c, &m);
		out[0] += m.fault_pf;
		out[1] += m.fault_gp;
		out[2] += m.faults;
	}
}

static void run_demand(const uint64_t *v, struct workload_result *res)
{
	uint64_t iters = v[0], sum = 0, want = 0, evicted = 0;
	bool evict = v[1];
	uint64_t before[3], after[3];
	unsigned long served0 = mm_demand_served;

	res->ok = false;
	demand_calls = 0;
	if (evict && !mm_demand(demand_step, false)) {
		kprintf("demand: this arch pages no code in on demand\n");
		return;
	}
	faults_now(before);
	for (uint64_t it = 0; it < iters; it++) {
		if (evict && mm_demand(demand_step, true))
			evicted++;
		sum += demand_call(it);
		want += demand_expected(it);
	}
	faults_now(after);
	if (evict)
		mm_demand(demand_step, false);
	unsigned long served = mm_demand_served - served0;
	kprintf("demand evicted=%llu served=%lu own_pf=%llu own_gp=%llu own_faults=%llu\n",
		(unsigned long long)evicted, served,
		(unsigned long long)(after[0] - before[0]),
		(unsigned long long)(after[1] - before[1]),
		(unsigned long long)(after[2] - before[2]));
	res->value = sum;
	res->ok = sum == want && demand_calls == iters && evicted == (evict ? iters : 0) &&
		  served <= evicted;
	workload_expect("demand_call", demand_calls);
}

static const struct workload_param demand_params[] = {
	{ "iters", 100, 1, 1000000, "calls, each after an eviction" },
	{ "evict", 1, 0, 1, "1: demand_step's page is made not present before each call" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(demand) = {
	"demand", "evict demand_step's page, then call it through demand_call, "
	"`iters` times; prints the faults served and the tracer's own; value = "
	"sum of the calls + 1 each",
	demand_params, run_demand,
};
