/*
 * selftest_windows.c — sparc64 register-window self-tests.
 *
 * With 8 windows, a call chain deeper than 6 frames lives partly in
 * memory: every `save` past the last free window takes a spill trap and
 * every `restore` into a spilled window a fill trap. Recursion 1000 deep
 * must return the right sum, with about 1000 of each counted by the
 * handlers (trap_table.S). The "other" spill/fill and clean_window traps
 * never occur in a kernel without user windows, so selftest_insns.S
 * forces each by setting OTHERWIN or CLEANWIN by hand. Finally a trap
 * taken 300 frames deep is caught with trap_try, whose longjmp must leave
 * the window state consistent: CANSAVE + CANRESTORE + OTHERWIN is
 * NWINDOWS - 2 whenever no window trap is in progress (V9 5.2.10).
 */
#include "arch_sparc64.h"
#include "selftest.h"
#include "selftest_sparc64.h"
#include "trap.h"

#define RECURSION_DEPTH 1000
#define TRAP_DEPTH      300

/* n + (n-1) + ... + 0, one register window and one frame per level. The
 * volatile local keeps a value in the frame's memory as well as in %i0,
 * and stops gcc from turning the recursion into a loop. */
__attribute__((noinline, noclone)) static uint64_t sum_to(unsigned n)
{
	volatile uint64_t here = n;
	if (n == 0)
		return 0;
	uint64_t below = sum_to(n - 1);
	return here + below;
}

static unsigned nwindows(void)
{
	return (unsigned)(rdpr(ver) & 0x1f) + 1;
}

static bool window_state_consistent(void)
{
	irqflags_t flags = arch_irq_save();
	uint64_t sum = rdpr(cansave) + rdpr(canrestore) + rdpr(otherwin);
	arch_irq_restore(flags);
	return sum == nwindows() - 2;
}

static void test_recursion(void)
{
	uint64_t spills = window_spills, fills = window_fills;
	uint64_t sum = sum_to(RECURSION_DEPTH);
	uint64_t spilled = window_spills - spills, filled = window_fills - fills;
	uint64_t expect = (uint64_t)RECURSION_DEPTH * (RECURSION_DEPTH + 1) / 2;

	report(sum == expect, "recursion %u deep returns %lu (got %lu)",
	       RECURSION_DEPTH, expect, sum);
	report(spilled >= RECURSION_DEPTH - nwindows() && filled >= RECURSION_DEPTH - nwindows(),
	       "recursion %u deep: %lu spill_0_normal and %lu fill_0_normal traps",
	       RECURSION_DEPTH, spilled, filled);
	report(window_state_consistent(), "CANSAVE + CANRESTORE + OTHERWIN = NWINDOWS - 2 = %u",
	       nwindows() - 2);
}

/* Follow the saved %fp chain (after flushw, each frame's save area holds
 * its %i6) to the outermost frame, whose %fp is 0 (prom.S): its save area
 * must lie inside the boot stack, or spilling the first window would
 * overwrite whatever follows the stack. */
static void test_outermost_frame(void)
{
	uint64_t sp, frames = 0;

	__asm__ volatile("flushw\n\tmov %%sp, %0" : "=r"(sp) : : "memory");
	for (;;) {
		uint64_t fp = *(const uint64_t *)(sp + STACK_BIAS + 0x70);
		if (!fp || ++frames > 10000)
			break;
		sp = fp;
	}
	uintptr_t area = sp + STACK_BIAS;
	report(frames <= 10000 && area >= (uintptr_t)boot_stack &&
	       area + STACK_FRAME <= (uintptr_t)boot_stack_top,
	       "outermost of %lu frames has its save area 0x%lx inside the boot stack",
	       frames + 1, area);
}

static void test_forced_window_traps(void)
{
	uint64_t reclassified = 0;
	irqflags_t flags = arch_irq_save();

	uint64_t other_spills = window_spills_other;
	uint64_t sum = st_spill_other(&reclassified);
	other_spills = window_spills_other - other_spills;
	report(sum == 0xa1 + 0xa7 + 0xb1 + 0xb7 && reclassified >= 2,
	       "windows made \"other\" and flushed come back intact (sum 0x%lx)", sum);
	report(other_spills == reclassified, "%lu windows made \"other\", %lu spill_0_other traps",
	       reclassified, other_spills);

	uint64_t other_fills = window_fills_other;
	sum = st_fill_other();
	other_fills = window_fills_other - other_fills;
	report(sum == 0xc1 + 0xc7, "a window refilled as \"other\" is intact (sum 0x%lx)", sum);
	report(other_fills == 1, "one fill_0_other trap (got %lu)", other_fills);

	uint64_t cleans = window_cleans;
	uint64_t dirt = st_clean_window();
	cleans = window_cleans - cleans;
	report(cleans == 1, "save with CLEANWIN = CANRESTORE takes one clean_window trap (got %lu)",
	       cleans);
	report(dirt == 0, "clean_window zeroed the new window's %%l and %%o (OR 0x%lx)", dirt);
	report(rdpr(cleanwin) == nwindows() - 1, "CLEANWIN back to NWINDOWS - 1");

	arch_irq_restore(flags);
	report(window_state_consistent(), "window state consistent afterwards");
}

__attribute__((noinline, noclone)) static void deep_then_trap(void *arg)
{
	volatile uintptr_t depth = (uintptr_t)arg;
	if (depth == 0)
		st_illtrap(0);
	else
		deep_then_trap((void *)(depth - 1));
	depth++;     /* not a tail call: every level keeps its window */
}

static void test_longjmp_from_depth(void)
{
	volatile uint64_t canary = 0x5a5a1234;
	struct caught_trap t = { 0 };
	bool trapped = trap_try(deep_then_trap, (void *)TRAP_DEPTH, &t);

	report(trapped && t.vector == 0x10 && t.pc == (uintptr_t)st_illtrap_insn,
	       "illtrap %u frames deep caught at its TPC", TRAP_DEPTH);
	report(canary == 0x5a5a1234, "locals of the trap_try caller survive the longjmp");
	report(window_state_consistent(), "window state consistent after the longjmp");
	report(sum_to(RECURSION_DEPTH) == (uint64_t)RECURSION_DEPTH * (RECURSION_DEPTH + 1) / 2,
	       "recursion %u deep still right after the longjmp", RECURSION_DEPTH);
}

static void selftest_windows(void)
{
	report(nwindows() == 8, "%u register windows (VER.MAXWIN + 1)", nwindows());
	test_recursion();
	test_outermost_frame();
	test_forced_window_traps();
	test_longjmp_from_depth();
}
SELFTEST(320, "windows", selftest_windows);
