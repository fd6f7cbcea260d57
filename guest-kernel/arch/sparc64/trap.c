/*
 * trap.c — the C side of every sparc64 trap.
 *
 * trap_entry.S hands us a struct trapframe at TL 0 with interrupts off.
 * The trap type's hooks (trap.h) run first; for an interrupt they only
 * observe. interrupt_level_14 is the tick timer and interrupt_vector the
 * UART (arch.c). Every other trap is a synchronous exception that no hook
 * handled: we describe it as a struct caught_trap — tt and
 * its V9 name, TPC, the instruction word at TPC (for `illtrap` that word
 * is the const22), and for data faults D-SFSR and the fault address — and
 * offer it to trap_try. Each synchronous trap is offered to the miss
 * accounting first (miss_account.h: counted if its PC is a client's). A try that catches it resumes at its landing pad
 * in privileged mode; anything else is dumped (tt, TL, TPC, TNPC, TSTATE,
 * the globals and the trapped window's %o, %l, %i) and the kernel exits
 * with EXIT_UNEXPECTED_TRAP. double_fault() dumps what double_fault_entry
 * recorded for a trap at TL > 1 and exits with EXIT_DOUBLE_FAULT.
 *
 * The fault address: a real IIi writes the faulting byte address to D-SFAR.
 * QEMU 7.2 writes only its page (sparc_cpu_tlb_fill masks the address
 * before the MMU lookup). So the effective address is also decoded from
 * the instruction at TPC — rs1 + simm13 or rs1 + rs2 of the trapped
 * registers — and used when it lies in SFAR's page; otherwise SFAR stands.
 */
#include "arch_sparc64.h"
#include "console.h"
#include "exit.h"
#include "irq_hook.h"
#include "miss_account.h"
#include "mm.h"
#include "trap.h"

/* The V9 / UltraSPARC IIi trap types. Some ranges stand for a number n
 * = (tt - base) / step — interrupt level, spill/fill type, software trap
 * number — which the dump prints (step 0: no number). */
static const struct tt_name {
	uint16_t first, last;
	const char *name;
	uint16_t base, step;
} tt_names[] = {
#define TT(first, last, name) { first, last, name, 0, 0 }
#define TT_NUMBERED(first, last, name, base, step) { first, last, name, base, step }
	TT(0x001, 0x001, "power_on_reset"),
	TT(0x002, 0x002, "watchdog_reset"),
	TT(0x003, 0x003, "externally_initiated_reset"),
	TT(0x004, 0x004, "software_initiated_reset"),
	TT(0x005, 0x005, "RED_state_exception"),
	TT(0x008, 0x008, "instruction_access_exception"),
	TT(0x009, 0x009, "instruction_access_MMU_miss"),
	TT(0x00a, 0x00a, "instruction_access_error"),
	TT(0x010, 0x010, "illegal_instruction"),
	TT(0x011, 0x011, "privileged_opcode"),
	TT(0x012, 0x012, "unimplemented_LDD"),
	TT(0x013, 0x013, "unimplemented_STD"),
	TT(0x020, 0x020, "fp_disabled"),
	TT(0x021, 0x021, "fp_exception_ieee_754"),
	TT(0x022, 0x022, "fp_exception_other"),
	TT(0x023, 0x023, "tag_overflow"),
	TT(0x024, 0x027, "clean_window"),
	TT(0x028, 0x028, "division_by_zero"),
	TT(0x029, 0x029, "internal_processor_error"),
	TT(0x030, 0x030, "data_access_exception"),
	TT(0x031, 0x031, "data_access_MMU_miss"),
	TT(0x032, 0x032, "data_access_error"),
	TT(0x033, 0x033, "data_access_protection"),
	TT(0x034, 0x034, "mem_address_not_aligned"),
	TT(0x035, 0x035, "LDDF_mem_address_not_aligned"),
	TT(0x036, 0x036, "STDF_mem_address_not_aligned"),
	TT(0x037, 0x037, "privileged_action"),
	TT(0x038, 0x038, "LDQF_mem_address_not_aligned"),
	TT(0x039, 0x039, "STQF_mem_address_not_aligned"),
	TT(0x040, 0x040, "async_data_error"),
	TT_NUMBERED(0x041, 0x04f, "interrupt_level_n", 0x040, 1),
	TT(0x060, 0x060, "interrupt_vector"),
	TT(0x061, 0x061, "PA_watchpoint"),
	TT(0x062, 0x062, "VA_watchpoint"),
	TT(0x063, 0x063, "ECC_error"),
	TT(0x064, 0x067, "fast_instruction_access_MMU_miss"),
	TT(0x068, 0x06b, "fast_data_access_MMU_miss"),
	TT(0x06c, 0x06f, "fast_data_access_protection"),
	TT_NUMBERED(0x080, 0x09f, "spill_n_normal", 0x080, 4),
	TT_NUMBERED(0x0a0, 0x0bf, "spill_n_other", 0x0a0, 4),
	TT_NUMBERED(0x0c0, 0x0df, "fill_n_normal", 0x0c0, 4),
	TT_NUMBERED(0x0e0, 0x0ff, "fill_n_other", 0x0e0, 4),
	TT_NUMBERED(0x100, 0x17f, "trap_instruction", 0x100, 1),
};

