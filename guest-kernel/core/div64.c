/*
 * div64.c — 64-bit unsigned and signed division without libgcc (div64.h
 * says why). Where the arch's word holds 64 bits its own division does it;
 * elsewhere a quotient that fits 32 bits by 32 is one native division, and
 * the rest shift-subtract from n's highest set bit: at most 64 steps, each
 * a compare and a subtract, bounded like everything on the fire path.
 * NOTRACE: the fire path calls it, so no probe may sit in it.
 */
#include "div64.h"
#include "notrace.h"

NOTRACE uint64_t div64_u(uint64_t n, uint64_t d, uint64_t *rem)
{
	if (sizeof(unsigned long) >= sizeof(uint64_t)) {
		/* the word is 64 bits: the arch's own instruction, no helper */
		unsigned long nl = (unsigned long)n, dl = (unsigned long)d;
		*rem = nl % dl;
		return nl / dl;
	}
	if (!(n >> 32) && !(d >> 32)) {
		uint32_t n32 = (uint32_t)n, d32 = (uint32_t)d;
		*rem = n32 % d32;
		return n32 / d32;
	}
	uint64_t q = 0, r = 0;
	int top = 63;
	while (top > 0 && !(n >> top))
		top--;
	for (int bit = top; bit >= 0; bit--) {
		/* r < d before the shift, so r's top bit is clear unless d's is:
		 * then the shifted r may not fit, and r >= d is certain */
		uint64_t carry = r >> 63;
		r = r << 1 | (n >> bit & 1);
		if (carry || r >= d) {
			r -= d;
			q |= (uint64_t)1 << bit;
		}
	}
	*rem = r;
	return q;
}

NOTRACE int64_t div64_s(int64_t n, int64_t d, int64_t *rem)
{
	uint64_t un = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
	uint64_t ud = d < 0 ? 0 - (uint64_t)d : (uint64_t)d;
	uint64_t ur, uq = div64_u(un, ud, &ur);
	*rem = (int64_t)(n < 0 ? 0 - ur : ur);
	return (int64_t)((n < 0) != (d < 0) ? 0 - uq : uq);
}
