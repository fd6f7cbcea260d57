/*
 * aggregate.c — aggregations: per-CPU tables the fire path updates with no
 * lock.
 *
 * An entry is keyed by (program slot, aggregation, up to WIRE_AGG_MAX_KEYS
 * keys) and holds what struct wire_agg sends: how many values it had
 * (COUNT: firings), and, for kinds with values, their sum, least and
 * greatest as signed words — the host reads the fields its kind names —
 * plus QUANTIZE's and LQUANTIZE's buckets, cells of a per-CPU pool. Only a CPU's own fire
 * path, interrupts masked, writes its table: no lock, no atomic. An update
 * that finds no room is dropped and counted in the CPU's `dropped`, never
 * silent. `trace aggregations` reads the tables while probes may still
 * fire, so what it sends may be a few firings behind (the host reads after
 * disabling); clearing moves entries, so each CPU clears its own, in an IPI.
 */
#include "aggregate.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "init.h"
#include "kstring.h"
#include "link.h"
#include "mm.h"
#include "pages.h"
#include "program.h"
#include "wire.h"

/* A table is open addressing with linear probing, filled to AGG_CAPACITY
 * at most; an update that finds no entry and no room for one, or no bucket
 * and no cell for one (or an entry already at WIRE_AGG_MAX_BUCKETS), is
 * dropped. Each CPU online at boot has its own, in pages allocated then. */
#define AGG_ENTRIES 256          /* slots of a table, a power of two */
#define NO_CELL     0

_Static_assert(AGG_CAPACITY < AGG_ENTRIES, "a table keeps a free slot");
_Static_assert(AGG_CELLS < 65535, "cells are numbered in 16 bits");

struct agg_entry {
	volatile uint8_t used;
	uint8_t          slot, agg, kind, nkeys;
	uint16_t         first;        /* its buckets: a cell number + 1, NO_CELL */
	uint16_t         nbuckets;
	uint64_t         key[WIRE_AGG_MAX_KEYS];
	uint64_t         count;
	int64_t          sum, min, max;
};

struct agg_cell {
	uint16_t next;                 /* cell number + 1, NO_CELL */
	uint8_t  index;                /* the bucket (wire.h) */
	uint64_t count;
};

struct agg_cpu {
	struct agg_entry  entry[AGG_ENTRIES];
	struct agg_cell   cell[AGG_CELLS];
	unsigned          nused;
	uint16_t          free_cells;  /* a freed cell + 1, linked by next */
	uint16_t          fresh;       /* cells never handed out start here */
	volatile uint32_t dropped;
} __attribute__((aligned(64)));

/* Each online CPU's table, in pages of its own from boot (init.h). */
static struct agg_cpu *tables[KERNEL_MAX_CPUS];

static void agg_init(void)
{
	size_t pages = (sizeof(struct agg_cpu) + mm_page_size - 1) / mm_page_size;
	for (unsigned c = 0; c < cpu_count(); c++) {
		tables[c] = pages_alloc(pages);
		if (!tables[c])
			panic("tracer: no memory for cpu%u's aggregations", c);
		memset(tables[c], 0, sizeof *tables[c]);
	}
}
KERNEL_INIT(agg_init);

#define compiler_barrier() __asm__ volatile("" ::: "memory")

static unsigned mix(unsigned h, uint64_t x)
{
	h = (h ^ (uint32_t)x) * 0x9e3779b1u;
	h = (h ^ (uint32_t)(x >> 32) ^ (h >> 15)) * 0x85ebca77u;
	return h ^ (h >> 13);
}

static unsigned home_of(unsigned slot, unsigned agg, const uint64_t *key)
{
	unsigned h = mix(0, (uint64_t)slot << 8 | agg);
	for (unsigned k = 0; k < WIRE_AGG_MAX_KEYS; k++)
		h = mix(h, key[k]);
	return h & (AGG_ENTRIES - 1);
}

/* k with 2^k <= v < 2^(k+1), v > 0; by halves, not __builtin_clzl, whose
 * libgcc helper on sparc64 wants a GOT this image does not have. */
static unsigned log2_floor(unsigned long v)
{
	unsigned k = 0;
	for (unsigned half = 4 * sizeof v; half; half /= 2)
		if (v >> half) {
			v >>= half;
			k += half;
		}
	return k;
}

/* k with 2^k <= v < 2^(k+1) for a 64-bit v > 0, by words. */
static unsigned log2_floor64(uint64_t v)
{
	if (sizeof(unsigned long) < 8 && v >> 32)
		return 32 + log2_floor((unsigned long)(v >> 32));
	return log2_floor((unsigned long)v);
}

/* Bucket of v (wire.h): 0 for 0; 1 + k for 2^k <= v < 2^(k+1); 65 + k for
 * -2^(k+1) < v <= -2^k. LQUANTIZE's value is its bucket already. */
