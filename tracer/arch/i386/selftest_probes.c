/*
 * selftest_probes.c — differential self-test of the IA-32 probe emulator.
 *
 * For each emulated form (emulate.h), and for instructions run out of line
 * from the probe's slot (ool.c), there is a site in selftest_probes.S.
 * Each case runs the site twice from one register state (all GPRs, ESP in
 * a scratch stack, EFLAGS with a flag pattern) and one scratch-stack
 * content: once unprobed, where the CPU executes the instruction, and once
 * with a probe armed there, where the trap handler emulates it. The two
 * outcomes must be identical: every GPR, EFLAGS, and every scratch byte from
 * the final ESP up (from the final EBP for enter with a frame: the locals
 * below it are uninitialised, and the trap handler's own frame legitimately
 * passes through them, as an interrupt's could).
 *
 * That the probe fired is checked three ways: the site held the trap (0xCC
 * or ud2) just before the run, no trap reached trap_try (an unclaimed #BP or
 * #UD would), and the trap frame left bytes on the scratch stack below the
 * stack pointer, which the unprobed run (interrupts off) never does.
 * For an out-of-line site (an add, a push, a SIB load, an imul) the
 * probed run is the slot's copy and its jmp back: a slot that skipped the
 * jmp back or resumed a byte off fails here; for jcc, jmp and call rel
 * it is their emulation.
 *
 * Both emulating mechanisms run where they apply: int3 everywhere; ud (a
 * two-byte ud2) on the multi-byte forms and on ret followed by padding. The
 * other one-byte sites must be refused under ud with a reason, and are
 * checked to be. `opt` (opt.c) runs on the prologue sites of five bytes or
 * more, where the site must hold its jmp (E9) and the detour's frame must
 * have passed below ESP; the state after the detour and the copies of the
 * displaced instructions must equal the state after the CPU ran them in
 * place: the in-guest half of opt's check mode. Its other entry sites must
 * be refused with a reason; its return sites take the int3 and are
 * checked as int3's. One PASS/FAIL line per (form, mechanism); a failure is
 * explained field by field in INFO lines before it.
 *
 * Probes use ids 4000 and up and are all cleared at the end (tracer_clear
 * removes every probe: the self-test is not meant to run during a trace);
 * the previous mechanism is restored.
 */
#include <stddef.h>
#include <stdint.h>
#include "arch.h"
#include "console.h"
#include "kstring.h"
#include "selftest.h"
#include "thread.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

struct dt_regs {
	uint32_t eax, ecx, edx, ebx, esp, ebp, esi, edi, eflags;
};
_Static_assert(sizeof(struct dt_regs) == 36, "layout shared with selftest_probes.S");

extern struct dt_regs dt_out;
extern void dt_call(const struct dt_regs *in, const void *entry);
extern char dt_capture[];
extern char dt_site_push_ebp[], dt_site_push_ebp_mov[], dt_site_push_ebp_mov_8b[],
	dt_site_pop_ebp[], dt_site_leave[], dt_site_ret[], dt_site_ret_imm[],
	dt_site_ret_imm_big[], dt_site_enter[], dt_site_enter_0[], dt_site_nop[],
	dt_site_opt_sub[], dt_site_opt_pushes[], dt_site_opt_load[],
	dt_site_opt_flags[], dt_site_ool_add[], dt_site_ool_push[],
	dt_site_ool_load[], dt_site_ool_imul[], dt_site_jcc[], dt_site_jmp32[],
	dt_site_call32[];

enum mech { M_INT3, M_UD, M_OPT };
static const char *const mech_names[] = { "int3", "ud", "opt" };

/* What the initial state needs beyond registers. */
enum setup { SETUP_NONE, SETUP_POP, SETUP_LEAVE, SETUP_RET };

struct dt_form {
	const char *name;
	char       *site;
	uint8_t     kind;       /* WIRE_EVENT_ENTRY / RETURN */
	uint8_t     setup;
	uint8_t     len;        /* bytes of the emulated form */
	bool        ud_ok;      /* armable with ud2 */
	int32_t     esp_delta;  /* final ESP - initial ESP (LEAVE: from EBP) */
	bool        locals;     /* enter with a frame: compare from final EBP */
	bool        opt_ok;     /* an entry site opt jumps at */
};

