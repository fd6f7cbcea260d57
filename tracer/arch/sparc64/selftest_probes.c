/*
 * selftest_probes.c — differential self-test of the sparc64 probe
 * emulator (tracer/arch/sparc64/emulate.c and the fire path in fbt.c).
 *
 * Every CTI the emulator handles is generated at run time into the one
 * site of selftest_probes.S (dt_site, written through a writable alias of
 * its text page), in every condition, annul bit, cc selector and target
 * direction, and run from a set of register states: once unprobed, where
 * the CPU executes it, and once with a branch probe armed there (illtrap
 * const22), where the trap handler emulates it and retries at the PC/nPC
 * it chose. Each run starts from an identical state — all globals, %o,
 * %l, %i (the CTI's window, so the handler must read and write %l/%i
 * through the flushed save area), CCR, and for FP branches %fsr's fcc0..3
 * — and stores all of them back (selftest_probes.S says how). PC and nPC
 * after the CTI are read from marks that the delay slot, the fall-through
 * words and the target words leave in %g4.
 *
 * Per case, three things are checked and counted per group:
 *   - probed equals unprobed: the marks (PC, nPC), CCR, every register,
 *     %fsr for FP branches, and the scratch-stack bytes above %sp;
 *   - unprobed equals an independent model written from the V9 manual's
 *     tables (condition per cond, taken/annulled → PC/nPC), so the test
 *     cannot pass by running the same wrong thing twice, or nothing;
 *   - the probe fired: the site held the illtrap when the probed run
 *     began and the trap frame left bytes below %sp, which the unprobed
 *     run (interrupts off) never does, and the site held the CTI itself
 *     in the unprobed run.
 * A failure is explained in INFO lines (case, state, first fields that
 * differ) before its FAIL line.
 *
 * Then a function with loops, nested conditionals, a switch (jump table),
 * direct, indirect and windowed calls gets a branch probe on every CTI
 * it contains (its words are walked from tb_fn to tb_end) and must give
 * the unprobed results; a counting twin of it says how many CTIs ran, the
 * number of firings that run must cause.
 *
 * Probes use ids from 4000 and are all cleared after each site word
 * (tracer_clear removes every probe: the self-test is not meant to run
 * during a trace); the mechanism in force before is restored.
 */
#include <stddef.h>
#include <stdint.h>
#include "arch/arch_sparc64.h"
#include "console.h"
#include "kstring.h"
#include "mm.h"
#include "selftest.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

/* ---- what selftest_probes.S shares ---- */

struct dt_state {
	uint64_t r[32];         /* as instructions number them: g, o, l, i */
	uint64_t ccr;           /* xcc << 4 | icc */
	uint64_t fsr;           /* fcc0 11:10, fcc1 33:32, fcc2 35:34, fcc3 37:36 */
	uint64_t use_fsr;       /* load fsr (PEF and FEF must be on) */
	uint64_t pad;
};

#define MARK_REG 4              /* %g4 */
enum {
	M_SLOT = 0x001, M_FALL0 = 0x002, M_FALL1 = 0x004, M_FWD0 = 0x008,
	M_FWD1 = 0x010, M_BACK0 = 0x020, M_BACK1 = 0x040, M_FAR0 = 0x080,
	M_FAR1 = 0x100,
};

extern const uint32_t dt_layout[17];
extern const uint32_t dt_ref_words[], dt_ref_end[];
extern void dt_call(const struct dt_state *in, struct dt_state *out);
extern uint32_t dt_site[];
extern char dt_t_fwd[], dt_t_back[], dt_t_far[];
extern uint64_t tb_fn(uint64_t n, uint64_t x, uint64_t *hist);
extern const uint32_t tb_fn_words[] __asm__("tb_fn");
extern const uint32_t tb_end[];
extern uint64_t tb_count(uint64_t n, uint64_t x, uint64_t *hist, uint64_t *ctis);

#define PROBE_ID     4000u
#define NOP          0x01000000u
#define FPRS_FEF     4u
#define MAX_STATES   16u
#define MAX_INFO     10u        /* INFO lines per group */
#define MAX_WORD_INFO 2u        /* ... and per site word */

/* The scratch stack: the CTI window's %sp points SP_OFF into it. */
#define SCRATCH_BYTES 32768u
#define SP_OFF        24576u
#define TRAIL_BYTES   2048u     /* below %sp: where a trap frame goes */
#define ABOVE_BYTES   1024u     /* from %sp up: compared between runs */
static uint8_t dt_stack[SCRATCH_BYTES] __attribute__((aligned(64)));

