/*
 * buffer_cpu.h — one CPU's trace buffer as buffer.c and drain.c share it.
 *
 * The ring (data, size, head, tail) has one producer, its CPU's fire path
 * (buffer.c), and one consumer, that CPU's drain thread (drain.c); the
 * counters beside it are the fire path's, read by the drain for STATS.
 * The few switches the drains and the rings' owner both read (paused,
 * shm wanted) are here too. Private to those two files: the rest of the
 * tracer sees buffer.h and tracer.h; but for one writer in assembly that
 * writes a record as put() and subbuf_put() do (sparc64's tramp slots,
 * i386's opt), whose offsets into this structure each asserts with
 * TRACER_CPU_OFFSETS below.
 */
#ifndef TRACER_BUFFER_CPU_H
#define TRACER_BUFFER_CPU_H

#include <stdbool.h>
#include <stdint.h>
#include "arch.h"
#include "ring.h"

#define compiler_barrier() __asm__ volatile("" ::: "memory")

struct tracer_cpu {
	uint8_t           *data;
	uintptr_t          phys;       /* data's physical address, when written so */
	uint32_t           size;       /* bytes, a power of two */
	volatile uint32_t  head;       /* bytes ever written (producer) */
	volatile uint32_t  tail;       /* bytes ever consumed (consumer) */
	volatile uint64_t  recorded, dropped, sent;   /* fired: tracer_fired */
	uint64_t           marks;      /* of recorded, DROPS records */
	uint64_t           scheds;     /* SWITCH/IRQ records written or lost (stamp) */
	uint64_t           scheds_written;   /* of recorded, those written */
	uint64_t           kicks;      /* drain wake-ups asked for (half full) */
	volatile bool      kicked;     /* asked, and the ring not yet emptied */
	/* Lost since the last record written, not yet marked (DROPS). */
	uint32_t           lost;
	unsigned long      lost_threads;   /* bit (id % BITS_PER_WORD) per thread */
	uint64_t           lost_first;     /* cycles at the first of them */
	struct subbuf_writer sb;           /* the shm channel's form (ring.h) */
	volatile bool      flush_wanted;   /* shm: commit the open sub-buffer */
} __attribute__((aligned(64)));

#define BITS_PER_WORD (8 * sizeof(unsigned long))

/* What an assembly writer of records reads of struct tracer_cpu, as
 * numbers of its own (P##_T_DATA, ...): each asserted at its offset. */
#define TRACER_CPU_AT(field, at) \
	_Static_assert(__builtin_offsetof(struct tracer_cpu, field) == at, #at)
#define TRACER_CPU_OFFSETS(P) \
	TRACER_CPU_AT(data, P##_T_DATA); \
	TRACER_CPU_AT(phys, P##_T_PHYS); \
	TRACER_CPU_AT(size, P##_T_SIZE); \
	TRACER_CPU_AT(head, P##_T_HEAD); \
	TRACER_CPU_AT(tail, P##_T_TAIL); \
	TRACER_CPU_AT(recorded, P##_T_RECORDED); \
	TRACER_CPU_AT(kicked, P##_T_KICKED); \
	TRACER_CPU_AT(lost, P##_T_LOST); \
	TRACER_CPU_AT(sb.on, P##_T_SB_ON); \
	TRACER_CPU_AT(sb.open, P##_T_SB_OPEN); \
	TRACER_CPU_AT(sb.subbuf, P##_T_SB_SUBBUF); \
	TRACER_CPU_AT(sb.off, P##_T_SB_OFF); \
	TRACER_CPU_AT(sb.count, P##_T_SB_COUNT); \
	TRACER_CPU_AT(sb.last_off, P##_T_SB_LAST_OFF); \
	TRACER_CPU_AT(sb.first, P##_T_SB_FIRST); \
	TRACER_CPU_AT(sb.last, P##_T_SB_LAST); \
	TRACER_CPU_AT(sb.cur, P##_T_SB_CUR)

/* Per CPU; `tcpu` is also the name bench/debug/gdbext.py reads. */
extern struct tracer_cpu tcpu[KERNEL_MAX_CPUS];
/* The drains leave the rings alone (buffer_resize, tracer_drain_pause). */
extern volatile bool draining_paused;
/* Every ring as sub-buffers (the shm channel), once its drain switched it. */
extern volatile bool shm_wanted;

#endif
