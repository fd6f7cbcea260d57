/*
 * trap.h — catching an expected trap and recovering from it.
 *
 * trap_try(fn, arg, &caught) runs fn(arg). If fn raises a trap, the arch's
 * trap handler asks trap_try_intercept() whether a try is active on this
 * CPU; if so it fills the record and resumes execution at the landing pad
 * returned, which longjmps back into trap_try, and trap_try returns true.
 * Traps with no active try go to the arch's unexpected-trap dump, which
 * exits with EXIT_UNEXPECTED_TRAP. Interrupts are not traps here: the arch
 * never offers them for catching.
 */
#ifndef TRAP_H
#define TRAP_H

#include <stdbool.h>
#include <stdint.h>

struct caught_trap {
	unsigned    vector;      /* i386 vector / sparc64 tt */
	const char *name;        /* e.g. "#PF", "illegal_instruction" */
	uintptr_t   pc;          /* faulting (or, for traps, next) instruction */
	uintptr_t   error;       /* i386 error code, sparc64 SFSR, else 0 */
	uintptr_t   fault_addr;  /* i386 CR2, sparc64 SFAR, else 0 */
	uintptr_t   insn;        /* sparc64: the instruction word at pc */
};

bool trap_try(void (*fn)(void *), void *arg, struct caught_trap *caught);

/* Called by the arch trap handler for a synchronous exception. Returns the
 * address to resume at if a try is active (the record is stored), else 0. */
uintptr_t trap_try_intercept(const struct caught_trap *trap);

#endif
