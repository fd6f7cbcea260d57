/*
 * forms.c — the sparc64 half of the `forms` workload: call each function
 * of forms.S n times, check every answer against the C model below (the
 * branch outcomes the V9 manual gives for those conditions), and report
 * the call counts (EXPECT frames).
 */
#include "arch.h"
#include "workload.h"

uint64_t fm_leaf(uint64_t x);
uint64_t fm_cti(uint64_t x);
uint64_t fm_fp(uint64_t x);

static uint64_t model_cti(uint64_t x)
{
	uint64_t acc = x;
	acc += (int32_t)x < 5 ? 1 : 2;          /* bl,a */
	acc += 4;                               /* be,pn %xcc: slot */
	if (x & 1)
		acc += 8;                       /* bne,a %icc taken */
	if (x == 0)
		acc += 16;                      /* brz,a taken */
	return acc + 3;                         /* call + two jmpl into fm_leaf */
}

static uint64_t model_fp(uint64_t x)
{
	unsigned f0 = x & 3, f1 = (x >> 2) & 3, f2 = (x >> 4) & 3, f3 = (x >> 6) & 3;
	uint64_t acc = 0;                       /* fcc: 0 E, 1 L, 2 G, 3 U */
	if (f0 == 0)
		acc += 1;                       /* fbe,a */
	acc += 2;                               /* fbul: slot */
	if (f0 != 1 && f0 != 3)
		acc += 4;                       /* fbul untaken */
	acc += f1 == 2 ? 8 : 16;                /* fbg,a %fcc1 */
	acc += 32;                              /* fbne %fcc2: slot */
	if (f2 == 0)
		acc += 64;                      /* fbne untaken */
	acc += f3 != 1 ? 128 : 256;             /* fbuge,a %fcc3 */
	return acc + 1024;                      /* fba,a skips 512; fbn runs 1024 */
}

bool arch_forms_run(uint64_t n, uint64_t *calls)
{
	bool ok = true;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t x = i % 256;           /* every fcc combination */
		ok &= fm_cti(x) == model_cti(x);
		ok &= fm_fp(x) == model_fp(x);
	}
	workload_expect("fm_cti", n);
	workload_expect("fm_fp", n);
	workload_expect("fm_leaf", 3 * n);
	*calls = 5 * n;
	return ok;
}
