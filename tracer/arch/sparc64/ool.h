/*
 * ool.h — sparc64's out-of-line slots (ool.c), shared with ool_slots.S.
 */
#ifndef SPARC64_OOL_H
#define SPARC64_OOL_H

#define OOL_SLOTS       4096    /* one word per probe id: TRACER_MAX_PROBES */

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
#endif

#endif
