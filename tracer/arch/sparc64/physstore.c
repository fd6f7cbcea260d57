/*
 * physstore.c — sparc64's physical accesses for seed 003: stores into the
 * trace buffer (method 2) and loads of code words (method 1's reader;
 * tracer_arch.h).
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
 *
 * A branch record's delay-slot word (`trace bytes`) is read either through
 * the mapping — a DTLB miss if the page is not in the TLB, a fault if it
 * is execute-only and the kernel does not serve our reads (caught by
 * tracer_read, counted by the kernel) — or by physical address: the page
 * table walked with physical loads (mm_virt_to_phys_notlb), then `lduwa`
 * from ASI 0x14. The second touches no TLB at all.
 */
#include "physstore.h"
#include "mm.h"
#include "tracer.h"
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

enum tarch_code_bytes sparc_code_bytes;

const char *tarch_set_code_bytes(enum tarch_code_bytes how)
{
	sparc_code_bytes = how;
	return 0;
}

/* The instruction word at va, read as sparc_code_bytes says (mapped when
 * off); false if it cannot be read. */
bool sparc_code_read(uintptr_t va, uint32_t *word)
{
	unsigned long w;
	if (sparc_code_bytes == TARCH_BYTES_PHYSICAL) {
		uintptr_t pa = mm_virt_to_phys_notlb((const void *)va);
		if (pa == (uintptr_t)-1)
			return false;
		__asm__ volatile("lduwa [%1] %2, %0"
				 : "=r"(*word) : "r"(pa), "i"(ASI_PHYS_USE_EC) : "memory");
		return true;
	}
	if (!tracer_read(va, 4, &w))
		return false;
	*word = (uint32_t)w;
	return true;
}

uint32_t sparc_code_word(uintptr_t va)
{
	uint32_t w;
	return sparc_code_read(va, &w) ? w : 0;
}
