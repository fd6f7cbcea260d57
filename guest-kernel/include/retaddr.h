/*
 * retaddr.h — the return address a stack frame stands for, for whoever
 * reads return addresses: stack walks, a probe program's `caller`, the
 * debugger's view, check mode and code that reads its own
 * (__builtin_return_address).
 *
 * A tracer may put a trampoline's address in place of a frame's return
 * address while the call is open (i386's opt: tracer/arch/i386/
 * opt_return.c) and keep the real one on the thread's shadow stack, as
 * Linux's kretprobes and function_graph do; its filter maps the value
 * back. With no filter registered, or a value that is no trampoline's,
 * the value is the answer. The kernel never looks inside the filter.
 */
#ifndef RETADDR_H
#define RETADDR_H

#include <stdint.h>

struct thread;

/* The real return address of the function whose frame pointer is frame
 * (__builtin_frame_address of it) on thread t, given value, the word read
 * there as its return address. */
uintptr_t return_address_real(const struct thread *t, const void *frame,
			      uintptr_t value);

/* The tracer's map, set once at init (0: none). */
typedef uintptr_t return_address_filter_fn(const struct thread *t, const void *frame,
					   uintptr_t value);
void return_address_set_filter(return_address_filter_fn *fn);

#endif