#define TT_DATA_ACCESS_EXCEPTION  0x030
#define TT_MEM_ADDRESS_NOT_ALIGNED 0x034
#define TT_INSTRUCTION_ACCESS_EXCEPTION 0x008
#define TT_FAST_IMMU_MISS         0x064
#define TT_FAST_DATA_PROTECTION   0x06c
#define TT_INTERRUPT_FIRST        0x041
#define TT_INTERRUPT_LAST         0x04f

static const struct tt_name *tt_lookup(unsigned tt)
{
	for (unsigned i = 0; i < sizeof tt_names / sizeof tt_names[0]; i++)
		if (tt >= tt_names[i].first && tt <= tt_names[i].last)
			return &tt_names[i];
	return 0;
}

const char *trap_name(unsigned tt)
{
	const struct tt_name *n = tt_lookup(tt);
	return n ? n->name : "reserved";
}

/* The number a ranged trap type stands for, e.g. 14 for tt 0x4e. */
static int trap_number(unsigned tt)
{
	const struct tt_name *n = tt_lookup(tt);
	if (!n || !n->step)
		return -1;
	return (int)(tt - n->base) / n->step;
}

void trap_init(void)
{
	wrpr(tba, (uintptr_t)trap_table);
}

/* ---- the trapped context's registers ---- */

/* The trapped window's register save area (%l0-7 then %i0-7), which
 * trap_entry filled, or NULL if its %sp does not point at mapped memory.
 * With flush, the window is flushed there too, so that stores into the
 * area are what `restore` reloads. */
static uint64_t *trapped_save_area(const struct trapframe *tf, bool flush)
{
	uintptr_t area = trapframe_sp(tf) + STACK_BIAS;
	if ((area & 7) || mm_virt_to_phys((void *)area) == (uintptr_t)-1 ||
	    mm_virt_to_phys((void *)(area + 127)) == (uintptr_t)-1)
		return 0;
	if (flush)
		flushw();
	return (uint64_t *)area;
}

uint64_t *trapframe_reg(struct trapframe *tf, unsigned r)
{
	if (r < 8)
		return &tf->g[r];
	if (r < 16)
		return &tf->o[r - 8];
	uint64_t *area = trapped_save_area(tf, true);
	return area ? &area[r - 16] : 0;
}

const uint64_t *trapframe_reg_read(const struct trapframe *tf, unsigned r)
{
	if (r < 8)
		return &tf->g[r];
	if (r < 16)
		return &tf->o[r - 8];
	const uint64_t *area = trapped_save_area(tf, false);
	return area ? &area[r - 16] : 0;
}

static bool trapped_reg(const struct trapframe *tf, unsigned r, uint64_t *v)
{
	const uint64_t *slot = trapframe_reg_read(tf, r);
	if (!slot)
		return false;
	*v = r ? *slot : 0;
	return true;
}

/* Instruction fields of format 3 (loads and stores), as the V9 manual
 * names them. */
#define OP(insn)      ((insn) >> 30)
#define OP3(insn)     (((insn) >> 19) & 0x3f)
#define RS1(insn)     (((insn) >> 14) & 0x1f)
#define I(insn)       (((insn) >> 13) & 1)
#define RS2(insn)     ((insn) & 0x1f)
#define SIMM13(insn)  ((int64_t)((uint64_t)(insn) << 51) >> 51)
#define OP_LDST       3
#define OP3_CASA      0x3c
#define OP3_CASXA     0x3e

