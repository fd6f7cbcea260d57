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
void ool_check_init(void);
#endif

#endif
