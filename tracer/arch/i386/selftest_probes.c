/*
 * selftest_probes.c — differential self-test of the IA-32 probe emulator.
 *
 * For each emulated form (emulate.h) there is a site in selftest_probes.S.
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
 *
 * Both emulating mechanisms run where they apply: int3 everywhere; ud (a
 * two-byte ud2) on the multi-byte forms and on ret followed by padding. The
 * other one-byte sites must be refused under ud with a reason, and are
 * checked to be. One PASS/FAIL line per (form, mechanism); a failure is
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
	dt_site_ret_imm_big[], dt_site_enter[], dt_site_enter_0[], dt_site_nop[];

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
};

static const struct dt_form forms[] = {
	{ "push %ebp (55)", dt_site_push_ebp, WIRE_EVENT_ENTRY, SETUP_NONE, 1,
	  false, -4, false },
	{ "push %ebp; mov %esp,%ebp (55 89 e5)", dt_site_push_ebp_mov,
	  WIRE_EVENT_ENTRY, SETUP_NONE, 3, true, -4, false },
	{ "push %ebp; mov %esp,%ebp (55 8b ec)", dt_site_push_ebp_mov_8b,
	  WIRE_EVENT_ENTRY, SETUP_NONE, 3, true, -4, false },
	{ "pop %ebp (5d)", dt_site_pop_ebp, WIRE_EVENT_RETURN, SETUP_POP, 1,
	  false, 4, false },
	{ "leave (c9)", dt_site_leave, WIRE_EVENT_RETURN, SETUP_LEAVE, 1,
	  false, 4, false },
	{ "ret (c3)", dt_site_ret, WIRE_EVENT_RETURN, SETUP_RET, 1, true, 4,
	  false },
	{ "ret $0x10 (c2 10 00)", dt_site_ret_imm, WIRE_EVENT_RETURN, SETUP_RET,
	  3, true, 4 + 0x10, false },
	{ "ret $0x1f4 (c2 f4 01)", dt_site_ret_imm_big, WIRE_EVENT_RETURN,
	  SETUP_RET, 3, true, 4 + 0x1f4, false },
	{ "enter $0x1c,$0 (c8 1c 00 00)", dt_site_enter, WIRE_EVENT_ENTRY,
	  SETUP_NONE, 4, true, -4 - 0x1c, true },
	{ "enter $0,$0 (c8 00 00 00)", dt_site_enter_0, WIRE_EVENT_ENTRY,
	  SETUP_NONE, 4, true, -4, false },
	{ "nop (90)", dt_site_nop, WIRE_EVENT_ENTRY, SETUP_NONE, 1, false, 0,
	  false },
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
		     bool ud, unsigned p, struct tally *t)
{
	struct dt_regs in;
	struct dt_run base = { .in = &in, .entry = f->site };
	struct dt_run probed = { .in = &in, .entry = f->site };
	char why[128];
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

	bool armed = ud ? probed.at_site[0] == 0x0f && probed.at_site[1] == 0x0b
			: probed.at_site[0] == 0xcc;
	if (!armed) {
		info(t, "pattern %u: site held %02x %02x when run, not the %s trap", p,
		     probed.at_site[0], probed.at_site[1], ud ? "ud2" : "int3");
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

static void test_form(const struct dt_form *f, unsigned fi, bool ud)
{
	const char *mechanism = ud ? "ud" : "int3";
	unsigned id = PROBE_ID_BASE + fi;
	char why[128];

	report_prefix_push(f->name);
	report_prefix_push(mechanism);
	if (tracer_set_mechanism(mechanism) != 0) {
		report(false, "mechanism %s refused (probes enabled elsewhere?)", mechanism);
		goto out;
	}
	if (ud && !f->ud_ok) {
		int rc = tracer_probe_set(id, true, why, sizeof why);
		if (rc == 0)
			tracer_probe_set(id, false, why, sizeof why);
		tracer_settle();
		report(rc != 0, "refused, one-byte site: %s", rc ? why : "(armed!)");
		goto out;
	}
	struct tally t = { 0 };
	for (unsigned p = 0; p < NPATTERNS; p++) {
		t.cases++;
		if (run_case(f, fi, id, ud, p, &t))
			t.passed++;
	}
	report(t.passed == t.cases, "%u/%u cases: probed run equals unprobed "
	       "(8 GPRs, EFLAGS, stack bytes), probe fired in each", t.passed,
	       t.cases);
out:
	report_prefix_pop();
	report_prefix_pop();
}

static void selftest_probes(void)
{
	const char *old_mechanism = tarch_mechanisms[tracer_mechanism].name;
	char why[128];
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
		test_form(&forms[fi], fi, false);
		test_form(&forms[fi], fi, true);
	}
	tracer_clear();
	if (tracer_set_mechanism(old_mechanism) != 0)
		report(false, "mechanism %s restored", old_mechanism);
}
SELFTEST(400, "probes", selftest_probes);
