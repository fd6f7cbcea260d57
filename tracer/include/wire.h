/*
 * wire.h — the guest→host serial wire format. The single source of truth:
 * the guest includes this header, and the host (bench/wire/cdefs.py) parses it,
 * so no second copy of any number or layout below exists anywhere.
 *
 * Everything the guest sends is a frame; there is no unframed output: a
 * header (struct wire_frame_header), `length` payload bytes, and the IEEE
 * CRC-32 (as zlib) of header and payload, WIRE_CRC_SIZE bytes.
 *
 * Header and CRC are little-endian on every arch. Payload structs are in
 * the guest's own byte order, which the HELLO frame announces in its first
 * byte (a u8, readable before the order is known). The host finds every lost
 * frame through seq, every damaged one through the CRC, and resynchronises
 * by scanning for the next magic.
 *
 * Host→guest is a plain text command line ending in '\n' (see
 * guest-kernel/core/command.c); the guest answers every line with exactly
 * one REPLY frame, preceded by any TEXT the command printed. The host sends
 * nothing before HELLO: the UART discards what arrives while it is set up.
 *
 * Structs below use only uintN_t/intN_t fields and arrays of them, laid out
 * with no implicit padding (checked by the static asserts), so that the host
 * parser needs to understand nothing more.
 */
#ifndef WIRE_H
#define WIRE_H

#include <stdint.h>

#define WIRE_MAGIC0       0xd5
#define WIRE_MAGIC1       0x7e
#define WIRE_VERSION      2
#define WIRE_HEADER_SIZE  12
#define WIRE_CRC_SIZE     4
#define WIRE_MAX_PAYLOAD  2048
#define WIRE_MAX_COMMAND  256   /* longest host→guest line, '\n' excluded */
#define WIRE_MAX_ARGS     6     /* argument words an ENTRY record carries at most */

/* The frame header, little-endian on every arch (frame.c writes it byte by
 * byte; the host reads it with this layout). */
struct wire_frame_header {
	uint8_t  magic[2];        /* WIRE_MAGIC0, WIRE_MAGIC1 */
	uint8_t  version;         /* WIRE_VERSION */
	uint8_t  type;            /* WIRE_FRAME_TYPES */
	uint32_t seq;             /* per-link frame counter, 0 at boot */
	uint16_t length;          /* payload bytes, at most WIRE_MAX_PAYLOAD */
	uint16_t reserved;        /* 0 */
};

/* X(name, value, meaning) */
#define WIRE_FRAME_TYPES(X) \
	X(HELLO, 1, "the guest is up and reads commands; payload struct wire_hello") \
	X(TEXT,  2, "console text for humans: PASS/FAIL lines, dumps; payload is bytes") \
	X(REPLY, 3, "end of one command; payload struct wire_reply + message text") \
	X(EXIT,  4, "the guest is about to stop; payload struct wire_exit") \
	X(RESULT, 5, "a workload's result; payload struct wire_result + name") \
	X(EVENTS, 6, "trace records of one CPU; struct wire_events + records") \
	X(STATS,  7, "tracer counters of one CPU; payload struct wire_stats") \
	X(EXPECT, 8, "a workload's ground truth: calls of a function; wire_expect + name") \
	X(FILL,   9, "filler that measures the raw channel (drainrate); bytes, unread")

/* Status of a REPLY. X(name, value, meaning) */
#define WIRE_REPLY_STATUSES(X) \
	X(OK,          0, "command done") \
	X(UNKNOWN,     1, "no such command") \
	X(BAD_ARGS,    2, "arguments missing, extra or malformed") \
	X(TOO_LONG,    3, "command line longer than WIRE_MAX_COMMAND; discarded") \
	X(FAILED,      4, "command ran and failed (e.g. self-tests failed)")

#define WIRE_BYTE_ORDERS(X) \
	X(LITTLE, 1, "payload structs are little-endian") \
	X(BIG,    2, "payload structs are big-endian")

#define WIRE_ARCHES(X) \
	X(I386,    1, "i386") \
	X(SPARC64, 2, "sparc64")

