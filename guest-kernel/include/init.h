/*
 * init.h — the boot-time set-up of the kernel's clients.
 *
 * A client that must set itself up at boot (the tracer) names its init
 * function with KERNEL_INIT(fn), which places a pointer to it in the
 * .kernel_init linker set, as WORKLOAD() does for workloads; kernel_main
 * calls each one once, so the kernel never names its clients. They run
 * after every CPU has started and before HELLO tells the host the guest is
 * ready: threads, the timer, interrupts, paging and every CPU are up, so an
 * init function may allocate pages, create threads, claim a thread slot
 * (thread.h) and register trap hooks (trap.h). They run in link order:
 * none may rely on another having run.
 */
#ifndef INIT_H
#define INIT_H

typedef void kernel_init_fn(void);

#define KERNEL_INIT(fn) \
	static kernel_init_fn *const kernel_init_##fn \
	__attribute__((used, section(".kernel_init"), aligned(sizeof(void *)))) = fn

extern kernel_init_fn *const __kernel_init_start[], *const __kernel_init_end[];

#endif
