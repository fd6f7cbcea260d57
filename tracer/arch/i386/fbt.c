/*
 * fbt.c — i386 probes: decode and arm a site. The provider's other files:
 * the fire path (fire.c), check mode's records of an emulation (check.c),
 * the single-step baseline (step.c), jump-optimized probes (opt.c,
 * opt_detour.c, opt_stage.c, opt_return.c), out-of-line sites (ool.c,
 * ool_check.c).
 *
 * Mechanisms (mechanisms.h; chosen per run, `probe mechanism`):
 *   int3  0xCC over the site's first byte; #BP arrives with EIP = site + 1.
 *   ud    #UD instead of #BP, so the probe shares nothing with debuggers
 *         (illumos' choice on i386). illumos writes a LOCK prefix (0xF0),
 *         undefined before push/pop/mov-to-register/leave/ret; QEMU 7.2's
 *         TCG ignores LOCK there and runs the instruction (seen: F0 89 E5
 *         executes mov %esp,%ebp, skipping the push, and the guest dies), so
 *         the #UD comes from ud2 (0F 0B). Two bytes fit a site whose
 *         emulated form is at least two bytes long (the fused prologue,
 *         enter, ret imm16), or a ret followed by padding, which no path
 *         runs; other sites are refused under this mechanism. #UD arrives
 *         with EIP = site. No CPU may fetch half of the change: a translator
 *         reading the site byte by byte while one 16-bit store lands can
 *         decode 0F 89 (jns rel32: ud2's first byte, the old mov's second)
 *         or 55 0B; a toggle run on 4 CPUs once died at a wild EIP in just
 *         that window, with the one-store version. So the two bytes
 *         change as in the x86 cross-modifying-code recipe:
 *         int3 over the first byte, sync every CPU, the second byte, sync,
 *         the first byte. Every fetch in between sees int3 or a whole
 *         instruction; an int3 at a ud site fires like a #UD.
 *   opt   jump-optimized (opt.c): an entry site becomes jmp to a detour
 *         that records through the fire path's record_fire (fire.c) and
 *         runs copies of the displaced instructions; its int3 stage (while
 *         the jmp goes in or out) records there too and resumes in the
 *         detour's copy. A return probe linked to its entry (`probe
 *         ride`) rides on it: the entry trampolines the call and the
 *         site is not written (opt_return.c); other return sites take
 *         the int3 and are emulated as int3's.
 *   step  the lossy baseline of the seeds: an int3 that, when hit, writes
 *         the original byte back and single-steps the site (step.c). Any
 *         CPU that runs the site meanwhile runs the original and is not
 *         traced.
 */
#include "arch.h"
#include "arch/vectors.h"
#include "check.h"
#include "context.h"
#include "emulate.h"
#include "fire.h"
#include "insn.h"
#include "itrace.h"
#include "mm.h"
#include "ool.h"
#include "opt.h"
#include "opt_return.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

const struct tarch_mechanism tarch_mechanisms[] = { TARCH_MECHANISMS(MECHANISM_ROW) };
const unsigned tarch_nmechanisms = sizeof tarch_mechanisms / sizeof tarch_mechanisms[0];
const unsigned tarch_check_words = I386_CHECK_WORDS;
const unsigned tarch_cost_kind = WIRE_EVENT_ENTRY;

/* The bytes gcc and gas pad with after a ret: nop, lea/nopw/nopl forms. */
static bool padding_byte(uint8_t b)
{
	return b == 0x90 || b == 0x8d || b == 0x66 || b == 0x0f || b == 0xcc;
}

bool tarch_can_arm(const struct probe *p, const char **why)
{
	const struct probe *cover = opt_covering(p->addr);
	if (cover) {
		*why = "the site is inside the bytes an opt probe's jmp displaces";
		return false;
	}
	if (jumps(p))
		return opt_can_arm(p, why);
	/* Check mode records what an out-of-line copy does (ool_check.c),
	 * unless the record cannot carry it. */
	if (p->site.insn.kind == I386_OOL && tracer_check_mode &&
	    ool_checkable(p, why) != 0)
		return false;
	if (p->mechanism != MECHANISM_UD)
		return true;
	if ((p->addr & (mm_page_size - 1)) == mm_page_size - 1) {
		*why = "ud2 would straddle a page boundary";
		return false;
	}
	if (p->site.insn.len >= 2)
		return true;
	if (p->site.insn.kind != I386_RET || !padding_byte(p->site.next)) {
		*why = "ud2 is two bytes and the next instruction starts after one "
		       "(use int3 here)";
		return false;
	}
	if (tracer_lookup(p->addr + 1)) {
		*why = "the byte after this ret is another probe's site";
		return false;
	}
	return true;
}

/* ud's two bytes, first and second, through an int3 (see the top). */
static void store_two(const struct probe *p, uint8_t first, uint8_t second)
{
	volatile uint8_t *alias = tracer_text_alias(p->addr);
	alias[0] = 0xcc;
	tracer_sync_cpus();
	alias[1] = second;
	tracer_sync_cpus();
	alias[0] = first;
}

