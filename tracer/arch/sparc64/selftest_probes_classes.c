/*
 * selftest_probes_classes.c — the sparc64 probe self-test's site words
 * and input states, class by class.
 *
 * Each class is a group: its site words — every condition, annul bit, cc
 * selector (icc/xcc, fcc0..3), register and target direction (near
 * forward, near backward, far) it has — each run from a set of states
 * that make the condition go every way. The states are random registers
 * (splitmix64, seeded by the word's fields and the state's number, so a
 * failure repeats) with %sp in the scratch stack, and then the input that
 * decides: all 16 icc values (xcc the complement, so that reading the
 * wrong one shows), an xcc with icc its complement, the signs a BPr
 * register can have (low words that mislead included), the four values of
 * the selected fcc with the other three fields different, and for JMPL
 * operands that sum to the target. An INFO line says what a group covered,
 * before its PASS/FAIL lines (selftest_probes_run.c).
 */
#include <stdint.h>
#include "console.h"
#include "selftest.h"
#include "selftest_probes.h"
#include "wire.h"

static uint64_t rng_state;

static uint64_t rng64(void)                  /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void random_state(struct dt_state *s, uint64_t seed)
{
	rng_state = seed;
	s->r[0] = 0;
	for (unsigned r = 1; r < 32; r++)
		s->r[r] = rng64();
	s->r[14] = dt_scratch_sp();             /* %o6: the trap frame goes below */
	s->ccr = rng64() & 0xff;
	s->fsr = 0;
	s->use_fsr = 0;
	s->pad = 0;
}

static uint64_t seed_of(const struct dt_word *w, unsigned i)
{
	return (uint64_t)w->cls << 48 ^ (uint64_t)w->cond << 40 ^
	       (uint64_t)w->annul << 36 ^ (uint64_t)w->cc << 32 ^
	       (uint64_t)w->rs1 << 24 ^ (uint64_t)w->target << 20 ^
	       (uint64_t)w->rd << 12 ^ i;
}

static struct dt_state states[MAX_STATES];

/* The other fcc fields get the three values that differ from v. */
static void fcc_fields(unsigned sel, unsigned v, unsigned fcc[4])
{
	unsigned k = 1;
	for (unsigned f = 0; f < 4; f++)
		fcc[f] = f == sel ? v : (v + k++) & 3;
}

static struct dt_word branch_word(unsigned cls, unsigned cond, unsigned annul,
				  unsigned cc, unsigned target)
{
	struct dt_word w = {
		.cls = (uint8_t)cls, .cond = (uint8_t)cond, .annul = (uint8_t)annul,
		.cc = (uint8_t)cc, .target = (uint8_t)target,
		.p = (uint8_t)((cond ^ target) & 1), .kind = WIRE_EVENT_BRANCH,
	};
	return w;
}

static void test_bicc(void)
{
	struct group g = { .name = "Bicc" };
	for (unsigned cond = 0; cond < 16; cond++)
		for (unsigned annul = 0; annul < 2; annul++)
			for (unsigned t = 0; t < NTARGETS; t++) {
				struct dt_word w = branch_word(K_BICC, cond, annul, 0, t);
				ksnprintf(w.name, sizeof w.name, "b%s%s to %s",
					  dt_icc_names[cond], annul ? ",a" : "",
					  dt_target_names[t]);
				for (unsigned v = 0; v < 16; v++) {
					random_state(&states[v], seed_of(&w, v));
					/* xcc the complement: reading it would show */
					states[v].ccr = (~v & 0xf) << 4 | v;
				}
				dt_run_word(&g, &w, states, 16);
			}
	report_info("Bicc: 16 conds x 16 icc values x 2 annul x 3 targets "
		    "(fwd, back, far); xcc = ~icc");
	dt_group_report(&g);
}

static void test_bpcc(void)
{
	struct group g = { .name = "BPcc" };
	for (unsigned cond = 0; cond < 16; cond++)
		for (unsigned cc = 0; cc <= 2; cc += 2)
			for (unsigned annul = 0; annul < 2; annul++)
				for (unsigned t = 0; t < NTARGETS; t++) {
					struct dt_word w = branch_word(K_BPCC, cond, annul, cc, t);
					ksnprintf(w.name, sizeof w.name, "b%s%s,%s %%%s to %s",
						  dt_icc_names[cond], annul ? ",a" : "",
						  w.p ? "pt" : "pn", cc ? "xcc" : "icc",
						  dt_target_names[t]);
					for (unsigned v = 0; v < 16; v++) {
						unsigned other = ~v & 0xf;
						random_state(&states[v], seed_of(&w, v));
						states[v].ccr = cc ? (v << 4 | other)
								   : (other << 4 | v);
					}
					dt_run_word(&g, &w, states, 16);
				}
	report_info("BPcc: 16 conds x {icc, xcc} x 16 values of that cc x 2 annul "
		    "x 3 targets; the other cc = ~value");
	dt_group_report(&g);
}

