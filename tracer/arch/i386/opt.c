/*
 * opt.c — jump-optimized probes on i386 (`probe mechanism opt`), after
 * Linux's optprobes: the site becomes `jmp detour` and no trap is taken.
 * This file plans a site (which bytes the jmp displaces) and gives it a
 * detour slot (opt_slots.h); opt_detour.c writes the slot's code and
 * opt_stage.c installs and removes the jmp through an int3 stage.
 *
 * Which sites. An entry site whose first bytes are whole instructions
 * that run the same at any address (push/pop of a register, mov, add,
 * sub, xor, and, or, cmp and test with a register and a register or
 * memory operand, an ALU immediate to either, mov $imm32 to a register,
 * nop: IA-32 has no EIP-relative operand, so only branches, calls and
 * what reads EIP are left out), taken until at least five
 * bytes (a jmp rel32) are covered: `push %ebp; mov %esp,%ebp; sub $N,%esp`
 * and the like. Anything else is refused with the byte offset and the
 * opcode, as is a displaced tail holding another probe's site. A jump
 * from elsewhere in the function into bytes 1..len-1 would land inside
 * the jmp; the guest has no symbol table and cannot see every jump of a
 * function, so the host refuses those sites before it sends them, reading
 * the whole function in the ELF (bench/trace/sites.py, as optprobes
 * decodes the whole function); the guest refuses what it can see. Return
 * sites (pop %ebp, leave, ret: nothing of five bytes follows a ret) are
 * never jump-optimized: under opt they take the int3, as a kprobe that
 * optprobes cannot optimize stays an int3 kprobe; the run's mechanism is
 * one, so entry and return probes can run together.
 *
 * A slot keeps its detour after the probe is disarmed (an int3 left in a
 * CPU's pipeline, or a thread preempted in the copy, still finds it); it
 * is rewritten only when its probe id is reused for another site, and
 * then only once opt_stage.c's scan shows no thread inside the slot.
 */
#include "arch.h"
#include "console.h"
#include "kstring.h"
#include "opt.h"
#include "opt_slots.h"
#include "tracer.h"
#include "tracer_arch.h"

struct opt_slot opt_slots[OPT_SLOTS];
uint16_t opt_slot_of[TRACER_MAX_PROBES];

bool opt_checked(const struct probe *p)
{
	return opt_slot_of[p->id] && slot(p)->probe == p && slot(p)->checked;
}

/* A slot for p: its own; one written for p at this site; one never
 * written; one whose probe is not enabled (rewritten once no thread is
 * inside it, opt_stage). -1 if all hold enabled probes' detours. A slot
 * whose site is not back to its own bytes is never taken. */
static int slot_for(const struct probe *p)
{
	if (opt_slot_of[p->id]) {
		const struct opt_slot *own = &opt_slots[opt_slot_of[p->id] - 1];
		if (own->stage == OPT_ORIG || own->probe == p)
			return opt_slot_of[p->id] - 1;
	}
	int spare = -1;
	for (int i = 0; i < OPT_SLOTS; i++) {
		const struct opt_slot *s = &opt_slots[i];
		if (s->stage != OPT_ORIG)
			continue;
		if (s->probe == p && s->site == p->addr)
			return i;
		if (!s->probe)
			return i;
		if (spare < 0 && s->probe->state != PROBE_ENABLED)
			spare = i;
	}
	return spare;
}