int tarch_decode(uintptr_t addr, unsigned kind, struct tarch_site *site,
		 const char **why)
{
	if (kind == WIRE_EVENT_BRANCH) {
		*why = "branch probes are a sparc64 provider; IA-32 probes emulate "
		       "function entry and return forms or run out of line";
		return -1;
	}
	size_t avail = (uintptr_t)__text_end - addr;
	const uint8_t *code = (const uint8_t *)addr;
	if (avail > 16)
		avail = 16;
	*site = (struct tarch_site){ .next = avail > 1 ? code[1] : 0 };
	if (i386_decode(code, avail, &site->insn, why) != 0) {
		/* Not emulated: out of line, if a copy runs the same (ool.c).
		 * An int3 already there keeps the emulator's reason. */
		const char *emulate_why = *why;
		unsigned len = avail && code[0] != 0xcc ?
			i386_insn_relocatable(code, avail, why) : 0;
		unsigned copy_len = len;
		if (len) {
			for (unsigned i = 0; i < len; i++)
				site->copy[i] = code[i];
		} else if (avail && code[0] != 0xcc) {    /* call *X: rewritten */
			unsigned n = i386_insn_length(code, avail);
			copy_len = n ? i386_insn_indirect_call(code, avail,
					(uint32_t)(addr + n), site->copy, why) : 0;
			if (copy_len) {
				len = n;
				site->icall = 1;
			}
		}
		if (!len) {
			if (avail && code[0] == 0xcc)
				*why = emulate_why;
			return -1;
		}
		site->insn = (struct i386_site){ .kind = I386_OOL, .len = (uint8_t)len };
		site->copy_len = (uint8_t)copy_len;
		for (unsigned i = 0; i < sizeof site->insn.orig && i < len; i++)
			site->insn.orig[i] = code[i];
	}
	unsigned k = site->insn.kind;
	bool entry_form = k == I386_PUSH_EBP || k == I386_PUSH_EBP_MOV ||
			  k == I386_ENTER || k == I386_NOP;
	bool return_form = k == I386_POP_EBP || k == I386_LEAVE || k == I386_RET ||
			   k == I386_RET_IMM || k == I386_NOP;
	/* An entry probe takes a function's first instruction, whatever it is
	 * (emulated or out of line); a return probe the forms that leave. */
	if (kind == WIRE_EVENT_RETURN && !return_form) {
		*why = entry_form ? "a return probe needs pop %ebp, leave, ret or nop"
				  : "a return probe needs pop %ebp, leave, ret or nop "
				    "(this instruction would run out of line)";
		return -1;
	}
	return 0;
}

/* An int3 site's byte goes in under step.c's lock, in order with the
 * single-step baseline's stores; ud sites never take that path, and
 * their stores wait for other CPUs (IPIs), which must not happen with
 * interrupts off. */
void tarch_arm(struct probe *p)
{
	/* A fused prologue emulates two instructions; a probe on the second
	 * splits it, before that probe is armed (tracer_site.h). */
	struct probe *before = tracer_lookup(p->addr - 1);
	if (before && before->site.insn.kind == I386_PUSH_EBP_MOV)
		before->site.split = 1;
	struct probe *after = tracer_lookup(p->addr + 1);
	if (p->site.insn.kind == I386_PUSH_EBP_MOV && after &&
	    after->state == PROBE_ENABLED)
		p->site.split = 1;
	if (p->site.insn.kind == I386_OOL) {
		p->site.checked = tracer_check_mode;    /* which slot (ool_check.c) */
		ool_prepare(p);         /* before the trap can send anyone there */
	}
	if (jumps(p)) {
		opt_arm(p);
		return;
	}
	if (opt_return_rides(p)) {      /* its entry's trampoline records it */
		p->site.trapping = 0;
		return;
	}
	if (p->mechanism == MECHANISM_UD) {
		store_two(p, 0x0f, 0x0b);                     /* ud2 */
		return;
	}
	i386_step_store(p, 0xcc);
}

void tarch_disarm(struct probe *p)
{
	if (jumps(p)) {
		opt_disarm(p);
		return;
	}
	/* A riding return probe's site may hold the fallback's int3, written
	 * by a firing on any CPU (opt_return.c): the original goes back either
	 * way. */
	p->site.trapping = 0;
	if (p->mechanism == MECHANISM_UD) {
		store_two(p, p->site.insn.orig[0], p->site.insn.len >= 2 ?
			  p->site.insn.orig[1] : p->site.next);
		return;
	}
	i386_step_store(p, p->site.insn.orig[0]);
}

void tarch_stage(void)
{
	opt_stage();
}

void tarch_init(void)
{
	i386_watch_init();      /* its #DB hook first: a stepped access may hit a watch */
	i386_step_init();
	opt_return_init();
	i386_itrace_init();     /* its #DB hook after the step baseline's */
	trap_hook_add(VEC_BP, i386_probe_trap);
	trap_hook_add(VEC_UD, i386_probe_trap);
	ool_check_init();       /* the checked slots' int3, after the probes' */
}