static void test_bpr(void)
{
	static const uint8_t regs[] = { 1, 11, 21, 26 };   /* %g1 %o3 %l5 %i2 */
	static const uint8_t rconds[] = { 1, 2, 3, 5, 6, 7 };
	static const uint64_t values[] = {
		0xffffffffffffffffull,          /* -1 */
		0x8000000000000001ull,          /* negative, low word +1 */
		0,
		0x0000000100000000ull,          /* positive, low word 0 */
		0x00000000ffffffffull,          /* positive, low word -1 */
		0x7fffffffffffffffull,
	};
	struct group g = { .name = "BPr" };
	for (unsigned c = 0; c < sizeof rconds; c++)
		for (unsigned annul = 0; annul < 2; annul++)
			for (unsigned ri = 0; ri < sizeof regs; ri++)
				for (unsigned t = 0; t < NTARGETS; t++) {
					struct dt_word w = branch_word(K_BPR, rconds[c], annul, 0, t);
					w.rs1 = regs[ri];
					w.p = (uint8_t)((annul ^ ri) & 1);
					ksnprintf(w.name, sizeof w.name, "br%s%s,%s %%%s to %s",
						  dt_rcond_names[rconds[c]], annul ? ",a" : "",
						  w.p ? "pt" : "pn", dt_reg_names[w.rs1],
						  dt_target_names[t]);
					for (unsigned v = 0; v < 6; v++) {
						random_state(&states[v], seed_of(&w, v));
						states[v].r[w.rs1] = values[v];
					}
					dt_run_word(&g, &w, states, 6);
				}
	report_info("BPr: 6 rconds x 6 values (2 negative, zero, 3 positive) x "
		    "rs1 in {%%g1, %%o3, %%l5, %%i2} x 2 annul x 3 targets");
	dt_group_report(&g);
}

static void fp_states(const struct dt_word *w, unsigned sel)
{
	for (unsigned v = 0; v < 4; v++) {
		unsigned fcc[4];
		random_state(&states[v], seed_of(w, v));
		fcc_fields(sel, v, fcc);
		states[v].fsr = dt_fsr_with(fcc);
		states[v].use_fsr = 1;
	}
}

static void test_fbfcc(void)
{
	struct group g = { .name = "FBfcc" };
	for (unsigned cond = 0; cond < 16; cond++)
		for (unsigned annul = 0; annul < 2; annul++)
			for (unsigned t = 0; t < NTARGETS; t++) {
				struct dt_word w = branch_word(K_FBFCC, cond, annul, 0, t);
				ksnprintf(w.name, sizeof w.name, "fb%s%s to %s",
					  dt_fcc_names[cond], annul ? ",a" : "",
					  dt_target_names[t]);
				fp_states(&w, 0);
				dt_run_word(&g, &w, states, 4);
			}
	report_info("FBfcc: 16 conds x 4 fcc0 values x 2 annul x 3 targets; "
		    "fcc1..3 differ from fcc0");
	dt_group_report(&g);
}

static void test_fbpfcc(void)
{
	struct group g = { .name = "FBPfcc" };
	for (unsigned cond = 0; cond < 16; cond++)
		for (unsigned cc = 0; cc < 4; cc++)
			for (unsigned annul = 0; annul < 2; annul++)
				for (unsigned t = 0; t < NTARGETS; t++) {
					struct dt_word w = branch_word(K_FBPFCC, cond, annul, cc, t);
					ksnprintf(w.name, sizeof w.name, "fb%s%s,%s %%fcc%u to %s",
						  dt_fcc_names[cond], annul ? ",a" : "",
						  w.p ? "pt" : "pn", cc, dt_target_names[t]);
					fp_states(&w, cc);
					dt_run_word(&g, &w, states, 4);
				}
	report_info("FBPfcc: 16 conds x fcc0..3 x 4 values x 2 annul x 3 targets; "
		    "the other fcc fields differ from the selected one");
	dt_group_report(&g);
}

#define JMPL_STATES 4