static uint64_t scratch_sp(void)
{
	return (uintptr_t)dt_stack + SP_OFF - STACK_BIAS;
}

/* ---- the CTIs: fields, encoding ---- */

enum cls { K_BICC, K_BPCC, K_BPR, K_FBFCC, K_FBPFCC, K_CALL, K_JMPL };
enum target { T_FWD, T_BACK, T_FAR, NTARGETS };
static const char *const target_names[NTARGETS] = { "fwd", "back", "far" };

struct dt_word {
	uint8_t  cls, cond, annul, cc, p;    /* cond: rcond for BPr */
	uint8_t  rs1, rs2, rd, imm;          /* BPr: rs1; JMPL */
	int16_t  simm13;
	uint8_t  target;
	uint8_t  kind;                       /* probe kind */
	uint32_t insn;
	char     name[64];
};

static const char *const icc_names[16] = {
	"n", "e", "le", "l", "leu", "cs", "neg", "vs",
	"a", "ne", "g", "ge", "gu", "cc", "pos", "vc",
};
static const char *const fcc_names[16] = {
	"n", "ne", "lg", "ul", "l", "ug", "g", "u",
	"a", "e", "ue", "ge", "uge", "le", "ule", "o",
};
static const char *const rcond_names[8] = {
	"?0", "z", "lez", "lz", "?4", "nz", "gz", "gez",
};
static const char *const reg_names[32] = {
	"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7",
	"o0", "o1", "o2", "o3", "o4", "o5", "sp", "o7",
	"l0", "l1", "l2", "l3", "l4", "l5", "l6", "l7",
	"i0", "i1", "i2", "i3", "i4", "i5", "fp", "i7",
};

static uintptr_t target_addr(unsigned t)
{
	return t == T_FWD ? (uintptr_t)dt_t_fwd
	     : t == T_BACK ? (uintptr_t)dt_t_back : (uintptr_t)dt_t_far;
}

static uint64_t target_marks(unsigned t)
{
	return t == T_FWD ? M_FWD0 | M_FWD1
	     : t == T_BACK ? M_BACK0 | M_BACK1 : M_FAR0 | M_FAR1;
}

/* The word, from its fields and a displacement in words. */
static uint32_t encode(const struct dt_word *w, int64_t d)
{
	uint32_t a = (uint32_t)w->annul << 29, cond = (uint32_t)w->cond << 25;
	uint32_t cc = (uint32_t)w->cc << 20, p = (uint32_t)w->p << 19;
	uint32_t ud = (uint32_t)d;

	switch (w->cls) {
	case K_BICC:
		return a | cond | 2u << 22 | (ud & 0x3fffff);
	case K_FBFCC:
		return a | cond | 6u << 22 | (ud & 0x3fffff);
	case K_BPCC:
		return a | cond | 1u << 22 | cc | p | (ud & 0x7ffff);
	case K_FBPFCC:
		return a | cond | 5u << 22 | cc | p | (ud & 0x7ffff);
	case K_BPR:
		return a | (uint32_t)(w->cond & 7) << 25 | 3u << 22 |
		       ((ud >> 14) & 3) << 20 | p | (uint32_t)w->rs1 << 14 |
		       (ud & 0x3fff);
	case K_CALL:
		return 1u << 30 | (ud & 0x3fffffff);
	default:
		return 2u << 30 | (uint32_t)w->rd << 25 | 0x38u << 19 |
		       (uint32_t)w->rs1 << 14 |
		       (w->imm ? 1u << 13 | ((uint32_t)w->simm13 & 0x1fff) : w->rs2);
	}
}

static uint32_t encode_for_site(const struct dt_word *w)
{
	int64_t d = ((int64_t)target_addr(w->target) - (int64_t)(uintptr_t)dt_site) / 4;
	return encode(w, d);
}

/* ---- the reference model (V9 manual, Bicc/BPcc/BPr/FBfcc tables) ---- */

static bool ref_icc(unsigned cond, unsigned nzvc)
{
	bool N = nzvc & 8, Z = nzvc & 4, V = nzvc & 2, C = nzvc & 1;
	switch (cond) {
	case 0x0: return false;                  /* n   */
	case 0x1: return Z;                      /* e   */
	case 0x2: return Z || (N ^ V);           /* le  */
	case 0x3: return N ^ V;                  /* l   */
	case 0x4: return C || Z;                 /* leu */
	case 0x5: return C;                      /* cs  */
	case 0x6: return N;                      /* neg */
	case 0x7: return V;                      /* vs  */
	case 0x8: return true;                   /* a   */
	case 0x9: return !Z;                     /* ne  */
	case 0xa: return !(Z || (N ^ V));        /* g   */
	case 0xb: return !(N ^ V);               /* ge  */
	case 0xc: return !(C || Z);              /* gu  */
	case 0xd: return !C;                     /* cc  */
	case 0xe: return !N;                     /* pos */
	default:  return !V;                     /* vc  */
	}
}

