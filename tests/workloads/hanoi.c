/*
 * hanoi.c — an example of a user's own workload for
 * `make run ARCH=i386 WORKLOAD=tests/workloads/hanoi.c`: towers of Hanoi
 * by recursion. A workload file includes workload.h, defines its functions
 * and one WORKLOAD() descriptor whose name is what `run` calls; it checks
 * its answer itself and may report ground truth for the tracer with
 * workload_expect().
 */
#include "workload.h"

static uint64_t moves_made, hanoi_calls;

__attribute__((noinline)) void hanoi_move(unsigned from, unsigned to);
__attribute__((noinline)) void hanoi_move(unsigned from, unsigned to)
{
	(void)from, (void)to;
	moves_made++;
}

__attribute__((noinline)) unsigned hanoi(unsigned n, unsigned from, unsigned to,
					 unsigned via);
__attribute__((noinline)) unsigned hanoi(unsigned n, unsigned from, unsigned to,
					 unsigned via)
{
	hanoi_calls++;
	if (n == 0)
		return 0;
	unsigned a = hanoi(n - 1, from, via, to);
	hanoi_move(from, to);
	return a + 1 + hanoi(n - 1, via, to, from);
}

static void run_hanoi(const uint64_t *v, struct workload_result *res)
{
	moves_made = hanoi_calls = 0;
	unsigned n = (unsigned)v[0];
	res->value = hanoi(n, 1, 3, 2);
	res->ok = res->value == (1ull << n) - 1 && moves_made == res->value;
	workload_expect("hanoi", hanoi_calls);
	workload_expect("hanoi_move", moves_made);
}

static const struct workload_param hanoi_params[] = {
	{ "n", 3, 0, 20, "discs" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(hanoi) = { "hanoi", "towers of Hanoi; value = moves", hanoi_params, run_hanoi };
