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

extern const unsigned mm_page_size;
/* An address guaranteed to be unmapped, for fault tests. */
extern const uintptr_t mm_unmapped_probe_addr;

#endif
