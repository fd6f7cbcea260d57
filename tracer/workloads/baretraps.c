/*
 * baretraps.c — the bare trap round trip on many threads at once: the
 * reference for how far trap-based probes can scale with vCPUs.
 *
 * Each of `threads` threads (the scheduler spreads them over the CPUs)
 * takes `traps` bare traps (tracer_bare_trap: the arch's trap instruction,
 * whose hook resumes past it at once) in a loop. QEMU's TCG raises every
 * guest exception under its one big lock, so trap round trips from several
 * vCPUs are serialised in QEMU itself; the aggregate rate of this workload
 * at 1, 2 and 4 threads is what any trap-based fire path's scaling is held
 * against (bench/suite/perf/scaling.py: probe scaling / bare-trap
 * scaling). value = the traps taken; the run's cycles give the rate.
 */
#include "thread.h"
#include "tracer.h"
#include "workload.h"

struct bt_thread {
	uint64_t traps, done;
};

static void bt_thread(void *arg)
{
	struct bt_thread *t = arg;
	for (uint64_t i = 0; i < t->traps; i++) {
		tracer_bare_trap();
		t->done++;
	}
}

static void run_baretraps(const uint64_t *v, struct workload_result *res)
{
	static struct bt_thread threads[THREAD_RUN_MAX];
	unsigned n = (unsigned)v[0];

	for (unsigned i = 0; i < n; i++)
		threads[i] = (struct bt_thread){ .traps = v[1] };
	unsigned ran = thread_run_all("baretraps", n, bt_thread, threads,
				      sizeof threads[0], THREAD_ANY_CPU);
	res->ok = ran == n;
	res->value = 0;
	for (unsigned i = 0; i < ran; i++) {
		res->ok = res->ok && threads[i].done == v[1];
		res->value += threads[i].done;
	}
}

static const struct workload_param baretraps_params[] = {
	{ "threads", 1, 1, THREAD_RUN_MAX, "threads, each taking the traps" },
	{ "traps", 100000, 1, 100000000, "bare traps per thread" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(baretraps) = {
	"baretraps", "threads x bare trap round trips (the scaling reference); "
	"value = traps taken", baretraps_params, run_baretraps,
};
