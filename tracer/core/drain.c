/*
 * drain.c — the threads that empty the per-CPU rings, and STATS.
 *
 * Each CPU has a drain thread, pinned there and prompt (thread.h), which
 * copies that CPU's records into an EVENTS frame (up to WIRE_MAX_PAYLOAD),
 * built in place on the trace channel (link.h), and sends it; it sleeps a
 * tick when its ring is empty or the channel full. One drain for all CPUs
 * fell behind four CPUs firing (38% of a million records lost at 256 KiB
 * per CPU, against 3% with one per CPU, on the same loaded host); a
 * prompt thread requeued at the tail when its slice ended lost most of
 * the rest (0.07% once it keeps the head until it sleeps).
 * Once a tick CPU 0's drain also disarms the probes past their maximum
 * hit count (gate.c), which the fire path cannot do itself.
 *
 * The rings and the records in them are buffer.c's (buffer_cpu.h is what
 * the two share). Under `channel shm` the drain copies nothing: it only
 * switches its CPU's ring between the byte ring and sub-buffers once the
 * ring is empty in its present form (keep_form: so no record is in both
 * or neither), and commits the open sub-buffer when a flush asks. STATS
 * (buffer_send_stats) carries each CPU's counts: fired, recorded, dropped
 * and sent, the kicks, and the tracer's own TLB misses (miss_account.h).
 */
#include "buffer.h"
#include "buffer_cpu.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "gate.h"
#include "kstring.h"
#include "link.h"
#include "miss_account.h"
#include "ring.h"
#include "thread.h"
#include "timer.h"
#include "tracer.h"
#include "wire.h"

volatile bool draining_paused;
/* How long a channel that takes nothing is waited for (drain_one). */
#define STALL_MS 250
/* Whether a ring past half full wakes its drain (`trace kick`). Off, every
 * CPU's `kicked` stays set, so the fire path's test is the same one. */
static volatile bool kick_on = true;
volatile bool shm_wanted;

/* Copy one frame's worth of cpu's records out and send it. Returns the
 * number of records sent: 0 also when the trace channel is full, so the
 * drain sleeps a tick and tries again. The records are copied once, into
 * the frame the channel sends (link.h's bulk frames). */
static unsigned drain_one(unsigned cpu)
{
	struct tracer_cpu *t = &tcpu[cpu];
	if (!t->data)
		return 0;
	struct wire_events head = { .cpu = (uint16_t)cpu };
	size_t used = sizeof head;
	uint32_t tail = t->tail, end = t->head;

	if (tail == end)
		return 0;
	/* A full channel is waited for as long as the host keeps taking
	 * buffers, however slowly: the drain keeps its CPU meanwhile, so that
	 * CPU's producers wait instead of losing records (the channel's
	 * backpressure). A channel that gave none back for STALL_MS is a host
	 * that stopped reading: left to the next tick, so the drain never
	 * holds a CPU for it, and the records then lost are counted. */
	uint8_t *payload = link_bulk_begin();
	uint64_t seen = link_bulk_progress();
	for (uint64_t t0 = arch_cycles(); !payload &&
	     arch_cycles() - t0 < arch_cycles_hz() / 1000 * STALL_MS; ) {
		arch_cpu_relax();
		payload = link_bulk_begin();
		uint64_t now = link_bulk_progress();
		if (now != seen) {
			seen = now;
			t0 = arch_cycles();
		}
	}
	if (!payload)
		return 0;
	compiler_barrier();
	/* Whole records up to the frame's room, copied one contiguous run at
	 * a time: a run ends at a PAD or where a record ended exactly at the
	 * ring's end (the next starts at offset 0 without a PAD). */
	uint32_t run = tail;
	while (tail != end) {
		uint32_t off = tail & (t->size - 1);
		const struct wire_event *e = (const struct wire_event *)(t->data + off);
		if (off == 0 && tail != run) {
			memcpy(payload + used - (tail - run), t->data + (run & (t->size - 1)),
			       tail - run);
			run = tail;
		}
		if (e->kind == WIRE_EVENT_PAD) {
			memcpy(payload + used - (tail - run), t->data + (run & (t->size - 1)),
			       tail - run);
			tail += t->size - off;
			run = tail;
			continue;
		}
		size_t len = sizeof *e + e->nwords * sizeof(unsigned long);
		if (used + len > WIRE_MAX_PAYLOAD)
			break;
		used += len;
		head.count++;
		tail += (uint32_t)len;
	}
	memcpy(payload + used - (tail - run), t->data + (run & (t->size - 1)), tail - run);
	compiler_barrier();
	t->tail = tail;
	if (!head.count) {
		link_bulk_cancel();
		return 0;
	}
	memcpy(payload, &head, sizeof head);
	link_bulk_end(WIRE_FRAME_EVENTS, used);
	t->sent += head.count;
	return head.count;
}

/* Switch cpu's ring to the form shm_wanted says, if it is empty in its
 * present one; run on that CPU with interrupts masked, so no record is
 * being written meanwhile. Then a flush's commit, if one is asked. */
