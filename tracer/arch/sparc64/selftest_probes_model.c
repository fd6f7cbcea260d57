/*
 * selftest_probes_model.c — the sparc64 probe self-test's own model of
 * the CTIs, independent of the emulator it checks (emulate.c): a site
 * word's fields and their names, the encoder that makes the word from
 * them at run time, and what the word must do per the V9 manual's tables
 * (Bicc, BPcc, BPr, FBfcc conditions; taken, untaken and annulled to
 * PC/nPC), as the marks of the path it takes (selftest_probes.S). Written
 * from the manual, not from emulate.c, so the unprobed runs are held
 * against something the probed ones did not also compute; the encoder is
 * itself held against the assembler's words for every class.
 */
#include <stdint.h>
#include "kstring.h"
#include "selftest.h"
#include "selftest_probes.h"

/* The three targets (selftest_probes.S), and the assembler's words. */
extern char dt_t_fwd[], dt_t_back[], dt_t_far[];
extern const uint32_t dt_ref_words[], dt_ref_end[];

/* ---- the CTIs: fields, encoding ---- */

const char *const dt_target_names[NTARGETS] = { "fwd", "back", "far" };

const char *const dt_icc_names[16] = {
	"n", "e", "le", "l", "leu", "cs", "neg", "vs",
	"a", "ne", "g", "ge", "gu", "cc", "pos", "vc",
};
const char *const dt_fcc_names[16] = {
	"n", "ne", "lg", "ul", "l", "ug", "g", "u",
	"a", "e", "ue", "ge", "uge", "le", "ule", "o",
};
const char *const dt_rcond_names[8] = {
	"?0", "z", "lez", "lz", "?4", "nz", "gz", "gez",
};
const char *const dt_reg_names[32] = {
	"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7",
	"o0", "o1", "o2", "o3", "o4", "o5", "sp", "o7",
	"l0", "l1", "l2", "l3", "l4", "l5", "l6", "l7",
	"i0", "i1", "i2", "i3", "i4", "i5", "fp", "i7",
};

uintptr_t dt_target_addr(unsigned t)
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
uint32_t dt_encode(const struct dt_word *w, int64_t d)
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

uint32_t dt_encode_for_site(const struct dt_word *w)
{
	int64_t d = ((int64_t)dt_target_addr(w->target) -
		     (int64_t)(uintptr_t)dt_site) / 4;
	return dt_encode(w, d);
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

unsigned dt_fcc_field(uint64_t fsr, unsigned n)
{
	static const unsigned shift[4] = { 10, 32, 34, 36 };
	return (unsigned)(fsr >> shift[n]) & 3;
}

uint64_t dt_fsr_with(const unsigned fcc[4])
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
		return ref_fcc(w->cond, dt_fcc_field(s->fsr, 0));
	case K_FBPFCC:
		return ref_fcc(w->cond, dt_fcc_field(s->fsr, w->cc));
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
bool dt_model(const struct dt_word *w, const struct dt_state *in,
	      struct dt_state *exp)
{
	uint64_t site = (uintptr_t)dt_site, marks;
	*exp = *in;
	if (w->cls == K_CALL || w->cls == K_JMPL) {
		uint64_t target = dt_target_addr(w->target);
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

/* ---- the run-time encoder against the assembler ---- */

void dt_test_encoder(void)
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
		uint32_t mine = dt_encode(&refs[i].w, refs[i].disp / 4);
		if (mine == dt_ref_words[i])
			good++;
		else
			report_info("reference word %u: encoder 0x%08x, assembler 0x%08x",
				    i, mine, dt_ref_words[i]);
	}
	report(count_ok && good == n, "run-time encoder agrees with the assembler "
	       "on %u/%u reference words (every class, d16hi, ret/retl)", good, n);
}
