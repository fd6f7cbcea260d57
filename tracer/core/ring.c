/*
 * ring.c — the sub-buffer writer's slow half (ring.h): opening and
 * committing sub-buffers, and the table the host finds the rings by.
 *
 * The table (include/shm.h) is static and announced to the link at boot
 * (subbuf_table_init), so HELLO carries its physical address; the kernel
 * maps RAM one to one, so a ring's pages are physically contiguous and
 * its virtual address is its physical one (subbuf_setup checks). A
 * commit fills in the header and then stores `commit` with release
 * order: the compiler may not sink a header or record store below it,
 * and both arches keep stores in order (x86; SPARC TSO), so a host that
 * sees commit == n + 1 sees the whole sub-buffer. `write` moves on only
 * after that, and a slot is reused only once `consumed` passed it.
 * Written by physical address (s->phys), a header is built in the
 * writer's copy and stored whole at open, and at commit everything before
 * `commit` and then `commit` itself, in that order (TSO keeps it).
 */
#include <stddef.h>
#include "ring.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "link.h"
#include "mm.h"

_Static_assert(KERNEL_MAX_CPUS <= SHM_MAX_CPUS, "the table has a row per CPU");

static struct {
	struct shm_table head;
	struct shm_cpu   cpu[SHM_MAX_CPUS];
} table __attribute__((aligned(64)));

#define compiler_barrier() __asm__ volatile("" ::: "memory")

void subbuf_table_init(void)
{
	table.head = (struct shm_table){
		.magic = SHM_TABLE_MAGIC, .version = SHM_VERSION,
		.ncpus = (uint16_t)cpu_count(), .cpu_bytes = sizeof(struct shm_cpu),
		.subbuf_header = sizeof(struct shm_subbuf),
	};
	uintptr_t pa = mm_virt_to_phys(&table);
	if (pa != (uintptr_t)-1 && pa == (uintptr_t)&table)
		link_shm_announce(pa);
}

/* The header's bytes [from, to) stored by physical address. */
static void header_store_phys(const struct subbuf_writer *s, const struct shm_subbuf *h,
			      uint32_t from, uint32_t to)
{
	uintptr_t pa = s->phys + (uintptr_t)((uint8_t *)s->cur - s->base);
	tarch_phys_store(pa + from, (const uint8_t *)h + from, to - from);
}

void subbuf_commit(struct subbuf_writer *s, volatile uint64_t *sent)
{
	struct shm_subbuf *h = s->cur, copy;
	if (s->phys) {
		copy = (struct shm_subbuf){
			.magic = SHM_SUBBUF_MAGIC, .version = SHM_VERSION, .cpu = s->cpu,
			.seq = s->w, .discarded = s->discarded, .commit = s->w + 1,
		};
		h = &copy;
	}
	h->content = s->off - sizeof *h;
	h->first = s->first;
	h->last = s->last;
	h->records = s->count;
	h->last_record = s->last_off - sizeof *h;
	if (s->phys) {
		compiler_barrier();
		header_store_phys(s, h, 0, offsetof(struct shm_subbuf, commit));
		compiler_barrier();    /* the commit is the last store */
		header_store_phys(s, h, offsetof(struct shm_subbuf, commit), sizeof *h);
	} else {
		__atomic_store_n(&h->commit, s->w + 1, __ATOMIC_RELEASE);
	}
	*sent += s->count;
	s->open = false;
	s->w++;
	compiler_barrier();
	s->ctl->write = s->w;
}

bool subbuf_open(struct subbuf_writer *s, uint64_t discarded)
{
	if (!s->on || s->w - s->ctl->consumed >= s->nsub)
		return false;
	compiler_barrier();    /* the slot is free before it is written */
	struct shm_subbuf *h = (struct shm_subbuf *)(s->base + (s->w % s->nsub) * s->subbuf);
	s->cur = h;
	s->off = sizeof *h;
	s->count = 0;
	s->open = true;
	s->discarded = discarded;
	if (s->phys) {
		/* commit stays 0 (not n + 1) until the commit's own store. */
		struct shm_subbuf copy = {
			.magic = SHM_SUBBUF_MAGIC, .version = SHM_VERSION, .cpu = s->cpu,
			.seq = s->w, .discarded = discarded,
		};
		header_store_phys(s, &copy, 0, sizeof copy);
		return true;
	}
	h->magic = SHM_SUBBUF_MAGIC;
	h->version = SHM_VERSION;
	h->cpu = s->cpu;
	h->seq = s->w;
	h->content = 0;
	h->first = h->last = 0;
	h->records = h->last_record = 0;
	h->discarded = discarded;
	return true;
}

void subbuf_flush(struct subbuf_writer *s, volatile uint64_t *sent)
{
	if (s->open && s->count)
		subbuf_commit(s, sent);
}

bool subbuf_drained(const struct subbuf_writer *s)
{
	return !s->on || (!(s->open && s->count) && s->ctl->consumed == s->w);
}

/* Slots of at least 1 KiB (a CHECK record is a few hundred bytes) and at
 * most 64 KiB, at least eight of them when the ring is big enough: the
 * host reads a slot once the writer left it, so more slots keep the writer
 * further from a full ring, and a small slot's records fit one EVENTS
 * frame's 16-bit count. */
static uint32_t slots_for(uint32_t bytes)
{
	uint32_t n = 8;
	while (n > 2 && bytes / n < 1024)
		n /= 2;
	while (bytes / n > 65536)
		n *= 2;
	return n;
}

void subbuf_setup(struct subbuf_writer *s, unsigned cpu, uint8_t *data,
		  uint32_t bytes, bool on)
{
	volatile struct shm_cpu *ctl = &table.cpu[cpu];
	if (on && (!data || mm_virt_to_phys(data) != (uintptr_t)data))
		on = false;    /* the host could not find it */
	s->on = false;
	s->open = false;
	s->cpu = (uint16_t)cpu;
	s->ctl = ctl;
	s->w = 0;
	ctl->ring = 0;
	ctl->write = ctl->consumed = 0;
	if (!on)
		return;
	s->base = data;
	s->nsub = slots_for(bytes);
	s->subbuf = bytes / s->nsub;
	/* No stale commit may match a number this ring will write. */
	for (uint32_t i = 0; i < s->nsub; i++)
		((struct shm_subbuf *)(data + i * s->subbuf))->commit = 0;
	ctl->subbuf_bytes = s->subbuf;
	ctl->nsub = s->nsub;
	compiler_barrier();
	ctl->ring = (uintptr_t)data;
	s->on = true;
}
