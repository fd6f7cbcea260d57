/*
 * selftest.c — i386 self-tests: exceptions caught and recovered from with
 * the exact EIP, error code and CR2; read-only text enforced in ring 0; the
 * writable alias patches code that then runs patched.
 */
#include "arch_i386.h"
#include "mm.h"
#include "selftest.h"
#include "trap.h"
#include "vectors.h"
#include "x86.h"

extern void st_divide(void *), st_invalid_opcode(void *), st_breakpoint(void *),
	st_bad_selector(void *);
extern char st_divide_insn[], st_breakpoint_next[], st_bad_selector_insn[];
extern int st_patch_target(void);

#define PF_PRESENT 0x1
#define PF_WRITE   0x2

static void expect_trap(void (*fn)(void *), void *arg, unsigned vector,
			const void *pc, uint32_t error, const char *what)
{
	struct caught_trap t = { 0 };
	bool trapped = trap_try(fn, arg, &t);

	report(trapped && t.vector == vector, "%s: vector %u raised (got %s%u)", what,
	       vector, trapped ? "" : "none, ", t.vector);
	report(trapped && t.pc == (uintptr_t)pc, "%s: EIP 0x%08x (got 0x%08x)", what,
	       (unsigned)(uintptr_t)pc, (unsigned)t.pc);
	report(trapped && t.error == error, "%s: error code 0x%x (got 0x%x)", what,
	       error, (unsigned)t.error);
	report(read_eflags() & EFLAGS_IF, "%s: recovered with interrupts on", what);
}

static void read_word(void *addr)  { (void)*(volatile uint32_t *)addr; }
static void write_word(void *addr) { *(volatile uint32_t *)addr = 0x5a5a5a5a; }
static void write_byte(void *addr) { *(volatile uint8_t *)addr = 0x90; }

static void expect_page_fault(void (*fn)(void *), void *addr, uint32_t error,
			      const char *what)
{
	struct caught_trap t = { 0 };
	bool trapped = trap_try(fn, addr, &t);

	report(trapped && t.vector == VEC_PF, "%s: #PF raised", what);
	report(trapped && t.fault_addr == (uintptr_t)addr, "%s: CR2 0x%08x (got 0x%08x)",
	       what, (unsigned)(uintptr_t)addr, (unsigned)t.fault_addr);
	report(trapped && t.error == error, "%s: error code 0x%x (got 0x%x)", what,
	       error, (unsigned)t.error);
}

static void test_exceptions(void)
{
	expect_trap(st_divide, 0, VEC_DE, st_divide_insn, 0, "#DE divl by zero");
	expect_trap(st_invalid_opcode, 0, VEC_UD, st_invalid_opcode, 0, "#UD ud2");
	/* int3 is a trap: EIP is the instruction after it. */
	expect_trap(st_breakpoint, 0, VEC_BP, st_breakpoint_next, 0, "#BP int3");
	expect_trap(st_bad_selector, 0, VEC_GP, st_bad_selector_insn, 0x100,
		    "#GP selector past the GDT");
	void *hole = (void *)mm_unmapped_probe_addr;
	expect_page_fault(read_word, hole, 0, "#PF read of an unmapped page");
	expect_page_fault(write_word, hole, PF_WRITE, "#PF write to an unmapped page");
	expect_page_fault(read_word, 0, 0, "#PF NULL dereference");
}

static void test_text_alias(void)
{
	uint8_t *imm = (uint8_t *)st_patch_target + 1;

	report((read_cr0() & CR0_WP) != 0, "CR0.WP is set");
	expect_page_fault(write_byte, imm, PF_PRESENT | PF_WRITE,
			  "write to read-only text");
	report(st_patch_target() == 1, "text unchanged by the faulting write");

	uint8_t *alias = mm_alias_writable(imm);
	if (!report(alias != 0, "alias of a text page created"))
		return;
	report(alias != imm && mm_virt_to_phys(alias) == mm_virt_to_phys(imm),
	       "alias %p maps the same physical byte 0x%08x", (void *)alias,
	       (unsigned)mm_virt_to_phys(imm));

	alias[0] = 2;
	report(*imm == 2, "store through the alias is visible at the original address");
	report(st_patch_target() == 2, "patched code runs patched (returns 2)");
	alias[0] = 1;
	report(st_patch_target() == 1, "restored code runs as before (returns 1)");

	mm_alias_release(alias);
	expect_page_fault(read_word, alias, 0, "read through a released alias");
	report(mm_alias_writable((void *)mm_unmapped_probe_addr) == 0,
	       "no alias for an unmapped address");
}

SELFTEST(300, "traps", test_exceptions);
SELFTEST(310, "mm", test_text_alias);
