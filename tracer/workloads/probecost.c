/*
 * probecost.c — what one probe firing costs, every mechanism in one boot.
 *
 * A loop calls two small functions, cost_fn and cost_gn, n times each:
 * once unprobed, then with a probe on each under every mechanism the arch
 * offers, of the kind it names (tarch_cost_kind — i386: the entry, whose
 * fused prologue also takes ud2; sparc64: the ret or return, a CTI). Two
 * probes, not one, so that the shell game's re-insertion (when the *next*
 * probe fires) is part of what it costs. Per firing = (probed loop - plain
 * loop) / firings, the firings being the tracer's own count over the loop.
 * The bare trap round trip is a loop over a trap the handler resumes past
 * at once, minus the same loop with a nop. The figures go out as TEXT
 * lines `cost NAME CYCLES` (cycles per firing, in the arch cycle counter,
 * whose rate HELLO gives); the value is n. The drain thread is held off
 * during the probed loops, so the records (one a firing, into the default
 * 256 KiB buffer: 2n at n <= 5000 leaves no drop) are sent afterwards.
 */
#include "arch.h"
#include "console.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"
#include "workload.h"

__attribute__((noinline)) unsigned cost_fn(unsigned x);
__attribute__((noinline)) unsigned cost_fn(unsigned x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline)) unsigned cost_gn(unsigned x);
__attribute__((noinline)) unsigned cost_gn(unsigned x)
{
	__asm__ volatile("" ::: "memory");
	return x + 2;
}

static uint64_t loop_fn(uint64_t n)
{
	unsigned acc = 0;
	uint64_t t0 = arch_cycles();
	for (uint64_t i = 0; i < n; i++)
		acc = cost_gn(cost_fn(acc));
	uint64_t t1 = arch_cycles();
	return acc == (unsigned)(3 * n) ? t1 - t0 : 0;
}

static uint64_t loop_bare(uint64_t n, void (*fn)(void))
{
	uint64_t t0 = arch_cycles();
	for (uint64_t i = 0; i < n; i++)
		fn();
	return arch_cycles() - t0;
}

static void report(const char *name, uint64_t cycles, uint64_t base, uint64_t n)
{
	uint64_t per = cycles > base && n ? (cycles - base) / n : 0;
	kprintf("cost %s %llu\n", name, (unsigned long long)per);
}

/* A probe with id on fn, of the kind the arch measures with: its entry,
 * or its first return site. */
static int probe_fn(unsigned id, uintptr_t fn, char *why, size_t size)
{
	if (tarch_cost_kind == WIRE_EVENT_ENTRY)
		return tracer_probe_add(id, fn, WIRE_EVENT_ENTRY, 1, why, size);
	for (uintptr_t a = fn; a < fn + 64; a++)
		if (tracer_probe_add(id, a, WIRE_EVENT_RETURN, 0, why, size) == 0)
			return 0;
	return -1;
}

static void run_probecost(const uint64_t *v, struct workload_result *res)
{
	enum { ID_F = 4094, ID_G = 4095 };
	uint64_t n = v[0];
	char why[WIRE_MAX_REASON];

	res->ok = true;
	res->value = n;
	uint64_t plain = loop_fn(n);
	kprintf("cost plain_call %llu\n", (unsigned long long)(plain / (2 * n)));
	report("bare_trap", loop_bare(n, tracer_bare_trap), loop_bare(n, tracer_bare_none), n);

	for (unsigned m = 0; m < tarch_nmechanisms; m++) {
		const char *name = tarch_mechanisms[m].name;
		if (tracer_set_mechanism(name) != 0 ||
		    probe_fn(ID_F, (uintptr_t)cost_fn, why, sizeof why) != 0 ||
		    probe_fn(ID_G, (uintptr_t)cost_gn, why, sizeof why) != 0 ||
		    tracer_probe_set(ID_F, true, why, sizeof why) != 0 ||
		    tracer_probe_set(ID_G, true, why, sizeof why) != 0) {
			kprintf("cost %s refused: %s\n", name, why);
			tracer_clear();
			res->ok = false;
			continue;
		}
		tracer_settle();
		tracer_drain_pause(true);       /* time the fire path, not the UART */
		uint64_t fired = tracer_fired_count();
		uint64_t probed = loop_fn(n);
		fired = tracer_fired_count() - fired;
		tracer_drain_pause(false);
		tracer_clear();
		if (!probed)
			res->ok = false;
		report(name, probed, plain, fired);
		kprintf("firings %s %llu\n", name, (unsigned long long)fired);
	}
	tracer_set_mechanism(tarch_mechanisms[0].name);
}

static const struct workload_param probecost_params[] = {
	{ "n", 5000, 100, 5000, "firings per mechanism" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(probecost) = {
	"probecost", "cycles per probe firing for each mechanism, and the bare "
	"trap round trip; value = n", probecost_params, run_probecost,
};
