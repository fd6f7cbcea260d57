/*
 * forms.c — the i386 half of the `forms` workload: call each function of
 * forms.S n times, check the answers, report the counts (EXPECT frames).
 */
#include "arch.h"
#include "workload.h"

unsigned fm_enter(unsigned a, unsigned b);
unsigned fm_nop(unsigned a);
unsigned __attribute__((stdcall)) fm_stdcall(unsigned a, unsigned b);
unsigned fm_leaf(unsigned a);

bool arch_forms_run(uint64_t n, uint64_t *calls)
{
	bool ok = true;
	for (uint64_t i = 0; i < n; i++) {
		unsigned x = (unsigned)i;
		ok &= fm_enter(x, 3) == x + 3;
		ok &= fm_nop(x) == x + 1;
		ok &= fm_stdcall(x, 5) == x + 5;
		ok &= fm_leaf(x) == 2 * x;
	}
	static const char *const names[] = { "fm_enter", "fm_nop", "fm_stdcall", "fm_leaf" };
	for (unsigned i = 0; i < 4; i++)
		workload_expect(names[i], n);
	*calls = 4 * n;
	return ok;
}
