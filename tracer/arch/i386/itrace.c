/*
 * itrace.c — i386 instruction tracing by single-step (seed 003), one
 * thread's region at a time: from a function's entry probe to its
 * matching return, nested calls included.
 *
 * Start: the entry probe of the function (an int3 or ud probe, fbt.c)
 * fires; fire.c emulates its instruction and calls i386_itrace_probe(),
 * which, if this thread may start a region (skip and region budget),
 * takes a state from the pool, keeps it in the thread's slot (thread.h),
 * records the emulated span and sets EFLAGS.TF in the trap frame. TF then
 * belongs to the thread: every trap or interrupt gate clears it on entry,
 * so the kernel's handlers (the timer's, the scheduler a preemption runs,
 * the drain) are never stepped, and the iret back restores it from the
 * frame the thread's stack holds — preemption and migration to another
 * CPU keep it, and no other thread ever runs with it.
 *
 * Each #DB after an instruction (DR6.BS; the watches' hook runs first
 * and leaves BS to us) records one step, by the chosen method: PREVIOUS
 * (4) records the instruction that just ran — its length as the address
 * difference when it fell through, else its 15 bytes of code and where it
 * went (they are surely resident: it just ran); ADDRESS (3) records only
 * where the thread is now, as a short delta when it can, for the host to
 * resolve against the ELF; NEXT, what method 4 is measured against,
 * records what a naive tracer would: the instruction about to run, its
 * address (implicit when the last one fell through) and its bytes read at
 * the new EIP, their length from the decoder (insn.c). Those bytes must
 * be fetched before they run — their page may not be resident yet, and a
 * probe's trap byte may stand there instead of the code — where PREVIOUS
 * reads only code that just ran (and only its decoded length: nothing of
 * the page after it). Probes inside a region still fire: a probe's
 * trap replaces the #DB of the instruction it emulates, so fire.c's call
 * records that span as emulated.
 *
 * The end: when a step leaves ESP above the entry's ESP (the matching
 * ret popped the return address), the region's last record goes out and
 * TF is cleared. A call out of the workload text (the kernel's code) is
 * not stepped: its return address on the stack is swapped for
 * itrace_return_pad, the callee runs with TF clear, and the pad's ud2
 * gives the thread back its TF at the real return address (an OUT step).
 * Any other way out of the workload text ends the region (LEFT).
 *
 * Steps gather in the state's staging bytes and go out as one ITRACE
 * record (wire.h) through the CPU's buffer when they fill or the region
 * ends: a record is about 28 bytes of header and words for up to 96 bytes
 * of steps (one byte per fall-through instruction). Counters per CPU say
 * what the tracer itself cost in traps, by kind (`itrace stats`).
 */
#include "arch.h"
#include "arch/trapframe.h"
#include "arch/vectors.h"
#include "arch/x86.h"
#include "atomic.h"
#include "console.h"
#include "cpu.h"
#include "insn.h"
#include "itrace.h"
#include "kstring.h"
#include "mechanisms.h"
#include "notrace.h"
#include "thread.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

#define DR6_BS        0x4000u
#define STAGE_BYTES   96
#define STEP_MAX      (1 + WIRE_ITRACE_INSN_BYTES + WIRE_ITRACE_ADDR_BYTES)
#define POOL          16

enum { TARCH_MECHANISMS(MECHANISM_ENUM) };

struct itrace_state {
	volatile unsigned long busy;    /* claimed from the pool */
	const struct probe *probe;      /* the entry probe: records carry its id */
	uint32_t cursor;                /* next instruction not yet recorded */
	uint32_t entry_sp;              /* ESP at the function's first instruction */
	uint32_t out_ret;               /* a call out: where it really returns */
	uint32_t rec_cursor;            /* cursor where the staged steps begin */
	uint32_t seq;                   /* records sent in this region */
	uint16_t used;                  /* staged bytes */
	uint8_t  flags;                 /* WIRE_ITRACE_FLAGS for the next record */
	uint8_t  ahead_len;             /* NEXT: length described at the cursor */
	bool     out;                   /* in a call out, TF clear */
	union {
		uint8_t       bytes[STAGE_BYTES];
		unsigned long words[STAGE_BYTES / sizeof(unsigned long)];
	} stage;
};

