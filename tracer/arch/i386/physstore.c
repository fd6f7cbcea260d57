/*
 * physstore.c — i386 has no physical stores with paging on (tracer_arch.h).
 *
 * IA-32 translates every data access while CR0.PG is set; the closest to
 * seed 003's method 2 would be turning paging off around each record,
 * which flushes the whole TLB — far worse than the miss it avoids. So the
 * tracer refuses `trace physical on` here, and nothing calls the store.
 */
#include "tracer_arch.h"
#include "console.h"

const bool tarch_phys_stores = false;

void tarch_phys_store(uintptr_t pa, const void *src, unsigned bytes)
{
	(void)src;
	panic("tarch_phys_store(0x%lx, %u bytes): i386 has no physical stores",
	      (unsigned long)pa, bytes);
}

const char *tarch_set_code_bytes(enum tarch_code_bytes how)
{
	return how == TARCH_BYTES_OFF ? 0 :
	       "i386 records no branches, so no delay-slot bytes";
}
