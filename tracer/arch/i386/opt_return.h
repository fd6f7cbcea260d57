/*
 * opt_return.h — returns with no trap under `opt` (opt_return.c): an entry
 * probe's firing swaps the return address for the return trampoline and
 * keeps the real one on the thread's shadow stack; the trampoline records
 * the return and goes to the real address. What the fire path, the arming
 * and whoever reads return addresses ask of it.
 */
#ifndef I386_OPT_RETURN_H
#define I386_OPT_RETURN_H

#include <stdbool.h>
#include <stdint.h>

struct probe;
struct thread;
struct trapframe;

#define OPT_RETURN_STACKS 64    /* threads with a shadow stack at once */
#define OPT_RETURN_DEPTH  64    /* open trampolined calls per thread */

extern char opt_return_trampoline[];

/* Whether return probe p rides on its entry (`probe ride`): under opt its
 * own site is written only when a call could not be trampolined. */
bool opt_return_rides(const struct probe *p);
/* Entry probe e fired with sp its stack pointer at the site ([sp] the
 * return address): trampoline this call, if e has a riding return probe
 * that is enabled. Interrupts masked. */
void opt_return_enter(const struct probe *e, uint32_t sp);
/* A riding return probe's int3 (the fallback): whether this call's return
 * goes through the trampoline, which records it (so the int3 must not). */
bool opt_return_trampolined(const struct probe *r, const struct trapframe *tf);
/* The trampoline's C half (opt_return.S), interrupts masked: records the
 * return and puts the real return address back in its slot. */
void i386_opt_return(struct trapframe *tf);
/* The return address a thread's stack word at slot stands for: value
 * itself, or, if it is the trampoline, the real address the thread's
 * shadow stack keeps for that slot. For stack walks, `caller`, the
 * debugger and check mode. */
uint32_t opt_return_real(const struct thread *t, uint32_t slot, uint32_t value);
void opt_return_init(void);

#endif
