/*
 * mm.h — the memory-map services the tracer and self-tests rely on.
 *
 * Kernel text is mapped read-only (i386: CR0.WP set, so even ring 0 faults;
 * sparc64: the TTE has no W bit). Code that must patch text (the tracer
 * arming a probe, a self-test) asks for a second, writable virtual mapping
 * of the same physical page — the "private writable alias" DProbes needs —
 * writes through it, and releases it. Stores through the alias are visible
 * at the original address because both map one physical page.
 */
#ifndef MM_H
#define MM_H

#include <stdbool.h>
#include <stdint.h>

/* Map the physical page behind va at a fresh writable virtual address and
 * return the alias of va itself (same offset in the page). NULL if va is
 * not mapped or no alias slot is free. Implemented per arch. */
void *mm_alias_writable(const void *va);
/* Unmap an alias returned above (any address within its page). */
void mm_alias_release(void *alias);
/* Physical address behind va, or (uintptr_t)-1 if unmapped. */
uintptr_t mm_virt_to_phys(const void *va);

/* The same found without the TLB's help (sun4u: the page table read with
 * physical loads, so no miss can happen), or (uintptr_t)-1 if unmapped or
 * if the arch cannot (i386). */
uintptr_t mm_virt_to_phys_notlb(const void *va);

/* Execute-only code (seed 003's method 1): the page of va, which must be
 * workload text, can be executed but not read or written (on), or is
 * ordinary text again (off). A read of it faults, unless the client that
 * registered with the miss accounting asked for its own reads to be
 * served (miss_account.h). false where the arch has no such pages (i386:
 * IA-32 paging cannot take read access away from code it executes). */
bool mm_exec_only(const void *va, bool on);
/* How many pages are execute-only now: code that reads code checks it. */
extern volatile unsigned mm_exec_only_pages;

/* Code paged in on demand (the risk of a tracer that reads the instruction
 * about to run, seed 003's method 4 against its alternative): with on, the
 * page of va, which must be workload text, is made not present, as a pager
 * would have evicted it; the first access to it — the thread's fetch, or
 * anyone's read — takes a page fault that the kernel serves by making the
 * page present again and retrying the access (counted in mm_demand_served;
 * the trap dispatch counts the fault as usual, a client's by its PC,
 * miss_account.h). Off makes it present for good. Only this CPU's TLB
 * entry is flushed: another CPU holding the translation runs on it without
 * a fault (an evicted page's contents never change here). false where the
 * arch does not (sun4u: its analogue is execute-only code and the
 * software-refilled TLB, above). */
bool mm_demand(const void *va, bool on);
extern volatile unsigned long mm_demand_served;

/* Lock the data-TLB translation of va's page so no access to it misses
 * (sun4u: a TTE with L, which the hardware never replaces), up to
 * MM_TLB_LOCKS pages; false if the arch cannot, the page is unmapped or
 * the locks are used up. mm_tlb_unlock_all() releases every lock. */
#define MM_TLB_LOCKS 16
bool mm_tlb_lock_data(const void *va);
void mm_tlb_unlock_all(void);
unsigned mm_tlb_locked(void);

extern const unsigned mm_page_size;
/* An address guaranteed to be unmapped, for fault tests. */
extern const uintptr_t mm_unmapped_probe_addr;

#endif
