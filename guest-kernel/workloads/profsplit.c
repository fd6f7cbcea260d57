/*
 * profsplit.c — a workload whose time split between two functions is known
 * by construction, for sampling profilers' ground truth.
 *
 * Each of N threads runs R rounds of ps_heavy(3 * C) then ps_light(C):
 * two leaf loops with the same body, so ps_heavy takes three quarters of
 * the time the two take together, whatever the machine. A profile of the
 * run must give ps_heavy 75 % of the samples that land in either.
 */
#include "thread.h"
#include "workload.h"

#define NOINLINE __attribute__((noinline))

NOINLINE uint32_t ps_heavy(uint32_t n);
NOINLINE uint32_t ps_light(uint32_t n);
NOINLINE void ps_thread(void *arg);

/* The loop both run: a step the compiler must keep. */
#define PS_LOOP(n, x) \
	for (uint32_t i = 0; i < (n); i++) { \
		x = x * 1103515245u + 12345u; \
		__asm__ volatile("" : "+r"(x)); \
	}

NOINLINE uint32_t ps_heavy(uint32_t n)
{
	uint32_t x = n;
	PS_LOOP(n, x);
	return x;
}

NOINLINE uint32_t ps_light(uint32_t n)
{
	uint32_t x = n;
	PS_LOOP(n, x);
	return x;
}

struct ps_job {
	uint64_t rounds, chunk;
	uint32_t sum;
} __attribute__((aligned(64)));

NOINLINE void ps_thread(void *arg)
{
	struct ps_job *j = arg;
	for (uint64_t r = 0; r < j->rounds; r++)
		j->sum += ps_heavy((uint32_t)(3 * j->chunk)) + ps_light((uint32_t)j->chunk);
}

static void run_profsplit(const uint64_t *v, struct workload_result *res)
{
	static struct ps_job jobs[THREAD_RUN_MAX];
	unsigned n = (unsigned)v[0];
	for (unsigned i = 0; i < n; i++)
		jobs[i] = (struct ps_job){ .rounds = v[1], .chunk = v[2] };
	unsigned ran = thread_run_all("profsplit", n, ps_thread, jobs, sizeof jobs[0],
				      THREAD_ANY_CPU);
	res->ok = ran == n;
	res->value = 0;
	for (unsigned i = 1; i < ran; i++)
		res->ok = res->ok && jobs[i].sum == jobs[0].sum;
	res->value = (uint64_t)ran * v[1];
}

static const struct workload_param profsplit_params[] = {
	{ "threads", 2, 1, THREAD_RUN_MAX, "threads, each running the rounds" },
	{ "rounds", 100, 1, 100000000, "rounds per thread: ps_heavy(3C), ps_light(C)" },
	{ "chunk", 10000, 1, 100000000, "C: ps_light's iterations per round" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(profsplit) = {
	"profsplit", "threads x rounds of ps_heavy(3C) then ps_light(C): a 3:1 time "
	"split; value = rounds run", profsplit_params, run_profsplit,
};
