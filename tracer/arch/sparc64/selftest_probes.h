/*
 * selftest_probes.h — what the files of the sparc64 probe self-test share
 * (selftest_probes.c says what the test does): the state dt_call runs a
 * CTI from and stores back (laid out as selftest_probes.S expects), the
 * marks its paths leave, a site word's fields, a group's tallies, and the
 * functions of the model, the runner, the classes and the every-CTI test.
 */
#ifndef SPARC64_SELFTEST_PROBES_H
#define SPARC64_SELFTEST_PROBES_H

#include <stdbool.h>
#include <stdint.h>

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

extern void dt_call(const struct dt_state *in, struct dt_state *out);
extern uint32_t dt_site[];

#define PROBE_ID     4000u      /* the first probe id the self-test uses */
#define MAX_STATES   16u        /* input states per site word */

/* ---- the CTIs: fields (selftest_probes_model.c) ---- */

enum cls { K_BICC, K_BPCC, K_BPR, K_FBFCC, K_FBPFCC, K_CALL, K_JMPL };
enum target { T_FWD, T_BACK, T_FAR, NTARGETS };

struct dt_word {
	uint8_t  cls, cond, annul, cc, p;    /* cond: rcond for BPr */
	uint8_t  rs1, rs2, rd, imm;          /* BPr: rs1; JMPL */
	int16_t  simm13;
	uint8_t  target;
	uint8_t  kind;                       /* probe kind */
	uint32_t insn;
	char     name[64];
};

extern const char *const dt_target_names[NTARGETS];
extern const char *const dt_icc_names[16];
extern const char *const dt_fcc_names[16];
extern const char *const dt_rcond_names[8];
extern const char *const dt_reg_names[32];

/* Where target t is (enum target, selftest_probes.S). */
uintptr_t dt_target_addr(unsigned t);
/* The word, from its fields and a displacement in words; the word at
 * dt_site that reaches w's target. */
uint32_t dt_encode(const struct dt_word *w, int64_t d);
uint32_t dt_encode_for_site(const struct dt_word *w);
/* fcc field n of an %fsr value; an %fsr with the four fcc fields. */
unsigned dt_fcc_field(uint64_t fsr, unsigned n);
uint64_t dt_fsr_with(const unsigned fcc[4]);
/* The state the CTI must leave, per the V9 manual; false if the input
 * does not reach one of the three targets (a generator error). */
bool dt_model(const struct dt_word *w, const struct dt_state *in,
	      struct dt_state *exp);
/* The run-time encoder against the assembler's words: a PASS/FAIL line. */
void dt_test_encoder(void);

/* ---- a group of site words and its tallies (selftest_probes_run.c) ---- */

struct group {
	const char *name;
	unsigned words, cases, mismatches, model_mismatches, unfired, errors;
	unsigned infos, word_infos;  /* INFO lines printed: in all, this word */
	uint64_t fired;          /* firings counted by the tracer */
	bool     count_bad;
};

/* struct dt_state and the marks as selftest_probes.S has them. */
bool dt_layout_ok(void);
/* The CTI window's %sp: in the scratch stack, biased. */
uint64_t dt_scratch_sp(void);
/* A writable alias of dt_site's page, for the site words (false: none);
 * closing it leaves a nop at the site. */
bool dt_site_open(void);
void dt_site_close(void);
/* Site word w from each of the n states, unprobed then probed; tallied
 * into g, explained in INFO lines. */
void dt_run_word(struct group *g, struct dt_word *w,
		 const struct dt_state *states, unsigned n);
/* g's three PASS/FAIL lines. */
void dt_group_report(struct group *g);

/* ---- the tests (selftest_probes_classes.c, selftest_probes_every_cti.c) ---- */

/* Every class's site words: Bicc, BPcc, BPr, FBfcc, FBPfcc, CALL, JMPL. */
void dt_test_classes(void);
/* A branch probe on every CTI of tb_fn. */
void dt_test_every_cti(void);

#endif