struct itrace_cpu_stats {
	unsigned long steps, emulated, pads, stray, records, bytes;
} __attribute__((aligned(64)));

static struct itrace_state pool[POOL];
static struct itrace_cpu_stats stats[KERNEL_MAX_CPUS];
static unsigned itrace_slot;

/* What `itrace on` armed: read by the fire path. */
static const struct probe *volatile start_probe;
static volatile unsigned method;
static volatile unsigned long skip_left, regions_left;   /* ~0: no limit */
static volatile unsigned long started, ended, left, active, no_state;

volatile bool i386_itrace_live;     /* armed, or a region still runs */

extern const char itrace_return_pad[];
__asm__(".pushsection .text.notrace, \"ax\"\n"
	".global itrace_return_pad\n"
	"itrace_return_pad:\n\tud2\n"
	".popsection\n");

static bool in_workload_text(uint32_t a)
{
	return a >= (uint32_t)(uintptr_t)__workload_text_start &&
	       a < (uint32_t)(uintptr_t)__workload_text_end;
}

static void flush(struct itrace_state *s, unsigned more_flags)
{
	unsigned long w[WIRE_ITRACE_DATA + STAGE_BYTES / sizeof(unsigned long)];
	unsigned nbytes = s->used;
	unsigned nwords = (nbytes + sizeof(unsigned long) - 1) / sizeof(unsigned long);
	w[WIRE_ITRACE_SEQ] = s->seq++;
	w[WIRE_ITRACE_CURSOR] = s->rec_cursor;
	w[WIRE_ITRACE_INFO] = nbytes | (unsigned long)method << 16 |
			      (unsigned long)(s->flags | more_flags) << 24;
	for (unsigned i = 0; i < nwords; i++)
		w[WIRE_ITRACE_DATA + i] = s->stage.words[i];
	tracer_record(s->probe, WIRE_EVENT_ITRACE, w, WIRE_ITRACE_DATA + nwords);
	struct itrace_cpu_stats *c = &stats[this_cpu()->id];
	c->records++;
	c->bytes += sizeof(struct wire_event) + (WIRE_ITRACE_DATA + nwords) *
		    sizeof(unsigned long);
	s->used = 0;
	s->flags = 0;
	s->rec_cursor = s->cursor;
	memset(s->stage.bytes, 0, sizeof s->stage.bytes);
}

/* Room for the longest step, sending the staged ones first if need be. */
static uint8_t *stage(struct itrace_state *s, unsigned n)
{
	if (s->used + STEP_MAX > STAGE_BYTES)
		flush(s, 0);
	uint8_t *b = s->stage.bytes + s->used;
	s->used += n;
	return b;
}

static void put_addr(uint8_t *b, uint32_t a)
{
	memcpy(b, &a, WIRE_ITRACE_ADDR_BYTES);
}

/* One instruction ran at the cursor and the thread is now at next. */
static void step(struct itrace_state *s, uint32_t next)
{
	uint32_t at = s->cursor;
	int32_t d = (int32_t)(next - at);
	if (method == WIRE_ITRACE_M_ADDRESS) {
		if (d >= -16 && d <= 47) {
			*stage(s, 1) = (uint8_t)(WIRE_ITRACE_S_NEAR + 16 + d);
		} else {
			uint8_t *b = stage(s, 1 + WIRE_ITRACE_ADDR_BYTES);
			b[0] = WIRE_ITRACE_S_FAR;
			put_addr(b + 1, next);
		}
	} else {
		/* The address difference is the instruction's length only
		 * when no branch intervened: a short jump a few bytes forward
		 * moves as far as a longer instruction would. The decoder reads
		 * the instruction that just ran (resident: nothing beyond its
		 * own bytes) to tell them apart. */
		const uint8_t *code = (const uint8_t *)(uintptr_t)at;
		unsigned n = i386_insn_length(code, WIRE_ITRACE_INSN_BYTES);
		if (n && (uint32_t)d == n) {
			*stage(s, 1) = (uint8_t)(WIRE_ITRACE_S_SEQ - 1 + d);
			s->cursor = next;
			return;
		}
		/* Only its own bytes (stage() left the rest 0). */
		uint8_t *b = stage(s, 1 + WIRE_ITRACE_INSN_BYTES + WIRE_ITRACE_ADDR_BYTES);
		b[0] = WIRE_ITRACE_S_JUMP;
		memcpy(b + 1, code, n ? n : WIRE_ITRACE_INSN_BYTES);
		put_addr(b + 1 + WIRE_ITRACE_INSN_BYTES, next);
	}
	s->cursor = next;
}

