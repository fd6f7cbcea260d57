/*
 * watch.h — watchpoint probes: DProbes' watch type and address range.
 *
 * A watch is a probe of tracer_probes[] (kind WIRE_EVENT_WATCH) whose
 * address is watched data, an I/O port or an instruction rather than a
 * trap site: it has hits, a program, pass and maximum counts like any
 * probe (gate.c), and fires through tracer_fire with a WATCH record
 * (wire.h WIRE_WATCH_WORDS). It is armed when added and gone when
 * removed; `probe enable|disable` leave it alone. The arch holds the
 * watches in slots (tracer_arch.h: i386's debug registers) on every CPU.
 *
 * Adding refuses, with the reason and nothing armed: an id in use, a type
 * or length the arch cannot watch, a range that overlaps another watch,
 * data outside the kernel's .data/.bss (the stacks, the page pool, the
 * trace buffers) or inside what the trap path and the tracer touch
 * (notrace.h), code outside the probeable text, and a watch past the
 * arch's slots.
 */
#ifndef WATCH_H
#define WATCH_H

#include <stddef.h>
#include <stdint.h>

#define TRACER_MAX_WATCHES 8

/* The type a word names (WIRE_WATCH_TYPES), or -1; a type's word, or "?". */
int tracer_watch_type(const char *word);
const char *tracer_watch_type_word(unsigned type);

/* action: enum tracer_action, in force from the first firing. */
int tracer_watch_add(unsigned id, unsigned type, uintptr_t addr, unsigned len,
		     unsigned action, char *why, size_t why_size);
int tracer_watch_remove(unsigned id, char *why, size_t why_size);
/* Remove every watch; returns how many there were (tracer_clear). */
unsigned tracer_watch_clear(void);
/* Watches armed now. */
unsigned tracer_watches(void);

#endif
