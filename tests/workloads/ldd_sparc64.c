/*
 * ldd_sparc64.c — a sparc64 workload that touches a watched page with an
 * instruction the watch does not emulate (ldd), between two batches of
 * stores that it does. tests/test_watch.py watches the first word of
 * ldd_area: the first batch fires, the ldd stops the page's watch (the
 * page is mapped again and the ldd runs natively), the second batch
 * fires nothing, and the kernel runs on; `watch remove` says where and
 * why it stopped.
 */
#include "workload.h"

uint64_t ldd_area[4] __attribute__((aligned(32)));

static void run_lddtouch(const uint64_t *v, struct workload_result *res)
{
	volatile uint64_t *a = ldd_area;
	for (uint64_t i = 0; i < v[0]; i++)
		a[0] = i + 1;
	__asm__ volatile("ldd [%0], %%o4" : : "r"(&ldd_area[2]) : "o4", "o5", "memory");
	for (uint64_t i = 0; i < v[0]; i++)
		a[0] = i + 1000;
	res->value = a[0];
	res->ok = a[0] == v[0] + 999;
}

static const struct workload_param lddtouch_params[] = {
	{ "n", 10, 1, 1000, "stores before and after the ldd" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(lddtouch) = {
	"lddtouch", "stores, an ldd, stores, on one page (sparc64 watch test)",
	lddtouch_params, run_lddtouch,
};