/* NEXT: read the instruction about to run at a (its page may fault in
 * here: the risk the method runs) into b, returning its length (15 when
 * the decoder does not know it: the host then names the step). */
static unsigned read_ahead(uint8_t *b, uint32_t a)
{
	const uint8_t *code = (const uint8_t *)(uintptr_t)a;
	unsigned n = i386_insn_length(code, WIRE_ITRACE_INSN_BYTES);
	if (!n)
		n = WIRE_ITRACE_INSN_BYTES;
	memcpy(b, code, n);
	return n;
}

/* NEXT, nothing ran: describe the instruction about to run at the cursor
 * (after a probe's emulation or a call out came back). */
static void ahead_at(struct itrace_state *s)
{
	uint8_t *b = stage(s, 1 + WIRE_ITRACE_INSN_BYTES);
	unsigned n = read_ahead(b + 1, s->cursor);
	b[0] = (uint8_t)(WIRE_ITRACE_S_NEXT_AT + n);
	s->used -= WIRE_ITRACE_INSN_BYTES - n;
	s->ahead_len = (uint8_t)n;
}

/* NEXT, at a #DB: the instruction described last ran and the thread is at
 * next with ESP sp. The one there is read and described unless the step
 * ends the region or leaves the workload text (after() decides which). */
static void step_next(struct itrace_state *s, uint32_t next, uint32_t sp)
{
	bool goes_on = sp <= s->entry_sp && in_workload_text(next);
	if (goes_on && s->ahead_len && next == s->cursor + s->ahead_len) {
		uint8_t *b = stage(s, 1 + WIRE_ITRACE_INSN_BYTES);
		unsigned n = read_ahead(b + 1, next);
		b[0] = (uint8_t)(WIRE_ITRACE_S_NEXT_SEQ + n);
		s->used -= WIRE_ITRACE_INSN_BYTES - n;
		s->ahead_len = (uint8_t)n;
	} else {
		uint8_t *b = stage(s, 1 + WIRE_ITRACE_ADDR_BYTES + WIRE_ITRACE_INSN_BYTES);
		unsigned n = goes_on ? read_ahead(b + 1 + WIRE_ITRACE_ADDR_BYTES, next) : 0;
		b[0] = (uint8_t)(WIRE_ITRACE_S_NEXT_JUMP + n);
		put_addr(b + 1, next);
		s->used -= WIRE_ITRACE_INSN_BYTES - n;
		s->ahead_len = (uint8_t)n;
	}
	s->cursor = next;
}

/* NEXT: after a probe's emulation or a call out, if the region goes on
 * with TF set, the instruction about to run is described first. */
static void ahead_if_live(struct thread *me, struct itrace_state *s)
{
	if (method == WIRE_ITRACE_M_NEXT &&
	    thread_slot(me, itrace_slot) == (uintptr_t)s && !s->out)
		ahead_at(s);
}

static void release(struct thread *me, struct itrace_state *s, unsigned flag)
{
	flush(s, flag);
	thread_slot_set(me, itrace_slot, 0);
	s->busy = 0;
	atomic_fetch_add(&ended, 1);
	if (flag == WIRE_ITRACE_F_LEFT)
		atomic_fetch_add(&left, 1);
	if (atomic_fetch_add(&active, (unsigned long)-1) == 1 && !start_probe)
		i386_itrace_live = false;
}

/* After a step or an emulated span: has the region ended, or left the
 * workload text? sp is the thread's ESP now; prev the instruction that ran. */