static const struct dt_form forms[] = {
	{ "push %ebp (55)", dt_site_push_ebp, WIRE_EVENT_ENTRY, SETUP_NONE, 1,
	  false, -4, false, false },
	{ "push %ebp; mov %esp,%ebp (55 89 e5)", dt_site_push_ebp_mov,
	  WIRE_EVENT_ENTRY, SETUP_NONE, 3, true, -4, false, false },
	{ "push %ebp; mov %esp,%ebp (55 8b ec)", dt_site_push_ebp_mov_8b,
	  WIRE_EVENT_ENTRY, SETUP_NONE, 3, true, -4, false, false },
	{ "pop %ebp (5d)", dt_site_pop_ebp, WIRE_EVENT_RETURN, SETUP_POP, 1,
	  false, 4, false, false },
	{ "leave (c9)", dt_site_leave, WIRE_EVENT_RETURN, SETUP_LEAVE, 1,
	  false, 4, false, false },
	{ "ret (c3)", dt_site_ret, WIRE_EVENT_RETURN, SETUP_RET, 1, true, 4,
	  false, false },
	{ "ret $0x10 (c2 10 00)", dt_site_ret_imm, WIRE_EVENT_RETURN, SETUP_RET,
	  3, true, 4 + 0x10, false, false },
	{ "ret $0x1f4 (c2 f4 01)", dt_site_ret_imm_big, WIRE_EVENT_RETURN,
	  SETUP_RET, 3, true, 4 + 0x1f4, false, false },
	{ "enter $0x1c,$0 (c8 1c 00 00)", dt_site_enter, WIRE_EVENT_ENTRY,
	  SETUP_NONE, 4, true, -4 - 0x1c, true, false },
	{ "enter $0,$0 (c8 00 00 00)", dt_site_enter_0, WIRE_EVENT_ENTRY,
	  SETUP_NONE, 4, true, -4, false, false },
	{ "nop (90)", dt_site_nop, WIRE_EVENT_ENTRY, SETUP_NONE, 1, false, 0,
	  false, false },
	{ "out of line: add %ecx,%eax (01 c8)", dt_site_ool_add, WIRE_EVENT_ENTRY,
	  SETUP_NONE, 2, true, 0, false, false },
	{ "out of line: push %ebx (53)", dt_site_ool_push, WIRE_EVENT_ENTRY,
	  SETUP_NONE, 1, false, -4, false, false },
	{ "out of line: mov 0x8(%esp),%eax (8b 44 24 08)", dt_site_ool_load,
	  WIRE_EVENT_ENTRY, SETUP_NONE, 4, true, 0, false, false },
	{ "out of line: imul $0x1234567,%ecx,%edx (69 d1 ..)", dt_site_ool_imul,
	  WIRE_EVENT_ENTRY, SETUP_NONE, 6, true, 0, false, false },
	{ "jne rel8 (75 05)", dt_site_jcc, WIRE_EVENT_ENTRY, SETUP_NONE, 2, true,
	  0, false, false },
	{ "jmp rel32 (e9 ..)", dt_site_jmp32, WIRE_EVENT_ENTRY, SETUP_NONE, 5,
	  true, 0, false, false },
	{ "call rel32 (e8 ..)", dt_site_call32, WIRE_EVENT_ENTRY, SETUP_NONE, 5,
	  true, -4, false, false },
	{ "push %ebp; mov %esp,%ebp; sub $0x18,%esp", dt_site_opt_sub,
	  WIRE_EVENT_ENTRY, SETUP_NONE, 3, true, -4 - 0x18, true, true },
	{ "push %ebp; mov %esp,%ebp; push %edi; push %esi; push %ebx",
	  dt_site_opt_pushes, WIRE_EVENT_ENTRY, SETUP_NONE, 3, true, -16, false,
	  true },
	{ "push %ebp; mov %esp,%ebp; mov 0x8(%ebp),%eax; mov 0x10(%esp),%ecx",
	  dt_site_opt_load, WIRE_EVENT_ENTRY, SETUP_NONE, 3, true, -4, false,
	  true },
	{ "push %ebp; xor %edx,%edx; add %ecx,%eax", dt_site_opt_flags,
	  WIRE_EVENT_ENTRY, SETUP_NONE, 1, false, -4, false, true },
};
#define NFORMS (sizeof forms / sizeof forms[0])