#define WIRE_FRAME_ENUM(name, value, meaning) WIRE_FRAME_##name = value,
#define WIRE_REPLY_ENUM(name, value, meaning) WIRE_REPLY_##name = value,
#define WIRE_ORDER_ENUM(name, value, meaning) WIRE_ORDER_##name = value,
#define WIRE_ARCH_ENUM(name, value, meaning)  WIRE_ARCH_##name = value,
enum wire_frame_type   { WIRE_FRAME_TYPES(WIRE_FRAME_ENUM) };
enum wire_reply_status { WIRE_REPLY_STATUSES(WIRE_REPLY_ENUM) };
enum wire_byte_order   { WIRE_BYTE_ORDERS(WIRE_ORDER_ENUM) };
enum wire_arch         { WIRE_ARCHES(WIRE_ARCH_ENUM) };

struct wire_hello {
	uint8_t  byte_order;      /* WIRE_BYTE_ORDERS */
	uint8_t  arch;            /* WIRE_ARCHES */
	uint8_t  word_bytes;      /* size of a record word: the arch's register */
	uint8_t  reserved0;
	uint16_t max_command;     /* WIRE_MAX_COMMAND as built */
	uint16_t reserved1;
	uint32_t ncpus;
	uint32_t timer_hz;
	uint32_t page_size;
	uint32_t reserved2;
	uint64_t cycles_at_hello; /* arch cycle counter (TSC, %tick) */
	uint64_t cycles_hz;       /* its rate, measured by the guest at boot */
};

struct wire_reply {
	int32_t  status;          /* WIRE_REPLY_STATUSES */
	uint32_t command;         /* 1 for the first line received after boot */
	/* followed by a message (bytes, no terminator) */
};

struct wire_exit {
	uint32_t status;          /* guest-kernel/include/exit.h EXIT_STATUSES */
};

struct wire_result {
	int32_t  status;          /* 0: the workload checked its own result */
	uint32_t reserved;
	uint64_t value;           /* the workload's answer (e.g. fib(n)) */
	uint64_t cycles;          /* arch cycle counter, start to end */
	/* followed by the workload name */
};

/*
 * Trace records. An EVENTS frame carries records of one CPU, in the order
 * that CPU wrote them: struct wire_events, then `count` records. A record
 * is struct wire_event followed by `nwords` words of word_bytes each (from
 * HELLO), whose meaning depends on the kind: the kind's WIRE_*_WORDS table
 * below names each slot (the C code writes w[WIRE_ENTRY_SP], the host reads
 * the same table through bench/wire/cdefs.py). A CHECK record's words are
 * the arch's (tracer/arch/<arch>/check.h). A record's size is a multiple of
 * 4 bytes on i386, 8 on sparc64.
 */
#define WIRE_EVENT_KINDS(X) \
	X(PAD,    0, "ring padding; never sent") \
	X(ENTRY,  1, "a function was entered") \
	X(RETURN, 2, "a function is returning") \
	X(CHECK,  3, "pre/post state of one emulation (check mode)") \
	X(BRANCH, 4, "a control transfer executed") \
	X(DROPS,  5, "records this CPU lost (its buffer was full) right before this point")

#define WIRE_EVENT_ENUM(name, value, meaning) WIRE_EVENT_##name = value,
enum wire_event_kind { WIRE_EVENT_KINDS(WIRE_EVENT_ENUM) };

/* The kinds a probe is added as (`probe add ID ADDR KIND`): each is the
 * event kind of the same name, and its meaning is the command's word. */
#define WIRE_PROBE_KINDS(X) \
	X(ENTRY,  1, "entry") \
	X(RETURN, 2, "return") \
	X(BRANCH, 4, "branch")

/* Word slots, per kind. X(name, index, meaning) */
#define WIRE_ENTRY_WORDS(X) \
	X(PC,   0, "the probed instruction (the function's first)") \
	X(SP,   1, "the stack pointer when it trapped") \
	X(ARG0, 2, "the first argument as the caller passed it; ARG0 + n is argument n")

#define WIRE_RETURN_WORDS(X) \
	X(PC,    0, "the probed instruction") \
	X(SP,    1, "the stack pointer when it trapped") \
	X(VALUE, 2, "what the caller will see returned; absent when unknown") \
	X(VALUE_HIGH, 3, "the high word of a value wider than a register (i386 edx), if asked for")

/* The branch provider's record: seed 001's btfrec. */
#define WIRE_BRANCH_WORDS(X) \
	X(PC,     0, "the control transfer") \
	X(TARGET, 1, "where it goes when taken") \
	X(FLAGS,  2, "WIRE_BRANCH_BITS")

