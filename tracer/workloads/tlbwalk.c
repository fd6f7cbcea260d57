/*
 * tlbwalk.c — a workload that evicts the TLB between calls of a small
 * traced function: the ground on which the tracer's own TLB misses show
 * (seed 003; miss_account.h).
 *
 * Each of `iters` iterations first walks `pages` pages of its own memory
 * (one load and one store on each, at an offset that changes with the
 * iteration), then calls tlbwalk_step, a small function with a loop and
 * branches for the host to probe (`branch:tlbwalk_step`, or its entry and
 * return). On sun4u the DTLB has 64 entries, so a walk of more pages than
 * that replaces the entries of whatever the tracer touched at the last
 * firing — its buffer among them — and a tracer that needs them takes the
 * misses again: the walk makes the honest worst case of a program with a
 * big working set, rather than demapping anything by hand.
 *
 * The window measured is the loop alone: the drain is held off meanwhile
 * (its records go out afterwards), and the kernel's miss counters (every
 * CPU's, summed) are read before and after it. The workload prints one line,
 *   tlbwalk own_itlb=N own_dtlb=N own_buffer=N own_served=N own_faults=N
 *           own_window=N all_itlb=N all_dtlb=N step_cycles=N calls=N
 * (what the tracer's code took — own_served: reads of execute-only pages
 * the miss handler served —, what every code took, and the cycles spent
 * inside the calls of tlbwalk_step), and checks its sum. The value is the
 * sum of tlbwalk_step's results. A second line, `tlbwalk seen 0x...`, lists
 * the pages of the tracer's last DTLB misses in the loop, newest first
 * (miss_account.h's seen[]: the pages a lock would have to cover). With xo=1, tlbwalk_step's page is
 * execute-only during the loop (seed 003's method 1; mm.h): a tracer that
 * reads its code (`trace bytes`) then faults, is served by the miss
 * handler, or reads it by physical address; and after the loop a read of
 * it from the workload itself must fault (else the run fails): the page
 * is execute-only for everyone but the tracer.
 */
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "miss_account.h"
#include "mm.h"
#include "pages.h"
#include "tracer.h"
#include "trap.h"
#include "workload.h"

__attribute__((noinline)) uint64_t tlbwalk_step(uint64_t x);

static uint64_t tlbwalk_calls;

/* A few branches of each kind a compiler makes: a counted loop, an
 * if/else on data, an early return. Aligned to 4 KiB and far shorter, it
 * lies in one page on both arches (4 and 8 KiB pages), which `xo=1` makes
 * execute-only for the loop. (8 KiB alignment would make i386's .text
 * start past the first 8 KiB of the ELF, where the multiboot header must
 * be.) */
__attribute__((noinline, aligned(4096), section(".text.tlbwalk_step")))
uint64_t tlbwalk_step(uint64_t x)
{
	uint64_t s = 0;
	tlbwalk_calls++;
	if (x == ~(uint64_t)0)
		return 0;
	for (unsigned i = 0; i < 4; i++) {
		if ((x >> i) & 1)
			s += i;
		else
			s += 1;
	}
	return s;
}

static uint64_t step_expected(uint64_t x)
{
	uint64_t s = 0;
	for (unsigned i = 0; i < 4; i++)
		s += ((x >> i) & 1) ? i : 1;
	return s;
}

/* Every CPU's counters summed (the thread may move on an SMP guest). */
static void misses_now(struct miss_cpu *sum)
{
	*sum = (struct miss_cpu){ 0 };
	for (unsigned c = 0; c < cpu_count(); c++) {
		struct miss_cpu m;
		miss_account_read(c, &m);
		sum->itlb += m.itlb;
		sum->dtlb += m.dtlb;
		sum->dtlb_data += m.dtlb_data;
		sum->faults += m.faults;
		sum->itlb_all += m.itlb_all;
		sum->dtlb_all += m.dtlb_all;
		sum->xo_served += m.xo_served;
		sum->window += m.window;
	}
}

static volatile uint32_t code_sink;

/* A data read of code, as any code but the tracer's would make one. */
static void read_code_word(void *addr)
{
	code_sink = *(const volatile uint32_t *)addr;
}

