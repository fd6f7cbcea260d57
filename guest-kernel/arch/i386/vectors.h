/*
 * vectors.h — the 32 IA-32 exception vectors, once, for C and assembly.
 *
 * X(vector, mnemonic, description, pushes_error_code). entry.S expands it
 * into one stub per vector (pushing a 0 where the CPU pushes no error code)
 * and the stub address table; idt.c expands it into the name table. Being
 * included from assembly, it holds nothing but macros.
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

#define NUM_EXCEPTIONS   32
#define IRQ_BASE         32   /* 8259 master at 32..39, slave at 40..47 */
#define NUM_IRQS         16
#define NUM_VECTORS      48

/* GDT selectors (gdt.c builds the table in this order). */
#define SEL_KERNEL_CS    0x08
#define SEL_KERNEL_DS    0x10
#define SEL_TSS          0x18
#define SEL_DF_TSS       0x20
#define GDT_ENTRIES      5

#endif
