/*
 * stacks.c — each CPU's table of the distinct call stacks `stack [N]` saw,
 * as bpftrace's stack map: an aggregation keyed by a stack holds its id,
 * and the table, sent as STACKS frames before the AGGS frames, says which
 * program counters the id stands for.
 *
 * Open addressing with linear probing on a hash of the PCs, filled to
 * STACK_CAPACITY at most; an entry is published whole (its depth last)
 * and never moves or changes until `trace reset`, so an id stays valid
 * for the run. Only the CPU's own fire path writes its table, interrupts
 * masked: no lock, no atomic. A stack that finds no room is counted in
 * the CPU's `dropped` and pushes WIRE_STACK_NONE, which the host prints
 * as such: the count stays exact.
 */
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "init.h"
#include "kstring.h"
#include "link.h"
#include "mm.h"
#include "pages.h"
#include "stack.h"
#include "wire.h"

#define STACK_ENTRIES  512          /* a power of two */
#define STACK_CAPACITY 384          /* entries one CPU fills at most */

_Static_assert(STACK_ENTRIES <= 65535, "an entry's number fits an id's 16 bits");

struct stack_entry {
	volatile uint16_t depth;       /* 0: free */
	uint32_t          hash;
	uintptr_t         pc[WIRE_STACK_MAX_DEPTH];
};

struct stack_cpu {
	struct stack_entry entry[STACK_ENTRIES];
	unsigned           nused;
	volatile uint32_t  dropped;
} __attribute__((aligned(64)));

static struct stack_cpu *tables[KERNEL_MAX_CPUS];

static void stacks_init(void)
{
	size_t pages = (sizeof(struct stack_cpu) + mm_page_size - 1) / mm_page_size;
	for (unsigned c = 0; c < cpu_count(); c++) {
		tables[c] = pages_alloc(pages);
		if (!tables[c])
			panic("tracer: no memory for cpu%u's stacks", c);
		memset(tables[c], 0, sizeof *tables[c]);
	}
}
KERNEL_INIT(stacks_init);

#define compiler_barrier() __asm__ volatile("" ::: "memory")

static uint32_t hash_of(const uintptr_t *pcs, unsigned depth)
{
	uint32_t h = 0x811c9dc5u ^ depth;
	for (unsigned i = 0; i < depth; i++) {
		uint64_t x = pcs[i];
		h = (h ^ (uint32_t)x) * 0x9e3779b1u;
		h = (h ^ (uint32_t)(x >> 32) ^ (h >> 15)) * 0x85ebca77u;
	}
	return h ^ (h >> 13);
}

static bool same(const struct stack_entry *e, uint32_t hash, const uintptr_t *pcs,
		 unsigned depth)
{
	if (e->hash != hash || e->depth != depth)
		return false;
	for (unsigned i = 0; i < depth; i++)
		if (e->pc[i] != pcs[i])
			return false;
	return true;
}

unsigned long stack_intern(const uintptr_t *pcs, unsigned depth)
{
	unsigned cpu = this_cpu()->id;
	struct stack_cpu *c = tables[cpu];
	uint32_t hash = hash_of(pcs, depth);
	/* depth 0 (nothing walked) is kept as one frame of 0, so that the
	 * entry is not free */
	uintptr_t none = 0;
	if (!depth) {
		pcs = &none;
		depth = 1;
		hash = hash_of(pcs, depth);
	}
	for (unsigned i = hash & (STACK_ENTRIES - 1);; i = (i + 1) & (STACK_ENTRIES - 1)) {
		struct stack_entry *e = &c->entry[i];
		if (e->depth) {
			if (same(e, hash, pcs, depth))
				return WIRE_STACK_ID(cpu, i);
			continue;
		}
		if (c->nused >= STACK_CAPACITY) {
			c->dropped++;
			return WIRE_STACK_NONE;
		}
		e->hash = hash;
		for (unsigned k = 0; k < depth; k++)
			e->pc[k] = pcs[k];
		compiler_barrier();
		e->depth = (uint16_t)depth;
		c->nused++;
		return WIRE_STACK_ID(cpu, i);
	}
}

static uint8_t frame[WIRE_MAX_PAYLOAD] __attribute__((aligned(8)));
static uint32_t snapshots;

static void send_frame(unsigned cpu, unsigned count, uint32_t dropped, size_t used)
{
	struct wire_stacks head = {
		.cpu = (uint16_t)cpu, .count = (uint16_t)count, .dropped = dropped,
		.snapshot = snapshots,
	};
	memcpy(frame, &head, sizeof head);
	link_send(WIRE_FRAME_STACKS, frame, used, 0, 0);
}

void stack_send(unsigned *stacks, unsigned long *dropped)
{
	*stacks = 0;
	*dropped = 0;
	snapshots++;
	for (unsigned cpu = 0; cpu < cpu_count(); cpu++) {
		const struct stack_cpu *c = tables[cpu];
		uint32_t lost = c->dropped;
		size_t used = sizeof(struct wire_stacks);
		unsigned count = 0;
		for (unsigned i = 0; i < STACK_ENTRIES; i++) {
			const struct stack_entry *e = &c->entry[i];
			unsigned depth = e->depth;
			if (!depth)
				continue;
			compiler_barrier();
			size_t need = sizeof(struct wire_stack) + depth * sizeof(uint64_t);
			if (used + need > WIRE_MAX_PAYLOAD) {
				send_frame(cpu, count, lost, used);
				used = sizeof(struct wire_stacks);
				count = 0;
			}
			struct wire_stack w = {
				.id = (uint32_t)WIRE_STACK_ID(cpu, i), .depth = (uint16_t)depth,
			};
			memcpy(frame + used, &w, sizeof w);
			for (unsigned k = 0; k < depth; k++) {
				uint64_t pc = e->pc[k];
				memcpy(frame + used + sizeof w + k * sizeof pc, &pc, sizeof pc);
			}
			used += need;
			count++;
			(*stacks)++;
		}
		send_frame(cpu, count, lost, used);
		*dropped += lost;
	}
}

void stack_clear(void)
{
	for (unsigned cpu = 0; cpu < cpu_count(); cpu++)
		memset(tables[cpu], 0, sizeof *tables[cpu]);
}