/* EFLAGS patterns (IF and DF clear, reserved bit 1 set). */
#define FL_CF 0x001u
#define FL_PF 0x004u
#define FL_AF 0x010u
#define FL_ZF 0x040u
#define FL_SF 0x080u
#define FL_OF 0x800u
static const uint32_t flag_patterns[] = {
	0x2,
	0x2 | FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF,
	0x2 | FL_ZF | FL_CF,
	0x2 | FL_SF | FL_OF,
	0x2 | FL_PF | FL_AF,
	0x2 | FL_CF | FL_SF | FL_OF | FL_PF,
};
#define NPATTERNS (sizeof flag_patterns / sizeof flag_patterns[0])

#define PROBE_ID_BASE 4000u
#define STACK_BYTES   16384u
#define STACK_ESP0    12288u      /* initial ESP offset: 12 KiB of headroom */
#define TRAIL_BYTES   1024u       /* below the lowest ESP: where a trap leaves
				     its frame */
#define MAX_INFO      12u         /* INFO lines per failing (form, mechanism) */

static uint8_t dt_stack[STACK_BYTES] __attribute__((aligned(4096)));
static uint8_t dt_snapshot[STACK_BYTES];

struct dt_run {
	const struct dt_regs *in;
	const void           *entry;
	struct dt_regs        out;
	uint8_t               at_site[2];   /* the site's bytes as the run began */
};

static void dt_run_fn(void *arg)
{
	struct dt_run *r = arg;
	irqflags_t f = arch_irq_save();
	r->at_site[0] = ((volatile const uint8_t *)r->entry)[0];
	r->at_site[1] = ((volatile const uint8_t *)r->entry)[1];
	dt_call(r->in, r->entry);
	r->out = dt_out;
	arch_irq_restore(f);
}

static uint32_t rng_state;

static uint32_t rng(void)
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return rng_state;
}

static void fill_stack(unsigned pattern)
{
	for (unsigned i = 0; i < STACK_BYTES; i++)
		dt_stack[i] = (uint8_t)(i * 7u + pattern * 31u + 0x5a);
}

static uint32_t stack_addr(uint32_t off)
{
	return (uint32_t)(uintptr_t)dt_stack + off;
}

static void put32(uint32_t addr, uint32_t v)
{
	memcpy((void *)(uintptr_t)addr, &v, 4);
}

/* The initial state of (form, pattern); the stack's words are written by
 * prepare_stack, after fill_stack. */
static void make_input(const struct dt_form *f, unsigned fi, unsigned p,
		       struct dt_regs *in)
{
	rng_state = 0x9e3779b9u ^ (fi << 8) ^ p;
	in->eax = rng(); in->ecx = rng(); in->edx = rng(); in->ebx = rng();
	in->ebp = rng(); in->esi = rng(); in->edi = rng();
	/* The last pattern runs with a misaligned stack pointer. */
	in->esp = stack_addr(STACK_ESP0 - 4 * p - (p == NPATTERNS - 1 ? 2 : 0));
	in->eflags = flag_patterns[p];
	if (f->setup == SETUP_LEAVE)
		in->ebp = in->esp + 0x40 + 8 * p;
}

static void prepare_stack(const struct dt_form *f, unsigned fi, unsigned p,
			  const struct dt_regs *in)
{
	fill_stack(p + fi);
	if (f->setup == SETUP_POP)
		put32(in->esp, 0xb0b00000u | (fi << 8) | p);
	else if (f->setup == SETUP_LEAVE)
		put32(in->ebp, 0x1ea70000u | (fi << 8) | p);
	else if (f->setup == SETUP_RET)
		put32(in->esp, (uint32_t)(uintptr_t)dt_capture);
}

/* Scratch bytes in [lo - TRAIL_BYTES, lo - 8) that differ from the fill:
 * what a trap taken on the scratch stack left there. */
