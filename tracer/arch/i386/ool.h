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
struct trapframe;

/* Write p's slot (its copy and the jmp back) unless it already holds
 * exactly that; before p is armed, from thread context. */
void ool_prepare(const struct probe *p);
/* Where a firing of p resumes: its slot. */
uint32_t ool_slot(const struct probe *p);

/* Check mode (ool_check.c). The checked slot's bytes: the copy already in
 * want, the int3 after it. */
void ool_check_slot(const struct probe *p, uint8_t *want);
/* At a firing of a checked slot's probe, before it resumes there: the
 * state before, kept for this CPU; interrupts stay masked until the int3
 * after the copy. */
void ool_check_before(const struct probe *p, struct trapframe *tf);
/* The rest of an I386_CHECK_OOL record (check.h) after its "before"
 * registers (in w): len, the stack window around ESP and operand o's
 * words from its effective address (o->mem 0: none), read now, as
 * before. The emulated indirect call and jmp record so too (check.c). */
struct i386_operand;
void ool_check_operand(unsigned long *w, const struct i386_operand *o, unsigned len);
/* Whether check mode can record what p's instruction does; why if not. */
int ool_checkable(const struct probe *p, const char **why);
/* Registers the int3 hook of the checked slots; at init, after the
 * probes' own #BP hook. */
void ool_check_init(void);
#endif

#endif
