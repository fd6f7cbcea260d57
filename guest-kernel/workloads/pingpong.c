/*
 * pingpong.c — context-switch rate: N threads each yield M times. The
 * result value is the number of context switches the scheduler made
 * meanwhile (all CPUs); with the cycle count and the HELLO frame's cycle
 * rate, the host turns it into switches per second.
 */
#include "thread.h"
#include "workload.h"

static void yielder(void *arg)
{
	uint64_t n = *(const uint64_t *)arg;
	while (n--)
		thread_yield();
}

static void run_pingpong(const uint64_t *v, struct workload_result *res)
{
	unsigned n = (unsigned)v[0];
	uint64_t iters = v[1], before = sched_total_switches();

	/* Stride 0: every thread reads the same count; all on cpu0. */
	unsigned ran = thread_run_all("yielder", n, yielder, &iters, 0, 0);
	res->value = sched_total_switches() - before;
	res->ok = ran == n && res->value >= n * iters;
}

static const struct workload_param pingpong_params[] = {
	{ "threads", 2, 2, 16, "yielding threads, all on cpu0" },
	{ "iters", 10000, 1, 10000000, "yields per thread" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(pingpong) = {
	"pingpong", "threads on cpu0 yield to each other; value = context switches",
	pingpong_params, run_pingpong,
};
