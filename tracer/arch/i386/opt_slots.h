/*
 * opt_slots.h — the detour slots of i386's jump-optimized probes, shared
 * by the three files of the mechanism: opt.c plans a site and gives it a
 * slot, opt_detour.c writes the slot's code (opt_detour.S's layout), and
 * opt_stage.c puts the jmp in and takes it out through the int3 stage.
 *
 * A slot belongs to one probe id at a time (opt_slot_of, id -> slot + 1)
 * and remembers the site it was written for, the bytes the jmp displaces,
 * and where the site is in its change (enum opt_stage).
 */
#ifndef I386_OPT_SLOTS_H
#define I386_OPT_SLOTS_H

#include <stdbool.h>
#include <stdint.h>
#include "opt.h"
#include "opt_fast.h"
#include "tracer.h"

extern char opt_detours[], opt_detours_end[];
extern char opt_common_checked[], opt_common_after[];
/* opt_detour.S: the riding entry's counting path, and where its patched
 * words end. */
extern const char opt_ride_template[], opt_ride_template_end[];
extern const char opt_ride_entry[], opt_ride_return[];
extern const char opt_ride_to_copy[], opt_ride_to_slow[];

/* Where a slot's site is in its change (opt_arm, opt_disarm, opt_stage). */
enum opt_stage {
	OPT_ORIG,       /* the site holds its own bytes */
	OPT_INT3,       /* int3 over byte 0, its own tail: arming */
	OPT_INT3_REL,   /* int3 over byte 0, the jmp's rel32 in the tail: disarming */
	OPT_JMP,        /* jmp detour */
};

struct opt_slot {
	uintptr_t site;            /* the site the detour was written for, 0: none */
	const struct probe *probe; /* ... and the probe it pushes (or will) */
	uint8_t   len;             /* bytes displaced */
	uint8_t   bytes[OPT_MAX_COPY];
	uint8_t   stage;           /* enum opt_stage */
	bool      want;            /* armed: the jmp is wanted, else the original */
	bool      checked;         /* written as check mode's detour */
	uint8_t   fast;            /* with the recording path's stub (opt_fast.h) */
	uint16_t  ride;            /* ... for a probe whose return probe (id + 1)
				    * rides on it, 0: none (the riding counting
				    * path has that probe's address in it, so a
				    * new link rewrites the slot: opt_detour.S) */
	bool      todo, held;      /* in this stage's scan: to change, and held */
	unsigned  held_tid;        /* held: by which thread, which word, why */
	uint32_t  held_word;
	const char *held_what;
};

extern struct opt_slot opt_slots[OPT_SLOTS];
extern uint16_t opt_slot_of[TRACER_MAX_PROBES];    /* probe id -> slot + 1 */

static inline struct opt_slot *slot(const struct probe *p)
{
	return &opt_slots[opt_slot_of[p->id] - 1];
}

static inline char *slot_code_at(unsigned i)
{
	return opt_detours + i * OPT_DETOUR_BYTES;
}

static inline char *slot_code(const struct probe *p)
{
	return slot_code_at(opt_slot_of[p->id] - 1u);
}

/* The slot's detour is written for its probe at its probe's site. */
static inline bool written(const struct opt_slot *s)
{
	return s->probe && s->site == s->probe->addr;
}

/* ... and in the variant check mode asks for now, for the return probe
 * that rides on it now: else an arming rewrites it. */
static inline bool current(const struct opt_slot *s)
{
	return written(s) && s->checked == tracer_check_mode &&
	       s->ride == s->probe->site.ride &&
	       s->fast == opt_fast_kind(s->probe, tracer_check_mode);
}

/* Code goes in through the text alias (tracer.h): one byte, a word. */
static inline void store(uintptr_t addr, uint8_t b)
{
	*(volatile uint8_t *)tracer_text_alias(addr) = b;
}

static inline void store32(uintptr_t addr, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		store(addr + i, (uint8_t)(v >> (8 * i)));
}

/* opt_detour.c: write slot i's detour for p, in the variant check mode
 * asks for now. */
void opt_write_slot(unsigned i, const struct probe *p);

#endif
