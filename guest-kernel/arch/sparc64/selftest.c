/*
 * selftest.c — sparc64 self-tests of traps and the MMU: each trap caught
 * and recovered from with the exact tt, TPC, instruction word (the
 * `illtrap` const22), fault status and fault address; the traps only
 * user mode can raise, from the one user page; read-only text enforced in
 * privileged mode; the writable alias patches code that then runs
 * patched. The register-window tests are in selftest_windows.c; the
 * probes' are the tracer's own (tracer/arch/sparc64/).
 */
#include "arch_sparc64.h"
#include "mm.h"
#include "selftest.h"
#include "selftest_sparc64.h"
#include "trap.h"

#define TT_PRIVILEGED_OPCODE     0x011
#define TT_DIVISION_BY_ZERO      0x028
#define TT_DATA_ACCESS_EXCEPTION 0x030
#define TT_MEM_ADDRESS_NOT_ALIGNED 0x034
#define TT_PRIVILEGED_ACTION     0x037
#define TT_FAST_IMMU_MISS        0x064
#define TT_FAST_DATA_PROTECTION  0x06c
#define TT_TRAP_INSTRUCTION(n)   (0x100 + (n))

/* D-SFSR bits (UltraSPARC IIi): the store bit and FT = "NFO page". */
#define SFSR_W      (1ul << 2)
#define SFSR_FT_NFO (1ul << 11)

#define CONST22(insn) ((insn) & 0x3fffff)

static struct caught_trap expect_trap(st_fn *fn, void *arg, unsigned tt,
				      const void *pc, const char *what)
{
	struct caught_trap t = { 0 };
	bool trapped = trap_try(fn, arg, &t);

	report(trapped && t.vector == tt, "%s: tt 0x%03x %s (got %s0x%03x %s)", what, tt,
	       trap_name(tt), trapped ? "" : "none, ", t.vector, trapped ? t.name : "");
	report(trapped && t.pc == (uintptr_t)pc, "%s: TPC 0x%lx (got 0x%lx)", what,
	       (uintptr_t)pc, t.pc);
	report(rdpr(pstate) & PSTATE_IE, "%s: recovered with interrupts on", what);
	return t;
}

static void expect_fault_addr(const struct caught_trap *t, uintptr_t addr,
			      const char *what)
{
	report(t->fault_addr == addr, "%s: fault address 0x%lx (got 0x%lx, D-SFSR 0x%lx)",
	       what, addr, t->fault_addr, t->error);
}

/* Run fn in user mode; it must trap, which brings us back privileged. */
static void run_user(void *fn)
{
	st_enter_user((void (*)(void))fn);
}

static void test_traps(void)
{
	struct caught_trap t;

	t = expect_trap(st_illtrap, 0, TT_ILLEGAL_INSTRUCTION, st_illtrap_insn,
			"illtrap 0x1234");
	report(t.insn == ST_ILLTRAP_CONST && CONST22(t.insn) == ST_ILLTRAP_CONST,
	       "illtrap 0x1234: word at TPC 0x%08lx, const22 0x%lx", t.insn,
	       CONST22(t.insn));
	t = expect_trap(st_illtrap_max, 0, TT_ILLEGAL_INSTRUCTION, st_illtrap_max_insn,
			"illtrap 0x3fffff");
	report(CONST22(t.insn) == 0x3fffff, "illtrap 0x3fffff: const22 0x%lx read back",
	       CONST22(t.insn));

	expect_trap(st_divzero, 0, TT_DIVISION_BY_ZERO, st_divzero_insn,
		    "udivx by zero");
	/* A Tcc traps before it completes: TPC is the ta itself. */
	expect_trap(st_ta, 0, TT_TRAP_INSTRUCTION(ST_SOFTWARE_TRAP), st_ta_insn,
		    "ta 0x70");

	/* Only unprivileged code can raise these two. */
	expect_trap(run_user, (void *)st_user_rdpr, TT_PRIVILEGED_OPCODE,
		    st_user_rdpr_insn, "user-mode rdpr %pstate");
	expect_trap(run_user, (void *)st_user_asi, TT_PRIVILEGED_ACTION,
		    st_user_asi_insn, "user-mode lduba with restricted ASI 0x15");

	static uint64_t aligned[2];
	uintptr_t odd = (uintptr_t)aligned + 4;
	t = expect_trap(st_load64, (void *)odd, TT_MEM_ADDRESS_NOT_ALIGNED,
			st_load64_insn, "ldx from a 4-byte-aligned address");
	expect_fault_addr(&t, odd, "ldx from a 4-byte-aligned address");
}

