/*
 * buffer.c — per-CPU trace buffers: the rings and the fire path's writes.
 *
 * Each CPU owns a byte ring that only it writes, from its fire path with
 * interrupts masked, so recording takes no lock: one producer (the CPU) and
 * one consumer (the drain thread, on any CPU). head and tail are free-running
 * byte counts; the producer publishes a record by advancing head after
 * writing it, the consumer frees space by advancing tail after copying
 * records out. Both arches run with total store order (x86; SPARC TSO), so a
 * compiler barrier orders those stores.
 *
 * Records are struct wire_event + words (wire.h), stored exactly as they
 * will be sent. A record never wraps: if it does not fit before the end of
 * the ring, a PAD marker (its first word is all the consumer reads) fills
 * the rest and the record starts at offset 0. A record that finds no room
 * is not written and counts in the CPU's drop counter, which the host sees
 * in STATS frames: loss from a full buffer is counted, never silent. The
 * next record that fits is preceded by a DROPS record (wire.h): how many
 * were lost, when the first was, and which threads lost one, so the host
 * knows where in the stream the gap is and whose records it holds. The
 * fire path pays one test of `lost` for it. Writing a record is inlined
 * into tracer_fire: on sparc64 each call level is a register window, and
 * two more than the fire path's own five cost a spill trap each, and a
 * fill trap on the way out.
 *
 * Seed 003's method 2 (`trace physical on`, where tarch_phys_stores): the
 * fire path writes the ring by physical address (put_physical), so a
 * record never needs a DTLB entry; the drain still reads it through its
 * virtual address. Each ring is registered with the kernel's miss
 * accounting (miss_account.h) as this CPU's data, so a DTLB miss the
 * tracer takes on it is counted apart; STATS carries those counts.
 *
 * Under `channel shm` (link.h) the same memory is a ring of sub-buffers
 * the host reads out of guest RAM (ring.h, include/shm.h): the fire path
 * writes there, and the CPU's drain thread copies nothing; it only
 * switches its CPU's ring between the two forms once the ring is empty
 * (so no record is in both or neither) and commits the open sub-buffer
 * when a flush asks. Losses are counted the same way (dropped, DROPS).
 * `trace physical` (below) applies to both forms: the sub-buffers are
 * then written by physical address too (ring.h's `phys`).
 *
 * The drain threads, the EVENTS and STATS frames and the switch between
 * the two forms of a ring are drain.c's; what both files share of a CPU's
 * buffer is buffer_cpu.h.
 */
#include "buffer.h"
#include "buffer_cpu.h"
#include "arch.h"
#include "cpu.h"
#include "gate.h"
#include "miss_account.h"
#include "mm.h"
#include "pages.h"
#include "ring.h"
#include "thread.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

struct tracer_cpu tcpu[KERNEL_MAX_CPUS];

uint64_t tracer_fired_count(void)
{
	uint64_t n = 0;
	for (unsigned c = 0; c < cpu_count(); c++)
		n += tracer_fired[c].n;
	return n;
}

uint64_t tracer_recorded_count(void)
{
	uint64_t n = 0;
	for (unsigned c = 0; c < cpu_count(); c++)
		n += tcpu[c].recorded - tcpu[c].marks - tcpu[c].scheds_written;
	return n;
}

/* The same record written by physical address (seed 003's method 2,
 * `trace physical on`): the header is built in registers and stored as
 * two words, the words stored as they are, all through tarch_phys_store,
 * so recording needs no DTLB entry for the ring. The bytes in the ring are
 * the same as put()'s: the drain and the host cannot tell. */
static inline __attribute__((always_inline)) void
put_physical(struct tracer_cpu *t, unsigned kind, uint16_t thread, uint32_t probe,
	     const unsigned long *words, unsigned nwords, uint32_t off, bool pad)
{
	union { struct wire_event e; uint64_t q[2]; } h = { .e = { .kind = WIRE_EVENT_PAD } };
	if (pad) {
		tarch_phys_store(t->phys + off, h.q, sizeof h.q[0]);
		off = 0;
	}
	h.e = (struct wire_event){
		.kind = (uint8_t)kind, .nwords = (uint8_t)nwords, .thread = thread,
		.probe = probe, .cycles = arch_cycles(),
	};
	tarch_phys_store(t->phys + off, h.q, sizeof h);
	tarch_phys_store(t->phys + off + sizeof h, words, nwords * sizeof(unsigned long));
}

