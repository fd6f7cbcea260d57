/*
 * selftest_probes_run.c — the sparc64 probe self-test's runner: one site
 * word, from every input state, unprobed and then probed, compared.
 *
 * A run writes the scratch stack's fill pattern, calls dt_call
 * (selftest_probes.S) from the state with interrupts off — and for FP
 * branches PSTATE.PEF and FPRS.FEF on — under trap_try, and keeps the
 * state it left, the site word it found, how many bytes below %sp a trap
 * frame wrote and a hash of the bytes from %sp up. A site word is written
 * through a writable alias of dt_site's page; every state runs unprobed,
 * then with a branch (or return) probe enabled there, and then each pair
 * is compared field by field with the other and with the model
 * (selftest_probes_model.c). A group (a class's words) tallies cases,
 * mismatches, errors and unfired probes, explains the first few in INFO
 * lines (a few per word, so that a broken rule shows several cases), and
 * reports three PASS/FAIL lines.
 */
#include <stddef.h>
#include <stdint.h>
#include "arch/arch_sparc64.h"
#include "console.h"
#include "kstring.h"
#include "mm.h"
#include "selftest.h"
#include "selftest_probes.h"
#include "trap.h"
#include "tracer.h"

/* The constants selftest_probes.S assembled in, for dt_layout_ok. */
extern const uint32_t dt_layout[17];

#define NOP          0x01000000u
#define FPRS_FEF     4u
#define MAX_INFO     10u        /* INFO lines per group */
#define MAX_WORD_INFO 2u        /* ... and per site word */

/* The scratch stack: the CTI window's %sp points SP_OFF into it. */
#define SCRATCH_BYTES 32768u
#define SP_OFF        24576u
#define TRAIL_BYTES   2048u     /* below %sp: where a trap frame goes */
#define ABOVE_BYTES   1024u     /* from %sp up: compared between runs */
static uint8_t dt_stack[SCRATCH_BYTES] __attribute__((aligned(64)));

uint64_t dt_scratch_sp(void)
{
	return (uintptr_t)dt_stack + SP_OFF - STACK_BIAS;
}

bool dt_layout_ok(void)
{
	static const uint32_t want[17] = {
		offsetof(struct dt_state, r[8]), offsetof(struct dt_state, r[16]),
		offsetof(struct dt_state, r[24]), offsetof(struct dt_state, ccr),
		offsetof(struct dt_state, fsr), offsetof(struct dt_state, use_fsr),
		sizeof(struct dt_state), MARK_REG,
		M_SLOT, M_FALL0, M_FALL1, M_FWD0, M_FWD1, M_BACK0, M_BACK1,
		M_FAR0, M_FAR1,
	};
	return memcmp(want, dt_layout, sizeof want) == 0;
}

/* ---- running one state ---- */

struct dt_run {
	const struct dt_state *in;
	struct dt_state        out;
	uint32_t               at_site;    /* the site word as the run began */
	bool                   fp;
	bool                   ok;         /* no trap reached trap_try */
	unsigned               trail;      /* bytes below %sp changed */
	uint64_t               above;      /* hash of the bytes from %sp up */
	struct caught_trap     trap;
};

static uint64_t rd_fprs(void)
{
	uint64_t v;
	__asm__ volatile("rd %%fprs, %0" : "=r"(v));
	return v;
}

static void wr_fprs(uint64_t v)
{
	__asm__ volatile("wr %0, 0, %%fprs" : : "r"(v));
}

/* Interrupts off (nothing else may run on the scratch stack, and the
 * unprobed run must leave no trap frame); for FP branches PSTATE.PEF and
 * FPRS.FEF on, as they must be for fbfcc to execute at all — the kernel
 * otherwise runs with PEF clear. Both are put back afterwards. */
static void dt_run_fn(void *arg)
{
	struct dt_run *r = arg;
	uint64_t pstate = rdpr(pstate), fprs = rd_fprs();

	wrpr(pstate, (pstate & ~(uint64_t)PSTATE_IE) | (r->fp ? PSTATE_PEF : 0));
	if (r->fp)
		wr_fprs(fprs | FPRS_FEF);
	r->at_site = *(volatile uint32_t *)dt_site;
	dt_call(r->in, &r->out);
	if (r->fp) {
		__asm__ volatile("stx %%fsr, %0" : "=m"(r->out.fsr));
		wr_fprs(fprs);
	}
	wrpr(pstate, pstate);
}

static uint8_t fill_byte(unsigned i)
{
	return (uint8_t)(i * 7u + 0x5a);
}

static void prepare_stack(void)
{
	for (unsigned i = SP_OFF - TRAIL_BYTES; i < SP_OFF + ABOVE_BYTES; i++)
		dt_stack[i] = fill_byte(i);
}