static void test_unmapped(void)
{
	uintptr_t hole = mm_unmapped_probe_addr;
	struct caught_trap t;

	/* An unmapped data page surfaces as data_access_exception through the
	 * NFO TTE the miss handler installs (trap_table.S). */
	t = expect_trap(st_load64, (void *)hole, TT_DATA_ACCESS_EXCEPTION,
			st_load64_insn, "ldx from an unmapped page");
	expect_fault_addr(&t, hole, "ldx from an unmapped page");
	report((t.error & SFSR_FT_NFO) && !(t.error & SFSR_W),
	       "ldx from an unmapped page: D-SFSR 0x%lx says NFO page, read", t.error);

	t = expect_trap(st_load_disp, (void *)hole, TT_DATA_ACCESS_EXCEPTION,
			st_load_disp_insn, "ldub [%o0 + 0x1a8]");
	expect_fault_addr(&t, hole + ST_DISP, "ldub [%o0 + 0x1a8]");

	t = expect_trap(st_load_locals, (void *)hole, TT_DATA_ACCESS_EXCEPTION,
			st_load_locals_insn, "lduw [%l3 + %l5]");
	expect_fault_addr(&t, hole + ST_DISP, "lduw [%l3 + %l5]");

	t = expect_trap(st_store8, (void *)(hole + 3), TT_DATA_ACCESS_EXCEPTION,
			st_store8_insn, "stb to an unmapped page");
	expect_fault_addr(&t, hole + 3, "stb to an unmapped page");
	report(t.error & SFSR_W, "stb to an unmapped page: D-SFSR 0x%lx says write",
	       t.error);

	t = expect_trap(st_load64, (void *)8, TT_DATA_ACCESS_EXCEPTION, st_load64_insn,
			"NULL + 8 dereference");
	expect_fault_addr(&t, 8, "NULL + 8 dereference");

	/* Instruction side: the miss handler finds no TTE and goes to C. */
	t = expect_trap((st_fn *)hole, 0, TT_FAST_IMMU_MISS, (void *)hole,
			"call to an unmapped page");
	expect_fault_addr(&t, hole, "call to an unmapped page");

	report(mm_virt_to_phys(boot_stack_guard) == (uintptr_t)-1,
	       "the boot stack's guard page is unmapped");
}