/* Length of one relocatable instruction at c, or 0 with *why. */
static unsigned insn_len(const uint8_t *c, size_t avail, const char **why)
{
	uint8_t op = c[0];
	if ((op >= 0x50 && op <= 0x5f) || op == 0x90)
		return 1;                                /* push/pop reg, nop */
	if (op >= 0xb8 && op <= 0xbf)
		return avail >= 5 ? 5 : 0;               /* mov $imm32, reg */
	bool modrm = op == 0x89 || op == 0x8b || op == 0x01 || op == 0x03 ||
		     op == 0x29 || op == 0x2b || op == 0x31 || op == 0x33 ||
		     op == 0x09 || op == 0x0b || op == 0x21 || op == 0x23 ||
		     op == 0x39 || op == 0x3b || op == 0x85 || op == 0x83 ||
		     op == 0x81;
	if (!modrm) {
		*why = "not on opt's list of relocatable instructions";
		return 0;
	}
	if (avail < 2)
		return 0;
	/* ModRM, SIB, displacement: every 32-bit form is a register plus a
	 * constant, or a constant (no EIP-relative form), so it runs the
	 * same from the copy. */
	unsigned mod = c[1] >> 6, rm = c[1] & 7, n = 2;
	if (mod != 3 && rm == 4) {
		if (avail < 3)
			return 0;
		n++;
		if (mod == 0 && (c[2] & 7) == 5)
			n += 4;
	}
	if (mod == 0 && rm == 5)
		n += 4;
	else if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	n += op == 0x83 ? 1 : op == 0x81 ? 4 : 0;
	return avail >= n ? n : 0;
}

static char why_buf[WIRE_MAX_REASON];

bool opt_can_arm(const struct probe *p, const char **why)
{
	int i = slot_for(p);
	if (i < 0) {
		ksnprintf(why_buf, sizeof why_buf, "all %u detour slots hold enabled "
			  "opt probes", OPT_SLOTS);
		*why = why_buf;
		return false;
	}
	struct opt_slot *s = &opt_slots[i];
	const uint8_t *c = (const uint8_t *)p->addr;
	size_t avail = (uintptr_t)__text_end - p->addr;
	unsigned len = 0;
	bool known = s->probe == p && s->site == p->addr;
	if (known)                      /* decoded before; the site may hold its int3 */
		len = s->len;
	while (len < 5) {
		const char *reason = "the function's text ends";
		unsigned n = len < avail ? insn_len(c + len, avail - len, &reason) : 0;
		if (!n || len + n > OPT_MAX_COPY) {
			ksnprintf(why_buf, sizeof why_buf, "byte +%u (opcode 0x%02x): %s; "
				  "the jmp needs 5 bytes of whole relocatable "
				  "instructions", len, len < avail ? c[len] : 0, reason);
			*why = why_buf;
			return false;
		}
		len += n;
	}
	for (unsigned k = 1; k < len; k++) {
		const struct probe *q = tracer_lookup(p->addr + k);
		if (q) {
			ksnprintf(why_buf, sizeof why_buf, "probe %u's site is byte +%u, "
				  "inside the %u bytes the jmp displaces", q->id, k, len);
			*why = why_buf;
			return false;
		}
	}
	if (tracer_check_mode && !opt_checkable(c, len, why))
		return false;           /* what the record cannot hold (opt_check.c) */
	if (!known) {                   /* the slot is (re)written by opt_stage */
		if (s->probe && s->probe != p &&        /* its old probe falls back */
		    opt_slot_of[s->probe->id] == (uint16_t)(i + 1))     /* to int3 */
			opt_slot_of[s->probe->id] = 0;
		s->site = 0;
		s->len = (uint8_t)len;
		memcpy(s->bytes, c, len);
	}
	opt_slot_of[p->id] = (uint16_t)(i + 1);
	return true;
}

const struct probe *opt_covering(uintptr_t addr)
{
	for (unsigned i = 0; i < OPT_SLOTS; i++) {
		const struct opt_slot *s = &opt_slots[i];
		if (s->stage != OPT_ORIG && s->probe &&
		    addr > s->probe->addr && addr < s->probe->addr + s->len)
			return s->probe;
	}
	return 0;
}

uint32_t opt_resume(const struct probe *p)
{
	if (!opt_slot_of[p->id] || slot(p)->probe != p || !written(slot(p)))
		return 0;
	return (uint32_t)(uintptr_t)slot_code(p) +
	       (slot(p)->checked ? OPT_COPY_OFFSET_CHECKED : OPT_COPY_OFFSET);
}
