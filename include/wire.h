/*
 * wire.h — the guest→host serial wire format. The single source of truth:
 * the guest includes this header, and the host (bench/wire/cdefs.py) parses it,
 * so no second copy of any number or layout below exists anywhere. It lives
 * in include/, the directory of what the kernel, the tracer and the host
 * share, so that neither side of the guest reaches into the other's headers.
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
#define WIRE_VERSION      3
#define WIRE_HEADER_SIZE  12
#define WIRE_CRC_SIZE     4
#define WIRE_MAX_PAYLOAD  2048
#define WIRE_MAX_COMMAND  256   /* longest host→guest line, '\n' excluded */
#define WIRE_MAX_REASON   512   /* longest reason (refusal, note) a REPLY carries whole */
#define WIRE_MAX_ARGS     6     /* argument words an ENTRY record carries at most */
/* An entry probe's argument map (tracer/core/args.c): a byte per word */
#define WIRE_ARG_REGISTER 0x80  /* | r: the trapped register r (`reg` numbering) */
#define WIRE_ARG_WORDS    64    /* k < this: the calling convention's word k */
#define WIRE_ARG_NONE     0xff  /* nowhere: optimized out */

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
	X(FILL,   9, "filler that measures the raw channel (drainrate); bytes, unread") \
	X(AGGS,  10, "aggregation entries of one CPU; struct wire_aggs + entries") \
	X(PROBES, 11, "per-probe counters; struct wire_probe_counts, one per probe") \
	X(STACKS, 12, "stacks of one CPU's stack table; struct wire_stacks + stacks")

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

/* Where the trace travels (HELLO's `channel`); X(name, value, word, meaning).
 * The 16550 always carries the console and the commands; the bulk frames
 * (WIRE_BULK_FRAMES) go over the virtio-console port named
 * WIRE_VIRTIO_PORT when the guest found it, each stream with its own seq;
 * under SHM the records are not sent at all (include/shm.h), and the other
 * bulk frames take the virtio port if there is one. */
#define WIRE_CHANNELS(X) \
	X(SERIAL, 1, "serial", "the 16550 that carries the commands") \
	X(VIRTIO, 2, "virtio", "a virtio-console port, legacy virtio-pci, polled") \
	X(SHM,    3, "shm", "the per-CPU rings, read by the host out of guest RAM (shm.h)")

/* The virtio port's name (virtserialport name=, libvirt <channel> target). */
#define WIRE_VIRTIO_PORTS(X) \
	X(TRACE, 1, "org.trapbench.trace.0")

/* Frame types that take the trace channel when it is virtio. */
#define WIRE_BULK_FRAMES(X) \
	X(EVENTS, 6, "trace records") \
	X(FILL,   9, "the raw channel's filler")

#define WIRE_FRAME_ENUM(name, value, meaning) WIRE_FRAME_##name = value,
#define WIRE_REPLY_ENUM(name, value, meaning) WIRE_REPLY_##name = value,
#define WIRE_ORDER_ENUM(name, value, meaning) WIRE_ORDER_##name = value,
#define WIRE_ARCH_ENUM(name, value, meaning)  WIRE_ARCH_##name = value,
#define WIRE_CHANNEL_ENUM(name, value, word, meaning) WIRE_CHANNEL_##name = value,
enum wire_frame_type   { WIRE_FRAME_TYPES(WIRE_FRAME_ENUM) };
enum wire_reply_status { WIRE_REPLY_STATUSES(WIRE_REPLY_ENUM) };
enum wire_byte_order   { WIRE_BYTE_ORDERS(WIRE_ORDER_ENUM) };
enum wire_arch         { WIRE_ARCHES(WIRE_ARCH_ENUM) };
enum wire_channel      { WIRE_CHANNELS(WIRE_CHANNEL_ENUM) };

