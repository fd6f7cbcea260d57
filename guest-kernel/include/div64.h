/*
 * div64.h — 64-bit division the kernel does itself (div64.c). A 32-bit
 * arch's compiler would call libgcc's __udivdi3 for `/` on uint64_t, and
 * the probe-program VM divides on the fire path, where a probe may have
 * trapped libgcc itself; this routine is the kernel's own, so a program's
 * `divu` never enters code a probe can sit in.
 */
#ifndef DIV64_H
#define DIV64_H

#include <stdint.h>

/* n / d, and n % d in *rem; d must not be 0 (the caller refuses it). */
uint64_t div64_u(uint64_t n, uint64_t d, uint64_t *rem);
/* C's signed n / d (truncated toward 0) and n % d (the sign of n); d not 0.
 * INT64_MIN / -1 gives INT64_MIN and remainder 0, as two's complement wraps. */
int64_t div64_s(int64_t n, int64_t d, int64_t *rem);

#endif
