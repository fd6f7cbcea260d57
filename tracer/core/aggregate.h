/*
 * aggregate.h — the per-CPU aggregation tables of probe programs
 * (aggregate.c): what the interpreter feeds, what `trace aggregations`
 * sends, what `trace reset` and `program clear` clear.
 */
#ifndef TRACER_AGGREGATE_H
#define TRACER_AGGREGATE_H

#include <stdbool.h>
#include <stdint.h>

/* Entries one CPU holds at most, and quantize buckets in its pool. */
#define AGG_CAPACITY 192
#define AGG_CELLS    1024

/* Fire path, interrupts masked: feed value (unused for COUNT; LQUANTIZE:
 * the bucket, clamped to WIRE_LQUANTIZE_MAX) to aggregation agg of the
 * program in slot, of kind (WIRE_AGG_KINDS), under its nkeys keys, in
 * this CPU's table. The value is 64 bits on every arch: the interpreter
 * extends a 32-bit word as the program's flags say (WIRE_RPN_AGG_FLAGS),
 * so that sums of unsigned words past 2^32 stay exact. */
void agg_update(unsigned slot, unsigned agg, unsigned kind, unsigned nkeys,
		const uint64_t *keys, int64_t value);

/* The entry of cpu's table for (slot, agg, keys) as an AGGS frame would
 * carry it, with up to max of its buckets; false if there is none. And
 * cpu's dropped updates. (Self-tests; the same view agg_send sends.) */
struct wire_agg;
struct wire_agg_bucket;
bool agg_read(unsigned cpu, unsigned slot, unsigned agg, const uint64_t *keys,
	      unsigned nkeys, struct wire_agg *entry, struct wire_agg_bucket *buckets,
	      unsigned max);
uint32_t agg_dropped(unsigned cpu);
/* Entries cpu's table holds, of AGG_CAPACITY (every slot's). */
unsigned agg_entries(unsigned cpu);

/* Send every CPU's entries as AGGS frames; *entries and *dropped get the
 * totals sent. */
void agg_send(unsigned *entries, unsigned long *dropped);
/* Remove the entries of the program in slot (every entry and the dropped
 * counts too if slot < 0), on each CPU by that CPU. */
void agg_clear(int slot);

#endif