struct wire_hello {
	uint8_t  byte_order;      /* WIRE_BYTE_ORDERS */
	uint8_t  arch;            /* WIRE_ARCHES */
	uint8_t  word_bytes;      /* size of a record word: the arch's register */
	uint8_t  channel;         /* WIRE_CHANNELS: where the trace goes */
	uint16_t max_command;     /* WIRE_MAX_COMMAND as built */
	uint16_t reserved1;
	uint32_t ncpus;
	uint32_t timer_hz;
	uint32_t page_size;
	uint32_t shm_table;       /* physical address of struct shm_table (shm.h), 0: none */
	uint64_t cycles_at_hello; /* arch cycle counter (TSC, %tick) */
	uint64_t cycles_hz;       /* its rate, measured by the guest at boot */
};

struct wire_reply {
	int32_t  status;          /* WIRE_REPLY_STATUSES */
	uint32_t command;         /* 1 for the first line received after boot */
	uint32_t channel_frames;  /* frames put on the virtio trace channel
				   * before this reply: the host reads that
				   * stream up to them before taking it */
	uint32_t reserved;
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
	X(DROPS,  5, "records this CPU lost (its buffer was full) right before this point") \
	X(LOG,    6, "a probe program's exit: its log buffer") \
	X(WATCH,  7, "a watched access (tracer/core/watch.c)") \
	X(ITRACE, 8, "instructions one thread executed (itrace.c): WIRE_ITRACE_WORDS") \
	X(INSN,   9, "an instruction probe fired (insn:FUNC+OFF)") \
	X(SWITCH, 10, "a CPU switched threads (switch_hook.h): WIRE_SWITCH_WORDS") \
	X(IRQ,    11, "an interrupt entered or left a CPU: WIRE_IRQ_WORDS") \
	X(SAMPLE, 12, "a sampling probe (profile-HZ, tick-HZ: tracer/core/sample.c)")

#define WIRE_EVENT_ENUM(name, value, meaning) WIRE_EVENT_##name = value,
enum wire_event_kind { WIRE_EVENT_KINDS(WIRE_EVENT_ENUM) };

/* The kinds a probe is added as (`probe add ID ADDR KIND`): each is the
 * event kind of the same name, and its meaning is the command's word. */
#define WIRE_PROBE_KINDS(X) \
	X(ENTRY,  1, "entry") \
	X(RETURN, 2, "return") \
	X(BRANCH, 4, "branch") \
	X(INSN,   9, "insn")

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

/* An instruction probe's record (any instruction boundary). */
#define WIRE_INSN_WORDS(X) \
	X(PC, 0, "the probed instruction") \
	X(SP, 1, "the stack pointer when it trapped")

/* The branch provider's record: seed 001's btfrec. */
#define WIRE_BRANCH_WORDS(X) \
	X(PC,     0, "the control transfer") \
	X(TARGET, 1, "where it goes when taken") \
	X(FLAGS,  2, "WIRE_BRANCH_BITS") \
	X(SLOT,   3, "with `trace bytes`: the delay slot's word as the tracer read it, 0 if it could not")

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

/* A context switch, written by the tracer's switch hook while any probe
 * is armed (switch.c): the CPU's current thread is already TO (the
 * record's thread), and the next record of this CPU that is not TO's is
 * none: the only code left on FROM's stack is arch_context_switch, whose
 * entry record, if probed, comes next and belongs to FROM. Its probe is
 * WIRE_NO_PROBE; it is counted (recorded, dropped) like any record. */
#define WIRE_SWITCH_WORDS(X) \
	X(FROM,  0, "the thread leaving the CPU") \
	X(TO,    1, "the thread the CPU runs next") \
	X(WHY,   2, "why FROM stops: WIRE_SWITCH_WHYS") \
	X(FIRST, 3, "1: TO has never run (it starts with an empty stack)")

/* Why a thread leaves its CPU (guest-kernel/include/switch_hook.h). */
#define WIRE_SWITCH_WHYS(X) \
	X(PREEMPTED, 0, "preempted") \
	X(BLOCKED,   1, "blocked") \
	X(EXITED,    2, "exited")

/* An interrupt's first and last moments on a CPU, written by the tracer's
 * interrupt hooks while any probe is armed: the calls between them form a
 * frame of their own on the interrupted thread's stack. The record's
 * thread is the interrupted one at ENTER; at EXIT, the thread the
 * interrupt returns to (another one when it preempted: a SWITCH lies in
 * between). Its probe is WIRE_NO_PROBE. */
#define WIRE_IRQ_WORDS(X) \
	X(VECTOR, 0, "the interrupt's vector (i386) or level (sparc64)") \
	X(EXIT,   1, "0: entering the handler, 1: leaving it")

/* A probe program's `exit` (below): the log buffer it built, packed into
 * words from DATA on, in the guest's byte order. */
#define WIRE_LOG_WORDS(X) \
	X(PC,    0, "the probed instruction") \
	X(MAJOR, 1, "the program's major code (its templates' file)") \
	X(MINOR, 2, "the program's minor code (the template in it)") \
	X(BYTES, 3, "bytes of log data") \
	X(DATA,  4, "the log data, BYTES of it, packed into words")

/* A watchpoint probe (`watch add ID TYPE ADDR LEN`): a probe of the
 * table whose address is data, an I/O port or code rather than a trap
 * site. Its types, as the command names them; an arch arms those its
 * hardware or its emulation can watch (tracer_arch.h). X(name, value,
 * word) */
#define WIRE_WATCH_TYPES(X) \
	X(EXEC,  1, "x") \
	X(WRITE, 2, "w") \
	X(READ,  3, "r") \
	X(RW,    4, "rw") \
	X(IO,    5, "io")

/* A WATCH record, one per watched access. i386 data and I/O watches trap
 * after the access, so PC is the next instruction there; an execute
 * watch's PC is the watched instruction. */
#define WIRE_WATCH_WORDS(X) \
	X(PC,    0, "the accessing instruction, or the one after it (arch, above)") \
	X(ADDR,  1, "the watched address or port") \
	X(VALUE, 2, "the value there after the access (I/O: eax after in/out); 0 for x") \
	X(SIZE,  3, "bytes watched") \
	X(TYPE,  4, "the watch's WIRE_WATCH_TYPES value")

/* Instruction tracing (tracer/arch/<arch>/itrace.c): a thread stepped
 * from a function's entry probe to its matching return (a region) sends
 * ITRACE records under that probe's id, in order: SEQ counts them from 0
 * in each region (the host finds a lost or reordered one by it), CURSOR
 * is the address the record's first step starts from, and DATA is a
 * byte stream of steps (WIRE_ITRACE_STEPS), INFO's BYTES of it, packed
 * into words in the guest's byte order. Each step tells what ran at the
 * cursor and moves the cursor to the next instruction. */
#define WIRE_ITRACE_WORDS(X) \
	X(SEQ,    0, "this record's number in its region, from 0") \
	X(CURSOR, 1, "the address the first step starts from") \
	X(INFO,   2, "bytes of DATA | method << 16 | WIRE_ITRACE_FLAGS << 24") \
	X(DATA,   3, "the steps, BYTES of them, packed into words")

/* INFO's flags. X(name, bit value, meaning) */
#define WIRE_ITRACE_FLAGS(X) \
	X(START,  1, "the region's first record: CURSOR is the function's entry") \
	X(END,    2, "the region's last record: the matching return ran") \
	X(LEFT,   4, "the region's last record: the thread left the traced text by a jump")

/* The methods (seed 003): what a step records. X(name, value, word) */
#define WIRE_ITRACE_METHODS(X) \
	X(ADDRESS,  3, "address") \
	X(PREVIOUS, 4, "previous") \
	X(NEXT,     5, "next")

/* Steps, by their first byte. X(name, first byte, bytes after it, meaning).
 * Addresses are WIRE_ITRACE_ADDR_BYTES in the guest's byte order. */
#define WIRE_ITRACE_ADDR_BYTES   4
#define WIRE_ITRACE_INSN_BYTES   15   /* the longest IA-32 instruction */
#define WIRE_ITRACE_STEPS(X) \
	X(JUMP,     0x00, 19, "previous: the instruction at the cursor (15 bytes follow: its code, zeros after it) went to ADDR (4 bytes after them)") \
	X(SEQ,      0x01, 0,  "previous: 0x01-0x0f, an instruction of that many bytes at the cursor; it fell through") \
	X(EMUL,     0x10, 0,  "0x11-0x1f: a probe emulated instructions at the cursor spanning the low 4 bits' bytes; they fell through") \
	X(EMUL_JUMP, 0x20, 4, "a probe emulated the instruction at the cursor; it went to ADDR") \
	X(OUT,      0x21, 4,  "a call at the previous step left the traced text; the callee ran untraced and returned to ADDR") \
	X(FAR,      0x30, 4,  "address: the next instruction is at ADDR") \
	X(NEAR,     0x40, 0,  "address: 0x40-0x7f, the next instruction is at the cursor + (byte - 0x50): -16 to +47") \
	X(NEXT_SEQ, 0x80, 0,  "next: 0x81-0x8f, the instruction described last ran and fell through; the one about to run after it is the low 4 bits' bytes long, which follow") \
	X(NEXT_JUMP, 0x90, 4, "next: 0x90-0x9f, the instruction described last ran and went to ADDR (4 bytes); the one about to run there is the low 4 bits' bytes long (0: none read, the region ends or calls out), which follow ADDR") \
	X(NEXT_AT,  0xa0, 0,  "next: 0xa1-0xaf, nothing ran: the instruction about to run at the cursor (after a probe's emulation or a call out) is the low 4 bits' bytes long, which follow")

#define WIRE_ITRACE_WORD_ENUM(name, index, meaning) WIRE_ITRACE_##name = index,
#define WIRE_ITRACE_FLAG_ENUM(name, value, meaning) WIRE_ITRACE_F_##name = value,
#define WIRE_ITRACE_METHOD_ENUM(name, value, word)  WIRE_ITRACE_M_##name = value,
#define WIRE_ITRACE_STEP_ENUM(name, first, after, meaning) WIRE_ITRACE_S_##name = first,
enum wire_itrace_word   { WIRE_ITRACE_WORDS(WIRE_ITRACE_WORD_ENUM) };
enum wire_itrace_flag   { WIRE_ITRACE_FLAGS(WIRE_ITRACE_FLAG_ENUM) };
enum wire_itrace_method { WIRE_ITRACE_METHODS(WIRE_ITRACE_METHOD_ENUM) };
enum wire_itrace_step   { WIRE_ITRACE_STEPS(WIRE_ITRACE_STEP_ENUM) };

/* Bits of a BRANCH record's FLAGS word. X(name, bit value, meaning) */
#define WIRE_BRANCH_BITS(X) \
	X(TAKEN,    1, "the transfer was taken") \
	X(ANNULLED, 2, "its delay slot was annulled")

#define WIRE_ENTRY_ENUM(name, value, meaning)  WIRE_ENTRY_##name = value,
#define WIRE_RETURN_ENUM(name, value, meaning) WIRE_RETURN_##name = value,
#define WIRE_BRANCH_ENUM(name, value, meaning) WIRE_BRANCH_##name = value,
#define WIRE_INSN_ENUM(name, value, meaning)   WIRE_INSN_##name = value,
#define WIRE_BIT_ENUM(name, value, meaning)    WIRE_BRANCH_##name = value,
#define WIRE_DROPS_ENUM(name, value, meaning)  WIRE_DROPS_##name = value,
#define WIRE_LOG_ENUM(name, value, meaning)    WIRE_LOG_##name = value,
#define WIRE_WATCH_TYPE_ENUM(name, value, word) WIRE_WATCH_##name = value,
#define WIRE_WATCH_WORD_ENUM(name, index, meaning) WIRE_WATCH_W_##name = index,
enum wire_entry_word  { WIRE_ENTRY_WORDS(WIRE_ENTRY_ENUM) };
enum wire_return_word { WIRE_RETURN_WORDS(WIRE_RETURN_ENUM) };
enum wire_branch_word { WIRE_BRANCH_WORDS(WIRE_BRANCH_ENUM) };
enum wire_branch_bit  { WIRE_BRANCH_BITS(WIRE_BIT_ENUM) };
enum wire_insn_word   { WIRE_INSN_WORDS(WIRE_INSN_ENUM) };
enum wire_drops_word  { WIRE_DROPS_WORDS(WIRE_DROPS_ENUM) WIRE_DROPS_NWORDS };
enum wire_log_word    { WIRE_LOG_WORDS(WIRE_LOG_ENUM) };
enum wire_watch_type  { WIRE_WATCH_TYPES(WIRE_WATCH_TYPE_ENUM) };
enum wire_watch_word  { WIRE_WATCH_WORDS(WIRE_WATCH_WORD_ENUM) WIRE_WATCH_NWORDS };
#define WIRE_SWITCH_ENUM(name, value, meaning)     WIRE_SWITCH_##name = value,
#define WIRE_SWITCH_WHY_ENUM(name, value, meaning) WIRE_SWITCH_WHY_##name = value,
#define WIRE_IRQ_ENUM(name, value, meaning)        WIRE_IRQ_##name = value,
enum wire_switch_word { WIRE_SWITCH_WORDS(WIRE_SWITCH_ENUM) WIRE_SWITCH_NWORDS };
enum wire_switch_why  { WIRE_SWITCH_WHYS(WIRE_SWITCH_WHY_ENUM) };
enum wire_irq_word    { WIRE_IRQ_WORDS(WIRE_IRQ_ENUM) WIRE_IRQ_NWORDS };

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
	/* Traps the tracer's own code took on this CPU (the kernel's miss
	 * accounting, miss_account.h; i386 sees no TLB misses) */
	uint64_t own_itlb;        /* ITLB misses at a tracer PC */
	uint64_t own_dtlb;        /* DTLB misses at a tracer PC */
	uint64_t own_dtlb_buffer; /* of those, on this CPU's trace buffer */
	uint64_t own_faults;      /* other synchronous traps at a tracer PC */
	uint64_t all_itlb;        /* every ITLB miss on this CPU, whoever took it */
	uint64_t all_dtlb;        /* every DTLB miss on this CPU */
	uint64_t physical;        /* 1: the buffer is written by physical address */
	uint64_t own_window;      /* register-window spills/fills at a tracer PC */
	uint64_t missed;          /* of fired, probes hit while this CPU's tracer
				     was inside a firing: counted, not recorded
				     (kprobes' nmissed); fired = recorded
				     firings + dropped firings + missed */
	uint64_t switches;        /* SWITCH and IRQ records written or dropped
				     (not firings: in recorded or dropped) */
};

