/*
 * trap.h — hooks that see a trap first, and catching an expected trap.
 *
 * Trap hooks (illumos' dtrace_invop_add, kvm-unit-tests' handle_exception):
 * a client of the kernel that must see some traps before the kernel does
 * (the tracer: its probes' traps) registers a hook per vector — i386
 * vector, sparc64 trap type — with trap_hook_add(), at init (init.h). The
 * arch's trap dispatch runs a vector's hooks in registration order before
 * anything else: for an exception before trap_try and the unexpected-trap
 * dump, for an interrupt before its handler. A hook returns TRAP_HANDLED —
 * the trapped context resumes from the frame as the hook left it (the
 * arch's trapframe.h says what a hook may change) — or TRAP_DECLINED, and
 * the next hook, then the kernel, has the trap. An interrupt's hooks only
 * observe it: it is handled whatever they answer. Hooks run with
 * interrupts masked; running them is an index into a per-vector array and
 * a call per hook, no search.
 *
 * trap_try(fn, arg, &caught) runs fn(arg). If fn raises a trap, the arch's
 * trap handler asks trap_try_intercept() whether a try is active in this
 * thread; if so it fills the record and resumes execution at the landing
 * pad returned, which longjmps back into trap_try, and trap_try returns
 * true. Tries nest: the innermost catches, and the outer one is active
 * again once it returns.
 * Traps with no active try go to the arch's unexpected-trap dump, which
 * exits with EXIT_UNEXPECTED_TRAP. Interrupts are not traps here: the arch
 * never offers them for catching.
 */
#ifndef TRAP_H
#define TRAP_H

#include <stdbool.h>
#include <stdint.h>
#include "arch.h"                /* ARCH_TRAP_VECTORS */

/* ---- hooks ---- */

enum { TRAP_DECLINED, TRAP_HANDLED };
#define TRAP_HOOKS_PER_VECTOR 4

struct trapframe;
typedef int (*trap_hook_fn)(struct trapframe *tf);

/* Add fn to vector's hooks, after those already there; returns its place
 * (0 for the first). A vector out of range or one with TRAP_HOOKS_PER_VECTOR
 * hooks already panics: it is a mistake in the kernel's set-up. */
int trap_hook_add(unsigned vector, trap_hook_fn fn);

/* For the arch's trap dispatch: run vector's hooks until one handles the
 * trap. TRAP_HANDLED or TRAP_DECLINED. */
extern trap_hook_fn trap_hooks[ARCH_TRAP_VECTORS][TRAP_HOOKS_PER_VECTOR];

static inline int trap_hooks_run(unsigned vector, struct trapframe *tf)
{
	const trap_hook_fn *hook = trap_hooks[vector];
	for (unsigned i = 0; i < TRAP_HOOKS_PER_VECTOR && hook[i]; i++)
		if (hook[i](tf) == TRAP_HANDLED)
			return TRAP_HANDLED;
	return TRAP_DECLINED;
}

/* ---- catching ---- */

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