static void run_tlbwalk(const uint64_t *v, struct workload_result *res)
{
	uint64_t pages = v[0], iters = v[1];
	bool xo = v[2];
	size_t page = mm_page_size;
	volatile uint64_t *area = pages ? pages_alloc(pages) : 0;
	uint64_t sum = 0, want = 0, step_cycles = 0;
	struct miss_cpu before, after;

	res->ok = false;
	if (pages && !area) {
		kprintf("tlbwalk: no memory for %llu pages\n", (unsigned long long)pages);
		return;
	}
	tlbwalk_calls = 0;
	if (xo && !mm_exec_only(tlbwalk_step, true)) {
		kprintf("tlbwalk: this arch has no execute-only pages\n");
		if (area)
			pages_free((void *)area, pages);
		return;
	}
	tracer_drain_pause(true);
	misses_now(&before);
	for (uint64_t it = 0; it < iters; it++) {
		unsigned slot = (unsigned)(it % (page / sizeof(uint64_t)));
		for (uint64_t p = 0; p < pages; p++)
			area[p * (page / sizeof(uint64_t)) + slot] += 1;
		uint64_t t0 = arch_cycles();
		sum += tlbwalk_step(it);
		step_cycles += arch_cycles() - t0;
		want += step_expected(it);
	}
	misses_now(&after);
	struct miss_cpu last;
	miss_account_read(this_cpu()->id, &last);
	tracer_drain_pause(false);
	/* Still execute-only for anyone but the tracer: out of the TLB again
	 * (a translation served to the tracer stays there until replaced),
	 * a read from here must fault. */
	bool refused = true;
	if (xo) {
		struct caught_trap caught;
		mm_exec_only(tlbwalk_step, true);
		refused = trap_try(read_code_word, (void *)tlbwalk_step, &caught);
		mm_exec_only(tlbwalk_step, false);
		if (!refused)
			kprintf("tlbwalk: a read of execute-only code did not fault\n");
	}
	if (area)
		pages_free((void *)area, pages);

	kprintf("tlbwalk own_itlb=%llu own_dtlb=%llu own_buffer=%llu own_served=%llu "
		"own_faults=%llu own_window=%llu all_itlb=%llu all_dtlb=%llu "
		"step_cycles=%llu calls=%llu\n",
		(unsigned long long)(after.itlb - before.itlb),
		(unsigned long long)(after.dtlb - before.dtlb),
		(unsigned long long)(after.dtlb_data - before.dtlb_data),
		(unsigned long long)(after.xo_served - before.xo_served),
		(unsigned long long)(after.faults - before.faults),
		(unsigned long long)(after.window - before.window),
		(unsigned long long)(after.itlb_all - before.itlb_all),
		(unsigned long long)(after.dtlb_all - before.dtlb_all),
		(unsigned long long)step_cycles, (unsigned long long)tlbwalk_calls);
	/* The pages of the tracer's last misses in the loop, newest first. */
	kprintf("tlbwalk seen");
	uint64_t n = after.dtlb - before.dtlb;
	for (uint64_t i = 0; i < n && i < MC_SEEN_SLOTS; i++)
		kprintf(" 0x%llx", (unsigned long long)last.seen[(last.seen_n - 1 - i) % MC_SEEN_SLOTS]);
	kprintf("\n");
	res->value = sum;
	res->ok = sum == want && tlbwalk_calls == iters && refused;
	workload_expect("tlbwalk_step", tlbwalk_calls);
}

static const struct workload_param tlbwalk_params[] = {
	{ "pages", 128, 0, 1024, "pages walked between two calls" },
	{ "iters", 200, 1, 1000000, "walks, each followed by one call" },
	{ "xo", 0, 0, 1, "1: tlbwalk_step's page execute-only during the loop" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(tlbwalk) = {
	"tlbwalk", "walk `pages` pages, then call tlbwalk_step, `iters` times; "
	"prints the TLB misses the tracer took meanwhile; value = sum of the calls",
	tlbwalk_params, run_tlbwalk,
};
