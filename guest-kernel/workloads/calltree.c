/*
 * calltree.c — N threads x M iterations over a small tree of functions.
 *
 * The functions take arguments and return values, one recurses, and every
 * call bumps a counter in its thread's own record, which is the ground
 * truth a tracer's event counts are checked against. Per iteration at
 * depth D the calls are exactly: ct_root 1, ct_rec D+1, ct_mid 2,
 * ct_add D+2, ct_mul 2. The run checks each thread's counts against that
 * and each thread's checksum against the same sum computed by this thread
 * alone; the result value is the total number of calls of the threads.
 * The counts, the reference run's included, go to the host as EXPECT
 * frames: what a tracer of these functions must have seen.
 *
 * ref=0 leaves the reference run out: the threads' checksums must then
 * all be equal (each computes the same sum). Scaling measurements use it:
 * the reference run is one thread's work done alone, inside the run's
 * cycles, which would cap any rate's 2-thread/1-thread ratio at 3/2.
 * Each thread's record is a cache line of its own: records sharing a
 * line that two threads write on every call took calltree's 2-thread/
 * 1-thread ratio from 1.87 to 1.07 under QEMU (`make bench`'s scaling).
 *
 * spread=1 pins thread i to CPU i mod the CPU count, so every CPU runs
 * some of the tree however late the host schedules its vCPU (the
 * scheduler would otherwise let one CPU steal a short run's threads).
 */
#include "thread.h"
#include "workload.h"

struct ct_counts {
	uint64_t root, rec, mid, add, mul;
	uint32_t checksum;
	uint64_t iters, depth;
} __attribute__((aligned(64)));

#define NOINLINE __attribute__((noinline))

NOINLINE uint32_t ct_add(struct ct_counts *c, uint32_t a, uint32_t b);
NOINLINE uint32_t ct_mul(struct ct_counts *c, uint32_t a, uint32_t b);
NOINLINE uint32_t ct_mid(struct ct_counts *c, uint32_t x);
NOINLINE uint32_t ct_rec(struct ct_counts *c, uint32_t depth, uint32_t x);
NOINLINE uint32_t ct_root(struct ct_counts *c, uint32_t i, uint32_t depth);

NOINLINE uint32_t ct_add(struct ct_counts *c, uint32_t a, uint32_t b)
{
	c->add++;
	return a + b;
}

NOINLINE uint32_t ct_mul(struct ct_counts *c, uint32_t a, uint32_t b)
{
	c->mul++;
	return a * b + 1;
}

NOINLINE uint32_t ct_mid(struct ct_counts *c, uint32_t x)
{
	c->mid++;
	return ct_add(c, x, 1) ^ ct_mul(c, x, 3);
}

NOINLINE uint32_t ct_rec(struct ct_counts *c, uint32_t depth, uint32_t x)
{
	c->rec++;
	if (depth == 0)
		return ct_mid(c, x);
	return ct_rec(c, depth - 1, x + 1) + ct_add(c, depth, x);
}

NOINLINE uint32_t ct_root(struct ct_counts *c, uint32_t i, uint32_t depth)
{
	c->root++;
	return ct_mid(c, i) + ct_rec(c, depth, i);
}

NOINLINE void ct_thread(void *arg);
NOINLINE void ct_thread(void *arg)
{
	struct ct_counts *c = arg;
	for (uint64_t i = 0; i < c->iters; i++)
		c->checksum += ct_root(c, (uint32_t)i, (uint32_t)c->depth);
}

static bool ct_counts_ok(const struct ct_counts *c)
{
	uint64_t m = c->iters, d = c->depth;
	return c->root == m && c->rec == m * (d + 1) && c->mid == 2 * m &&
	       c->add == m * (d + 2) && c->mul == 2 * m;
}

#define CT_MAX_THREADS THREAD_RUN_MAX

static void run_calltree(const uint64_t *v, struct workload_result *res)
{
	static struct ct_counts counts[CT_MAX_THREADS];
	unsigned n = (unsigned)v[0];

	bool alone = v[3];
	struct ct_counts ref = { .iters = v[1], .depth = v[2] };
	if (alone)
		ct_thread(&ref);              /* this thread alone: the answer */

	for (unsigned i = 0; i < n; i++)
		counts[i] = (struct ct_counts){ .iters = v[1], .depth = v[2] };
	unsigned ran = thread_run_all("calltree", n, ct_thread, counts,
				      sizeof counts[0],
				      v[4] ? THREAD_SPREAD : THREAD_ANY_CPU);
	res->ok = ran == n && (!alone || ct_counts_ok(&ref));
	res->value = 0;
	struct ct_counts all = ref;     /* the reference run is traced too (0s if none) */
	uint32_t want = alone ? ref.checksum : counts[0].checksum;
	for (unsigned i = 0; i < ran; i++) {
		res->ok = res->ok && ct_counts_ok(&counts[i]) &&
			  counts[i].checksum == want;
		res->value += counts[i].root + counts[i].rec + counts[i].mid +
			      counts[i].add + counts[i].mul;
		all.root += counts[i].root;
		all.rec += counts[i].rec;
		all.mid += counts[i].mid;
		all.add += counts[i].add;
		all.mul += counts[i].mul;
	}
	workload_expect("ct_root", all.root);
	workload_expect("ct_rec", all.rec);
	workload_expect("ct_mid", all.mid);
	workload_expect("ct_add", all.add);
	workload_expect("ct_mul", all.mul);
	workload_expect("ct_thread", ran + alone);
}

static const struct workload_param calltree_params[] = {
	{ "threads", 4, 1, CT_MAX_THREADS, "threads, each running the whole tree" },
	{ "iters", 1000, 1, 100000000, "iterations per thread" },
	{ "depth", 4, 0, 64, "recursion depth of ct_rec" },
	{ "ref", 1, 0, 1, "1: first run the tree alone, the answer the threads must give" },
	{ "spread", 0, 0, 1, "1: thread i pinned to CPU i mod the CPU count (0: the scheduler places them)" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(calltree) = {
	"calltree", "threads x iterations over ct_root/ct_mid/ct_rec/ct_add/ct_mul; "
	"value = total calls", calltree_params, run_calltree,
};
