/*
 * opt_check.c — check mode for jump-optimized probes: the state before and
 * after the copies of the displaced instructions, for the host to re-run.
 *
 * An opt firing emulates nothing: its detour (opt_detour.S) runs copies of
 * the displaced instructions natively, away from the site. What can be
 * wrong is the relocation — a copy that is not the instruction, a register
 * or flag the detour's head did not put back, a jump back to the wrong
 * place — so check mode records what the copies did, and the host runs the
 * site's own bytes in unicorn from the same state and compares
 * (bench/check/i386.py), as it re-runs int3's emulations.
 *
 * How. Armed while check mode is on, a slot gets check mode's detour: the
 * head's call goes to opt_common_checked, which records the firing as
 * usual and then calls opt_check_before; after the copy a second call
 * (opt_common_after) reaches i386_opt_after. The int3 stage (a firing
 * while the jmp goes in or out) resumes in the same copy, so its trap
 * handler calls opt_check_before on its trap frame first (fire.c): both
 * frames describe the state at the site the same way.
 *   - before: every register from the frame, ESP the address above its
 *     EFLAGS, EIP the site; the stack window (check.h: from ESP - 4 *
 *     I386_CHECK_OPT_BELOW, I386_CHECK_OPT_WINDOW words) read now. Kept in
 *     this CPU's slot. IF is cleared in the frame, so the popfl (or iret)
 *     that leaves for the copy keeps interrupts masked: nothing can run on
 *     this CPU between the copies and the second call, and the state the
 *     second call sees is the copies' own.
 *   - after: the second call's frame is the copies' state (its EIP the
 *     site + len the slot pushed); IF goes back to what it was before, in
 *     the frame and so in the record; the window is read again and the
 *     CHECK record of I386_CHECK_OPT_WORDS goes out after the firing's own
 *     record.
 * The window's words below ESP are the detour's own frame (dead stack),
 * identical before and during the copies; the host compares after-words at
 * or above ESP after only.
 *
 * What the record cannot hold is refused, never guessed (opt_checkable):
 * the record carries the stack window and no other memory, so in check
 * mode a site whose displaced instructions touch memory anywhere but the
 * window — through a register other than ESP, or EBP once a displaced
 * `mov %esp,%ebp` made it ESP's copy, through an index, at an absolute
 * address, or past the window's ends — is not armed as opt, with its
 * reason (int3 records such an operand: ool_check.c).
 *
 * Cost: with check mode off, nothing here runs and the detour is the plain
 * one byte for byte (opt.c chooses the variant when it writes the slot).
 */
#include "arch.h"
#include "arch/trapframe.h"
#include "arch/x86.h"
#include "check.h"
#include "console.h"
#include "cpu.h"
#include "insn.h"
#include "opt.h"
#include "tracer.h"
#include "wire.h"

#define STACK_LOW      0x1000u          /* page 0 is unmapped */
#define STACK_HIGH     0x10000000u      /* the identity map: 256 MiB */

struct opt_before {
	const struct probe *probe;      /* 0: nothing kept */
	unsigned long w[I386_CHECK_OPT_WORDS];
};

static struct opt_before before[KERNEL_MAX_CPUS];
/* Second calls that found no state kept for their probe (read with gdb):
 * no record goes out, and the host's count of CHECK records per firing
 * shows the gap. */
unsigned long opt_check_unpaired;

static void window(uint32_t base, unsigned long *w)
{
	for (unsigned i = 0; i < I386_CHECK_OPT_WINDOW; i++) {
		uint32_t a = base + 4 * i;
		w[i] = a >= STACK_LOW && a <= STACK_HIGH - 4 ?
		       *(const volatile uint32_t *)a : 0;
	}
}

void opt_check_before(const struct probe *p, struct trapframe *tf)
{
	struct opt_before *b = &before[this_cpu()->id];
	uint32_t base = trapframe_sp(tf) - 4 * I386_CHECK_OPT_BELOW;
	i386_check_frame(tf, (uint32_t)p->addr, tf->eflags, b->w);
	tf->eflags &= ~(uint32_t)EFLAGS_IF;     /* before the window: it may hold it */
	b->w[I386_CHECK_OPT_WIN] = base;
	window(base, b->w + I386_CHECK_OPT_BEFORE);
	b->probe = p;
}