static bool decode_effective_address(const struct trapframe *tf, uint32_t insn,
				     uint64_t *ea)
{
	uint64_t base, offset = 0;

	if (OP(insn) != OP_LDST || !trapped_reg(tf, RS1(insn), &base))
		return false;
	/* casa/casxa address [rs1] alone; their rs2 is a data operand. */
	if (OP3(insn) != OP3_CASA && OP3(insn) != OP3_CASXA) {
		if (I(insn))
			offset = (uint64_t)SIMM13(insn);
		else if (!trapped_reg(tf, RS2(insn), &offset))
			return false;
	}
	*ea = base + offset;
	return true;
}

static bool read_insn(uintptr_t pc, uint32_t *insn)
{
	if ((pc & 3) || mm_virt_to_phys((void *)pc) == (uintptr_t)-1)
		return false;
	*insn = *(const uint32_t *)pc;
	return true;
}

static bool is_data_fault(unsigned tt)
{
	return tt == TT_DATA_ACCESS_EXCEPTION || tt == TT_MEM_ADDRESS_NOT_ALIGNED ||
	       (tt >= TT_FAST_DATA_PROTECTION && tt < TT_FAST_DATA_PROTECTION + 4);
}

/* Fill a caught_trap; reads (and clears) the fault status registers. */
static void describe(const struct trapframe *tf, struct caught_trap *t)
{
	unsigned tt = (unsigned)tf->tt;
	uint32_t insn = 0;
	bool have_insn = read_insn(tf->tpc, &insn);

	*t = (struct caught_trap){
		.vector = tt, .name = trap_name(tt), .pc = tf->tpc, .insn = insn,
	};
	if (is_data_fault(tt)) {
		uint64_t sfsr = ldxa_asi(MMU_SFSR, ASI_DMMU);
		uint64_t sfar = ldxa_asi(MMU_SFAR, ASI_DMMU);
		uint64_t ea;
		stxa_asi(0, MMU_SFSR, ASI_DMMU);
		t->error = sfsr;
		t->fault_addr = sfar;
		if (have_insn && decode_effective_address(tf, insn, &ea) &&
		    (ea & ~(PAGE_SIZE - 1)) == (sfar & ~(PAGE_SIZE - 1)))
			t->fault_addr = ea;
		/* An unmapped page, or a refused read of an execute-only
		 * one, reaches us through the NFO TTE the miss handler
		 * installed (trap_table.S); take it out again. */
		if (tt == TT_DATA_ACCESS_EXCEPTION &&
		    (!mmu_lookup(sfar) || (mmu_lookup(sfar) & TTE_XO)))
			mmu_demap(sfar);
	} else if (tt == TT_INSTRUCTION_ACCESS_EXCEPTION) {
		t->error = ldxa_asi(MMU_SFSR, ASI_IMMU);
		stxa_asi(0, MMU_SFSR, ASI_IMMU);
		t->fault_addr = tf->tpc;
	} else if (tt >= TT_FAST_IMMU_MISS && tt < TT_FAST_IMMU_MISS + 4) {
		t->fault_addr = tf->tpc;
	}
}

/* ---- dumps ---- */

static void dump_regs(const char *set, const uint64_t r[8])
{
	for (unsigned half = 0; half < 8; half += 4)
		kprintf("  %%%s%u 0x%016lx  %%%s%u 0x%016lx  %%%s%u 0x%016lx  %%%s%u 0x%016lx\n",
			set, half, r[half], set, half + 1, r[half + 1],
			set, half + 2, r[half + 2], set, half + 3, r[half + 3]);
}

static void dump_tstate(uint64_t tstate)
{
	kprintf("  TSTATE 0x%016lx (CCR 0x%02lx ASI 0x%02lx PSTATE 0x%03lx CWP %lu)\n",
		tstate, (tstate >> 32) & 0xff, (tstate >> 24) & 0xff,
		(tstate >> TSTATE_PSTATE_SHIFT) & 0xfff, tstate & TSTATE_CWP_MASK);
}

static void print_trap_type(const char *prefix, unsigned tt)
{
	int n = trap_number(tt);
	if (n >= 0)
		kprintf("%stt 0x%03x %s (n = %d)", prefix, tt, trap_name(tt), n);
	else
		kprintf("%stt 0x%03x %s", prefix, tt, trap_name(tt));
}