static unsigned bucket_of(unsigned kind, int64_t v)
{
	if (kind == WIRE_AGG_LQUANTIZE)
		return v < 0 ? 0 : v > WIRE_LQUANTIZE_MAX ? WIRE_LQUANTIZE_MAX : (unsigned)v;
	if (!v)
		return 0;
	if (v > 0)
		return 1 + log2_floor64((uint64_t)v);
	return 65 + log2_floor64(0 - (uint64_t)v);  /* |v|: 2^63 for the least */
}

static bool has_buckets(unsigned kind)
{
	return kind == WIRE_AGG_QUANTIZE || kind == WIRE_AGG_LQUANTIZE;
}

static bool same_keys(const uint64_t *a, const uint64_t *b)
{
	for (unsigned k = 0; k < WIRE_AGG_MAX_KEYS; k++)
		if (a[k] != b[k])
			return false;
	return true;
}

static uint16_t cell_take(struct agg_cpu *c)
{
	if (c->free_cells) {
		uint16_t n = c->free_cells;
		c->free_cells = c->cell[n - 1].next;
		return n;
	}
	if (c->fresh < AGG_CELLS)
		return ++c->fresh;
	return NO_CELL;
}

/* The cell counting bucket `index` of e, a new one if there is room. */
static struct agg_cell *bucket(struct agg_cpu *c, struct agg_entry *e,
			       unsigned index)
{
	for (uint16_t n = e->first; n; n = c->cell[n - 1].next)
		if (c->cell[n - 1].index == index)
			return &c->cell[n - 1];
	if (e->nbuckets >= WIRE_AGG_MAX_BUCKETS)
		return 0;
	uint16_t n = cell_take(c);
	if (!n)
		return 0;
	struct agg_cell *cell = &c->cell[n - 1];
	cell->index = (uint8_t)index;
	cell->count = 0;
	cell->next = e->first;
	compiler_barrier();
	e->first = n;
	e->nbuckets++;
	return cell;
}

void agg_update(unsigned slot, unsigned agg, unsigned kind, unsigned nkeys,
		const uint64_t *keys, int64_t value)
{
	struct agg_cpu *c = tables[this_cpu()->id];
	uint64_t key[WIRE_AGG_MAX_KEYS] = { 0 };
	for (unsigned k = 0; k < nkeys; k++)
		key[k] = keys[k];

	struct agg_entry *e;
	for (unsigned i = home_of(slot, agg, key);; i = (i + 1) & (AGG_ENTRIES - 1)) {
		e = &c->entry[i];
		if (!e->used)
			break;
		if (e->slot == slot && e->agg == agg && same_keys(e->key, key))
			break;
	}
	if (!e->used) {                         /* a new entry, published whole */
		if (c->nused >= AGG_CAPACITY)
			goto drop;
		*e = (struct agg_entry){
			.slot = (uint8_t)slot, .agg = (uint8_t)agg,
			.kind = (uint8_t)kind, .nkeys = (uint8_t)nkeys,
		};
		for (unsigned k = 0; k < WIRE_AGG_MAX_KEYS; k++)
			e->key[k] = key[k];
		if (has_buckets(kind) && !bucket(c, e, bucket_of(kind, value)))
			goto drop;
		compiler_barrier();
		e->used = 1;
		c->nused++;
	}
	if (has_buckets(kind)) {
		struct agg_cell *cell = bucket(c, e, bucket_of(kind, value));
		if (!cell)
			goto drop;
		cell->count++;
	}
	int64_t v = value;
	if (kind != WIRE_AGG_COUNT) {
		if (!e->count || v < e->min)
			e->min = v;
		if (!e->count || v > e->max)
			e->max = v;
		/* Wraps as two's complement, as DTrace's sum does: a signed
		 * += past INT64_MAX is undefined in C (the run target's
		 * regressions/run/sum-overflow). */
		e->sum = (int64_t)((uint64_t)e->sum + (uint64_t)v);
	}
	e->count++;
	return;
drop:
	c->dropped++;
}

/* ---- reading ----
 * From the command loop's thread while probes may fire: an entry or a
 * bucket is published whole (its used mark, its link, after its fields),
 * but a 64-bit field updated during the copy may be torn on i386. */

/* e as it goes on the wire, with at most max of its buckets (their number
 * in w->nbuckets). */
static void entry_out(const struct agg_cpu *c, const struct agg_entry *e,
		      struct wire_agg *w, struct wire_agg_bucket *buckets,
		      unsigned max)
{
	compiler_barrier();
	*w = (struct wire_agg){
		.program = e->slot, .agg = e->agg, .kind = e->kind,
		.nkeys = e->nkeys,
		.count = e->count, .sum = e->sum, .min = e->min, .max = e->max,
	};
	for (unsigned k = 0; k < WIRE_AGG_MAX_KEYS; k++)
		w->key[k] = e->key[k];
	unsigned sent = 0;
	for (uint16_t n = e->first; n && sent < max; n = c->cell[n - 1].next)
		buckets[sent++] = (struct wire_agg_bucket){
			.index = c->cell[n - 1].index, .count = c->cell[n - 1].count,
		};
	w->nbuckets = (uint16_t)sent;
}

