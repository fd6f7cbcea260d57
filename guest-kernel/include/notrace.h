/*
 * notrace.h — code that probes must never patch.
 *
 * A probe's trap handler runs the trap entry, the tracer and the few kernel
 * helpers they call (the current thread, the cycle counter, memcpy); a probe
 * on any of those would trap inside its own handler. The linker scripts
 * gather that code between __notrace_start and __notrace_end: whole objects
 * (the tracer but its self-tests, whose code they probe; the trap entry and
 * dispatch; the serial link and the virtio port the drain uses) by name,
 * and single functions
 * marked NOTRACE from elsewhere (the arch's UART accessors among them: a
 * probe there would fire for every byte the drain sends, each firing a
 * record to send). The tracer refuses any probe inside that
 * range, and the host knows the range from the same two symbols. Such a
 * function is built without a frame pointer: on sparc64 a leaf then needs
 * no register window of its own, and the fire path no spill trap for it
 * (image.mk builds the objects named above the same way).
 */
#ifndef NOTRACE_H
#define NOTRACE_H

#define NOTRACE __attribute__((section(".text.notrace"), noinline, \
				 optimize("omit-frame-pointer")))

extern const char __notrace_start[], __notrace_end[];
/* The data of the same objects, with the arch's, the firmware's, the
 * per-CPU table's and the scheduler's (the boot thread, which the fire
 * path reads as the current thread): what a trap path may read or write,
 * so no watchpoint may cover it (tracer/core/watch.c). */
extern const char __notrace_data_start[], __notrace_data_end[];
extern const char __notrace_bss_start[], __notrace_bss_end[];
extern const char __workload_text_start[], __workload_text_end[];

#endif
