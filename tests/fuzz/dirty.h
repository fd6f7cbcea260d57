/*
 * dirty.h — which pages of a few memory regions were written, found by
 * write-protecting them: the first store to a page since the last look
 * faults, stubs.c's SIGSEGV handler hands the address to dirty_fault(),
 * which marks the page and opens it, and the store goes on. The command
 * targets check "a refused line changed nothing" against a copy of the
 * probe table, the gates, the program slots and the text (some 400 KiB):
 * with this they compare and copy only the pages a line wrote, instead of
 * the whole of it at every reply. Nothing is missed: a page not marked
 * was not stored to, so it still equals its copy.
 */
#ifndef FUZZ_DIRTY_H
#define FUZZ_DIRTY_H

#include <stdbool.h>
#include <stddef.h>

/* Track [at, at + bytes): copy it and write-protect its pages. */
void dirty_track(const volatile void *at, size_t bytes);
/* From the SIGSEGV handler: true if addr is on a tracked page (marked
 * and opened: the store may go on), false if the fault is someone else's. */
bool dirty_fault(const void *addr);
/* Every tracked byte on a page written since the last look against its
 * copy: take (copy it) or compare. Then every page is protected again.
 * Returns the first tracked address that differs from its copy (compare
 * only), or 0. */
const void *dirty_look(bool take);
/* Open the region that holds at, whole, as if every page were written
 * (for a reset that stores to all of it: one call instead of a fault a
 * page). */
void dirty_open(const volatile void *at);
/* Was any page of the region that holds at written since the last
 * dirty_forget()? */
bool dirty_touched(const volatile void *at);
void dirty_forget(void);

#endif
