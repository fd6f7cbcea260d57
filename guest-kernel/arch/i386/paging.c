/*
 * paging.c — i386 page tables built by the kernel, and writable aliases.
 *
 * Two-level tables with 4 KiB pages. The first MAPPED_MB of physical memory
 * is identity-mapped, except page 0 (so a NULL dereference faults) and the
 * kernel's text/rodata, mapped without W. CR0.WP makes ring 0 honour that,
 * so a stray store into code faults instead of silently patching it. The
 * local APIC's page is mapped uncached on request (mm_map_mmio).
 *
 * Writable aliases live in a 4 MiB window at ALIAS_BASE with one page table
 * of its own: mm_alias_writable() maps the physical page behind an address
 * into a free slot of that window. The tracer arms probes through it, as
 * DProbes does ("aliasing a physical page with a private writeable virtual
 * address"). Releasing unmaps the slot and has every CPU flush its TLB
 * entry before the slot can be reused.
 *
 * Demand paging of one workload-text page at a time (mm_demand): its PTE
 * loses P, and a #PF hook gives it back on the first access, fetch or
 * read, and retries.
 */
#include "arch_i386.h"
#include "atomic.h"
#include "console.h"
#include "cpu.h"
#include "miss_account.h"
#include "mm.h"
#include "notrace.h"
#include "trap.h"
#include "vectors.h"
#include "x86.h"

#define PTE_P      0x001
#define PTE_W      0x002
#define PTE_PWT    0x008
#define PTE_PCD    0x010
#define PAGE       4096u
#define MAPPED_MB  256
#define MMIO_BASE  0xfec00000u    /* IOAPIC, LAPIC: one page table's reach */
#define ALIAS_BASE 0xc0000000u
#define ALIAS_SLOTS 1024

const unsigned mm_page_size = PAGE;
const uintptr_t mm_unmapped_probe_addr = 0xb0000000u;
/* The CPU walks the page tables itself: no TLB miss is seen (miss_account.h). */
const bool miss_account_tlb_visible = false;

/* mm.h's seed-003 services have no IA-32 counterpart: the page-table walk
 * is the CPU's, a present page is always readable, and no TLB entry can
 * be locked. Each says so by refusing. */
uintptr_t mm_virt_to_phys_notlb(const void *va)
{
	(void)va;
	return (uintptr_t)-1;
}

volatile unsigned mm_exec_only_pages;

bool mm_exec_only(const void *va, bool on)
{
	(void)va;
	(void)on;
	return false;
}

bool mm_tlb_lock_data(const void *va)
{
	(void)va;
	return false;
}

void mm_tlb_unlock_all(void)
{
}

unsigned mm_tlb_locked(void)
{
	return 0;
}

static uint32_t page_dir[1024] __attribute__((aligned(PAGE)));
static uint32_t identity_tables[MAPPED_MB / 4][1024] __attribute__((aligned(PAGE)));
static uint32_t alias_table[ALIAS_SLOTS] __attribute__((aligned(PAGE)));
static uint32_t mmio_table[1024] __attribute__((aligned(PAGE)));
static uint32_t alias_used[ALIAS_SLOTS / 32];

static volatile uint32_t demand_page;     /* 0: none */
volatile unsigned long mm_demand_served;

static uint32_t *pte_of(uint32_t va)
{
	if (va >= MAPPED_MB << 20)
		return 0;
	return &identity_tables[va >> 22][(va >> 12) & 1023];
}

/* The #PF of a demand page: present again, the access retried. A CPU
 * that finds it present already (another served it) retries too. */
static int demand_fault(struct trapframe *tf)
{
	(void)tf;
	uint32_t page = read_cr2() & ~(PAGE - 1);
	if (!page || page != demand_page)
		return TRAP_DECLINED;
	uint32_t *pte = pte_of(page);
	if (!(*pte & PTE_P)) {
		*pte |= PTE_P;
		atomic_fetch_add(&mm_demand_served, 1);
	}
	invlpg((void *)page);
	return TRAP_HANDLED;
}

