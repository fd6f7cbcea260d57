/*
 * ool_check.c — check mode for out-of-line sites: the state before and
 * after the slot's copy of the displaced instruction, for the host to
 * re-run in unicorn (bench/check/i386_ool.py).
 *
 * An out-of-line firing emulates nothing: the slot runs a copy of the
 * instruction natively (ool.c). What can be wrong is the copy or its
 * surroundings — bytes that are not the instruction, a register or flag
 * the fire path did not give back, a resume at the wrong place — so check
 * mode records what the copy did, and the host runs the site's own bytes
 * from the same state and compares, as it re-runs int3's emulations and
 * opt's detours (opt_check.c, the model here).
 *
 * How. A probe armed while check mode is on gets the checked slot: its
 * copy followed by an int3 instead of the jmp back (chosen over a detour
 * like opt's because the slot already sits behind a trap: a second trap
 * costs no new assembly, and its frame describes the state after the copy
 * exactly as the first describes the state before).
 *   - before (ool_check_before, from the fire path, after the firing is
 *     recorded and EIP set to the slot): every register from the trap
 *     frame, ESP the address above its EFLAGS, EIP the site; IF cleared in
 *     the frame, so nothing else runs on this CPU between the copy and the
 *     int3 after it; then a window of stack words around ESP (push and pop
 *     touch one word there) and the memory operand: its address computed
 *     from these registers as the CPU will (ModRM/SIB or moffs, insn.c),
 *     and I386_CHECK_OOL_MEM_WORDS words from it, if they lie in RAM (lea
 *     and nopl compute addresses they never touch; those are not read).
 *     Read after EIP and IF change: the window may hold the frame itself,
 *     and then holds what the copy will see there. Kept in this CPU's slot.
 *   - after (the #BP hook below, at the checked slot's int3): the frame is
 *     the copy's state; IF goes back to what it was before, in the frame
 *     and so in the record; EIP resumes at site + len (and is recorded so);
 *     the window and the operand's words are read again at the same
 *     addresses, and the CHECK record of I386_CHECK_OOL_WORDS goes out
 *     after the firing's own record.
 * Words below ESP after are the second trap's frame (dead stack); the host
 * compares only what lies at or above ESP after.
 *
 * What the record cannot carry is refused in check mode when the probe is
 * armed, with insn.c's reason (string instructions, implicit operands,
 * pusha/popa, pushf, indirect jmp — it would leave the slot before the
 * int3 —, fs/gs operands, more than 16 bytes of memory). Another CPU
 * writing the operand between the two reads would show as a mismatch:
 * check runs over shared memory belong on one CPU.
 *
 * ool_check_broken (0; tests set it through the GDB stub before arming)
 * puts a cmc between the copy and the int3 of checked slots: a slot that
 * does not give CF back as the instruction left it, which the host must
 * report (and which harms nothing where the next instruction writes CF or
 * adds it to a counter).
 *
 * Cost: with check mode off, slots are the plain ones byte for byte and
 * the fire path tests one byte of the probe (site.checked).
 */
#include "arch.h"
#include "arch/trapframe.h"
#include "arch/vectors.h"
#include "arch/x86.h"
#include "check.h"
#include "cpu.h"
#include "insn.h"
#include "ool.h"
#include "trap.h"
#include "tracer.h"
#include "wire.h"

#define RAM_LOW      0x1000u            /* page 0 is unmapped */
#define RAM_HIGH     0x10000000u        /* the identity map: 256 MiB */

extern char ool_slots[], ool_slots_end[];

struct ool_before {
	const struct probe *probe;      /* 0: nothing kept */
	unsigned long w[I386_CHECK_OOL_WORDS];
};

static struct ool_before before[KERNEL_MAX_CPUS];
/* int3s at a checked slot's end with no state kept for its probe (read
 * with gdb): no record goes out, and the host's count of CHECK records
 * per firing shows the gap. */
unsigned long ool_check_unpaired;
volatile unsigned ool_check_broken;

int ool_checkable(const struct probe *p, const char **why)
{
	struct i386_operand o;
	if (p->site.icall) {
		*why = "check mode: an indirect call run out of line (one with an fs/gs "
		       "override or 16 bits, which emulate.c refuses) leaves the slot "
		       "(push, jmp) before the trap that records the state after it";
		return -1;
	}
	return i386_insn_operand(p->site.copy, p->site.insn.len, &o, why);
}

void ool_check_slot(const struct probe *p, uint8_t *want)
{
	unsigned len = p->site.insn.len;
	if (ool_check_broken)
		want[len++] = 0xf5;     /* cmc */
	want[len] = 0xcc;
}

