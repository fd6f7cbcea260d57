/*
 * exit.c — stopping QEMU on i386 through isa-debug-exit.
 *
 * QEMU runs with -device isa-debug-exit,iobase=0xf4,iosize=0x04. A 32-bit
 * write of v to port 0xf4 makes QEMU exit at once with code (v << 1) | 1:
 *
 *   guest status (exit.h)       value written   QEMU exit code
 *   0  PASS                     0               1
 *   1  FAIL                     1               3
 *   2  UNEXPECTED_TRAP          2               5
 *   3  PANIC                    3               7
 *   4  DOUBLE_FAULT             4               9
 *   N  (`exit N`, N <= 127)     N               2N+1
 *
 * An even code (0 included) never comes from the guest: it is QEMU itself
 * (killed, or a clean quit from the monitor). Code 1 also means "QEMU
 * failed to start", which is why the host accepts a status only together
 * with the EXIT frame that precedes the write (core/exit.c).
 */
#include "arch.h"
#include "x86.h"

#define DEBUG_EXIT_PORT 0xf4

_Noreturn void arch_exit(unsigned status)
{
	outl(DEBUG_EXIT_PORT, status);
	arch_hang();    /* only if QEMU lacks the device */
}

_Noreturn void arch_hang(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}