/* The fcc relations each FBfcc condition is taken on: E(0) L(1) G(2) U(3). */
static const char *const fb_taken_on[16] = {
	"", "LGU", "LG", "LU", "L", "GU", "G", "U",
	"ELGU", "E", "EU", "EG", "EGU", "EL", "ELU", "ELG",
};

static bool ref_fcc(unsigned cond, unsigned fcc)
{
	return strchr(fb_taken_on[cond], "ELGU"[fcc]) != 0;
}

/* The signs of the register each BPr rcond is taken on (0 and 4 reserved). */
static const char *const br_taken_on[8] = {
	"", "0", "-0", "-", "", "-+", "+", "0+",
};

static unsigned fcc_field(uint64_t fsr, unsigned n)
{
	static const unsigned shift[4] = { 10, 32, 34, 36 };
	return (unsigned)(fsr >> shift[n]) & 3;
}

static uint64_t fsr_with(const unsigned fcc[4])
{
	return (uint64_t)fcc[0] << 10 | (uint64_t)fcc[1] << 32 |
	       (uint64_t)fcc[2] << 34 | (uint64_t)fcc[3] << 36;
}

static bool ref_taken(const struct dt_word *w, const struct dt_state *s)
{
	switch (w->cls) {
	case K_BICC:
		return ref_icc(w->cond, s->ccr & 0xf);
	case K_BPCC:
		return ref_icc(w->cond, w->cc == 2 ? (s->ccr >> 4) & 0xf : s->ccr & 0xf);
	case K_FBFCC:
		return ref_fcc(w->cond, fcc_field(s->fsr, 0));
	case K_FBPFCC:
		return ref_fcc(w->cond, fcc_field(s->fsr, w->cc));
	case K_BPR: {
		int64_t v = (int64_t)s->r[w->rs1];
		return strchr(br_taken_on[w->cond], v < 0 ? '-' : v ? '+' : '0') != 0;
	}
	default:
		return true;
	}
}

/* The state the CTI must leave; false if the input does not reach one of
 * the three targets (a generator error). */
