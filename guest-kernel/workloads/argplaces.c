/*
 * argplaces.c — arguments where gcc -O2 puts them, against the values
 * passed: the ground truth for reading arguments from DWARF locations
 * (bench/trace/locations.py, tracer/core/args.c).
 *
 * Each call i passes values that are closed forms of i (ap_value), so the
 * host checks every traced argument against them. ap_static is static:
 * on i386 gcc passes its three arguments in eax, edx, ecx. ap_clone is
 * always called with k = 7 and reads one field of its struct: gcc makes a
 * clone (.constprop, .isra) with the parameters it really needs, k a
 * constant. ap_unused never reads its second parameter: gcc drops it
 * (optimized out). ap_wide is external, cdecl on the stack, a 64-bit value
 * in two words. Each counts its calls; the answer is the sum of their
 * returns, checked against the same sum done here without calls.
 */
#include "workload.h"

#define AP_FN __attribute__((noinline))

struct ap_pair {
	uint32_t a, b;
};

static uint32_t ap_calls;

uint32_t ap_value(uint32_t i, uint32_t which);
AP_FN uint64_t ap_wide(uint32_t a, uint64_t w, uint32_t b);

/* Argument `which` of call i: distinct, nonzero, easy to recompute. */
uint32_t ap_value(uint32_t i, uint32_t which)
{
	return 0x1000 * (which + 1) + 3 * i + which;
}

static AP_FN uint32_t ap_static(uint32_t a, uint32_t b, uint32_t c)
{
	ap_calls++;
	return a + 2 * b + 3 * c;
}

static AP_FN uint32_t ap_clone(uint32_t k, uint32_t x, const struct ap_pair *p)
{
	ap_calls++;
	return k * x + p->a;
}

static AP_FN uint32_t ap_unused(uint32_t used, uint32_t unused)
{
	ap_calls++;
	return used ^ 0x5a5a;
}

AP_FN uint64_t ap_wide(uint32_t a, uint64_t w, uint32_t b)
{
	ap_calls++;
	return w + a + b;
}

static void run_argplaces(const uint64_t *v, struct workload_result *res)
{
	uint64_t sum = 0, want = 0;
	ap_calls = 0;
	for (uint32_t i = 0; i < v[0]; i++) {
		uint32_t a = ap_value(i, 0), b = ap_value(i, 1), c = ap_value(i, 2);
		struct ap_pair pair = { c, a };
		uint64_t w = (uint64_t)b << 32 | c;
		sum += ap_static(a, b, c);
		sum += ap_clone(7, b, &pair);
		sum += ap_unused(c, a);
		sum += ap_wide(a, w, b);
		want += (uint32_t)(a + 2 * b + 3 * c) + (uint32_t)(7 * b + c) +
			(c ^ 0x5a5a) + w + a + b;
	}
	res->value = sum;
	res->ok = sum == want && ap_calls == 4 * v[0];
	workload_expect("ap_static", v[0]);
	workload_expect("ap_wide", v[0]);
}

static const struct workload_param argplaces_params[] = {
	{ "n", 10, 1, 100000, "calls of each function" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(argplaces) = { "argplaces", "arguments where -O2 puts them, checked",
			argplaces_params, run_argplaces };
