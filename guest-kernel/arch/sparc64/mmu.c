/*
 * mmu.c — sparc64 page table, MMU bring-up, and writable aliases of text.
 *
 * The UltraSPARC IIi MMUs are software-loaded: a TLB miss traps, and our
 * handlers (trap_table.S) load the TTE from page_table, one 8-byte entry
 * per 8 KiB page of VA [0, 320 MiB) (vmlayout.h), of which RAM up to 256
 * MiB or the RAM size the PROM found, if smaller, is mapped. The table is a
 * direct index by virtual page number, so a TSB in front of it would save
 * nothing: the miss handler is one physical load either way. RAM is
 * identity-mapped except page 0 and the boot stack's guard page. Kernel
 * text and rodata have no TTE.W, so a store there raises
 * fast_data_access_protection even in privileged mode; the one user-mode
 * test page also lacks TTE.P. Every kernel page is in context 0, which
 * serves as primary context at TL 0 and is the nucleus context at TL > 0.
 *
 * Writable aliases: mm_alias_writable() enters the physical page behind a
 * text address into a free slot of the alias window with TTE.W. The IIi's
 * 16 KiB direct-mapped D-cache is indexed with VA bit 13, one bit more than
 * the page offset, so two mappings of one page whose VA<13> differ would
 * cache the same bytes twice and a store through one would not be seen
 * through the other. Each slot is therefore two pages, and the alias uses
 * the one whose VA<13> matches the original's. Code patched through an
 * alias still needs a `flush` of the original address before it runs.
 * Creating and releasing an alias demap its page from both TLBs, so no
 * stale entry survives. With more CPUs, the others would need a demap too.
 */
#include "arch_sparc64.h"
#include "miss_account.h"
#include "mm.h"
#include "notrace.h"
#include "vmlayout.h"

#define TTE_KERNEL (TTE_V | TTE_CP | TTE_CV | TTE_P)

const unsigned mm_page_size = PAGE_SIZE;
const uintptr_t mm_unmapped_probe_addr = UNMAPPED_PROBE;

uint64_t page_table[PT_PAGES] __attribute__((aligned(PAGE_SIZE)));
static bool alias_used[ALIAS_SLOTS];

static bool in_range(uintptr_t va, const void *lo, const void *hi)
{
	return va >= (uintptr_t)lo && va < (uintptr_t)hi;
}

/* The TTE flags for an identity-mapped RAM page. */
static uint64_t ram_page_flags(uintptr_t va)
{
	if (va == 0 || in_range(va, boot_stack_guard, boot_stack))
		return 0;                          /* unmapped */
	if (in_range(va, __user_text_start, __user_text_end))
		return TTE_V | TTE_CP | TTE_CV;    /* user may execute; nobody writes */
	if (in_range(va, __text_start, __text_end))
		return TTE_KERNEL;
	return TTE_KERNEL | TTE_W;
}

const bool miss_account_tlb_visible = true;

/* The trap path calls these three (a TLB miss; the registers of a trapped
 * window): never probed (notrace.h). */
NOTRACE void mmu_demap(uintptr_t va)
{
	uintptr_t page = (va & ~(PAGE_SIZE - 1)) | DEMAP_PAGE_NUCLEUS;
	stxa_asi(0, page, ASI_DMMU_DEMAP);
	stxa_asi(0, page, ASI_IMMU_DEMAP);
}

NOTRACE uint64_t mmu_lookup(uintptr_t va)
{
	if (va >= (uintptr_t)PT_PAGES * PAGE_SIZE)
		return 0;
	uint64_t tte = page_table[va >> PAGE_SHIFT];
	return (tte & TTE_V) ? tte : 0;
}

/* Watched pages (the tracer's sparc64 watches): hide takes va's page out
 * of the table and both TLBs, so that the next data access misses, gets
 * the miss handler's no-fault-only TTE and raises data_access_exception
 * (trap_table.S); it returns the TTE for restore to put back. Single CPU:
 * no other TLB holds the page. */
uint64_t mmu_page_hide(uintptr_t va)
{
	uint64_t *slot = &page_table[va >> PAGE_SHIFT];
	uint64_t tte = *slot;
	*slot = 0;
	mmu_demap(va);
	return tte;
}

void mmu_page_restore(uintptr_t va, uint64_t tte)
{
	page_table[va >> PAGE_SHIFT] = tte;
	mmu_demap(va);          /* the NFO TTE a watched access left */
}

uintptr_t mmu_ram_top(void)
{
	uintptr_t ram_top = RAM_MAPPED;
	if (prom_ram_bytes && prom_ram_bytes < ram_top)
		ram_top = prom_ram_bytes & ~(PAGE_SIZE - 1);
	return ram_top;
}

void mmu_init(void)
{
	uintptr_t ram_top = mmu_ram_top();

	for (uintptr_t va = 0; va < ram_top; va += PAGE_SIZE) {
		uint64_t flags = ram_page_flags(va);
		page_table[va >> PAGE_SHIFT] = flags ? (va & TTE_PA_MASK) | flags : 0;
	}

	stxa_asi(0, MMU_PRIMARY_CONTEXT, ASI_DMMU);
	stxa_asi(0, MMU_SECONDARY_CONTEXT, ASI_DMMU);
	/* Fetching a miss handler must not miss: lock the trap table's four
	 * pages, and the page of the misses' accounting after them, into the
	 * ITLB (data-in never replaces a locked entry). */
	for (uintptr_t va = (uintptr_t)trap_table; va < (uintptr_t)trap_table_end;
	     va += PAGE_SIZE) {
		stxa_asi(va, MMU_TAG_ACCESS, ASI_IMMU);
		stxa_asi(page_table[va >> PAGE_SHIFT] | TTE_L, 0, ASI_ITLB_DATA_IN);
	}
	/* VA == PA for everything running now, so execution carries on
	 * through the switch; the first access to each page misses once. */
	stxa_asi(LSU_IC | LSU_DC | LSU_IM | LSU_DM, 0, ASI_LSU_CONTROL);
	flush_insn(mmu_init);
}

