/*
 * arch.h — what an architecture provides to the arch-neutral kernel.
 *
 * core/ calls only these functions; each arch/<arch>/ directory implements
 * all of them, and the Makefile picks the directory. There is no #ifdef ARCH
 * anywhere in core/: a difference between machines belongs behind this
 * header. The arch in turn calls back into core through the hooks at the end
 * (timer tick, UART interrupt, trap catching).
 */
#ifndef ARCH_H
#define ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Per arch, inline for speed: struct arch_context (a switched-out thread's
 * registers), arch_this_cpu(), arch_cas_ulong(), arch_barrier(),
 * arch_cpu_relax(); and ARCH_TRAP_VECTORS, how many trap vectors (i386
 * vectors, sparc64 trap types) trap.h's hooks are indexed by. */
#include "arch/arch_inline.h"

/* Bring the CPU to a known state: trap table, MMU, interrupt controller,
 * UART pins. Called once, first thing, with interrupts off. */
void arch_init(void);

/* Identity for the HELLO frame (wire.h WIRE_ARCHES / WIRE_BYTE_ORDERS). */
extern const uint8_t arch_wire_id;
extern const uint8_t arch_byte_order;
extern const char arch_name[];

/* 16550 register access; core/uart16550.c holds the driver logic. */
uint8_t arch_uart_read(unsigned reg);
void arch_uart_write(unsigned reg, uint8_t value);
/* Let the UART's receive interrupt reach the CPU (PIC line, ebus...). */
void arch_uart_irq_enable(void);

/* PCI (core/pci.c enumerates, core/virtio*.c drive a device). Set up the
 * host bridge so its buses answer; returns how many buses to scan, or 0
 * with *why saying why this machine offers none. */
unsigned arch_pci_setup(const char **why);
/* The PCI I/O addresses [*base, *limit] that arch_pci_setup routed to the
 * buses it set up, for core/pci.c to give to I/O BARs nobody assigned;
 * false if there are none to give (firmware assigned every BAR). */
bool arch_pci_io_window(uint32_t *base, uint32_t *limit);
/* 32-bit configuration access of bus:dev.fn at reg (a multiple of 4);
 * all ones where no function answers. */
uint32_t arch_pci_config_read(unsigned bus, unsigned dev, unsigned fn, unsigned reg);
void arch_pci_config_write(unsigned bus, unsigned dev, unsigned fn, unsigned reg,
			   uint32_t value);
/* PCI I/O space at port (an I/O BAR plus an offset). 16- and 32-bit values
 * are in the guest's own byte order, as a legacy virtio header is. */
uint8_t arch_pci_io_read8(uint32_t port);
uint16_t arch_pci_io_read16(uint32_t port);
uint32_t arch_pci_io_read32(uint32_t port);
void arch_pci_io_write8(uint32_t port, uint8_t value);
void arch_pci_io_write16(uint32_t port, uint16_t value);
void arch_pci_io_write32(uint32_t port, uint32_t value);

/* Periodic timer at hz interrupts per second on every CPU; calls
 * timer_tick() on each, then sched_irq_exit() after acknowledging.
 * Returns false, changing nothing, if hz is outside what the arch can do. */
bool arch_timer_set_hz(unsigned hz);
extern const unsigned arch_timer_hz_min, arch_timer_hz_max;

/* CPUs the kernel handles at most. */
#define KERNEL_MAX_CPUS 8

/* Find the machine's CPUs; fill cpus[i].hw_id; return how many (>= 1). */
unsigned arch_cpu_discover(void);
/* Start secondary CPU c: it sets up its own descriptor tables, timer and
 * per-CPU pointer, then calls sched_cpu_online(). Returns once c->online,
 * false if it never came up. */
struct cpu;
bool arch_cpu_start(struct cpu *c);

/* Interrupt another CPU; it calls ipi_interrupt(kind) there. */
enum ipi_kind { IPI_RESCHEDULE, IPI_CALL };
void arch_send_ipi(unsigned cpu, enum ipi_kind kind);

/* Interrupt this CPU: the interrupt is taken as soon as interrupts are
 * enabled here again (at once if they are), and its handler calls
 * sched_kick_interrupt() then sched_irq_exit(). Callable from any context,
 * a trap handler with interrupts masked included; it touches no lock and
 * is NOTRACE (sched_kick_self's way in). */
void arch_self_interrupt(void);

/* Thread contexts: make ctx start entry() on a fresh stack; save the
 * callee-saved state into save and resume load. Interrupts stay masked
 * across the switch. */
void arch_context_init(struct arch_context *ctx, void *stack_top, void (*entry)(void));
void arch_context_switch(struct arch_context *save, struct arch_context *load);

/* Physical memory free for pages_alloc(), mapped one-to-one. */
void arch_free_memory(uintptr_t *lo, uintptr_t *hi);

/* Free-running cycle counter (TSC, %tick) and its rate, measured at boot. */
uint64_t arch_cycles(void);
uint64_t arch_cycles_hz(void);

/* Interrupt masking. save/restore nest; enable/disable do not. */
typedef unsigned long irqflags_t;
irqflags_t arch_irq_save(void);
void arch_irq_restore(irqflags_t flags);
void arch_irq_enable(void);
/* Sleep until the next interrupt (hlt with interrupts on). */
void arch_wait_for_interrupt(void);

/* Stop the machine with status (exit.h); arch/<arch>/exit.c documents
 * how QEMU's exit code encodes it. Never returns. */
_Noreturn void arch_exit(unsigned status);
/* Stop forever with interrupts masked: a guest that hangs, on purpose. */
_Noreturn void arch_hang(void);

/* setjmp/longjmp over callee-saved state, for trap_try(). */
typedef uintptr_t arch_jmp_buf[24];
int arch_setjmp(arch_jmp_buf buf) __attribute__((returns_twice));
_Noreturn void arch_longjmp(arch_jmp_buf buf, int value);

/* Deliberate crashes for the harness's tests (`crash <kind>`). */
/* Raise an exception nobody catches: kind is e.g. "ud", "pf".
 * Returns only if the kind is unknown. */
void arch_crash(const char *kind);
extern const char arch_crash_kinds[];

/* The `forms` workload: call the arch's functions built from every form
 * its probe emulator handles n times each; *calls = calls made. False if
 * an answer was wrong. */
bool arch_forms_run(uint64_t n, uint64_t *calls);

/* Text placement, from the linker script: [text_start, text_end) is mapped
 * read-only; kernel_end is the first byte after the image. */
extern char __text_start[], __text_end[], __kernel_end[];

/* ---- hooks core provides to the arch ---- */
void timer_tick(void);
void uart_interrupt(void);
void ipi_interrupt(enum ipi_kind kind);
/* Last thing in every interrupt handler, after the EOI: may switch threads. */
void sched_irq_exit(void);
/* The arch_self_interrupt handler's work (thread.h: sched_kick_self). */
void sched_kick_interrupt(void);

#endif
