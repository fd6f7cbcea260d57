/*
 * exit.c — stopping QEMU on sparc64 through a testdev chardev on COM2.
 *
 * sun4u has no isa-debug-exit. QEMU runs with
 *   -chardev testdev,id=exitdev -serial stdio -serial chardev:exitdev
 * so the second 16550 (ISA port 0x2f8, physical 0x1fe020002f8) feeds
 * QEMU's testdev, which reads "<decimal n>q" and exits at once with code
 * (n << 1) | 1 — the same encoding as i386's isa-debug-exit, so the host
 * maps both arches with one table:
 *
 *   guest status (exit.h)       bytes written   QEMU exit code
 *   0  PASS                     "0q"            1
 *   1  FAIL                     "1q"            3
 *   2  UNEXPECTED_TRAP          "2q"            5
 *   3  PANIC                    "3q"            7
 *   4  DOUBLE_FAULT             "4q"            9   (also the PROM's
 *                                                   fatal-reset path)
 *   N  (`exit N`, N <= 127)     "Nq"            2N+1
 *
 * An even code never comes from the guest: it is QEMU itself (killed, or
 * its own error exit). Code 1 also means "QEMU failed to start", which is
 * why the host accepts a status only together with the EXIT frame that
 * precedes the write (core/exit.c). Nothing else may be written to COM2:
 * testdev takes every byte as part of a command.
 */
#include "arch_sparc64.h"

#define UART_THR 0
#define UART_LSR 5
#define LSR_THRE 0x20

static void com2_putc(char c)
{
	/* Bounded: without a second -serial there may be no UART to wait
	 * for, and arch_exit must still end in arch_hang, not spin here. */
	for (unsigned spins = 0; spins < 1000000; spins++)
		if (lduba_phys(SUN4U_COM2 + UART_LSR) & LSR_THRE)
			break;
	stba_phys(SUN4U_COM2 + UART_THR, (uint8_t)c);
}

_Noreturn void arch_exit(unsigned status)
{
	char digits[12];
	int n = 0;

	do {
		digits[n++] = (char)('0' + status % 10);
		status /= 10;
	} while (status);
	while (n)
		com2_putc(digits[--n]);
	com2_putc('q');
	arch_hang();    /* only if QEMU lacks the testdev */
}

_Noreturn void arch_hang(void)
{
	/* sun4u has no instruction that sleeps until an interrupt; with IE
	 * clear nothing can take the CPU out of this loop. */
	wrpr(pstate, PSTATE_PRIV);
	for (;;)
		__asm__ volatile("" ::: "memory");
}