static void after(struct thread *me, struct itrace_state *s,
		  struct trapframe *tf, uint32_t sp, uint32_t prev)
{
	if (sp > s->entry_sp) {
		release(me, s, WIRE_ITRACE_F_END);
		tf->eflags &= ~EFLAGS_TF;
		return;
	}
	if (in_workload_text(tf->eip))
		return;
	const uint8_t *op = (const uint8_t *)(uintptr_t)prev;
	bool call = op[0] == 0xe8 || (op[0] == 0xff && ((op[1] >> 3) & 7) == 2);
	if (!call || sp != trapframe_sp(tf)) {
		release(me, s, WIRE_ITRACE_F_LEFT);
		tf->eflags &= ~EFLAGS_TF;
		return;
	}
	/* A call into the kernel: run it at full speed, back at the pad. */
	uint32_t *ret = (uint32_t *)(uintptr_t)sp;
	s->out_ret = *ret;
	*ret = (uint32_t)(uintptr_t)itrace_return_pad;
	s->out = true;
	tf->eflags &= ~EFLAGS_TF;
}

/* The #DB hook, after the watches' and the step baseline's. */
static int i386_itrace_trap(struct trapframe *tf)
{
	uint32_t dr6;
	__asm__ volatile("mov %%dr6, %0" : "=r"(dr6));
	if (!(dr6 & DR6_BS) || !(tf->eflags & EFLAGS_TF))
		return TRAP_DECLINED;
	__asm__ volatile("mov %0, %%dr6" :: "r"(dr6 & ~DR6_BS));
	struct itrace_cpu_stats *c = &stats[this_cpu()->id];
	struct thread *me = thread_current();
	struct itrace_state *s = (struct itrace_state *)thread_slot(me, itrace_slot);
	if (!s || s->out) {
		/* TF on a thread with no region: never expected; counted
		 * and cleared, so the thread runs on unstepped. */
		c->stray++;
		tf->eflags &= ~EFLAGS_TF;
		return TRAP_HANDLED;
	}
	c->steps++;
	uint32_t prev = s->cursor;
	if (method == WIRE_ITRACE_M_NEXT)
		step_next(s, tf->eip, trapframe_sp(tf));
	else
		step(s, tf->eip);
	after(me, s, tf, trapframe_sp(tf), prev);
	return TRAP_HANDLED;
}

/* The pad's #UD: a call out of the workload text has returned. */
static int i386_itrace_pad(struct trapframe *tf)
{
	if (tf->eip != (uint32_t)(uintptr_t)itrace_return_pad)
		return TRAP_DECLINED;
	struct thread *me = thread_current();
	struct itrace_state *s = (struct itrace_state *)thread_slot(me, itrace_slot);
	if (!s || !s->out)
		panic("itrace: thread %u at the return pad with no call out", me->id);
	stats[this_cpu()->id].pads++;
	s->out = false;
	tf->eip = s->out_ret;
	uint8_t *b = stage(s, 1 + WIRE_ITRACE_ADDR_BYTES);
	b[0] = WIRE_ITRACE_S_OUT;
	put_addr(b + 1, s->out_ret);
	s->cursor = s->out_ret;
	tf->eflags |= EFLAGS_TF;
	ahead_if_live(me, s);
	return TRAP_HANDLED;
}

static struct itrace_state *claim_state(void)
{
	for (unsigned i = 0; i < POOL; i++)
		if (!pool[i].busy && atomic_cas(&pool[i].busy, 0, 1) == 0)
			return &pool[i];
	return 0;
}

/* fire.c, after p's trap at site emulated the instruction(s) there: tf is
 * the state they left (EIP the next instruction; ESP resume_esp). */