static bool in_ram(uint32_t addr, uint32_t bytes)
{
	return addr >= RAM_LOW && addr <= RAM_HIGH - bytes;
}

static void words(uint32_t base, unsigned n, unsigned long *w)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t a = base + 4 * i;
		w[i] = in_ram(a, 4) ? *(const volatile uint32_t *)a : 0;
	}
}

/* The memory part of the record, read now: before or after. */
static void memory(unsigned long *w, unsigned at_stack, unsigned at_mem)
{
	words((uint32_t)w[I386_CHECK_OOL_STACK], I386_CHECK_OOL_STACK_WORDS, w + at_stack);
	if (w[I386_CHECK_OOL_MEM_STATE] == 1)
		words((uint32_t)w[I386_CHECK_OOL_MEM], I386_CHECK_OOL_MEM_WORDS, w + at_mem);
}

void ool_check_operand(unsigned long *w, const struct i386_operand *o, unsigned len)
{
	uint32_t r[8];
	for (unsigned i = 0; i < 8; i++)
		r[i] = (uint32_t)w[I386_CHECK_EAX + i];
	uint32_t ea = 0, state = 0;
	if (o->mem) {
		ea = i386_operand_address(o, r);
		state = in_ram(ea, 4 * I386_CHECK_OOL_MEM_WORDS) ? 1 : 2;
	}
	w[I386_CHECK_OOL_LEN] = len;
	w[I386_CHECK_OOL_STACK] = r[I386_CHECK_ESP] - 4 * I386_CHECK_OOL_STACK_BELOW;
	w[I386_CHECK_OOL_MEM] = ea;
	w[I386_CHECK_OOL_MEM_STATE] = state;
	for (unsigned i = 0; i < I386_CHECK_OOL_MEM_WORDS; i++)
		w[I386_CHECK_OOL_MEM_BEFORE + i] = w[I386_CHECK_OOL_MEM_AFTER + i] = 0;
	memory(w, I386_CHECK_OOL_STACK_BEFORE, I386_CHECK_OOL_MEM_BEFORE);
}

void ool_check_before(const struct probe *p, struct trapframe *tf)
{
	struct ool_before *b = &before[this_cpu()->id];
	unsigned long *w = b->w;
	i386_check_frame(tf, (uint32_t)p->addr, tf->eflags, w);
	tf->eflags &= ~(uint32_t)EFLAGS_IF;     /* before the reads: the window may hold it */

	struct i386_operand o;
	const char *why;
	if (i386_insn_operand(p->site.copy, p->site.insn.len, &o, &why) != 0)
		o.mem = 0;
	ool_check_operand(w, &o, p->site.insn.len);
	b->probe = p;
}

/* The #BP hook: the int3 after a checked slot's copy, or declined. */
static int ool_check_trap(struct trapframe *tf)
{
	uint32_t at = tf->eip - 1;
	if (at < (uint32_t)(uintptr_t)ool_slots || at >= (uint32_t)(uintptr_t)ool_slots_end)
		return TRAP_DECLINED;
	unsigned id = (at - (uint32_t)(uintptr_t)ool_slots) / OOL_SLOT_BYTES;
	if (id >= TRACER_MAX_PROBES)
		return TRAP_DECLINED;
	const struct probe *p = &tracer_probes[id];
	unsigned len = p->site.insn.len;
	if (p->site.insn.kind != I386_OOL || !p->site.checked)
		return TRAP_DECLINED;
	uint32_t end = ool_slot(p) + len;
	if (*(const uint8_t *)end == 0xf5)
		end++;                  /* ool_check_broken's cmc */
	if (at != end)
		return TRAP_DECLINED;   /* not a checked slot's end: the kernel's */
	uint32_t next = (uint32_t)p->addr + len;
	tf->eip = next;
	struct ool_before *b = &before[this_cpu()->id];
	if (b->probe != p) {
		ool_check_unpaired++;
		return TRAP_HANDLED;
	}
	b->probe = 0;
	uint32_t in = (uint32_t)b->w[I386_CHECK_EFLAGS];
	tf->eflags = (tf->eflags & ~(uint32_t)EFLAGS_IF) | (in & EFLAGS_IF);
	i386_check_frame(tf, next, tf->eflags, b->w + I386_CHECK_NREGS);
	memory(b->w, I386_CHECK_OOL_STACK_AFTER, I386_CHECK_OOL_MEM_AFTER);
	tracer_record(p, WIRE_EVENT_CHECK, b->w, I386_CHECK_OOL_WORDS);
	return TRAP_HANDLED;
}

void ool_check_init(void)
{
	trap_hook_add(VEC_BP, ool_check_trap);
}
