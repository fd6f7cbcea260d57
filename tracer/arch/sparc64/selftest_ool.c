/*
 * selftest_ool.c — the out-of-line path (ool.c) run against the CPU.
 *
 * ool_leaf is a leaf of words no mechanism emulates — addcc (sets icc and
 * xcc), rd %ccr (reads them), sllx, or, sethi, xor, each depending on the
 * one before — and its retl. It runs for a set of operands unprobed, then
 * with an insn probe on each of the six words (every one run from its
 * slot: TPC = slot, TNPC = site + 4), and the results must be equal, and
 * each probe must have fired once per call. A resume that skipped a word
 * (TNPC = site + 8) or re-ran one changes the result; a copy run on the
 * wrong state changes the flags read back. Probe ids 3900 and up; the
 * table is cleared at the end (the self-test is not meant to run during a
 * trace).
 */
#include <stdint.h>
#include "selftest.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

uint64_t ool_leaf(uint64_t a, uint64_t b);
extern const uint32_t ool_leaf_words[];

__asm__(
	".text\n"
	".align 4\n"
	".global ool_leaf, ool_leaf_words\n"
	".type ool_leaf, #function\n"
	"ool_leaf:\n"
	"ool_leaf_words:\n"
	"	addcc %o0, %o1, %o0\n"
	"	rd %ccr, %o1\n"
	"	sllx %o0, 8, %o2\n"
	"	or %o2, %o1, %o0\n"
	"	sethi %hi(0x5a5a5400), %o3\n"
	"	xor %o0, %o3, %o0\n"
	"	retl\n"
	"	 nop\n"
	".size ool_leaf, . - ool_leaf\n");

#define NWORDS   6
#define ID_BASE  3900u

static const uint64_t operands[][2] = {
	{ 0, 0 }, { 1, 2 }, { 0xffffffffu, 1 }, { 0x7fffffffu, 1 },
	{ 0xffffffffffffffffull, 1 }, { 0x7fffffffffffffffull, 1 },
	{ 0x8000000000000000ull, 0x8000000000000000ull }, { 12345, (uint64_t)-12345 },
};
#define NOPS (sizeof operands / sizeof operands[0])

static void selftest_ool(void)
{
	char why[WIRE_MAX_REASON];
	uint64_t want[NOPS];
	unsigned bad = 0;

	for (unsigned i = 0; i < NOPS; i++)
		want[i] = ool_leaf(operands[i][0], operands[i][1]);
	for (unsigned w = 0; w < NWORDS; w++) {
		uintptr_t a = (uintptr_t)&ool_leaf_words[w];
		if (tracer_probe_add(ID_BASE + w, a, WIRE_EVENT_INSN, 0, why, sizeof why) ||
		    tracer_probe_set(ID_BASE + w, true, why, sizeof why)) {
			report(false, "out of line: insn probe on word %u: %s", w, why);
			goto out;
		}
	}
	tracer_settle();
	for (unsigned i = 0; i < NOPS; i++) {
		uint64_t got = ool_leaf(operands[i][0], operands[i][1]);
		if (got != want[i] && bad++ < 4)
			report_info("operands 0x%llx, 0x%llx: unprobed 0x%llx, probed 0x%llx",
				    (unsigned long long)operands[i][0],
				    (unsigned long long)operands[i][1],
				    (unsigned long long)want[i], (unsigned long long)got);
	}
	for (unsigned w = 0; w < NWORDS; w++)
		tracer_probe_set(ID_BASE + w, false, why, sizeof why);
	tracer_settle();
	unsigned fired_ok = 0;
	for (unsigned w = 0; w < NWORDS; w++)
		fired_ok += tracer_probe_hits(ID_BASE + w) == NOPS;
	report(!bad && fired_ok == NWORDS, "out of line: %u words (addcc, rd %%ccr, "
	       "sllx, or, sethi, xor) each run from its slot, %u operand pairs: "
	       "results equal unprobed (%u differ), %u of %u probes fired once a call",
	       NWORDS, (unsigned)NOPS, bad, fired_ok, NWORDS);
out:
	tracer_clear();
}
SELFTEST(405, "probes", selftest_ool);
