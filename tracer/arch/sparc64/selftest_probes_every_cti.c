/*
 * selftest_probes_every_cti.c — a branch probe on every CTI of a real
 * function, for the sparc64 probe self-test.
 *
 * tb_fn (selftest_probes.S) has loops, nested conditionals, a switch
 * through a jump table, direct, indirect and windowed calls — every
 * integer branch class, annulled and not, with no CTI in a delay slot. It
 * runs on a few inputs unprobed; then a branch probe goes on each CTI
 * found by walking its words from tb_fn to tb_end, and the same inputs
 * must give the same results (return value and histogram). Its counting
 * twin, tb_count, is the same code with a counter before each CTI: it
 * says how many CTIs the inputs execute, which is how many firings the
 * probed run must cause.
 */
#include <stdint.h>
#include "arch.h"
#include "kstring.h"
#include "selftest.h"
#include "selftest_probes.h"
#include "trap.h"
#include "tracer.h"
#include "wire.h"

extern uint64_t tb_fn(uint64_t n, uint64_t x, uint64_t *hist);
extern const uint32_t tb_fn_words[] __asm__("tb_fn");
extern const uint32_t tb_end[];
extern uint64_t tb_count(uint64_t n, uint64_t x, uint64_t *hist, uint64_t *ctis);

static const char *cti_class(uint32_t w)
{
	unsigned op = w >> 30, op2 = (w >> 22) & 7, op3 = (w >> 19) & 0x3f;
	if (op == 1)
		return "CALL";
	if (op == 2 && op3 == 0x38)
		return "JMPL";
	if (op == 2 && (op3 == 0x39 || op3 == 0x3a || op3 == 0x3e))
		return "other";         /* return, Tcc, done/retry */
	if (op != 0)
		return 0;
	switch (op2) {
	case 1: return "BPcc";
	case 2: return "Bicc";
	case 3: return "BPr";
	case 5: return "FBPfcc";
	case 6: return "FBfcc";
	}
	return 0;
}

#define TB_INPUTS 5

struct tb_result {
	uint64_t acc, hist[8];
};

struct tb_runs {
	struct tb_result res[TB_INPUTS];
};

static const struct { uint64_t n, x; } tb_inputs[TB_INPUTS] = {
	{ 0, 0x1234 },
	{ 1, 0x9e3779b97f4a7c15ull },
	{ 9, 0x2545f4914f6cdd1dull },
	{ 80, 0xdeadbeefcafef00dull },
	{ 400, 0x0123456789abcdefull },
};

static void tb_run_fn(void *arg)
{
	struct tb_runs *r = arg;
	irqflags_t f = arch_irq_save();
	for (unsigned i = 0; i < TB_INPUTS; i++) {
		memset(r->res[i].hist, 0, sizeof r->res[i].hist);
		r->res[i].acc = tb_fn(tb_inputs[i].n, tb_inputs[i].x, r->res[i].hist);
	}
	arch_irq_restore(f);
}

void dt_test_every_cti(void)
{
	static struct tb_runs plain, probed, twin;
	static const char *const classes[] = { "CALL", "JMPL", "Bicc", "BPcc", "BPr" };
	unsigned per_class[5] = { 0 }, nctis = 0, refused = 0, others = 0;
	uint64_t ctis = 0, fired0 = 0, fired1 = 0;
	struct caught_trap c;
	char why[WIRE_MAX_REASON];

	report_prefix_push("every CTI");
	if (trap_try(tb_run_fn, &plain, &c)) {
		report(false, "unprobed tb_fn trapped: %s at 0x%lx", c.name,
		       (unsigned long)c.pc);
		goto out;
	}
	for (unsigned i = 0; i < TB_INPUTS; i++) {
		uint64_t k = 0;
		memset(twin.res[i].hist, 0, sizeof twin.res[i].hist);
		twin.res[i].acc = tb_count(tb_inputs[i].n, tb_inputs[i].x,
					   twin.res[i].hist, &k);
		ctis += k;
	}
	report(memcmp(&plain, &twin, sizeof plain) == 0,
	       "the counting twin computes what tb_fn computes (%u inputs)",
	       TB_INPUTS);

	for (const uint32_t *p = tb_fn_words; p < tb_end; p++) {
		const char *cls = cti_class(*p);
		if (!cls)
			continue;
		if (strcmp(cls, "other") == 0) {
			others++;
			continue;
		}
		for (unsigned k = 0; k < 5; k++)
			if (strcmp(cls, classes[k]) == 0)
				per_class[k]++;
		if (tracer_probe_add(PROBE_ID + nctis, (uintptr_t)p, WIRE_EVENT_BRANCH,
				     0, why, sizeof why) != 0 ||
		    tracer_probe_set(PROBE_ID + nctis, true, why, sizeof why) != 0) {
			if (!refused++)
				report_info("%s at 0x%lx refused: %s", cls,
					    (unsigned long)(uintptr_t)p, why);
		}
		nctis++;
	}
	tracer_settle();
	report(refused == 0 && others == 0 && nctis > 0,
	       "a branch probe on each of the %u CTIs in tb_fn..tb_end (%u bytes): "
	       "CALL %u, JMPL %u, Bicc %u, BPcc %u, BPr %u; %u refused, %u "
	       "unprobeable", nctis, (unsigned)((tb_end - tb_fn_words) * 4),
	       per_class[0], per_class[1], per_class[2], per_class[3], per_class[4],
	       refused, others);

	fired0 = tracer_fired_count();
	bool trapped = trap_try(tb_run_fn, &probed, &c);
	fired1 = tracer_fired_count();
	tracer_clear();
	if (trapped) {
		report(false, "probed tb_fn trapped: %s (tt 0x%03x) at 0x%lx, word "
		       "0x%08lx", c.name, c.vector, (unsigned long)c.pc,
		       (unsigned long)c.insn);
		goto out;
	}
	unsigned same = 0;
	for (unsigned i = 0; i < TB_INPUTS; i++) {
		if (memcmp(&plain.res[i], &probed.res[i], sizeof plain.res[i]) == 0) {
			same++;
			continue;
		}
		report_info("input n=%lu x=0x%lx: unprobed acc 0x%lx, probed 0x%lx",
			    (unsigned long)tb_inputs[i].n, (unsigned long)tb_inputs[i].x,
			    (unsigned long)plain.res[i].acc,
			    (unsigned long)probed.res[i].acc);
	}
	report(same == TB_INPUTS, "with all %u probed, results equal unprobed "
	       "for %u/%u inputs (return value and 8 histogram words)", nctis,
	       same, TB_INPUTS);
	report(fired1 - fired0 == ctis, "%lu firings counted by the tracer, "
	       "%lu CTI executions counted by the twin",
	       (unsigned long)(fired1 - fired0), (unsigned long)ctis);
out:
	report_prefix_pop();
}
