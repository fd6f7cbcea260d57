/*
 * classify.c — a user workload whose functions return from the middle:
 * ho_classify sorts values into negative, zero and positive counts with
 * early returns, so gcc -O2 leaves a `pop %ebp; ret` in the middle of the
 * function, followed by more code. Probing every return of it under the
 * ud mechanism, the two-byte ud2 fits the last ret (padding follows) but
 * not a middle one, which the guest refuses: the verdict must say that the
 * function's returns are not checked, and why, instead of calling the
 * call chain broken (tests/test_verdicts.py). `classify threads=2
 * values=100` runs the threads on whatever CPUs there are; each thread's
 * first value is -193, the rest pseudo-random in [-48, 48].
 */
#include "atomic.h"
#include "thread.h"
#include "workload.h"

struct ho_counts {
	volatile unsigned long neg, zero, pos;
	uint64_t sum;
};

#define HO_MAX_THREADS 8
static struct ho_counts counts[HO_MAX_THREADS];
static unsigned long calls;
static uint64_t per_thread_values;

/* Jump targets unaligned, so a middle `ret` is followed by code, not by
 * the padding gcc would otherwise put there. */
#define HO_PACKED __attribute__((noinline, optimize("align-jumps=1", "align-labels=1")))
HO_PACKED int ho_classify(struct ho_counts *c, int x);
HO_PACKED int ho_classify(struct ho_counts *c, int x)
{
	if (x < 0) {
		c->neg++;
		return -1;
	}
	if (x == 0) {
		c->zero++;
		return 0;
	}
	c->pos++;
	return 1;
}

__attribute__((noinline)) void ho_thread(void *arg);
__attribute__((noinline)) void ho_thread(void *arg)
{
	struct ho_counts *c = arg;
	uint32_t seed = (uint32_t)(c - counts) * 2654435761u + 1;
	for (uint64_t i = 0; i < per_thread_values; i++) {
		seed = seed * 1103515245u + 12345u;
		int x = i ? (int)(seed >> 16) % 97 - 48 : -193;   /* a known first */
		c->sum += (uint64_t)(int64_t)ho_classify(c, x);
		atomic_fetch_add(&calls, 1);
	}
}

static void run_classify(const uint64_t *v, struct workload_result *res)
{
	unsigned threads = (unsigned)v[0];
	per_thread_values = v[1];
	calls = 0;
	for (unsigned t = 0; t < HO_MAX_THREADS; t++)
		counts[t] = (struct ho_counts){ 0, 0, 0, 0 };
	unsigned ran = thread_run_all("classify", threads, ho_thread, counts,
				      sizeof counts[0], THREAD_ANY_CPU);
	uint64_t total = 0;
	for (unsigned t = 0; t < threads; t++)
		total += counts[t].neg + counts[t].zero + counts[t].pos;
	res->value = total;
	res->ok = ran == threads && total == threads * per_thread_values &&
		  calls == total;
	workload_expect("ho_classify", total);
	workload_expect("ho_thread", ran);
}

static const struct workload_param classify_params[] = {
	{ "threads", 2, 1, HO_MAX_THREADS, "threads, each classifying its own values" },
	{ "values", 100, 1, 1000000, "values per thread" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(classify) = { "classify", "early returns; value = values classified",
		       classify_params, run_classify };