void i386_itrace_probe(const struct probe *p, uint32_t site, struct trapframe *tf)
{
	struct thread *me = thread_current();
	struct itrace_state *s = (struct itrace_state *)thread_slot(me, itrace_slot);
	uint32_t sp = tf->resume_esp ? tf->resume_esp : trapframe_sp(tf);
	if (s && !s->out) {
		stats[this_cpu()->id].emulated++;
		if (s->cursor != site)
			panic("itrace: probe %u at 0x%x fired with the cursor at 0x%x",
			      p->id, (unsigned)site, (unsigned)s->cursor);
		uint32_t d = tf->eip - site;
		if (d >= 1 && d <= 15) {
			*stage(s, 1) = (uint8_t)(WIRE_ITRACE_S_EMUL + d);
		} else {
			uint8_t *b = stage(s, 1 + WIRE_ITRACE_ADDR_BYTES);
			b[0] = WIRE_ITRACE_S_EMUL_JUMP;
			put_addr(b + 1, tf->eip);
		}
		s->cursor = tf->eip;
		after(me, s, tf, sp, site);
		ahead_if_live(me, s);
		return;
	}
	if (s || p != start_probe)
		return;
	/* Whether this entry starts a region: skip the first skip_left,
	 * then at most regions_left (~0: every one). */
	unsigned long k = skip_left;
	while (k && k != ~0ul) {
		if (atomic_cas(&skip_left, k, k - 1) == k)
			return;
		k = skip_left;
	}
	unsigned long n = regions_left;
	for (;;) {
		if (n == 0)
			return;
		if (n == ~0ul || atomic_cas(&regions_left, n, n - 1) == n)
			break;
		n = regions_left;
	}
	s = claim_state();
	if (!s) {
		atomic_fetch_add(&no_state, 1);
		return;
	}
	atomic_fetch_add(&started, 1);
	atomic_fetch_add(&active, 1);
	s->probe = p;
	s->cursor = s->rec_cursor = site;
	s->entry_sp = trapframe_sp(tf);
	s->seq = 0;
	s->used = 0;
	s->out = false;
	s->ahead_len = 0;
	s->flags = WIRE_ITRACE_F_START;
	thread_slot_set(me, itrace_slot, (uintptr_t)s);
	stats[this_cpu()->id].emulated++;
	*stage(s, 1) = (uint8_t)(WIRE_ITRACE_S_EMUL + (tf->eip - site));
	s->cursor = tf->eip;
	tf->eflags |= EFLAGS_TF;
	ahead_if_live(me, s);
}

int tarch_itrace_arm(const struct probe *p, unsigned how, unsigned long skip,
		     unsigned long regions, const char **why)
{
	if (how != WIRE_ITRACE_M_ADDRESS && how != WIRE_ITRACE_M_PREVIOUS &&
	    how != WIRE_ITRACE_M_NEXT) {
		*why = "method: address (3), previous (4) or next (5)";
		return -1;
	}
	if (p->mechanism != MECHANISM_INT3 && p->mechanism != MECHANISM_UD) {
		*why = "a region starts at an int3 or ud probe (their traps emulate)";
		return -1;
	}
	if (p->kind != WIRE_EVENT_ENTRY) {
		*why = "a region starts at an entry probe";
		return -1;
	}
	if (p->site.insn.kind == I386_OOL) {
		*why = "the function's first instruction runs out of line (ool.c); "
		       "a region starts where the trap emulates";
		return -1;
	}
	if (!in_workload_text((uint32_t)p->addr)) {
		*why = "the function is not in the workload text";
		return -1;
	}
	if (active) {
		*why = "regions of the last `itrace on` still run";
		return -1;
	}
	method = how;
	skip_left = skip;
	regions_left = regions ? regions : ~0ul;
	started = ended = left = no_state = 0;
	memset(stats, 0, sizeof stats);
	start_probe = p;
	i386_itrace_live = true;
	return 0;
}

void tarch_itrace_disarm(void)
{
	start_probe = 0;
	if (!active)
		i386_itrace_live = false;
}

size_t tarch_itrace_stats(char *buf, size_t size)
{
	struct itrace_cpu_stats t = { 0 };
	for (unsigned i = 0; i < cpu_count(); i++) {
		const struct itrace_cpu_stats *c = &stats[i];
		kprintf("itrace cpu%u db_steps=%lu probe_traps=%lu pad_traps=%lu "
			"stray_db=%lu records=%lu bytes=%lu\n", i, c->steps,
			c->emulated, c->pads, c->stray, c->records, c->bytes);
		t.steps += c->steps; t.emulated += c->emulated; t.pads += c->pads;
		t.stray += c->stray; t.records += c->records; t.bytes += c->bytes;
	}
	return ksnprintf(buf, size, "regions=%lu ended=%lu left=%lu active=%lu "
			 "no_state=%lu db_steps=%lu probe_traps=%lu pad_traps=%lu "
			 "stray_db=%lu records=%lu bytes=%lu method=%u",
			 started, ended, left, active, no_state, t.steps,
			 t.emulated, t.pads, t.stray, t.records, t.bytes, method);
}

void i386_itrace_init(void)
{
	itrace_slot = thread_slot_claim();
	trap_hook_add(VEC_DB, i386_itrace_trap);
	trap_hook_add(VEC_UD, i386_itrace_pad);
}