/* Write one record at t's head; false (nothing written) if it does not fit. */
static inline __attribute__((always_inline)) bool
put(struct tracer_cpu *t, unsigned kind, uint16_t thread, uint32_t probe,
		const unsigned long *words, unsigned nwords)
{
	uint32_t len = sizeof(struct wire_event) + nwords * sizeof(unsigned long);
	uint32_t head = t->head, tail = t->tail;
	uint32_t off = head & (t->size - 1), contig = t->size - off;
	uint32_t need = len <= contig ? len : contig + len;

	if (!t->data || t->size - (head - tail) < need)
		return false;
	if (t->phys) {
		put_physical(t, kind, thread, probe, words, nwords, off, len > contig);
		if (len > contig)
			head += contig;
	} else {
		if (len > contig) {
			((struct wire_event *)(t->data + off))->kind = WIRE_EVENT_PAD;
			head += contig;
			off = 0;
		}
		struct wire_event *e = (struct wire_event *)(t->data + off);
		e->kind = (uint8_t)kind;
		e->nwords = (uint8_t)nwords;
		e->thread = thread;
		e->probe = probe;
		e->cycles = arch_cycles();
		unsigned long *w = (unsigned long *)(e + 1);
		for (unsigned i = 0; i < nwords; i++)
			w[i] = words[i];
	}
	compiler_barrier();
	t->head = head + len;
	t->recorded++;
	/* Past half full, the drain is woken now, not at its tick: ticks come
	 * late while every CPU fires (QEMU's timers wait for the lock the
	 * firings' traps hold), and a 256 KiB ring fills in a tenth of a
	 * second. Once per filling: the drain clears `kicked` when it has
	 * emptied the ring. */
	if (head + len - tail > t->size / 2 && !t->kicked) {
		t->kicked = true;
		t->kicks++;
		sched_kick_self();
	}
	return true;
}

/* One record into t's ring in its present form. */
static inline __attribute__((always_inline)) bool
store(struct tracer_cpu *t, unsigned kind, uint16_t thread, uint32_t probe,
      const unsigned long *words, unsigned nwords)
{
	if (!t->sb.on)
		return put(t, kind, thread, probe, words, nwords);
	if (!subbuf_put(&t->sb, kind, thread, probe, words, nwords, t->dropped, &t->sent))
		return false;
	t->recorded++;
	return true;
}

/* Write a record (after the DROPS record owed, if any); false if it was
 * lost, counted in dropped. */
static inline __attribute__((always_inline)) bool
record_into(struct tracer_cpu *t, uint32_t probe, unsigned kind,
			const unsigned long *words, unsigned nwords)
{
	uint16_t me = (uint16_t)thread_current()->id;

	if (t->lost) {
		unsigned long mark[WIRE_DROPS_NWORDS] = {
			[WIRE_DROPS_COUNT] = t->lost,
			[WIRE_DROPS_FIRST] = (unsigned long)t->lost_first,
			[WIRE_DROPS_THREADS] = t->lost_threads,
		};
		if (!store(t, WIRE_EVENT_DROPS, me, WIRE_NO_PROBE, mark, WIRE_DROPS_NWORDS))
			goto lose;
		t->marks++;
		t->lost = 0;
		t->lost_threads = 0;
	}
	if (store(t, kind, me, probe, words, nwords))
		return true;
lose:
	t->dropped++;
	subbuf_discarded(&t->sb, t->dropped);
	if (!t->lost++)
		t->lost_first = arch_cycles();
	t->lost_threads |= 1ul << (me % BITS_PER_WORD);
	return false;
}

/* A record of the scheduler's (SWITCH, IRQ: switch.c), on this CPU,
 * interrupts masked: counted like a firing's record, and in `switches`,
 * so the host can tell the firings' records from these. A switch while
 * this CPU's tracer is inside a firing cannot happen (the fire path
 * never schedules), so no in-firing test is needed here. */
void tracer_record_sched(unsigned kind, const unsigned long *words, unsigned nwords)
{
	struct tracer_cpu *t = &tcpu[this_cpu()->id];
	t->scheds++;
	if (record_into(t, WIRE_NO_PROBE, kind, words, nwords))
		t->scheds_written++;
}

static inline __attribute__((always_inline)) void
fire_one(struct tracer_cpu *t, const struct probe *p, unsigned cpu, unsigned kind,
	 const unsigned long *words, unsigned nwords, const struct tarch_context *ctx)
{
	/* A program, a pass or a maximum: gate.c's, which counts the hit in
	 * the gate's shared count; the one test it costs a probe with none,
	 * which counts in this CPU's row alone (hits.c). */
	if (p->gated) {
		if (!gate_fire(p, ctx))
			return;
	} else {
		tracer_hits[cpu][p->id]++;
	}
	switch (p->action) {
	case TRACER_ACTION_NULL:
		return;
	default:
		record_into(t, p->id, kind, words, nwords);
	}
	/* A test's reentrant hit, from inside this firing (selftest_reentry.c). */
	if (reentry_test)
		reentry_probe_point();
}

