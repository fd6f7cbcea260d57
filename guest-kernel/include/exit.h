/*
 * exit.h — how the guest stops, and what its status means.
 *
 * The status travels twice: first in an EXIT frame on the serial line
 * (include/wire.h), then through the arch's exit device, which turns
 * it into QEMU's process exit code. Each arch's exit code documents its own
 * mapping next to the code that performs it (arch/<arch>/exit.c). The host
 * (bench/guest/qemu.py) trusts a status only when both agree, so a QEMU that
 * dies on its own can never pass for a guest that said "pass".
 *
 * Statuses 0..EXIT_USER_MAX may also be requested with the `exit N` command;
 * the named ones below are what the kernel itself uses. This table is parsed
 * by the host: X(name, value, meaning).
 */
#ifndef EXIT_H
#define EXIT_H

#define EXIT_STATUSES(X) \
	X(PASS,             0, "everything asked of the guest succeeded") \
	X(FAIL,             1, "a self-test or workload check failed") \
	X(UNEXPECTED_TRAP,  2, "an exception nobody expected; a register dump precedes it") \
	X(PANIC,            3, "the kernel found an impossible state; the reason precedes it") \
	X(DOUBLE_FAULT,     4, "a fault while handling a fault (i386 #DF task, sparc64 TL overflow)")

#define EXIT_USER_MAX 127   /* QEMU's exit code is 8 bits: (status << 1) | 1 */

#define EXIT_ENUM(name, value, meaning) EXIT_##name = value,
enum exit_status { EXIT_STATUSES(EXIT_ENUM) };
#undef EXIT_ENUM

/* Send the EXIT frame, then stop the machine through the arch's device. */
_Noreturn void kernel_exit(unsigned status);

#endif
