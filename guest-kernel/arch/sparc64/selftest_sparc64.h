/*
 * selftest_sparc64.h — what the sparc64 self-tests share with the
 * instructions they trap on (selftest_insns.S): the constants those
 * instructions encode, and their labels.
 */
#ifndef SPARC64_SELFTEST_H
#define SPARC64_SELFTEST_H

#define ST_ILLTRAP_CONST  0x1234   /* const22 of st_illtrap */
#define ST_DISP           0x1a8    /* displacement of st_load_disp / st_load_locals */
#define ST_SOFTWARE_TRAP  0x70     /* `ta 0x70` -> tt 0x170 */

#ifndef __ASSEMBLY__
#include <stdint.h>

typedef void st_fn(void *);
extern st_fn st_illtrap, st_illtrap_max, st_divzero, st_load64, st_load_disp,
	st_load_locals, st_store8, st_store32, st_ta;
extern char st_illtrap_insn[], st_illtrap_max_insn[], st_divzero_insn[],
	st_load64_insn[], st_load_disp_insn[], st_load_locals_insn[],
	st_store8_insn[], st_store32_insn[], st_ta_insn[];

void st_enter_user(void (*user_fn)(void));
extern void st_user_rdpr(void), st_user_asi(void);
extern char st_user_rdpr_insn[], st_user_asi_insn[];

int st_patch_target(void);
extern uint32_t st_patch_insn[];

uint64_t st_spill_other(uint64_t *reclassified);
uint64_t st_fill_other(void);
uint64_t st_clean_window(void);
#endif

#endif