struct wire_expect {
	uint64_t calls;           /* how often the function ran, per the workload */
	/* followed by the function's name */
};

/* Probe programs, their aggregations and call stacks: wire_program.h. */
#include "wire_program.h"

/* PROBES frame: one of these per probe in use (`trace flush`, `trace stats`). */
struct wire_probe_counts {
	uint32_t probe;
	uint32_t missed;          /* hits while its CPU's tracer was inside a firing */
	uint64_t hits;            /* firings (every CPU) */
	uint64_t runs;            /* of them, its program ran (the pass count let it) */
	uint64_t faults;          /* runs a fault ended (a load, a division by 0) */
	uint64_t over;            /* firings past its maximum hit count: nothing done */
};

_Static_assert(sizeof(struct wire_frame_header) == WIRE_HEADER_SIZE,
	       "wire_frame_header is WIRE_HEADER_SIZE bytes, no padding");
_Static_assert(sizeof(struct wire_event) == 16, "wire_event has padding");
_Static_assert(sizeof(struct wire_events) == 8, "wire_events has padding");
_Static_assert(sizeof(struct wire_stats) == 128, "wire_stats has padding");
_Static_assert(sizeof(struct wire_expect) == 8, "wire_expect has padding");
_Static_assert(sizeof(struct wire_hello) == 40, "wire_hello has padding");
_Static_assert(sizeof(struct wire_reply) == 16, "wire_reply has padding");
_Static_assert(sizeof(struct wire_exit) == 4, "wire_exit has padding");
_Static_assert(sizeof(struct wire_result) == 24, "wire_result has padding");
_Static_assert(sizeof(struct wire_probe_counts) == 40, "wire_probe_counts has padding");

#define WIRE_PROBE_CHECK(name, value, meaning) \
	_Static_assert(WIRE_EVENT_##name == value, "probe kind " #name " is its event kind");
WIRE_PROBE_KINDS(WIRE_PROBE_CHECK)
#undef WIRE_PROBE_CHECK

#endif