void tracer_fire(const struct probe *p, unsigned kind,
		 const unsigned long *words, unsigned nwords,
		 const struct tarch_context *ctx)
{
	unsigned cpu = this_cpu()->id;
	struct tracer_cpu *t = &tcpu[cpu];
	struct tracer_fired *f = &tracer_fired[cpu];
	/* Disabled: not a firing (tracer.h). A compiler hook's call (ctx 0:
	 * no trap, hooks.c) fires probes that are never enabled by design. */
	if (ctx && tracer_late(p, cpu))
		return;
	f->n++;
	/* A probe hit while this CPU's tracer is inside a firing (from code
	 * the firing calls, or a trap taken in it): counted as missed, with
	 * its hit, never recorded and never lost without a count (kprobes'
	 * nmissed). reentry_broken (tests, through the GDB stub) swallows
	 * it instead, the fault the host's accounting must catch. */
	if (f->in_fire) {
		tracer_hits[cpu][p->id]++;
		if (reentry_broken)
			return;
		f->missed++;
		tracer_probe_missed(p->id);
		return;
	}
	f->in_fire = 1;
	fire_one(t, p, cpu, kind, words, nwords, ctx);
	f->in_fire = 0;
}

void tracer_flush(void)
{
	buffer_flush();
}

void tracer_record(const struct probe *p, unsigned kind,
		   const unsigned long *words, unsigned nwords)
{
	record_into(&tcpu[this_cpu()->id], p->id, kind, words, nwords);
}

static void buffers_free(void)
{
	for (unsigned c = 0; c < cpu_count(); c++) {
		struct tracer_cpu *t = &tcpu[c];
		miss_account_data(c, 0, 0);
		subbuf_setup(&t->sb, c, 0, 0, false);
		t->phys = 0;
		if (t->data)
			pages_free(t->data, t->size / mm_page_size);
		t->data = 0;
		t->size = 0;
	}
}

/* Whether the fire path writes the rings by physical address (method 2). */
static bool physical_wanted;

/* t's ring's physical address if it is physically contiguous, else 0. */
static uintptr_t ring_phys(const struct tracer_cpu *t)
{
	uintptr_t pa = mm_virt_to_phys(t->data);
	if (!t->data || pa == (uintptr_t)-1 || !pa)
		return 0;
	for (uint32_t off = 0; off < t->size; off += mm_page_size)
		if (mm_virt_to_phys(t->data + off) != pa + off)
			return 0;
	return pa;
}

/* Every CPU's ring written as physical_wanted says; NULL, or why not. */
static const char *apply_physical(void)
{
	const char *why = 0;
	for (unsigned c = 0; c < cpu_count(); c++) {
		struct tracer_cpu *t = &tcpu[c];
		uintptr_t pa = physical_wanted ? ring_phys(t) : 0;
		if (physical_wanted && !pa)
			why = "a ring is not physically contiguous";
		t->phys = pa;
		t->sb.phys = pa;    /* the same memory as sub-buffers */
	}
	return why;
}

const char *buffer_set_physical(bool on)
{
	if (on && !tarch_phys_stores)
		return "this arch has no physical stores with its MMU on";
	physical_wanted = on;
	const char *why = apply_physical();
	if (why) {
		physical_wanted = false;
		apply_physical();
	}
	return why;
}

bool buffer_physical(void)
{
	return physical_wanted;
}

bool buffer_resize(size_t bytes)
{
	size_t page = mm_page_size;
	if (bytes < page || (bytes & (bytes - 1)) || bytes > (1u << 30))
		return false;
	draining_paused = true;
	buffers_free();
	bool ok = true;
	for (unsigned c = 0; c < cpu_count(); c++) {
		struct tracer_cpu *t = &tcpu[c];
		t->head = t->tail = 0;
		t->lost = 0;
		t->lost_threads = 0;
		t->data = pages_alloc(bytes / page);
		if (!t->data) {
			ok = false;
			break;
		}
		t->size = (uint32_t)bytes;
		/* Misses on the ring count apart (miss_account.h). */
		miss_account_data(c, (uintptr_t)t->data, (uintptr_t)t->data + bytes);
	}
	if (!ok)
		buffers_free();
	else if (apply_physical())
		physical_wanted = false, apply_physical();
	for (unsigned c = 0; ok && c < cpu_count(); c++)
		subbuf_setup(&tcpu[c].sb, c, tcpu[c].data, tcpu[c].size, shm_wanted);
	draining_paused = false;
	return ok;
}

size_t buffer_size(void)
{
	return tcpu[0].size;
}