NOTRACE uintptr_t mm_virt_to_phys(const void *va)
{
	uint64_t tte = mmu_lookup((uintptr_t)va);
	if (!tte)
		return (uintptr_t)-1;
	return (tte & TTE_PA_MASK) | ((uintptr_t)va & (PAGE_SIZE - 1));
}

/* mmu_lookup with a physical load of the table: never a DTLB miss. */
NOTRACE uintptr_t mm_virt_to_phys_notlb(const void *va)
{
	uintptr_t v = (uintptr_t)va;
	if (v >= (uintptr_t)PT_PAGES * PAGE_SIZE)
		return (uintptr_t)-1;
	uint64_t tte = ldxa_asi(&page_table[v >> PAGE_SHIFT], ASI_PHYS_USE_EC);
	if (!(tte & TTE_V))
		return (uintptr_t)-1;
	return (tte & TTE_PA_MASK) | (v & (PAGE_SIZE - 1));
}

/* Execute-only: TTE_XO in the table; the DTLB miss handler refuses (or,
 * for the registered client, serves) a data access to such a page, the
 * ITLB handler ignores the bit. The page leaves both TLBs either way, so
 * the next access takes the handler's decision. */
/* No demand paging of code on sun4u: the tracer's reads of code are
 * method 1's (execute-only pages, the miss handler's counts). */
volatile unsigned long mm_demand_served;

bool mm_demand(const void *va, bool on)
{
	(void)va;
	(void)on;
	return false;
}

bool mm_exec_only(const void *va, bool on)
{
	uintptr_t v = (uintptr_t)va;
	if (v < (uintptr_t)__workload_text_start || v >= (uintptr_t)__workload_text_end)
		return false;
	uint64_t *slot = &page_table[v >> PAGE_SHIFT];
	if (on != !!(*slot & TTE_XO))
		mm_exec_only_pages += on ? 1 : -1;
	*slot = on ? *slot | TTE_XO : *slot & ~(uint64_t)TTE_XO;
	mmu_demap(v);
	return true;
}

volatile unsigned mm_exec_only_pages;

static uintptr_t tlb_locked[MM_TLB_LOCKS];
static unsigned tlb_nlocked;

/* A locked DTLB entry: demap any unlocked one first, as two entries of one
 * page must never be in the TLB at once; Data-In takes the tag from
 * TAG_ACCESS. Single CPU: no other TLB to lock in. */
bool mm_tlb_lock_data(const void *va)
{
	uintptr_t page = (uintptr_t)va & ~(uintptr_t)(PAGE_SIZE - 1);
	uint64_t tte = mmu_lookup(page);
	if (!tte || (tte & TTE_XO))
		return false;
	for (unsigned i = 0; i < tlb_nlocked; i++)
		if (tlb_locked[i] == page)
			return true;
	if (tlb_nlocked == MM_TLB_LOCKS)
		return false;
	irqflags_t flags = arch_irq_save();
	mmu_demap(page);
	stxa_asi(page, MMU_TAG_ACCESS, ASI_DMMU);
	stxa_asi(tte | TTE_L, 0, ASI_DTLB_DATA_IN);
	tlb_locked[tlb_nlocked++] = page;
	arch_irq_restore(flags);
	return true;
}

void mm_tlb_unlock_all(void)
{
	irqflags_t flags = arch_irq_save();
	for (unsigned i = 0; i < tlb_nlocked; i++)
		mmu_demap(tlb_locked[i]);     /* demap removes locked entries too */
	tlb_nlocked = 0;
	arch_irq_restore(flags);
}

unsigned mm_tlb_locked(void)
{
	return tlb_nlocked;
}

void *mm_alias_writable(const void *va)
{
	uintptr_t phys = mm_virt_to_phys(va);
	if (phys == (uintptr_t)-1)
		return 0;
	uintptr_t colour = (uintptr_t)va & PAGE_SIZE;   /* VA bit 13 */

	irqflags_t flags = arch_irq_save();
	for (unsigned slot = 0; slot < ALIAS_SLOTS; slot++) {
		if (alias_used[slot])
			continue;
		alias_used[slot] = true;
		uintptr_t page = ALIAS_BASE + slot * ALIAS_SLOT_SIZE + colour;
		page_table[page >> PAGE_SHIFT] = (phys & TTE_PA_MASK) | TTE_KERNEL | TTE_W;
		mmu_demap(page);
		arch_irq_restore(flags);
		return (void *)(page + (phys & (PAGE_SIZE - 1)));
	}
	arch_irq_restore(flags);
	return 0;
}

void mm_alias_release(void *alias)
{
	uintptr_t a = (uintptr_t)alias;
	if (a < ALIAS_BASE || a >= ALIAS_BASE + ALIAS_SLOTS * ALIAS_SLOT_SIZE)
		return;
	unsigned slot = (a - ALIAS_BASE) / ALIAS_SLOT_SIZE;

	irqflags_t flags = arch_irq_save();
	page_table[a >> PAGE_SHIFT] = 0;
	mmu_demap(a);
	alias_used[slot] = false;
	arch_irq_restore(flags);
}