static void test_text_alias(void)
{
	uint32_t *insn = st_patch_insn;
	const uint32_t original = *insn;      /* or %g0, 1, %o0 */
	const uint32_t patched = (original & ~0x1fffu) | 2;
	struct caught_trap t;

	t = expect_trap(st_store32, insn, TT_FAST_DATA_PROTECTION, st_store32_insn,
			"st to read-only text");
	expect_fault_addr(&t, (uintptr_t)insn, "st to read-only text");
	report(t.error & SFSR_W, "st to read-only text: D-SFSR 0x%lx says write", t.error);
	report(st_patch_target() == 1 && *insn == original,
	       "text unchanged by the faulting store");

	uint32_t *alias = mm_alias_writable(insn);
	if (!report(alias != 0, "alias of a text page created"))
		return;
	report(alias != insn && mm_virt_to_phys(alias) == mm_virt_to_phys(insn),
	       "alias %p maps the same physical word 0x%lx", (void *)alias,
	       mm_virt_to_phys(insn));
	report((((uintptr_t)alias ^ (uintptr_t)insn) & PAGE_SIZE) == 0,
	       "alias has the original's D-cache colour (VA bit 13)");

	*alias = patched;
	flush_insn(insn);
	report(*insn == patched, "store through the alias is visible at the original address");
	report(st_patch_target() == 2, "patched code runs patched (returns 2)");
	*alias = original;
	flush_insn(insn);
	report(st_patch_target() == 1, "restored code runs as before (returns 1)");

	mm_alias_release(alias);
	t = expect_trap(st_load64, (void *)((uintptr_t)alias & ~7ul),
			TT_DATA_ACCESS_EXCEPTION, st_load64_insn,
			"read through a released alias");
	expect_fault_addr(&t, (uintptr_t)alias & ~7ul, "read through a released alias");
	report(mm_alias_writable((void *)mm_unmapped_probe_addr) == 0,
	       "no alias for an unmapped address");
	report(mm_virt_to_phys(insn) == (uintptr_t)insn,
	       "kernel text is identity-mapped");
}

/* The miss handlers must stay reachable however full the TLBs get: the
 * trap table's four pages are locked into the ITLB (mmu.c). Check the
 * entries themselves, push more than 64 code and data pages through the
 * TLBs — code through aliases of one text page — and check again. */
static unsigned locked_trap_table_entries(void)
{
	unsigned locked = 0;
	for (unsigned n = 0; n < TLB_ENTRIES; n++) {
		uint64_t tte = ldxa_asi(n << 3, ASI_ITLB_DATA_ACCESS);
		uintptr_t va = ldxa_asi(n << 3, ASI_ITLB_TAG_READ) & ~(PAGE_SIZE - 1);
		if ((tte & TTE_V) && (tte & TTE_L) && va >= (uintptr_t)trap_table &&
		    va < (uintptr_t)trap_table + 0x8000)
			locked++;
	}
	return locked;
}

static void test_tlb_pressure(void)
{
	enum { CODE_PAGES = 96, DATA_PAGES = 256 };
	static int (*aliases[CODE_PAGES])(void);
	unsigned ran = 0, made = 0;

	report(locked_trap_table_entries() == 4,
	       "the trap table's 4 pages are locked in the ITLB (found %u)",
	       locked_trap_table_entries());

	for (; made < CODE_PAGES; made++) {
		aliases[made] = (int (*)(void))mm_alias_writable((void *)st_patch_target);
		if (!aliases[made])
			break;
	}
	for (unsigned i = 0; i < made; i++)
		ran += aliases[i]() == 1;
	for (unsigned i = 0; i < made; i++)
		mm_alias_release((void *)aliases[i]);
	report(made == CODE_PAGES && ran == CODE_PAGES,
	       "st_patch_target runs through %u aliases, each its own ITLB page", ran);

	/* Identity-mapped RAM past the kernel (and its boot stack's guard). */
	const uintptr_t base = ((uintptr_t)__kernel_end + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	for (unsigned i = 0; i < DATA_PAGES; i++)
		(void)*(volatile uint64_t *)(base + i * PAGE_SIZE);
	report(locked_trap_table_entries() == 4,
	       "after %u code and %u data pages, the 4 locked entries are still there",
	       CODE_PAGES, DATA_PAGES);
	expect_trap(st_illtrap, 0, TT_ILLEGAL_INSTRUCTION, st_illtrap_insn,
		    "illtrap after the TLB churn");
}

static void test_mm(void)
{
	report(prom_ram_bytes >= 16ul << 20, "QEMU's reset state says %lu MiB of RAM",
	       prom_ram_bytes >> 20);
	test_unmapped();
	test_text_alias();
	test_tlb_pressure();
}

SELFTEST(300, "traps", test_traps);
SELFTEST(310, "mm", test_mm);