/* A CPU whose buffer is full counts the records it cannot write; the next
 * record that fits is preceded by a DROPS record, so the host knows where
 * in that CPU's stream records went missing and whose they were. Its
 * probe is WIRE_NO_PROBE. Records lost at the very end of a run have no
 * record after them: they are the STATS frame's `dropped` less the DROPS
 * records' counts. */
#define WIRE_NO_PROBE 0xffffffff
#define WIRE_DROPS_WORDS(X) \
	X(COUNT,   0, "records lost") \
	X(FIRST,   1, "the cycle counter when the first was lost, its low word (host extends it)") \
	X(THREADS, 2, "bit (id modulo the word's bits) set for each thread that lost one")

/* Bits of a BRANCH record's FLAGS word. X(name, bit value, meaning) */
#define WIRE_BRANCH_BITS(X) \
	X(TAKEN,    1, "the transfer was taken") \
	X(ANNULLED, 2, "its delay slot was annulled")

#define WIRE_ENTRY_ENUM(name, value, meaning)  WIRE_ENTRY_##name = value,
#define WIRE_RETURN_ENUM(name, value, meaning) WIRE_RETURN_##name = value,
#define WIRE_BRANCH_ENUM(name, value, meaning) WIRE_BRANCH_##name = value,
#define WIRE_BIT_ENUM(name, value, meaning)    WIRE_BRANCH_##name = value,
#define WIRE_DROPS_ENUM(name, value, meaning)  WIRE_DROPS_##name = value,
enum wire_entry_word  { WIRE_ENTRY_WORDS(WIRE_ENTRY_ENUM) };
enum wire_return_word { WIRE_RETURN_WORDS(WIRE_RETURN_ENUM) };
enum wire_branch_word { WIRE_BRANCH_WORDS(WIRE_BRANCH_ENUM) };
enum wire_branch_bit  { WIRE_BRANCH_BITS(WIRE_BIT_ENUM) };
enum wire_drops_word  { WIRE_DROPS_WORDS(WIRE_DROPS_ENUM) WIRE_DROPS_NWORDS };

struct wire_event {
	uint8_t  kind;            /* WIRE_EVENT_KINDS */
	uint8_t  nwords;          /* words after this header */
	uint16_t thread;          /* thread id */
	uint32_t probe;           /* probe id, as the host numbered it */
	uint64_t cycles;          /* arch cycle counter when it fired */
};

struct wire_events {
	uint16_t cpu;
	uint16_t count;           /* records in this frame */
	uint32_t reserved;
};

struct wire_stats {
	uint32_t cpu;
	uint32_t reserved;
	uint64_t fired;           /* probe traps handled on this CPU */
	uint64_t recorded;        /* records written into its buffer */
	uint64_t dropped;         /* records lost because its buffer was full
				     (those before a later record are also
				     marked in the stream by DROPS records) */
	uint64_t sent;            /* records drained to the host */
	uint64_t buffer_bytes;    /* the buffer's size */
};

struct wire_expect {
	uint64_t calls;           /* how often the function ran, per the workload */
	/* followed by the function's name */
};

_Static_assert(sizeof(struct wire_frame_header) == WIRE_HEADER_SIZE,
	       "wire_frame_header is WIRE_HEADER_SIZE bytes, no padding");
_Static_assert(sizeof(struct wire_event) == 16, "wire_event has padding");
_Static_assert(sizeof(struct wire_events) == 8, "wire_events has padding");
_Static_assert(sizeof(struct wire_stats) == 48, "wire_stats has padding");
_Static_assert(sizeof(struct wire_expect) == 8, "wire_expect has padding");
_Static_assert(sizeof(struct wire_hello) == 40, "wire_hello has padding");
_Static_assert(sizeof(struct wire_reply) == 8, "wire_reply has padding");
_Static_assert(sizeof(struct wire_exit) == 4, "wire_exit has padding");
_Static_assert(sizeof(struct wire_result) == 24, "wire_result has padding");

#define WIRE_PROBE_CHECK(name, value, meaning) \
	_Static_assert(WIRE_EVENT_##name == value, "probe kind " #name " is its event kind");
WIRE_PROBE_KINDS(WIRE_PROBE_CHECK)
#undef WIRE_PROBE_CHECK

#endif