static void test_call(void)
{
	struct group g = { .name = "CALL" };
	for (unsigned t = 0; t < NTARGETS; t++) {
		struct dt_word w = { .cls = K_CALL, .target = (uint8_t)t,
				     .kind = WIRE_EVENT_BRANCH };
		ksnprintf(w.name, sizeof w.name, "call to %s", dt_target_names[t]);
		for (unsigned i = 0; i < JMPL_STATES; i++)
			random_state(&states[i], seed_of(&w, i));
		dt_run_word(&g, &w, states, JMPL_STATES);
	}
	report_info("CALL: 3 targets x %u register states", JMPL_STATES);
	dt_group_report(&g);
}

static const struct jform {
	const char *name;
	uint8_t rd, rs1, rs2, imm;
	int16_t simm13;
	uint8_t kind;
} jforms[] = {
	{ "jmpl %g1 + %g2, %o7", 15, 1, 2, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %o3 + %o5, %g0", 0, 11, 13, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %l1 + %i3, %g3", 3, 17, 27, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %g1 + %g0, %o7 (call %g1)", 15, 1, 0, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %i6 + %i4, %i7", 31, 30, 28, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %o2 - 12, %o7", 15, 10, 0, 1, -12, WIRE_EVENT_BRANCH },
	{ "jmpl %l4 + 100, %l6", 22, 20, 0, 1, 100, WIRE_EVENT_BRANCH },
	{ "jmpl %i5 - 4096, %i2", 26, 29, 0, 1, -4096, WIRE_EVENT_BRANCH },
	{ "jmpl %g5 + 4092, %i0", 24, 5, 0, 1, 4092, WIRE_EVENT_BRANCH },
	{ "ret", 0, 31, 0, 1, 8, WIRE_EVENT_BRANCH },
	{ "retl", 0, 15, 0, 1, 8, WIRE_EVENT_BRANCH },
	{ "ret (return probe)", 0, 31, 0, 1, 8, WIRE_EVENT_RETURN },
	{ "retl (return probe)", 0, 15, 0, 1, 8, WIRE_EVENT_RETURN },
	{ "jmpl %l2 + 8, %l2 (rd = rs1)", 18, 18, 0, 1, 8, WIRE_EVENT_BRANCH },
	{ "jmpl %o7 + 8, %o7 (rd = rs1)", 15, 15, 0, 1, 8, WIRE_EVENT_BRANCH },
	{ "jmpl %l0 + %l7, %l7 (rd = rs2)", 23, 16, 23, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %i3 + %i3, %i3 (rd = rs1 = rs2)", 27, 27, 27, 0, 0,
	  WIRE_EVENT_BRANCH },
};

static void test_jmpl(void)
{
	struct group g = { .name = "JMPL" };
	for (unsigned f = 0; f < sizeof jforms / sizeof jforms[0]; f++) {
		const struct jform *j = &jforms[f];
		for (unsigned t = 0; t < NTARGETS; t++) {
			struct dt_word w = {
				.cls = K_JMPL, .rd = j->rd, .rs1 = j->rs1, .rs2 = j->rs2,
				.imm = j->imm, .simm13 = j->simm13, .target = (uint8_t)t,
				.kind = j->kind, .cond = (uint8_t)f,
			};
			uint64_t to = dt_target_addr(t);
			ksnprintf(w.name, sizeof w.name, "%s to %s", j->name,
				  dt_target_names[t]);
			for (unsigned i = 0; i < JMPL_STATES; i++) {
				struct dt_state *s = &states[i];
				random_state(s, seed_of(&w, i));
				if (j->imm)
					s->r[j->rs1] = to - (uint64_t)(int64_t)j->simm13;
				else if (j->rs1 == j->rs2)   /* 2v = to, mod 2^64 */
					s->r[j->rs1] = to / 2 + (i & 1 ? 1ull << 63 : 0);
				else if (j->rs2 == 0)
					s->r[j->rs1] = to;
				else
					s->r[j->rs1] = to - s->r[j->rs2];
			}
			dt_run_word(&g, &w, states, JMPL_STATES);
		}
	}
	report_info("JMPL: %u forms (reg+reg, reg+imm, ret, retl, rd = %%l/%%i, "
		    "rd = rs1) x 3 targets x %u register states",
		    (unsigned)(sizeof jforms / sizeof jforms[0]), JMPL_STATES);
	dt_group_report(&g);
}

void dt_test_classes(void)
{
	test_bicc();
	test_bpcc();
	test_bpr();
	test_fbfcc();
	test_fbpfcc();
	test_call();
	test_jmpl();
}