void i386_opt_after(struct trapframe *tf)
{
	const struct probe *p = (const struct probe *)(uintptr_t)tf->error;
	struct opt_before *b = &before[this_cpu()->id];
	if (b->probe != p) {
		opt_check_unpaired++;
		return;
	}
	b->probe = 0;
	uint32_t in = (uint32_t)b->w[I386_CHECK_EFLAGS];
	tf->eflags = (tf->eflags & ~(uint32_t)EFLAGS_IF) | (in & EFLAGS_IF);
	i386_check_frame(tf, tf->eip, tf->eflags, b->w + I386_CHECK_NREGS);
	b->w[I386_CHECK_OPT_LEN] = tf->eip - (uint32_t)p->addr;
	window((uint32_t)b->w[I386_CHECK_OPT_WIN], b->w + I386_CHECK_OPT_AFTER);
	tracer_record(p, WIRE_EVENT_CHECK, b->w, I386_CHECK_OPT_WORDS);
}

/* ---- what check mode can hold (see the top) ---- */

static const char *const reg_names[8] = {
	"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
};

/* The stack pointer as the displaced run moves it: bytes from ESP before,
 * and EBP's, where known. */
struct stack_track {
	int32_t esp, ebp;
	bool esp_known, ebp_known;
};

/* What instruction c does to ESP and EBP (opt's relocatable list only:
 * push/pop reg, nop, mov $imm,reg, and the ModRM mov/ALU forms). */
static void track(struct stack_track *t, const uint8_t *c)
{
	uint8_t op = c[0];
	if (op >= 0x50 && op <= 0x57) {
		t->esp -= 4;
		return;
	}
	if (op >= 0x58 && op <= 0x5f) {
		t->esp += 4;
		if (op == 0x5c)
			t->esp_known = false;
		if (op == 0x5d)
			t->ebp_known = false;
		return;
	}
	if (op >= 0xb8 && op <= 0xbf) {
		if (op == 0xbc)
			t->esp_known = false;
		if (op == 0xbd)
			t->ebp_known = false;
		return;
	}
	if (op == 0x90 || op == 0x39 || op == 0x3b || op == 0x85)
		return;                         /* nop, cmp, test: no register written */
	unsigned mod = c[1] >> 6, reg = (c[1] >> 3) & 7, rm = c[1] & 7;
	if (mod == 3 && op == 0x89 && reg == 4 && rm == 5) {       /* mov %esp,%ebp */
		t->ebp = t->esp;
		t->ebp_known = t->esp_known;
		return;
	}
	if (mod == 3 && op == 0x8b && reg == 5 && rm == 4) {       /* mov %esp,%ebp */
		t->ebp = t->esp;
		t->ebp_known = t->esp_known;
		return;
	}
	if (mod == 3 && rm == 4 && (op == 0x83 || op == 0x81) && (reg == 0 || reg == 5)) {
		int32_t imm = op == 0x83 ? (int8_t)c[2] :
			      (int32_t)((uint32_t)c[2] | (uint32_t)c[3] << 8 |
					(uint32_t)c[4] << 16 | (uint32_t)c[5] << 24);
		t->esp += reg == 0 ? imm : -imm;                   /* add, sub */
		return;
	}
	if (op == 0x83 || op == 0x81 || op == 0x89 || op == 0x01 || op == 0x29 ||
	    op == 0x31 || op == 0x09 || op == 0x21)
		reg = mod == 3 ? rm : 8;                           /* r/m is written */
	if (reg == 4)
		t->esp_known = false;
	if (reg == 5)
		t->ebp_known = false;
}

static char why_buf[WIRE_MAX_REASON];

bool opt_checkable(const uint8_t *code, unsigned len, const char **why)
{
	struct stack_track t = { 0, 0, true, false };
	const int32_t lo = -4 * I386_CHECK_OPT_BELOW;
	const int32_t hi = lo + 4 * I386_CHECK_OPT_WINDOW;
	for (unsigned at = 0; at < len; ) {
		struct i386_operand o;
		unsigned n = i386_insn_length(code + at, len - at);
		if (!n || i386_insn_operand(code + at, n, &o, why) != 0)
			return false;
		if (o.mem) {
			bool on_esp = o.base == 4 && t.esp_known;
			bool on_ebp = o.base == 5 && t.ebp_known;
			int32_t off = (on_esp ? t.esp : t.ebp) + o.disp;
			const char *no = 0;
			if (o.base < 0)
				no = "an absolute address";
			else if (o.index >= 0)
				no = "an index register";
			else if (!on_esp && !on_ebp)
				no = reg_names[o.base];
			else if (off < lo || off + 4 > hi)
				no = "the stack outside the window";
			if (no) {
				ksnprintf(why_buf, sizeof why_buf, "check mode: the displaced "
					  "instruction at +%u (opcode 0x%02x) touches memory "
					  "through %s (disp %d); the opt record carries only the "
					  "stack window, ESP%d..ESP+%d (int3 records the operand)",
					  at, code[at], no, (int)o.disp, (int)lo, (int)hi);
				*why = why_buf;
				return false;
			}
		}
		track(&t, code + at);
		at += n;
	}
	return true;
}
