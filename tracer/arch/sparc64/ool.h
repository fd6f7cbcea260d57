/*
 * ool.h — sparc64's out-of-line slots (ool.c), shared with ool_slots.S.
 */
#ifndef SPARC64_OOL_H
#define SPARC64_OOL_H

#define OOL_SLOTS       4096    /* one word per probe id: TRACER_MAX_PROBES */
/* The ILLTRAP ending a checked slot's copy (ool_check.c): no probe's
 * index, nor an unwritten slot's. */
#define OOL_CHECK_MARK  0x003ffffe

#ifndef __ASSEMBLY__
#include <stdbool.h>
#include <stdint.h>

struct probe;

/* Whether the word w, at a site that is no CTI, save or return, runs the
 * same from the probe's slot; if not, *why says why. */
bool sparc_ool_ok(uint32_t w, const char **why);
/* Write p's slot (its copy) unless it already holds it; before p is
 * armed, from thread context. */
void ool_prepare(const struct probe *p);
/* Where a firing of p resumes (TPC; TNPC is the site + 4). */
uintptr_t ool_slot(const struct probe *p);

/* Check mode (ool_check.c). Whether the record can carry what the word
 * does (else *why says what it cannot); write p's checked slot, before p
 * is armed; at a checked firing, record the state before and send the
 * trapped context to the checked slot with interrupts masked; register
 * the hook that ends it. */
bool ool_checkable(uint32_t w, const char **why);
void ool_check_prepare(const struct probe *p);
struct trapframe;
void ool_check_before(const struct probe *p, struct trapframe *tf);
/* The record's memory part for the word insn (check.h's
 * SPARC64_CHECK_OOL_*) into w: first, its effective address from r and
 * the doublewords there before; else the same doublewords after (also
 * tramp_check.c's, for an entry word its trampoline runs). */
struct sparc_regs;
void ool_check_memory(uint32_t insn, const struct sparc_regs *r, unsigned long *w,
		      bool first);
void ool_check_init(void);
#endif

#endif
