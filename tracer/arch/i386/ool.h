/*
 * ool.h — i386's out-of-line slots (ool.c), shared with ool_slots.S.
 */
#ifndef I386_OOL_H
#define I386_OOL_H

#define OOL_SLOT_BYTES  32      /* a copy (<= 15 bytes) and a jmp rel32 */
#define OOL_SLOTS       4096    /* one per probe id: TRACER_MAX_PROBES */

#ifndef __ASSEMBLY__
#include <stdint.h>

struct probe;

/* Write p's slot (its copy and the jmp back) unless it already holds
 * exactly that; before p is armed, from thread context. */
void ool_prepare(const struct probe *p);
/* Where a firing of p resumes: its slot. */
uint32_t ool_slot(const struct probe *p);
#endif

#endif