bool agg_read(unsigned cpu, unsigned slot, unsigned agg, const uint64_t *keys,
	      unsigned nkeys, struct wire_agg *entry, struct wire_agg_bucket *buckets,
	      unsigned max)
{
	const struct agg_cpu *c = tables[cpu];
	uint64_t key[WIRE_AGG_MAX_KEYS] = { 0 };
	for (unsigned k = 0; k < nkeys; k++)
		key[k] = keys[k];
	for (unsigned i = home_of(slot, agg, key);; i = (i + 1) & (AGG_ENTRIES - 1)) {
		const struct agg_entry *e = &c->entry[i];
		if (!e->used)
			return false;
		if (e->slot == slot && e->agg == agg && same_keys(e->key, key)) {
			entry_out(c, e, entry, buckets, max);
			return true;
		}
	}
}

uint32_t agg_dropped(unsigned cpu)
{
	return tables[cpu]->dropped;
}

unsigned agg_entries(unsigned cpu)
{
	return tables[cpu]->nused;
}

static uint8_t frame[WIRE_MAX_PAYLOAD] __attribute__((aligned(8)));
static struct wire_agg_bucket cells_out[WIRE_AGG_MAX_BUCKETS];

/* Each sending of the tables is a snapshot of its own: the host keeps the
 * latest whole and drops the earlier ones. Commands run one at a time, so
 * the counter needs no lock. */
static uint32_t snapshots;

static void send_frame(unsigned cpu, unsigned count, uint32_t dropped, size_t used)
{
	struct wire_aggs head = {
		.cpu = (uint16_t)cpu, .count = (uint16_t)count, .dropped = dropped,
		.snapshot = snapshots, .tls_dropped = program_tls_dropped(),
	};
	memcpy(frame, &head, sizeof head);
	link_send(WIRE_FRAME_AGGS, frame, used, 0, 0);
}

void agg_send(unsigned *entries, unsigned long *dropped)
{
	*entries = 0;
	*dropped = 0;
	snapshots++;
	for (unsigned cpu = 0; cpu < cpu_count(); cpu++) {
		struct agg_cpu *c = tables[cpu];
		uint32_t lost = c->dropped;
		size_t used = sizeof(struct wire_aggs);
		unsigned count = 0;
		for (unsigned i = 0; i < AGG_ENTRIES; i++) {
			const struct agg_entry *e = &c->entry[i];
			if (!e->used)
				continue;
			struct wire_agg w;
			entry_out(c, e, &w, cells_out, e->nbuckets);
			size_t need = sizeof w + w.nbuckets * sizeof cells_out[0];
			if (used + need > WIRE_MAX_PAYLOAD) {
				send_frame(cpu, count, lost, used);
				used = sizeof(struct wire_aggs);
				count = 0;
			}
			memcpy(frame + used, &w, sizeof w);
			memcpy(frame + used + sizeof w, cells_out,
			       w.nbuckets * sizeof cells_out[0]);
			used += need;
			count++;
			(*entries)++;
		}
		send_frame(cpu, count, lost, used);
		*dropped += lost;
	}
}

/* ---- clearing ---- */

static bool removed(const struct agg_entry *e, int slot)
{
	return e->used && (slot < 0 || e->slot == slot);
}

static void cells_free(struct agg_cpu *c, struct agg_entry *e)
{
	for (uint16_t n = e->first, next; n; n = next) {
		next = c->cell[n - 1].next;
		c->cell[n - 1].next = c->free_cells;
		c->free_cells = n;
	}
	e->first = NO_CELL;
	e->nbuckets = 0;
}

/* Remove entry i, shifting later entries of its probe sequence back so
 * that every entry stays reachable from its home (no tombstones). */
static void remove_at(struct agg_cpu *c, unsigned i)
{
	const unsigned mask = AGG_ENTRIES - 1;
	cells_free(c, &c->entry[i]);
	for (unsigned j = (i + 1) & mask; c->entry[j].used; j = (j + 1) & mask) {
		const struct agg_entry *e = &c->entry[j];
		unsigned home = home_of(e->slot, e->agg, e->key);
		unsigned dist_home = (home - i) & mask, dist_j = (j - i) & mask;
		if (dist_home == 0 || dist_home > dist_j) {
			c->entry[i] = *e;               /* j's home is not in (i, j] */
			i = j;
		}
	}
	c->entry[i].used = 0;
	c->nused--;
}

/* On the CPU whose table it is, interrupts masked. */
static void clear_here(void *arg)
{
	int slot = *(const int *)arg;
	struct agg_cpu *c = tables[this_cpu()->id];

	if (slot < 0) {
		memset(c, 0, sizeof *c);
		return;
	}
	for (unsigned i = 0; i < AGG_ENTRIES;) {
		if (removed(&c->entry[i], slot))
			remove_at(c, i);        /* i may now hold a moved entry */
		else
			i++;
	}
}

void agg_clear(int slot)
{
	smp_call_others(clear_here, &slot);
	irqflags_t f = arch_irq_save();
	clear_here(&slot);
	arch_irq_restore(f);
}