static _Noreturn void unexpected_trap(const struct trapframe *tf,
				      const struct caught_trap *t)
{
	console_panic_mode();
	print_trap_type("\nUNEXPECTED TRAP on cpu0: ", (unsigned)tf->tt);
	kprintf(" at TL %lu\n", tf->tl);
	kprintf("  TPC 0x%016lx  TNPC 0x%016lx\n", tf->tpc, tf->tnpc);
	dump_tstate(tf->tstate);
	uint32_t insn;
	if (read_insn(tf->tpc, &insn))
		kprintf("  instruction 0x%08x (the word at TPC)\n", insn);
	if (is_data_fault((unsigned)tf->tt))
		kprintf("  D-SFSR 0x%lx  fault address 0x%lx\n", t->error, t->fault_addr);
	else if (t->fault_addr)
		kprintf("  fault address 0x%lx  I-SFSR 0x%lx\n", t->fault_addr, t->error);
	dump_regs("g", tf->g);
	dump_regs("o", tf->o);
	const uint64_t *area = trapped_save_area(tf, false);
	if (area) {
		dump_regs("l", area);
		dump_regs("i", area + 8);
	} else {
		kprintf("  %%l, %%i: the trapped %%sp 0x%lx has no mapped save area\n",
			trapframe_sp(tf));
	}
	kernel_exit(EXIT_UNEXPECTED_TRAP);
}

_Noreturn void double_fault(const struct df_record *rec)
{
	unsigned levels = rec->tl < DF_MAX_LEVELS ? (unsigned)rec->tl : DF_MAX_LEVELS;

	console_panic_mode();
	kprintf("\nUNEXPECTED TRAP on cpu0: double fault, a trap at TL %lu that nothing handles\n",
		rec->tl);
	for (unsigned tl = levels; tl >= 1; tl--) {
		const struct df_level *l = &rec->level[tl - 1];
		kprintf("  TL %u: ", tl);
		print_trap_type("", (unsigned)l->tt);
		kprintf("\n    TPC 0x%016lx  TNPC 0x%016lx\n", l->tpc, l->tnpc);
		kprintf("  ");
		dump_tstate(l->tstate);
		if (tl == levels && is_data_fault((unsigned)l->tt))
			kprintf("    D-SFSR 0x%lx  D-SFAR 0x%lx\n", ldxa_asi(MMU_SFSR, ASI_DMMU),
				ldxa_asi(MMU_SFAR, ASI_DMMU));
	}
	kprintf("  registers of the handler that failed (window and normal globals):\n");
	dump_regs("g", rec->g);
	dump_regs("o", rec->o);
	dump_regs("l", rec->l);
	dump_regs("i", rec->i);
	kernel_exit(EXIT_DOUBLE_FAULT);
}

/* ---- dispatch ---- */

/* The interrupts the kernel handles, each ended by sched_irq_exit and
 * framed by the interrupt hook (irq_hook.h: its end comes when this
 * thread runs again); false for any other trap type. */
static bool interrupt_dispatch(unsigned tt, const struct trapframe *tf)
{
	if (tt != TT_INTERRUPT_LEVEL_14 && tt != TT_INTERRUPT_VECTOR &&
	    tt != TT_INTERRUPT_KICK)
		return false;
	irq_hook_run(tt, false);
	if (tt == TT_INTERRUPT_LEVEL_14) {
		timer_interrupt(tf);
	} else if (tt == TT_INTERRUPT_VECTOR) {
		vector_interrupt();
	} else {
		wr_clear_softint(UL(1) << KICK_LEVEL);
		sched_kick_interrupt();
	}
	sched_irq_exit();
	irq_hook_run(tt, true);
	return true;
}

void trap_dispatch(struct trapframe *tf)
{
	unsigned tt = (unsigned)tf->tt;
	struct caught_trap t;
	bool interrupt = (tt >= TT_INTERRUPT_FIRST && tt <= TT_INTERRUPT_LAST) ||
			 tt == TT_INTERRUPT_VECTOR;

	if (!interrupt)
		miss_account_fault(0, tf->tpc, MISS_FAULT_OTHER);  /* sun4u: one CPU; its
							misses are the miss handlers' counts */
	/* An interrupt's hooks only observe it (trap.h). */
	if (trap_hooks_run(tt, tf) == TRAP_HANDLED && !interrupt)
		return;
	if (interrupt_dispatch(tt, tf))
		return;
	describe(tf, &t);
	/* Interrupts are never offered to trap_try (trap.h). */
	uintptr_t landing = interrupt ? 0 : trap_try_intercept(&t);
	if (landing) {
		/* The landing pad is kernel code: resume privileged even if
		 * the trap came from the user-mode test page. */
		tf->tpc = landing;
		tf->tnpc = landing + 4;
		tf->tstate |= (uint64_t)PSTATE_PRIV << TSTATE_PSTATE_SHIFT;
		return;
	}
	unexpected_trap(tf, &t);
}
