/*
 * peek.c — reading memory that may not be there, from the fire path.
 *
 * A probe program may name any address, so every read it makes goes
 * through the kernel's own recovery, trap_try (trap.h), not a check of the
 * address against what seems mapped: whatever the MMU refuses comes back
 * as a caught trap. The fault is taken inside the fire path — on i386 a
 * #PF with interrupts masked in the #BP/#UD handler, which idt.c offers to
 * the innermost try and irets to its landing pad; on sparc64 a data fault
 * at TL 0 after trap_entry, which enters trap_entry again and trap.c
 * resumes at the landing pad — and the pad longjmps back here, interrupts
 * still masked. Tries nest, so this works inside another try too. This
 * file keeps its frame pointers when the rest of the fire path does not
 * (image.mk): on sparc64 a function run under trap_try must have a
 * register window of its own.
 */
#include "arch.h"
#include "kstring.h"
#include "trap.h"
#include "tracer.h"

/* An aligned value is one load of its size (a word a CPU is updating
 * reads whole), a misaligned one is read byte by byte (sparc64 would trap). */
struct peek {
	uintptr_t     addr;
	unsigned      size;
	unsigned long value;
};

static void peek(void *arg)
{
	struct peek *k = arg;
	uintptr_t a = k->addr;

	if (!(a & (k->size - 1))) {
		switch (k->size) {
		case 1: k->value = *(const volatile uint8_t *)a; return;
		case 2: k->value = *(const volatile uint16_t *)a; return;
		case 4: k->value = *(const volatile uint32_t *)a; return;
		default: k->value = (unsigned long)*(const volatile uint64_t *)a; return;
		}
	}
	union { uint8_t b[8]; uint16_t h; uint32_t w; uint64_t x; } u;
	for (unsigned i = 0; i < k->size; i++)
		u.b[i] = *(const volatile uint8_t *)(a + i);
	k->value = k->size == 1 ? u.b[0] : k->size == 2 ? u.h :
		   k->size == 4 ? u.w : (unsigned long)u.x;
}

bool tracer_read(uintptr_t addr, unsigned size, unsigned long *value)
{
	struct peek k = { addr, size, 0 };
	struct caught_trap c;
	if (trap_try(peek, &k, &c))
		return false;
	*value = k.value;
	return true;
}

/* Byte by byte, counting as it goes, so that the first address that could
 * not be read is exact on every arch. */
struct copy {
	uint8_t                *dst;
	uintptr_t               src;
	unsigned long           n;
	bool                    string;
	volatile unsigned long  done;    /* stored before the next byte's load */
};

static void copy(void *arg)
{
	struct copy *c = arg;
	for (unsigned long i = 0; i < c->n; i++) {
		uint8_t b = *(const volatile uint8_t *)(c->src + i);
		c->dst[i] = b;
		c->done = i + 1;
		if (c->string && !b)
			return;
	}
}

long tracer_copy(void *dst, uintptr_t src, unsigned long n, bool string,
		 uintptr_t *fault)
{
	struct copy c = { dst, src, n, string, 0 };
	struct caught_trap t;
	if (trap_try(copy, &c, &t)) {
		*fault = src + c.done;
		return -1;
	}
	return (long)c.done;
}