static bool model(const struct dt_word *w, const struct dt_state *in,
		  struct dt_state *exp)
{
	uint64_t site = (uintptr_t)dt_site, marks;
	*exp = *in;
	if (w->cls == K_CALL || w->cls == K_JMPL) {
		uint64_t target = target_addr(w->target);
		if (w->cls == K_JMPL) {
			uint64_t a = w->rs1 ? in->r[w->rs1] : 0;
			uint64_t b = w->imm ? (uint64_t)(int64_t)w->simm13
				   : (w->rs2 ? in->r[w->rs2] : 0);
			if (a + b != target)
				return false;
			if (w->rd)
				exp->r[w->rd] = site;
		} else {
			exp->r[15] = site;
		}
		marks = M_SLOT | target_marks(w->target);
	} else {
		/* Taken: the slot runs, then the target — except ba,a / fba,a,
		 * which annul it. Untaken: the slot runs unless annulled. */
		bool taken = ref_taken(w, in);
		bool always = w->cls != K_BPR && w->cond == 8;
		if (taken)
			marks = (w->annul && always ? 0 : M_SLOT) | target_marks(w->target);
		else
			marks = (w->annul ? 0 : M_SLOT) | M_FALL0 | M_FALL1;
	}
	exp->r[MARK_REG] ^= marks;
	return true;
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

struct group {
	const char *name;
	unsigned words, cases, mismatches, model_mismatches, unfired, errors;
	unsigned infos, word_infos;  /* INFO lines printed: in all, this word */
	uint64_t fired;          /* firings counted by the tracer */
	bool     count_bad;
};

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
		ksnprintf(buf, size, "fcc0..3 %u%u%u%u", fcc_field(s->fsr, 0),
			  fcc_field(s->fsr, 1), fcc_field(s->fsr, 2),
			  fcc_field(s->fsr, 3));
		break;
	case K_BPR:
		ksnprintf(buf, size, "%%%s 0x%lx", reg_names[w->rs1],
			  (unsigned long)s->r[w->rs1]);
		break;
	case K_JMPL:
		if (w->imm)
			ksnprintf(buf, size, "%%%s 0x%lx", reg_names[w->rs1],
				  (unsigned long)s->r[w->rs1]);
		else
			ksnprintf(buf, size, "%%%s 0x%lx, %%%s 0x%lx",
				  reg_names[w->rs1], (unsigned long)s->r[w->rs1],
				  reg_names[w->rs2], (unsigned long)s->r[w->rs2]);
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
					  used ? "; " : "", reg_names[r],
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

static void run_word(struct group *g, struct dt_word *w,
		     const struct dt_state *states, unsigned n)
{
	char why[128], what[200], sd[64];
	bool fp = w->cls == K_FBFCC || w->cls == K_FBPFCC;

	g->words++;
	g->word_infos = 0;
	w->insn = encode_for_site(w);
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
		if (!model(w, &states[i], &exp)) {
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

static void group_report(struct group *g)
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

/* ---- input states ---- */

static uint64_t rng_state;

static uint64_t rng64(void)                  /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void random_state(struct dt_state *s, uint64_t seed)
{
	rng_state = seed;
	s->r[0] = 0;
	for (unsigned r = 1; r < 32; r++)
		s->r[r] = rng64();
	s->r[14] = scratch_sp();                /* %o6: the trap frame goes below */
	s->ccr = rng64() & 0xff;
	s->fsr = 0;
	s->use_fsr = 0;
	s->pad = 0;
}

static uint64_t seed_of(const struct dt_word *w, unsigned i)
{
	return (uint64_t)w->cls << 48 ^ (uint64_t)w->cond << 40 ^
	       (uint64_t)w->annul << 36 ^ (uint64_t)w->cc << 32 ^
	       (uint64_t)w->rs1 << 24 ^ (uint64_t)w->target << 20 ^
	       (uint64_t)w->rd << 12 ^ i;
}

static struct dt_state states[MAX_STATES];

/* The other fcc fields get the three values that differ from v. */
static void fcc_fields(unsigned sel, unsigned v, unsigned fcc[4])
{
	unsigned k = 1;
	for (unsigned f = 0; f < 4; f++)
		fcc[f] = f == sel ? v : (v + k++) & 3;
}

static struct dt_word branch_word(unsigned cls, unsigned cond, unsigned annul,
				  unsigned cc, unsigned target)
{
	struct dt_word w = {
		.cls = (uint8_t)cls, .cond = (uint8_t)cond, .annul = (uint8_t)annul,
		.cc = (uint8_t)cc, .target = (uint8_t)target,
		.p = (uint8_t)((cond ^ target) & 1), .kind = WIRE_EVENT_BRANCH,
	};
	return w;
}

static void test_bicc(void)
{
	struct group g = { .name = "Bicc" };
	for (unsigned cond = 0; cond < 16; cond++)
		for (unsigned annul = 0; annul < 2; annul++)
			for (unsigned t = 0; t < NTARGETS; t++) {
				struct dt_word w = branch_word(K_BICC, cond, annul, 0, t);
				ksnprintf(w.name, sizeof w.name, "b%s%s to %s",
					  icc_names[cond], annul ? ",a" : "",
					  target_names[t]);
				for (unsigned v = 0; v < 16; v++) {
					random_state(&states[v], seed_of(&w, v));
					/* xcc the complement: reading it would show */
					states[v].ccr = (~v & 0xf) << 4 | v;
				}
				run_word(&g, &w, states, 16);
			}
	report_info("Bicc: 16 conds x 16 icc values x 2 annul x 3 targets "
		    "(fwd, back, far); xcc = ~icc");
	group_report(&g);
}

static void test_bpcc(void)
{
	struct group g = { .name = "BPcc" };
	for (unsigned cond = 0; cond < 16; cond++)
		for (unsigned cc = 0; cc <= 2; cc += 2)
			for (unsigned annul = 0; annul < 2; annul++)
				for (unsigned t = 0; t < NTARGETS; t++) {
					struct dt_word w = branch_word(K_BPCC, cond, annul, cc, t);
					ksnprintf(w.name, sizeof w.name, "b%s%s,%s %%%s to %s",
						  icc_names[cond], annul ? ",a" : "",
						  w.p ? "pt" : "pn", cc ? "xcc" : "icc",
						  target_names[t]);
					for (unsigned v = 0; v < 16; v++) {
						unsigned other = ~v & 0xf;
						random_state(&states[v], seed_of(&w, v));
						states[v].ccr = cc ? (v << 4 | other)
								   : (other << 4 | v);
					}
					run_word(&g, &w, states, 16);
				}
	report_info("BPcc: 16 conds x {icc, xcc} x 16 values of that cc x 2 annul "
		    "x 3 targets; the other cc = ~value");
	group_report(&g);
}

static void test_bpr(void)
{
	static const uint8_t regs[] = { 1, 11, 21, 26 };   /* %g1 %o3 %l5 %i2 */
	static const uint8_t rconds[] = { 1, 2, 3, 5, 6, 7 };
	static const uint64_t values[] = {
		0xffffffffffffffffull,          /* -1 */
		0x8000000000000001ull,          /* negative, low word +1 */
		0,
		0x0000000100000000ull,          /* positive, low word 0 */
		0x00000000ffffffffull,          /* positive, low word -1 */
		0x7fffffffffffffffull,
	};
	struct group g = { .name = "BPr" };
	for (unsigned c = 0; c < sizeof rconds; c++)
		for (unsigned annul = 0; annul < 2; annul++)
			for (unsigned ri = 0; ri < sizeof regs; ri++)
				for (unsigned t = 0; t < NTARGETS; t++) {
					struct dt_word w = branch_word(K_BPR, rconds[c], annul, 0, t);
					w.rs1 = regs[ri];
					w.p = (uint8_t)((annul ^ ri) & 1);
					ksnprintf(w.name, sizeof w.name, "br%s%s,%s %%%s to %s",
						  rcond_names[rconds[c]], annul ? ",a" : "",
						  w.p ? "pt" : "pn", reg_names[w.rs1],
						  target_names[t]);
					for (unsigned v = 0; v < 6; v++) {
						random_state(&states[v], seed_of(&w, v));
						states[v].r[w.rs1] = values[v];
					}
					run_word(&g, &w, states, 6);
				}
	report_info("BPr: 6 rconds x 6 values (2 negative, zero, 3 positive) x "
		    "rs1 in {%%g1, %%o3, %%l5, %%i2} x 2 annul x 3 targets");
	group_report(&g);
}

static void fp_states(const struct dt_word *w, unsigned sel)
{
	for (unsigned v = 0; v < 4; v++) {
		unsigned fcc[4];
		random_state(&states[v], seed_of(w, v));
		fcc_fields(sel, v, fcc);
		states[v].fsr = fsr_with(fcc);
		states[v].use_fsr = 1;
	}
}

static void test_fbfcc(void)
{
	struct group g = { .name = "FBfcc" };
	for (unsigned cond = 0; cond < 16; cond++)
		for (unsigned annul = 0; annul < 2; annul++)
			for (unsigned t = 0; t < NTARGETS; t++) {
				struct dt_word w = branch_word(K_FBFCC, cond, annul, 0, t);
				ksnprintf(w.name, sizeof w.name, "fb%s%s to %s",
					  fcc_names[cond], annul ? ",a" : "",
					  target_names[t]);
				fp_states(&w, 0);
				run_word(&g, &w, states, 4);
			}
	report_info("FBfcc: 16 conds x 4 fcc0 values x 2 annul x 3 targets; "
		    "fcc1..3 differ from fcc0");
	group_report(&g);
}

static void test_fbpfcc(void)
{
	struct group g = { .name = "FBPfcc" };
	for (unsigned cond = 0; cond < 16; cond++)
		for (unsigned cc = 0; cc < 4; cc++)
			for (unsigned annul = 0; annul < 2; annul++)
				for (unsigned t = 0; t < NTARGETS; t++) {
					struct dt_word w = branch_word(K_FBPFCC, cond, annul, cc, t);
					ksnprintf(w.name, sizeof w.name, "fb%s%s,%s %%fcc%u to %s",
						  fcc_names[cond], annul ? ",a" : "",
						  w.p ? "pt" : "pn", cc, target_names[t]);
					fp_states(&w, cc);
					run_word(&g, &w, states, 4);
				}
	report_info("FBPfcc: 16 conds x fcc0..3 x 4 values x 2 annul x 3 targets; "
		    "the other fcc fields differ from the selected one");
	group_report(&g);
}

#define JMPL_STATES 4

static void test_call(void)
{
	struct group g = { .name = "CALL" };
	for (unsigned t = 0; t < NTARGETS; t++) {
		struct dt_word w = { .cls = K_CALL, .target = (uint8_t)t,
				     .kind = WIRE_EVENT_BRANCH };
		ksnprintf(w.name, sizeof w.name, "call to %s", target_names[t]);
		for (unsigned i = 0; i < JMPL_STATES; i++)
			random_state(&states[i], seed_of(&w, i));
		run_word(&g, &w, states, JMPL_STATES);
	}
	report_info("CALL: 3 targets x %u register states", JMPL_STATES);
	group_report(&g);
}

static const struct jform {
	const char *name;
	uint8_t rd, rs1, rs2, imm;
	int16_t simm13;
	uint8_t kind;
} jforms[] = {
	{ "jmpl %g1 + %g2, %o7", 15, 1, 2, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %o3 + %o5, %g0", 0, 11, 13, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %l1 + %i3, %g3", 3, 17, 27, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %g1 + %g0, %o7 (call %g1)", 15, 1, 0, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %i6 + %i4, %i7", 31, 30, 28, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %o2 - 12, %o7", 15, 10, 0, 1, -12, WIRE_EVENT_BRANCH },
	{ "jmpl %l4 + 100, %l6", 22, 20, 0, 1, 100, WIRE_EVENT_BRANCH },
	{ "jmpl %i5 - 4096, %i2", 26, 29, 0, 1, -4096, WIRE_EVENT_BRANCH },
	{ "jmpl %g5 + 4092, %i0", 24, 5, 0, 1, 4092, WIRE_EVENT_BRANCH },
	{ "ret", 0, 31, 0, 1, 8, WIRE_EVENT_BRANCH },
	{ "retl", 0, 15, 0, 1, 8, WIRE_EVENT_BRANCH },
	{ "ret (return probe)", 0, 31, 0, 1, 8, WIRE_EVENT_RETURN },
	{ "retl (return probe)", 0, 15, 0, 1, 8, WIRE_EVENT_RETURN },
	{ "jmpl %l2 + 8, %l2 (rd = rs1)", 18, 18, 0, 1, 8, WIRE_EVENT_BRANCH },
	{ "jmpl %o7 + 8, %o7 (rd = rs1)", 15, 15, 0, 1, 8, WIRE_EVENT_BRANCH },
	{ "jmpl %l0 + %l7, %l7 (rd = rs2)", 23, 16, 23, 0, 0, WIRE_EVENT_BRANCH },
	{ "jmpl %i3 + %i3, %i3 (rd = rs1 = rs2)", 27, 27, 27, 0, 0,
	  WIRE_EVENT_BRANCH },
};

static void test_jmpl(void)
{
	struct group g = { .name = "JMPL" };
	for (unsigned f = 0; f < sizeof jforms / sizeof jforms[0]; f++) {
		const struct jform *j = &jforms[f];
		for (unsigned t = 0; t < NTARGETS; t++) {
			struct dt_word w = {
				.cls = K_JMPL, .rd = j->rd, .rs1 = j->rs1, .rs2 = j->rs2,
				.imm = j->imm, .simm13 = j->simm13, .target = (uint8_t)t,
				.kind = j->kind, .cond = (uint8_t)f,
			};
			uint64_t to = target_addr(t);
			ksnprintf(w.name, sizeof w.name, "%s to %s", j->name,
				  target_names[t]);
			for (unsigned i = 0; i < JMPL_STATES; i++) {
				struct dt_state *s = &states[i];
				random_state(s, seed_of(&w, i));
				if (j->imm)
					s->r[j->rs1] = to - (uint64_t)(int64_t)j->simm13;
				else if (j->rs1 == j->rs2)   /* 2v = to, mod 2^64 */
					s->r[j->rs1] = to / 2 + (i & 1 ? 1ull << 63 : 0);
				else if (j->rs2 == 0)
					s->r[j->rs1] = to;
				else
					s->r[j->rs1] = to - s->r[j->rs2];
			}
			run_word(&g, &w, states, JMPL_STATES);
		}
	}
	report_info("JMPL: %u forms (reg+reg, reg+imm, ret, retl, rd = %%l/%%i, "
		    "rd = rs1) x 3 targets x %u register states",
		    (unsigned)(sizeof jforms / sizeof jforms[0]), JMPL_STATES);
	group_report(&g);
}

/* ---- the run-time encoder against the assembler ---- */

static void test_encoder(void)
{
	static const struct { struct dt_word w; int32_t disp; } refs[] = {
		{ { .cls = K_BICC, .cond = 1, .annul = 1 }, 8 },
		{ { .cls = K_BICC, .cond = 0xf }, -16 },
		{ { .cls = K_BPCC, .cond = 4, .annul = 1, .cc = 2, .p = 0 }, 0x40 },
		{ { .cls = K_BPCC, .cond = 0xe, .cc = 0, .p = 1 }, -4 },
		{ { .cls = K_BPR, .cond = 3, .annul = 1, .rs1 = 21, .p = 0 }, 12 },
		{ { .cls = K_BPR, .cond = 7, .rs1 = 26, .p = 1 }, -0x18000 },
		{ { .cls = K_BPR, .cond = 5, .rs1 = 1, .p = 1 }, 0x10010 },
		{ { .cls = K_FBFCC, .cond = 0xe, .annul = 1 }, 0x20 },
		{ { .cls = K_FBPFCC, .cond = 0xf, .annul = 1, .cc = 2, .p = 1 }, -8 },
		{ { .cls = K_FBPFCC, .cond = 1, .cc = 3, .p = 0 }, 0x7fffc },
		{ { .cls = K_CALL }, 0x100000 },
		{ { .cls = K_CALL }, -0x200 },
		{ { .cls = K_JMPL, .rd = 3, .rs1 = 17, .rs2 = 27 }, 0 },
		{ { .cls = K_JMPL, .rd = 26, .rs1 = 29, .imm = 1, .simm13 = -4096 }, 0 },
		{ { .cls = K_JMPL, .rd = 0, .rs1 = 31, .imm = 1, .simm13 = 8 }, 0 },
		{ { .cls = K_JMPL, .rd = 0, .rs1 = 15, .imm = 1, .simm13 = 8 }, 0 },
	};
	unsigned n = sizeof refs / sizeof refs[0], good = 0;
	bool count_ok = (unsigned)(dt_ref_end - dt_ref_words) == n;

	for (unsigned i = 0; i < n && count_ok; i++) {
		uint32_t mine = encode(&refs[i].w, refs[i].disp / 4);
		if (mine == dt_ref_words[i])
			good++;
		else
			report_info("reference word %u: encoder 0x%08x, assembler 0x%08x",
				    i, mine, dt_ref_words[i]);
	}
	report(count_ok && good == n, "run-time encoder agrees with the assembler "
	       "on %u/%u reference words (every class, d16hi, ret/retl)", good, n);
}

static bool layout_ok(void)
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

/* ---- a probe on every CTI of a function ---- */

static const char *cti_class(uint32_t w)
{
	unsigned op = w >> 30, op2 = (w >> 22) & 7, op3 = (w >> 19) & 0x3f;
	if (op == 1)
		return "CALL";
	if (op == 2 && op3 == 0x38)
		return "JMPL";
	if (op == 2 && (op3 == 0x39 || op3 == 0x3a || op3 == 0x3e))
		return "other";         /* return, Tcc, done/retry */
	if (op != 0)
		return 0;
	switch (op2) {
	case 1: return "BPcc";
	case 2: return "Bicc";
	case 3: return "BPr";
	case 5: return "FBPfcc";
	case 6: return "FBfcc";
	}
	return 0;
}

#define TB_INPUTS 5

struct tb_result {
	uint64_t acc, hist[8];
};

struct tb_runs {
	struct tb_result res[TB_INPUTS];
};

static const struct { uint64_t n, x; } tb_inputs[TB_INPUTS] = {
	{ 0, 0x1234 },
	{ 1, 0x9e3779b97f4a7c15ull },
	{ 9, 0x2545f4914f6cdd1dull },
	{ 80, 0xdeadbeefcafef00dull },
	{ 400, 0x0123456789abcdefull },
};

static void tb_run_fn(void *arg)
{
	struct tb_runs *r = arg;
	irqflags_t f = arch_irq_save();
	for (unsigned i = 0; i < TB_INPUTS; i++) {
		memset(r->res[i].hist, 0, sizeof r->res[i].hist);
		r->res[i].acc = tb_fn(tb_inputs[i].n, tb_inputs[i].x, r->res[i].hist);
	}
	arch_irq_restore(f);
}

static void test_every_cti(void)
{
	static struct tb_runs plain, probed, twin;
	static const char *const classes[] = { "CALL", "JMPL", "Bicc", "BPcc", "BPr" };
	unsigned per_class[5] = { 0 }, nctis = 0, refused = 0, others = 0;
	uint64_t ctis = 0, fired0 = 0, fired1 = 0;
	struct caught_trap c;
	char why[128];

	report_prefix_push("every CTI");
	if (trap_try(tb_run_fn, &plain, &c)) {
		report(false, "unprobed tb_fn trapped: %s at 0x%lx", c.name,
		       (unsigned long)c.pc);
		goto out;
	}
	for (unsigned i = 0; i < TB_INPUTS; i++) {
		uint64_t k = 0;
		memset(twin.res[i].hist, 0, sizeof twin.res[i].hist);
		twin.res[i].acc = tb_count(tb_inputs[i].n, tb_inputs[i].x,
					   twin.res[i].hist, &k);
		ctis += k;
	}
	report(memcmp(&plain, &twin, sizeof plain) == 0,
	       "the counting twin computes what tb_fn computes (%u inputs)",
	       TB_INPUTS);

	for (const uint32_t *p = tb_fn_words; p < tb_end; p++) {
		const char *cls = cti_class(*p);
		if (!cls)
			continue;
		if (strcmp(cls, "other") == 0) {
			others++;
			continue;
		}
		for (unsigned k = 0; k < 5; k++)
			if (strcmp(cls, classes[k]) == 0)
				per_class[k]++;
		if (tracer_probe_add(PROBE_ID + nctis, (uintptr_t)p, WIRE_EVENT_BRANCH,
				     0, why, sizeof why) != 0 ||
		    tracer_probe_set(PROBE_ID + nctis, true, why, sizeof why) != 0) {
			if (!refused++)
				report_info("%s at 0x%lx refused: %s", cls,
					    (unsigned long)(uintptr_t)p, why);
		}
		nctis++;
	}
	tracer_settle();
	report(refused == 0 && others == 0 && nctis > 0,
	       "a branch probe on each of the %u CTIs in tb_fn..tb_end (%u bytes): "
	       "CALL %u, JMPL %u, Bicc %u, BPcc %u, BPr %u; %u refused, %u "
	       "unprobeable", nctis, (unsigned)((tb_end - tb_fn_words) * 4),
	       per_class[0], per_class[1], per_class[2], per_class[3], per_class[4],
	       refused, others);

	fired0 = tracer_fired_count();
	bool trapped = trap_try(tb_run_fn, &probed, &c);
	fired1 = tracer_fired_count();
	tracer_clear();
	if (trapped) {
		report(false, "probed tb_fn trapped: %s (tt 0x%03x) at 0x%lx, word "
		       "0x%08lx", c.name, c.vector, (unsigned long)c.pc,
		       (unsigned long)c.insn);
		goto out;
	}
	unsigned same = 0;
	for (unsigned i = 0; i < TB_INPUTS; i++) {
		if (memcmp(&plain.res[i], &probed.res[i], sizeof plain.res[i]) == 0) {
			same++;
			continue;
		}
		report_info("input n=%lu x=0x%lx: unprobed acc 0x%lx, probed 0x%lx",
			    (unsigned long)tb_inputs[i].n, (unsigned long)tb_inputs[i].x,
			    (unsigned long)plain.res[i].acc,
			    (unsigned long)probed.res[i].acc);
	}
	report(same == TB_INPUTS, "with all %u probed, results equal unprobed "
	       "for %u/%u inputs (return value and 8 histogram words)", nctis,
	       same, TB_INPUTS);
	report(fired1 - fired0 == ctis, "%lu firings counted by the tracer, "
	       "%lu CTI executions counted by the twin",
	       (unsigned long)(fired1 - fired0), (unsigned long)ctis);
out:
	report_prefix_pop();
}

/* ---- the area ---- */

static void selftest_probes(void)
{
	const char *old_mechanism = tarch_mechanisms[tracer_mechanism].name;
	uint64_t t0 = arch_cycles();

	if (!report(layout_ok(), "struct dt_state and the marks match "
		    "selftest_probes.S"))
		return;
	test_encoder();
	/* The PASS line keeps its words from before `probe mechanism`, so
	 * self-test logs of either side compare line for line. */
	if (!report(tracer_set_mechanism("emulate") == 0, "probe mode set to emulate "
		    "(no probe may be enabled when the area starts)"))
		return;
	site_alias = mm_alias_writable(dt_site);
	if (!report(site_alias != 0, "writable alias of the site's text page"))
		goto out;

	test_bicc();
	test_bpcc();
	test_bpr();
	test_fbfcc();
	test_fbpfcc();
	test_call();
	test_jmpl();

	write_site(NOP);
	mm_alias_release(site_alias);
	site_alias = 0;

	test_every_cti();
out:
	tracer_clear();
	if (tracer_set_mechanism(old_mechanism) != 0)
		report(false, "mechanism %s restored", old_mechanism);
	uint64_t us = (arch_cycles() - t0) * 1000000 / arch_cycles_hz();
	report_info("probes area: %lu.%03lu s of guest time", (unsigned long)(us / 1000000),
		    (unsigned long)(us / 1000 % 1000));
}
SELFTEST(400, "probes", selftest_probes);
