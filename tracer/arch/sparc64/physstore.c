/*
 * physstore.c — sparc64's physical stores for the trace buffer (seed 003,
 * method 2; tracer_arch.h).
 *
 * `stxa` to ASI 0x14 (ASI_PHYS_USE_EC) takes its address as physical: the
 * D-MMU is bypassed, so the store needs no DTLB entry and can never miss.
 * QEMU 7.2 implements it (target/sparc/translate.c, get_asi: ASI_REAL is
 * 0x14, accessed through MMU_PHYS_IDX, big-endian like the CPU; 0x1c is its
 * little-endian twin), and the kernel's miss handlers read the page table
 * the same way. Stores are cacheable, so the drain's ordinary virtual
 * loads of the same ring see them; on a real IIi the D-cache is indexed
 * with VA<13>, and a physical store indexes with PA<13> — equal here,
 * since RAM is identity-mapped (mmu.c), so no stale alias is possible.
 */
#include "tracer_arch.h"
#include "arch/sparc64.h"

const bool tarch_phys_stores = true;

void tarch_phys_store(uintptr_t pa, const void *src, unsigned bytes)
{
	const uint64_t *q = src;
	for (unsigned i = 0; i < bytes / 8; i++)
		__asm__ volatile("stxa %0, [%1] %2"
				 : : "r"(q[i]), "r"(pa + 8 * i), "i"(ASI_PHYS_USE_EC)
				 : "memory");
}
