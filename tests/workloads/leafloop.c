/*
 * leafloop.c — a leaf loop that never opens a frame, beside one that does,
 * for the profile's stacks (tests/test_profile.py, docs/stacks.md).
 *
 * lf_leaf is built without a frame pointer, so on sparc64 it has no `save`
 * and runs in its caller's register window: a sample inside it finds its
 * caller only in %o7. lf_framed is the same loop with a `save` (the image's
 * flags), its caller in %i7 and %o7 stale. Each of N threads runs R rounds
 * of both from lf_thread, so a profile's stacks of either must name
 * lf_thread as the caller.
 */
#include "thread.h"
#include "workload.h"

#define NOINLINE __attribute__((noinline))
#define WINDOWLESS __attribute__((noinline, optimize("omit-frame-pointer")))

WINDOWLESS uint32_t lf_leaf(uint32_t n);
NOINLINE uint32_t lf_framed(uint32_t n);
NOINLINE void lf_thread(void *arg);

/* The loop both run: a step the compiler must keep, in few registers so
 * that lf_leaf needs none of a window's own. */
#define LF_LOOP(n, x) \
	for (uint32_t i = 0; i < (n); i++) { \
		x = x * 1103515245u + 12345u; \
		__asm__ volatile("" : "+r"(x)); \
	}

WINDOWLESS uint32_t lf_leaf(uint32_t n)
{
	uint32_t x = n;
	LF_LOOP(n, x);
	return x;
}

NOINLINE uint32_t lf_framed(uint32_t n)
{
	uint32_t x = n;
	LF_LOOP(n, x);
	return x;
}

struct lf_job {
	uint64_t rounds, chunk;
	uint32_t sum;
} __attribute__((aligned(64)));

NOINLINE void lf_thread(void *arg)
{
	struct lf_job *j = arg;
	for (uint64_t r = 0; r < j->rounds; r++)
		j->sum += lf_leaf((uint32_t)j->chunk) + lf_framed((uint32_t)j->chunk);
}

static void run_leafloop(const uint64_t *v, struct workload_result *res)
{
	static struct lf_job jobs[THREAD_RUN_MAX];
	unsigned n = (unsigned)v[0];
	for (unsigned i = 0; i < n; i++)
		jobs[i] = (struct lf_job){ .rounds = v[1], .chunk = v[2] };
	unsigned ran = thread_run_all("leafloop", n, lf_thread, jobs, sizeof jobs[0],
				      THREAD_ANY_CPU);
	res->ok = ran == n;
	res->value = ran;
}

static const struct workload_param leafloop_params[] = {
	{ "threads", 2, 1, THREAD_RUN_MAX, "threads" },
	{ "rounds", 100, 1, 100000000, "rounds per thread: lf_leaf(C), lf_framed(C)" },
	{ "chunk", 20000, 1, 100000000, "iterations per call (C)" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(leafloop) = { "leafloop", "threads x rounds of a windowless leaf loop and a "
		       "framed one", leafloop_params, run_leafloop };