static void run_state(struct dt_run *r)
{
	uint64_t fprs = rd_fprs();
	prepare_stack();
	r->out = (struct dt_state){ 0 };
	r->ok = !trap_try(dt_run_fn, r, &r->trap);
	if (!r->ok)
		wr_fprs(fprs);          /* trap_try put PSTATE back, not FPRS */
	r->trail = 0;
	for (unsigned i = SP_OFF - TRAIL_BYTES; i < SP_OFF; i++)
		r->trail += dt_stack[i] != fill_byte(i);
	uint64_t h = 0xcbf29ce484222325ull;          /* FNV-1a */
	for (unsigned i = SP_OFF; i < SP_OFF + ABOVE_BYTES; i++)
		h = (h ^ dt_stack[i]) * 0x100000001b3ull;
	r->above = h;
}

/* ---- groups, tallies, explanations ---- */

static void ginfo(struct group *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void ginfo(struct group *g, const char *fmt, ...)
{
	char line[160];
	va_list ap;
	/* A few per site word, so that a broken rule shows several cases. */
	if (g->infos >= MAX_INFO || g->word_infos >= MAX_WORD_INFO)
		return;
	g->infos++;
	g->word_infos++;
	va_start(ap, fmt);
	kvsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	report_info("%s", line);
}

static void mark_path(char *buf, size_t size, uint64_t m)
{
	static const char *const names[] = {
		"slot", "fall", "fall+4", "fwd", "fwd+4", "back", "back+4",
		"far", "far+4",
	};
	size_t used = 0;
	buf[0] = 0;
	for (unsigned b = 0; b < 9; b++)
		if (m >> b & 1)
			used += ksnprintf(buf + used, size - used, "%s%s",
					  used ? ">" : "", names[b]);
	if (m >> 9)
		ksnprintf(buf + used, size - used, "%s?0x%lx", used ? ">" : "",
			  (unsigned long)(m >> 9));
	if (!m)
		ksnprintf(buf, size, "(none)");
}

/* The input that matters for this CTI, in words. */
static void state_desc(char *buf, size_t size, const struct dt_word *w,
		       const struct dt_state *s)
{
	switch (w->cls) {
	case K_BICC:
	case K_BPCC:
		ksnprintf(buf, size, "icc 0x%x xcc 0x%x", (unsigned)(s->ccr & 0xf),
			  (unsigned)(s->ccr >> 4) & 0xf);
		break;
	case K_FBFCC:
	case K_FBPFCC:
		ksnprintf(buf, size, "fcc0..3 %u%u%u%u", dt_fcc_field(s->fsr, 0),
			  dt_fcc_field(s->fsr, 1), dt_fcc_field(s->fsr, 2),
			  dt_fcc_field(s->fsr, 3));
		break;
	case K_BPR:
		ksnprintf(buf, size, "%%%s 0x%lx", dt_reg_names[w->rs1],
			  (unsigned long)s->r[w->rs1]);
		break;
	case K_JMPL:
		if (w->imm)
			ksnprintf(buf, size, "%%%s 0x%lx", dt_reg_names[w->rs1],
				  (unsigned long)s->r[w->rs1]);
		else
			ksnprintf(buf, size, "%%%s 0x%lx, %%%s 0x%lx",
				  dt_reg_names[w->rs1], (unsigned long)s->r[w->rs1],
				  dt_reg_names[w->rs2], (unsigned long)s->r[w->rs2]);
		break;
	default:
		ksnprintf(buf, size, "ccr 0x%02x", (unsigned)s->ccr);
	}
}

/* The first fields where a and b differ, in words; 0 if none. */
static unsigned diff(char *buf, size_t size, const struct dt_state *a,
		     const struct dt_state *b, bool fp, uint64_t mark_in)
{
	unsigned n = 0;
	size_t used = 0;
	buf[0] = 0;
	for (unsigned r = 1; r < 32; r++) {
		if (a->r[r] == b->r[r])
			continue;
		if (n++ >= 2)
			continue;
		if (r == MARK_REG) {
			char pa[64], pb[64];
			mark_path(pa, sizeof pa, a->r[r] ^ mark_in);
			mark_path(pb, sizeof pb, b->r[r] ^ mark_in);
			used += ksnprintf(buf + used, size - used, "%spath %s vs %s",
					  used ? "; " : "", pa, pb);
		} else {
			used += ksnprintf(buf + used, size - used, "%s%%%s 0x%lx vs 0x%lx",
					  used ? "; " : "", dt_reg_names[r],
					  (unsigned long)a->r[r], (unsigned long)b->r[r]);
		}
	}
	if (a->ccr != b->ccr && n++ < 2)
		used += ksnprintf(buf + used, size - used, "%sccr 0x%02x vs 0x%02x",
				  used ? "; " : "", (unsigned)a->ccr, (unsigned)b->ccr);
	if (fp && a->fsr != b->fsr && n++ < 2)
		used += ksnprintf(buf + used, size - used, "%sfsr 0x%lx vs 0x%lx",
				  used ? "; " : "", (unsigned long)a->fsr,
				  (unsigned long)b->fsr);
	if (n > 2)
		ksnprintf(buf + used, size - used, " (+%u more)", n - 2);
	return n;
}

/* ---- one site word: every state unprobed, then every state probed ---- */

static uint32_t *site_alias;
static struct dt_run nat[MAX_STATES], prb[MAX_STATES];

static void write_site(uint32_t w)
{
	*(volatile uint32_t *)site_alias = w;
	flush_insn(dt_site);
}

bool dt_site_open(void)
{
	site_alias = mm_alias_writable(dt_site);
	return site_alias != 0;
}

void dt_site_close(void)
{
	write_site(NOP);
	mm_alias_release(site_alias);
	site_alias = 0;
}

void dt_run_word(struct group *g, struct dt_word *w,
		 const struct dt_state *states, unsigned n)
{
	char why[WIRE_MAX_REASON], what[200], sd[64];
	bool fp = w->cls == K_FBFCC || w->cls == K_FBPFCC;

	g->words++;
	g->word_infos = 0;
	w->insn = dt_encode_for_site(w);
	write_site(w->insn);
	if (tracer_probe_add(PROBE_ID, (uintptr_t)dt_site, w->kind, 0, why,
			     sizeof why) != 0) {
		g->cases += n;
		g->errors += n;
		ginfo(g, "%s (0x%08x): probe add refused: %s", w->name, w->insn, why);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		nat[i] = (struct dt_run){ .in = &states[i], .fp = fp };
		run_state(&nat[i]);
	}
	if (tracer_probe_set(PROBE_ID, true, why, sizeof why) != 0) {
		g->cases += n;
		g->errors += n;
		ginfo(g, "%s (0x%08x): enable refused: %s", w->name, w->insn, why);
		tracer_clear();
		return;
	}
	tracer_settle();
	uint64_t f0 = tracer_fired_count();
	for (unsigned i = 0; i < n; i++) {
		prb[i] = (struct dt_run){ .in = &states[i], .fp = fp };
		run_state(&prb[i]);
	}
	uint64_t f1 = tracer_fired_count();
	tracer_probe_set(PROBE_ID, false, why, sizeof why);
	tracer_settle();
	tracer_clear();
	g->fired += f1 - f0;
	if (f1 - f0 != n) {
		g->count_bad = true;
		ginfo(g, "%s: %lu firings counted for %u probed runs", w->name,
		      (unsigned long)(f1 - f0), n);
	}

	for (unsigned i = 0; i < n; i++) {
		struct dt_run *a = &nat[i], *b = &prb[i];
		uint64_t mark_in = states[i].r[MARK_REG];
		struct dt_state exp;

		g->cases++;
		state_desc(sd, sizeof sd, w, &states[i]);
		if (!a->ok || !b->ok) {
			struct dt_run *t = a->ok ? b : a;
			g->errors++;
			ginfo(g, "%s, %s: %s run: %s (tt 0x%03x) at 0x%lx, word 0x%08lx",
			      w->name, sd, a->ok ? "probed" : "unprobed", t->trap.name,
			      t->trap.vector, (unsigned long)t->trap.pc,
			      (unsigned long)t->trap.insn);
			continue;
		}
		if (!dt_model(w, &states[i], &exp)) {
			g->errors++;
			ginfo(g, "%s, %s: the test's input misses the target", w->name, sd);
			continue;
		}
		if (diff(what, sizeof what, &exp, &a->out, fp, mark_in)) {
			g->model_mismatches++;
			ginfo(g, "%s, %s: V9 model vs unprobed: %s", w->name, sd, what);
		}
		if (diff(what, sizeof what, &a->out, &b->out, fp, mark_in) ||
		    a->above != b->above) {
			g->mismatches++;
			ginfo(g, "%s (0x%08x), %s: unprobed vs probed: %s%s", w->name,
			      w->insn, sd, what,
			      a->above != b->above ? " [stack above %sp differs]" : "");
		}
		if (a->at_site != w->insn || a->trail != 0 || b->at_site != PROBE_ID ||
		    b->trail == 0) {
			g->unfired++;
			ginfo(g, "%s, %s: site held 0x%08x / 0x%08x (want the CTI / "
			      "illtrap %u), %u / %u bytes below %%sp written (want 0 / "
			      "some)", w->name, sd, a->at_site, b->at_site, PROBE_ID,
			      a->trail, b->trail);
		}
	}
}

void dt_group_report(struct group *g)
{
	report(g->mismatches == 0 && g->errors == 0,
	       "%s: %u cases (%u site words), %u mismatches probed vs unprobed, "
	       "%u errors", g->name, g->cases, g->words, g->mismatches, g->errors);
	report(g->model_mismatches == 0 && g->errors == 0,
	       "%s: unprobed runs follow the V9 tables in %u/%u cases", g->name,
	       g->cases - g->model_mismatches - g->errors, g->cases);
	report(g->unfired == 0 && g->errors == 0 && !g->count_bad,
	       "%s: the probe fired in %u/%u probed runs%s", g->name,
	       g->cases - g->unfired - g->errors, g->cases,
	       " (tracer's fired count agrees)");
}
