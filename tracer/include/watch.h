/*
 * watch.h — watchpoint probes: DProbes' watch type and address range.
 *
 * A watch is a probe of tracer_probes[] (kind WIRE_EVENT_WATCH) whose
 * address is data, a port or an instruction: hits, programs and maximum
 * counts as for any probe (gate.c), firing through tracer_fire with a
 * WATCH record (wire.h). It is armed from `watch add` to `watch remove`;
 * `probe enable|disable` leave it alone. Adding refuses, with the reason
 * and nothing armed: an id in use, what the arch cannot watch, an overlap,
 * data outside .data/.bss or inside the trap path's (notrace.h), code
 * outside the probeable text, and a watch past the arch's slots.
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
