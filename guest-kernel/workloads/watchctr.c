/*
 * watchctr.c — the watchpoints' ground truth: threads share one counter.
 *
 * Each of `threads` threads writes the counter `writes` times (one store
 * of the next value, kept in an unwatched shadow) and reads it `reads`
 * times, each inside a spinlock, so a watch that traps after the access
 * reads back the very value written or read: the values written are
 * base+1 .. base+threads*writes, once each, base being where the last run
 * left it (nothing else touches the counter). The value is the sum of
 * every value written and read; the run checks the shadow's end.
 */
#include "spinlock.h"
#include "thread.h"
#include "workload.h"

/* The watched word, its shadow and their lock, each in its own cache line
 * but all three in one 256-byte block of a section of their own, so on
 * one page: where a watch works by page (sparc64), the lock's atomics and
 * the shadow's loads and stores are accesses to the watched page outside
 * the watched range, which must be emulated without firing. */
#define WATCHCTR_DATA __attribute__((section(".data.watchctr"), aligned(64)))
volatile uint32_t watchctr_counter WATCHCTR_DATA __attribute__((aligned(256)));
static uint32_t shadow WATCHCTR_DATA;
static spinlock_t lock WATCHCTR_DATA = SPINLOCK_INIT("watchctr");

struct counter_thread {
	uint64_t writes, reads;
	uint64_t sum;          /* of the values it wrote and read */
};

static void counter_thread(void *arg)
{
	struct counter_thread *t = arg;
	uint64_t n = t->writes > t->reads ? t->writes : t->reads;
	for (uint64_t i = 0; i < n; i++) {
		if (i < t->writes) {
			irqflags_t f = spin_lock_irqsave(&lock);
			uint32_t v = ++shadow;
			watchctr_counter = v;
			spin_unlock_irqrestore(&lock, f);
			t->sum += v;
		}
		if (i < t->reads) {
			irqflags_t f = spin_lock_irqsave(&lock);
			uint32_t v = watchctr_counter;
			spin_unlock_irqrestore(&lock, f);
			t->sum += v;
		}
	}
}

static void run_watchctr(const uint64_t *v, struct workload_result *res)
{
	static struct counter_thread threads[16];
	unsigned n = (unsigned)v[0];

	/* Only the threads touch the counter: a run continues from the last
	 * run's value, read from the shadow. */
	irqflags_t f = spin_lock_irqsave(&lock);
	uint32_t base = shadow;
	spin_unlock_irqrestore(&lock, f);
	for (unsigned i = 0; i < n; i++)
		threads[i] = (struct counter_thread){ v[1], v[2], 0 };
	unsigned ran = thread_run_all("watchctr", n, counter_thread, threads,
				      sizeof threads[0], THREAD_ANY_CPU);
	uint64_t sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += threads[i].sum;
	res->ok = ran == n && shadow == base + n * v[1];
	res->value = sum;
}

static const struct workload_param watchctr_params[] = {
	{ "threads", 8, 1, 16, "threads sharing the counter" },
	{ "writes", 1000, 0, 1000000, "writes per thread" },
	{ "reads", 1000, 0, 1000000, "reads per thread" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(watchctr) = {
	"watchctr", "threads write and read one shared counter (watchpoint ground "
	"truth); value = the sum of every value written and read",
	watchctr_params, run_watchctr,
};