static unsigned trail_changes(uint32_t lo, unsigned fill_pattern)
{
	uint32_t base = stack_addr(0);
	unsigned n = 0;
	for (uint32_t a = lo - TRAIL_BYTES; a < lo - 8; a++) {
		uint32_t i = a - base;
		if (dt_stack[i] != (uint8_t)(i * 7u + fill_pattern * 31u + 0x5a))
			n++;
	}
	return n;
}

static const char *const reg_names[] = {
	"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi", "eflags",
};

struct tally {
	unsigned cases, passed, infos;
};

static void info(struct tally *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void info(struct tally *t, const char *fmt, ...)
{
	char line[160];
	va_list ap;
	if (t->infos++ >= MAX_INFO)
		return;
	va_start(ap, fmt);
	kvsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	report_info("%s", line);
}

static bool run_checked(struct dt_run *r, struct tally *t, unsigned p,
			const char *which)
{
	struct caught_trap c = { 0 };
	if (trap_try(dt_run_fn, r, &c)) {
		info(t, "pattern %u, %s run: %s (vector %u) at 0x%08x reached "
		     "trap_try", p, which, c.name, c.vector, (unsigned)c.pc);
		return false;
	}
	return true;
}

/* One case: (form, mechanism, pattern). Returns whether it passed. */
static bool run_case(const struct dt_form *f, unsigned fi, unsigned id,
		     enum mech m, unsigned p, struct tally *t)
{
	struct dt_regs in;
	struct dt_run base = { .in = &in, .entry = f->site };
	struct dt_run probed = { .in = &in, .entry = f->site };
	char why[WIRE_MAX_REASON];
	bool ok = true;
	uint8_t orig[2] = { (uint8_t)f->site[0], (uint8_t)f->site[1] };

	make_input(f, fi, p, &in);

	/* Unprobed. */
	prepare_stack(f, fi, p, &in);
	if (!run_checked(&base, t, p, "unprobed"))
		return false;
	memcpy(dt_snapshot, dt_stack, STACK_BYTES);
	uint32_t lo = in.esp < base.out.esp ? in.esp : base.out.esp;
	unsigned base_trail = trail_changes(lo, p + fi);

	uint32_t want_esp = (f->setup == SETUP_LEAVE ? in.ebp : in.esp) +
			    (uint32_t)f->esp_delta;
	if (base.out.esp != want_esp || base_trail != 0) {
		info(t, "pattern %u: unprobed run itself is off: esp 0x%08x (want "
		     "0x%08x), %u bytes below esp changed (want 0)", p,
		     (unsigned)base.out.esp, (unsigned)want_esp, base_trail);
		return false;
	}

	/* Probed, from the same state. */
	if (tracer_probe_set(id, true, why, sizeof why) != 0) {
		info(t, "pattern %u: enable refused: %s", p, why);
		return false;
	}
	tracer_settle();
	prepare_stack(f, fi, p, &in);
	bool ran = run_checked(&probed, t, p, "probed");
	tracer_probe_set(id, false, why, sizeof why);
	tracer_settle();
	if (!ran)
		return false;
	unsigned probed_trail = trail_changes(lo, p + fi);

	bool jmp = m == M_OPT && f->opt_ok;
	bool armed = m == M_UD ? probed.at_site[0] == 0x0f && probed.at_site[1] == 0x0b
		   : jmp ? probed.at_site[0] == 0xe9 : probed.at_site[0] == 0xcc;
	if (!armed) {
		info(t, "pattern %u: site held %02x %02x when run, not the %s", p,
		     probed.at_site[0], probed.at_site[1],
		     m == M_UD ? "ud2" : jmp ? "jmp (e9)" : "int3");
		ok = false;
	}
	if (probed_trail == 0) {
		info(t, "pattern %u: no trap frame below esp: the probe did not "
		     "fire", p);
		ok = false;
	}
	if ((uint8_t)f->site[0] != orig[0] || (uint8_t)f->site[1] != orig[1] ||
	    base.at_site[0] != orig[0] || base.at_site[1] != orig[1]) {
		info(t, "pattern %u: site bytes %02x %02x after disable (unprobed "
		     "run saw %02x %02x), want %02x %02x", p, (uint8_t)f->site[0],
		     (uint8_t)f->site[1], base.at_site[0], base.at_site[1], orig[0],
		     orig[1]);
		ok = false;
	}

	const uint32_t *e = &base.out.eax, *a = &probed.out.eax;
	for (unsigned i = 0; i < 9; i++) {
		if (e[i] != a[i]) {
			info(t, "pattern %u (eflags in 0x%03x): %s: expected 0x%08x vs "
			     "actual 0x%08x", p, (unsigned)in.eflags, reg_names[i],
			     (unsigned)e[i], (unsigned)a[i]);
			ok = false;
		}
	}

	/* Stack bytes from the final ESP (EBP past enter's locals) up. */
	uint32_t from = f->locals ? base.out.ebp : base.out.esp;
	if (from < stack_addr(0) || from > stack_addr(STACK_BYTES)) {
		info(t, "pattern %u: final esp 0x%08x outside the scratch stack", p,
		     (unsigned)from);
		return false;
	}
	unsigned ndiff = 0, first = 0;
	for (uint32_t i = from - stack_addr(0); i < STACK_BYTES; i++) {
		if (dt_snapshot[i] != dt_stack[i]) {
			if (!ndiff++)
				first = i;
		}
	}
	if (ndiff) {
		uint32_t addr = stack_addr(first);
		info(t, "pattern %u: stack byte at final esp+0x%x (0x%08x): expected "
		     "0x%02x vs actual 0x%02x (%u bytes differ)", p,
		     (unsigned)(addr - base.out.esp), (unsigned)addr,
		     dt_snapshot[first], dt_stack[first], ndiff);
		ok = false;
	}
	return ok;
}

static void test_form(const struct dt_form *f, unsigned fi, enum mech m)
{
	const char *mechanism = mech_names[m];
	bool ud = m == M_UD;
	unsigned id = PROBE_ID_BASE + fi;
	char why[WIRE_MAX_REASON];

	report_prefix_push(f->name);
	report_prefix_push(mechanism);
	if (tracer_set_mechanism(mechanism) != 0) {
		report(false, "mechanism %s refused (probes enabled elsewhere?)", mechanism);
		goto out;
	}
	if ((ud && !f->ud_ok) ||
	    (m == M_OPT && f->kind == WIRE_EVENT_ENTRY && !f->opt_ok)) {
		int rc = tracer_probe_set(id, true, why, sizeof why);
		if (rc == 0)
			tracer_probe_set(id, false, why, sizeof why);
		tracer_settle();
		report(rc != 0, "refused: %s", rc ? why : "(armed!)");
		goto out;
	}
	struct tally t = { 0 };
	for (unsigned p = 0; p < NPATTERNS; p++) {
		t.cases++;
		if (run_case(f, fi, id, m, p, &t))
			t.passed++;
	}
	report(t.passed == t.cases, "%u/%u cases: probed run equals unprobed "
	       "(8 GPRs, EFLAGS, stack bytes), probe fired in each", t.passed,
	       t.cases);
out:
	report_prefix_pop();
	report_prefix_pop();
}

/* ---- opt's int3 stage and its proof that no thread is in the tail ----
 *
 * A thread sleeps with a trap frame on its stack (EIP, CS, EFLAGS) whose
 * EIP lies inside a prologue's displaced tail, as if interrupted there. Arming opt there
 * must stop at the int3 stage: byte 0 int3, bytes 1..4 untouched; a call
 * of the site meanwhile must fire once and run as unprobed. Once the
 * thread is gone the same probe must get its jmp, and disarming must give
 * back every byte. An opt that wrote the tail without the proof, or put
 * the jmp in without the int3 first, leaves other bytes at the site. */
static volatile int hold_release;

static void hold_tail(void *arg)
{
	uint32_t cs;
	__asm__ volatile("movl %%cs, %0" : "=r"(cs));
	/* What a trap frame of an interrupt there holds: EIP, CS, EFLAGS. */
	volatile uint32_t frame[3] = { (uint32_t)(uintptr_t)arg, cs, 0x202 };
	while (!hold_release)
		thread_sleep(1);
	(void)frame[0];
}

static bool site_is(const char *site, const uint8_t *want, unsigned n)
{
	return memcmp(site, want, n) == 0;
}

static void test_opt_stage(void)
{
	const unsigned fi = NFORMS - 4;            /* opt_sub */
	const struct dt_form *f = &forms[fi];
	const unsigned id = PROBE_ID_BASE + fi;
	char why[WIRE_MAX_REASON];
	uint8_t orig[5];
	memcpy(orig, f->site, 5);

	report_prefix_push("opt int3 stage");
	if (tracer_set_mechanism("opt") != 0) {
		report(false, "mechanism opt refused");
		goto out;
	}
	hold_release = 0;
	struct thread *t = thread_create("opt-hold", hold_tail, f->site + 2,
					 THREAD_ANY_CPU);
	if (!t) {
		report(false, "no thread");
		goto out;
	}
	thread_sleep(2);                            /* it is asleep, inside */
	bool set = tracer_probe_set(id, true, why, sizeof why) == 0;
	tracer_settle();
	uint8_t staged[5] = { 0xcc, orig[1], orig[2], orig[3], orig[4] }, seen[5];
	memcpy(seen, f->site, 5);
	bool held = set && site_is(f->site, staged, 5);

	struct dt_regs in;
	struct dt_run base = { .in = &in, .entry = f->site };
	struct dt_run probed = { .in = &in, .entry = f->site };
	make_input(f, fi, 0, &in);
	unsigned long hits = tracer_probe_hits(id);
	prepare_stack(f, fi, 0, &in);
	struct tally tl = { 0 };
	bool ran = run_checked(&probed, &tl, 0, "staged");
	hits = tracer_probe_hits(id) - hits;
	tracer_probe_set(id, false, why, sizeof why);
	tracer_settle();
	bool back = site_is(f->site, orig, 5);
	prepare_stack(f, fi, 0, &in);
	ran = run_checked(&base, &tl, 0, "unprobed") && ran;
	bool same = ran && memcmp(&base.out, &probed.out, sizeof base.out) == 0;
	report(held && hits == 1 && same && back, "a thread inside the tail: the "
	       "site stays at its int3 stage (%02x %02x %02x %02x %02x), fires %lu "
	       "time(s), runs as unprobed%s; disarmed, its bytes are back",
	       seen[0], seen[1], seen[2], seen[3], seen[4], hits,
	       same ? "" : " (NOT)");

	hold_release = 1;
	thread_join(t);
	set = tracer_probe_set(id, true, why, sizeof why) == 0;
	tracer_settle();
	bool jumped = set && (uint8_t)f->site[0] == 0xe9;
	tracer_probe_set(id, false, why, sizeof why);
	tracer_settle();
	report(jumped && site_is(f->site, orig, 5), "the thread gone: the jmp goes "
	       "in, and out again to the original bytes");
out:
	report_prefix_pop();
}

static void selftest_probes(void)
{
	const char *old_mechanism = tarch_mechanisms[tracer_mechanism].name;
	char why[WIRE_MAX_REASON];
	bool added[NFORMS];

	for (unsigned fi = 0; fi < NFORMS; fi++) {
		const struct dt_form *f = &forms[fi];
		added[fi] = tracer_probe_add(PROBE_ID_BASE + fi, (uintptr_t)f->site,
					     f->kind, f->kind == WIRE_EVENT_ENTRY ? 2 : 0,
					     why, sizeof why) == 0;
		if (!added[fi]) {
			report_prefix_push(f->name);
			report(false, "probe add refused: %s", why);
			report_prefix_pop();
			continue;
		}
		const struct probe *pr = &tracer_probes[PROBE_ID_BASE + fi];
		if (pr->site.insn.len != f->len) {
			report_prefix_push(f->name);
			report(false, "decoded as %s, %u bytes (want %u)",
			       i386_site_kind_names[pr->site.insn.kind],
			       pr->site.insn.len, f->len);
			report_prefix_pop();
			added[fi] = false;
		}
	}
	for (unsigned fi = 0; fi < NFORMS; fi++) {
		if (!added[fi])
			continue;
		test_form(&forms[fi], fi, M_INT3);
		test_form(&forms[fi], fi, M_UD);
		test_form(&forms[fi], fi, M_OPT);
	}
	if (added[NFORMS - 4])
		test_opt_stage();
	tracer_clear();
	if (tracer_set_mechanism(old_mechanism) != 0)
		report(false, "mechanism %s restored", old_mechanism);
}
SELFTEST(400, "probes", selftest_probes);