static void keep_form(unsigned cpu)
{
	struct tracer_cpu *t = &tcpu[cpu];
	irqflags_t flags = arch_irq_save();
	if (t->sb.on != shm_wanted && t->data &&
	    (t->sb.on ? subbuf_drained(&t->sb) : t->tail == t->head))
		subbuf_setup(&t->sb, cpu, t->data, t->size, shm_wanted);
	if (t->flush_wanted) {
		t->flush_wanted = false;
		subbuf_flush(&t->sb, &t->sent);
	}
	arch_irq_restore(flags);
}

/* One drain per CPU, pinned there, emptying that CPU's ring: the drain's
 * work is spread as the firings are, and no CPU drains another's. */
static void drain_thread(void *arg)
{
	unsigned cpu = (unsigned)(uintptr_t)arg;
	/* Woken by the tick, the drain runs before the workload's threads on
	 * its CPU, for as long as there are records, then sleeps again. */
	thread_set_prompt(thread_current(), true);
	for (;;) {
		unsigned sent = 0;
		if (cpu == 0)
			gate_reap();    /* spent probes: disarmed here, not firing */
		if (!draining_paused)
			keep_form(cpu);
		if (!draining_paused && !tcpu[cpu].sb.on)
			sent = drain_one(cpu);
		if (!sent) {
			struct tracer_cpu *t = &tcpu[cpu];
			if (t->tail == t->head && kick_on)
				t->kicked = false;
			link_bulk_push();
			thread_sleep(1);
		}
	}
}

void tracer_drain_pause(bool pause)
{
	draining_paused = pause;
}

void buffer_start_drain(void)
{
	for (unsigned c = 0; c < cpu_count(); c++)
		if (!thread_create("drain", drain_thread, (void *)(uintptr_t)c, c))
			panic("tracer: cannot create the drain thread of cpu%u", c);
}

void buffer_flush(void)
{
	uint64_t want[KERNEL_MAX_CPUS];
	for (unsigned c = 0; c < cpu_count(); c++)
		want[c] = tcpu[c].recorded;
	for (unsigned c = 0; c < cpu_count(); c++)
		while (tcpu[c].sent < want[c]) {
			tcpu[c].flush_wanted = tcpu[c].sb.on;
			thread_sleep(1);
		}
	link_bulk_push();
}

/* The link's channel chosen (link.h's watcher): every ring in the form it
 * needs before the command returns, unless the host leaves sub-buffers
 * unread (then the drains switch them once it has read them). */
static void channel_chosen(unsigned channel)
{
	shm_wanted = channel == WIRE_CHANNEL_SHM;
	for (unsigned c = 0; c < cpu_count(); c++) {
		tcpu[c].flush_wanted = tcpu[c].sb.on;
		for (unsigned tick = 0; tcpu[c].data && tcpu[c].sb.on != shm_wanted &&
		     tick < 5 * timer_hz(); tick++)
			thread_sleep(1);
	}
}

void buffer_init_channels(void)
{
	subbuf_table_init();
	link_channel_watch(channel_chosen);
}

void buffer_kick_enable(bool on)
{
	kick_on = on;
	for (unsigned c = 0; c < KERNEL_MAX_CPUS; c++)
		tcpu[c].kicked = !on;
}

bool buffer_kick_enabled(void)
{
	return kick_on;
}

uint64_t buffer_kicks(void)
{
	uint64_t n = 0;
	for (unsigned c = 0; c < cpu_count(); c++)
		n += tcpu[c].kicks;
	return n;
}

void buffer_send_stats(void)
{
	for (unsigned c = 0; c < cpu_count(); c++) {
		struct tracer_cpu *t = &tcpu[c];
		struct miss_cpu m;
		miss_account_read(c, &m);
		struct wire_stats s = {
			.cpu = c, .fired = tracer_fired[c].n, .recorded = t->recorded,
			.dropped = t->dropped, .sent = t->sent, .buffer_bytes = t->size,
			.own_itlb = m.itlb, .own_dtlb = m.dtlb,
			.own_dtlb_buffer = m.dtlb_data, .own_faults = m.faults,
			.all_itlb = m.itlb_all, .all_dtlb = m.dtlb_all,
			.physical = t->phys != 0, .own_window = m.window,
			.missed = tracer_fired[c].missed, .switches = t->scheds,
		};
		link_send(WIRE_FRAME_STATS, &s, sizeof s, 0, 0);
	}
}

/* Only while no probe is enabled and every ring is drained. */
void buffer_reset_counters(void)
{
	for (unsigned c = 0; c < KERNEL_MAX_CPUS; c++) {
		struct tracer_cpu *t = &tcpu[c];
		tracer_fired[c].n = 0;
		tracer_fired[c].missed = 0;
		tracer_fired[c].late = 0;
		t->scheds = t->scheds_written = 0;
		t->recorded = t->dropped = t->sent = t->marks = 0;
		t->kicks = 0;
		t->lost = 0;
		t->lost_threads = 0;
		subbuf_discarded(&t->sb, 0);
	}
	miss_account_reset();
}
