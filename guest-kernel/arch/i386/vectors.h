/*
 * vectors.h — IA-32 vectors and GDT layout, once, for C and assembly.
 *
 * EXCEPTION_VECTORS: X(vector, mnemonic, description, pushes_error_code).
 * entry.S expands it into one stub per exception (pushing a 0 where the CPU
 * pushes no error code); idt.c into the name table. The exceptions code
 * tests for by number are named VEC_* after the table (its numbers, by
 * their mnemonics). Vectors 32..255 get generic stubs; the ones in use are
 * named below. Being included from assembly, this file holds nothing but
 * macros.
 */
#ifndef I386_VECTORS_H
#define I386_VECTORS_H

#define EXCEPTION_VECTORS(X) \
	X(0,  "#DE", "divide error",                 0) \
	X(1,  "#DB", "debug",                        0) \
	X(2,  "NMI", "non-maskable interrupt",       0) \
	X(3,  "#BP", "breakpoint",                   0) \
	X(4,  "#OF", "overflow",                     0) \
	X(5,  "#BR", "bound range exceeded",         0) \
	X(6,  "#UD", "invalid opcode",               0) \
	X(7,  "#NM", "device not available",         0) \
	X(8,  "#DF", "double fault",                 1) \
	X(9,  "CSO", "coprocessor segment overrun",  0) \
	X(10, "#TS", "invalid TSS",                  1) \
	X(11, "#NP", "segment not present",          1) \
	X(12, "#SS", "stack-segment fault",          1) \
	X(13, "#GP", "general protection",           1) \
	X(14, "#PF", "page fault",                   1) \
	X(15, "r15", "reserved",                     0) \
	X(16, "#MF", "x87 floating-point error",     0) \
	X(17, "#AC", "alignment check",              1) \
	X(18, "#MC", "machine check",                0) \
	X(19, "#XM", "SIMD floating-point",          0) \
	X(20, "#VE", "virtualization",               0) \
	X(21, "#CP", "control protection",           1) \
	X(22, "r22", "reserved",                     0) \
	X(23, "r23", "reserved",                     0) \
	X(24, "r24", "reserved",                     0) \
	X(25, "r25", "reserved",                     0) \
	X(26, "r26", "reserved",                     0) \
	X(27, "r27", "reserved",                     0) \
	X(28, "#HV", "hypervisor injection",         0) \
	X(29, "#VC", "VMM communication",            1) \
	X(30, "#SX", "security",                     1) \
	X(31, "r31", "reserved",                     0)

/* The exceptions the kernel and the tracer single out, as numbered above. */
#define VEC_DE              0     /* #DE divide error */
#define VEC_DB              1     /* #DB debug: the single-step trap */
#define VEC_BP              3     /* #BP int3 */
#define VEC_UD              6     /* #UD invalid opcode: ud2 */
#define VEC_DF              8     /* #DF double fault: a task gate */
#define VEC_GP              13    /* #GP general protection */
#define VEC_PF              14    /* #PF page fault: CR2 holds the address */

#define NUM_EXCEPTIONS      32
#define PIC_VECTOR_BASE     32    /* 8259 master 32..39, slave 40..47 */
#define LAPIC_TIMER_VECTOR  64
#define IPI_RESCHED_VECTOR  240
#define IPI_CALL_VECTOR     241
#define KICK_VECTOR         242   /* arch_self_interrupt */
#define SPURIOUS_VECTOR     255

/* GDT: null, flat code, flat data, then per CPU i: its TSS, its
 * double-fault TSS, and its per-CPU data segment (loaded in %fs). */
#define SEL_KERNEL_CS       0x08
#define SEL_KERNEL_DS       0x10
#define GDT_PER_CPU_BASE    3
#define GDT_MAX_CPUS        8     /* == KERNEL_MAX_CPUS (checked in gdt.c) */
#define SEL_TSS(i)          ((GDT_PER_CPU_BASE + 3 * (i)) << 3)
#define SEL_DF_TSS(i)       ((GDT_PER_CPU_BASE + 3 * (i) + 1) << 3)
#define SEL_PERCPU(i)       ((GDT_PER_CPU_BASE + 3 * (i) + 2) << 3)
#define GDT_ENTRIES         (GDT_PER_CPU_BASE + 3 * GDT_MAX_CPUS)

/* Where secondary CPUs start in real mode (SIPI vector 0x08). */
#define TRAMPOLINE_BASE     0x8000

#endif
