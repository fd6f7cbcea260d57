/*
 * pages.c — a first-fit bitmap allocator of physical pages.
 *
 * The arch names the free range (above the kernel image, inside what its
 * page tables map one-to-one), so an allocated page's address is usable as
 * is. One bit per page, one lock; allocation is rare (thread stacks), so
 * simplicity wins over speed.
 */
#include "pages.h"
#include "arch.h"
#include "console.h"
#include "mm.h"
#include "spinlock.h"

#define MAX_PAGES (256u * 1024 * 1024 / 4096)   /* at the smallest page size */

static uint32_t used[MAX_PAGES / 32];
static uintptr_t base;
static size_t npages, nfree;
static spinlock_t pages_lock = SPINLOCK_INIT("pages");

static bool is_used(size_t i) { return used[i / 32] & (1u << (i % 32)); }

void pages_init(void)
{
	uintptr_t lo, hi;
	arch_free_memory(&lo, &hi);
	base = (lo + mm_page_size - 1) & ~(uintptr_t)(mm_page_size - 1);
	npages = hi > base ? (hi - base) / mm_page_size : 0;
	if (npages > MAX_PAGES)
		npages = MAX_PAGES;
	nfree = npages;
}

void *pages_alloc(size_t n)
{
	irqflags_t f = spin_lock_irqsave(&pages_lock);
	size_t run = 0;
	for (size_t i = 0; i < npages && n; i++) {
		run = is_used(i) ? 0 : run + 1;
		if (run == n) {
			size_t first = i + 1 - n;
			for (size_t k = first; k <= i; k++)
				used[k / 32] |= 1u << (k % 32);
			nfree -= n;
			spin_unlock_irqrestore(&pages_lock, f);
			return (void *)(base + first * mm_page_size);
		}
	}
	spin_unlock_irqrestore(&pages_lock, f);
	return 0;
}

void pages_free(void *p, size_t n)
{
	size_t first = ((uintptr_t)p - base) / mm_page_size;
	irqflags_t f = spin_lock_irqsave(&pages_lock);
	for (size_t k = first; k < first + n; k++) {
		if (k >= npages || !is_used(k))
			panic("pages_free: page %zu of %p not allocated", k - first, p);
		used[k / 32] &= ~(1u << (k % 32));
	}
	nfree += n;
	spin_unlock_irqrestore(&pages_lock, f);
}

size_t pages_free_count(void)
{
	return nfree;
}
