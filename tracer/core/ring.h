/*
 * ring.h — a CPU's trace ring as sub-buffers the host reads out of guest
 * RAM (the `shm` channel; layout and protocol: include/shm.h).
 *
 * buffer.c owns the ring's memory and drain.c chooses, per CPU, between its
 * byte ring (drained into frames) and this writer. The writer is inlined into
 * the fire path: a record goes at `off` in the open sub-buffer; one that
 * does not fit closes it (subbuf_commit) and opens the next
 * (subbuf_open), which fails while every slot still waits for the host:
 * the record is then discarded and counted by the caller, never written
 * over an unread one. Only the CPU that owns the ring calls these, with
 * interrupts masked, so nothing here takes a lock; the host's only store
 * is shm_cpu.consumed. With `phys` set (`trace physical on`, seed 003's
 * method 2, where tarch_phys_stores) every store into the ring, records
 * and headers, goes by physical address, so recording takes no DTLB miss
 * on its ring under this channel either: the bytes are the same.
 */
#ifndef TRACER_RING_H
#define TRACER_RING_H

#include <stdbool.h>
#include <stdint.h>
#include "arch.h"
#include "shm.h"
#include "tracer_arch.h"
#include "wire.h"

struct subbuf_writer {
	bool               on;         /* this CPU records into sub-buffers */
	bool               open;       /* cur is being written */
	uint16_t           cpu;
	uint32_t           subbuf;     /* bytes per slot, header included */
	uint32_t           nsub;
	uint32_t           off;        /* next record's offset in cur */
	uint32_t           count;      /* records in cur */
	uint32_t           last_off;   /* where cur's last record starts */
	uint32_t           w;          /* cur's number (shm_cpu.write) */
	uint64_t           first;      /* cycles of cur's first record */
	uint64_t           discarded;  /* the CPU's count when cur opened */
	uint64_t           last;       /* cycles of cur's last record */
	uintptr_t          phys;       /* base's physical address, written so; 0: mapped */
	uint8_t           *base;       /* slot 0 */
	struct shm_subbuf *cur;
	volatile struct shm_cpu *ctl;  /* this CPU's entry of the table */
};

/* Close cur and make it the host's (the release store of its commit);
 * adds its records to *sent. */
void subbuf_commit(struct subbuf_writer *s, volatile uint64_t *sent);
/* Open sub-buffer w in its slot; false if the host has not read that slot
 * yet. `discarded`: the CPU's count so far, for the header. */
bool subbuf_open(struct subbuf_writer *s, uint64_t discarded);

/* Write one record; false (nothing written) if no sub-buffer has room. */
static inline __attribute__((always_inline)) bool
subbuf_put(struct subbuf_writer *s, unsigned kind, uint16_t thread, uint32_t probe,
	   const unsigned long *words, unsigned nwords, uint64_t discarded,
	   volatile uint64_t *sent)
{
	uint32_t len = sizeof(struct wire_event) + nwords * sizeof(unsigned long);
	if (s->open && s->off + len > s->subbuf)
		subbuf_commit(s, sent);
	if (!s->open && !subbuf_open(s, discarded))
		return false;
	uint64_t now = arch_cycles();
	if (s->phys) {
		/* Header and words as put_physical (buffer.c) stores them. */
		union { struct wire_event e; uint64_t q[2]; } h = { .e = {
			.kind = (uint8_t)kind, .nwords = (uint8_t)nwords,
			.thread = thread, .probe = probe, .cycles = now } };
		uintptr_t pa = s->phys + (uintptr_t)((uint8_t *)s->cur - s->base) + s->off;
		tarch_phys_store(pa, h.q, sizeof h);
		tarch_phys_store(pa + sizeof h, words, nwords * sizeof(unsigned long));
	} else {
		struct wire_event *e = (struct wire_event *)((uint8_t *)s->cur + s->off);
		e->kind = (uint8_t)kind;
		e->nwords = (uint8_t)nwords;
		e->thread = thread;
		e->probe = probe;
		e->cycles = now;
		unsigned long *w = (unsigned long *)(e + 1);
		for (unsigned i = 0; i < nwords; i++)
			w[i] = words[i];
	}
	if (!s->count++)
		s->first = now;
	s->last = now;
	s->last_off = s->off;
	s->off += len;
	return true;
}

/* A record discarded: the live count the host reads at the end. */
static inline __attribute__((always_inline)) void
subbuf_discarded(struct subbuf_writer *s, uint64_t discarded)
{
	if (s->on)
		s->ctl->discarded = discarded;
}

/* This CPU's ring as sub-buffers of `bytes` at data (on), or not (off). */
void subbuf_setup(struct subbuf_writer *s, unsigned cpu, uint8_t *data,
		  uint32_t bytes, bool on);
/* Commit cur if it holds records (a flush: the host may then read it). */
void subbuf_flush(struct subbuf_writer *s, volatile uint64_t *sent);
/* Whether the host has read every committed sub-buffer. */
bool subbuf_drained(const struct subbuf_writer *s);
/* Announce the table (link.h) before HELLO. */
void subbuf_table_init(void);

#endif
