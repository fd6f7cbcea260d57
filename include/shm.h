/*
 * shm.h — the trace rings as the host reads them out of guest RAM (the
 * `shm` channel, wire.h WIRE_CHANNELS). The single source of truth for
 * the layout: the tracer writes it (tracer/core/ring.c), the host reads it
 * (bench/wire/shm.py, through bench/wire/cdefs.py).
 *
 * LTTng's reader/writer protocol. HELLO's `shm_table` is the physical
 * address of one struct shm_table; after it, one struct shm_cpu per CPU.
 * Each CPU's ring is `nsub` sub-buffers of `subbuf_bytes`, physically
 * contiguous from `ring`. Sub-buffer number n (free-running) lives in slot
 * n % nsub: a struct shm_subbuf, then `content` bytes of records, each
 * struct wire_event + words exactly as an EVENTS frame carries them; the
 * header says how many and where the last starts, so that the host checks
 * a sub-buffer without walking its records (first and last must be at
 * the header's timestamps, the last must end at `content`). The
 * CPU alone writes its ring; `write` is the number of the sub-buffer it
 * writes now. It commits sub-buffer n by filling in the header and then,
 * by a release store (after a compiler barrier; both arches are TSO), its
 * `commit` = n + 1. The host reads sub-buffer n = `consumed` only when
 * n < write and commit == n + 1, copies it out, then stores consumed =
 * n + 1, which frees the slot. A writer that finds every slot taken
 * discards the record and counts it (never overwrites): `discarded`, live
 * in struct shm_cpu and as of the sub-buffer's opening in its header, and
 * a DROPS record first in the next sub-buffer it opens. Every field is in
 * the guest's byte order (HELLO's byte_order).
 */
#ifndef SHM_H
#define SHM_H

#include <stdint.h>

#define SHM_TABLE_MAGIC   0x54425348u   /* "TBSH" */
#define SHM_SUBBUF_MAGIC  0x54425342u   /* "TBSB" */
#define SHM_VERSION       1
#define SHM_MAX_CPUS      8

struct shm_table {
	uint32_t magic;           /* SHM_TABLE_MAGIC */
	uint16_t version;         /* SHM_VERSION */
	uint16_t ncpus;           /* struct shm_cpu entries that follow */
	uint32_t cpu_bytes;       /* sizeof(struct shm_cpu) as built */
	uint32_t subbuf_header;   /* sizeof(struct shm_subbuf) as built */
};

struct shm_cpu {
	uint64_t ring;            /* physical address of slot 0; 0: no ring */
	uint32_t subbuf_bytes;    /* each slot, header included */
	uint32_t nsub;            /* slots */
	uint32_t write;           /* the sub-buffer being written (writer) */
	uint32_t consumed;        /* sub-buffers read (host) */
	uint64_t discarded;       /* records discarded so far (writer) */
};

struct shm_subbuf {
	uint32_t magic;           /* SHM_SUBBUF_MAGIC */
	uint16_t version;         /* SHM_VERSION */
	uint16_t cpu;
	uint32_t seq;             /* n, the sub-buffer's number */
	uint32_t content;         /* record bytes after this header */
	uint64_t first;           /* cycles of its first record */
	uint64_t last;            /* cycles of its last record */
	uint64_t discarded;       /* records the CPU discarded before it opened */
	uint32_t records;         /* how many records content holds */
	uint32_t last_record;     /* offset of the last in content */
	uint32_t commit;          /* n + 1 once complete; stored last */
	uint32_t reserved;
};

_Static_assert(sizeof(struct shm_table) == 16, "shm_table has padding");
_Static_assert(sizeof(struct shm_cpu) == 32, "shm_cpu has padding");
_Static_assert(sizeof(struct shm_subbuf) == 56, "shm_subbuf has padding");

#endif
