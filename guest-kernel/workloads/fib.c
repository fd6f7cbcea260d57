/*
 * fib.c — the call-heavy recursive workload: fib(n) by naive recursion,
 * checked against the iterative answer. Built with frame pointers and kept
 * out of line so every call has a real prologue and epilogue to probe (and
 * -fno-optimize-sibling-calls, so gcc does not turn the second recursion
 * into a loop). fib counts its own calls: the ground truth for tracing.
 */
#include "workload.h"

__attribute__((noinline)) uint64_t fib(unsigned n);

static uint64_t fib_calls;

__attribute__((noinline)) uint64_t fib(unsigned n)
{
	fib_calls++;
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static uint64_t fib_iterative(unsigned n)
{
	uint64_t a = 0, b = 1;
	while (n--) {
		uint64_t t = a + b;
		a = b;
		b = t;
	}
	return a;
}

static void run_fib(const uint64_t *v, struct workload_result *res)
{
	fib_calls = 0;
	res->value = fib((unsigned)v[0]);
	/* Naive recursion calls fib 2 * fib(n + 1) - 1 times. */
	res->ok = res->value == fib_iterative((unsigned)v[0]) &&
		  fib_calls == 2 * fib_iterative((unsigned)v[0] + 1) - 1;
	workload_expect("fib", fib_calls);
}

static const struct workload_param fib_params[] = {
	{ "n", 20, 0, 40, "argument of fib" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(fib) = { "fib", "naive recursive fib(n), checked iteratively", fib_params, run_fib };