bool mm_demand(const void *va, bool on)
{
	uint32_t page = (uint32_t)va & ~(PAGE - 1);
	if ((uint32_t)va < (uint32_t)__workload_text_start ||
	    (uint32_t)va >= (uint32_t)__workload_text_end || !pte_of(page))
		return false;
	if (demand_page && demand_page != page)
		return false;               /* one page at a time */
	uint32_t *pte = pte_of(page);
	if (on) {
		demand_page = page;
		*pte &= ~PTE_P;
	} else {
		*pte |= PTE_P;
		demand_page = 0;
	}
	invlpg((void *)page);
	return true;
}

void paging_init(void)
{
	uint32_t text_lo = (uint32_t)__text_start & ~(PAGE - 1);
	uint32_t text_hi = (uint32_t)__text_end;

	for (uint32_t t = 0; t < MAPPED_MB / 4; t++) {
		for (uint32_t i = 0; i < 1024; i++) {
			uint32_t addr = (t << 22) | (i << 12);
			uint32_t flags = PTE_P | PTE_W;
			if (addr >= text_lo && addr < text_hi)
				flags = PTE_P;
			identity_tables[t][i] = addr == 0 ? 0 : addr | flags;
		}
		page_dir[t] = (uint32_t)identity_tables[t] | PTE_P | PTE_W;
	}
	page_dir[ALIAS_BASE >> 22] = (uint32_t)alias_table | PTE_P | PTE_W;
	page_dir[MMIO_BASE >> 22] = (uint32_t)mmio_table | PTE_P | PTE_W;

	write_cr3((uint32_t)page_dir);
	write_cr0(read_cr0() | CR0_PG | CR0_WP);
	trap_hook_add(VEC_PF, demand_fault);
}

uint32_t paging_root(void)
{
	return (uint32_t)page_dir;
}

void *mm_map_mmio(uintptr_t phys)
{
	if (phys < MMIO_BASE || phys >= MMIO_BASE + 1024 * PAGE)
		panic("mm_map_mmio: 0x%08x is outside the MMIO window", (unsigned)phys);
	mmio_table[(phys - MMIO_BASE) / PAGE] =
		(phys & ~(PAGE - 1)) | PTE_P | PTE_W | PTE_PCD | PTE_PWT;
	invlpg((void *)phys);
	return (void *)phys;
}

/* The crash dump of the trap path reads through this: never probed. */
NOTRACE uintptr_t mm_virt_to_phys(const void *va)
{
	uint32_t v = (uint32_t)va;
	uint32_t pde = page_dir[v >> 22];
	if (!(pde & PTE_P))
		return (uintptr_t)-1;
	const uint32_t *table = (const uint32_t *)(pde & ~(PAGE - 1));
	uint32_t pte = table[(v >> 12) & 1023];
	if (!(pte & PTE_P))
		return (uintptr_t)-1;
	return (pte & ~(PAGE - 1)) | (v & (PAGE - 1));
}

void *mm_alias_writable(const void *va)
{
	uintptr_t phys = mm_virt_to_phys(va);
	if (phys == (uintptr_t)-1)
		return 0;

	irqflags_t flags = arch_irq_save();
	for (unsigned slot = 0; slot < ALIAS_SLOTS; slot++) {
		if (alias_used[slot / 32] & (1u << (slot % 32)))
			continue;
		alias_used[slot / 32] |= 1u << (slot % 32);
		alias_table[slot] = (phys & ~(PAGE - 1)) | PTE_P | PTE_W;
		uint8_t *alias = (uint8_t *)(ALIAS_BASE + slot * PAGE);
		invlpg(alias);
		arch_irq_restore(flags);
		return alias + (phys & (PAGE - 1));
	}
	arch_irq_restore(flags);
	return 0;
}

static void flush_one(void *page)
{
	invlpg(page);
}

void mm_alias_release(void *alias)
{
	uint32_t a = (uint32_t)alias;
	if (a < ALIAS_BASE || a >= ALIAS_BASE + ALIAS_SLOTS * PAGE)
		return;
	unsigned slot = (a - ALIAS_BASE) / PAGE;
	void *page = (void *)(a & ~(PAGE - 1));

	alias_table[slot] = 0;
	invlpg(page);
	if (cpu_count() > 1)
		smp_call_others(flush_one, page);
	irqflags_t flags = arch_irq_save();
	alias_used[slot / 32] &= ~(1u << (slot % 32));
	arch_irq_restore(flags);
}
