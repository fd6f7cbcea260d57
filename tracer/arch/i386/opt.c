/*
 * opt.c — jump-optimized probes on i386 (`probe mechanism opt`), after
 * Linux's optprobes: the site becomes `jmp detour` and no trap is taken.
 *
 * Which sites. An entry site whose first bytes are whole instructions
 * that run the same at any address (push/pop of a register, mov, add,
 * sub, xor, and, or, cmp and test with a register and a register or
 * memory operand, an ALU immediate to either, mov $imm32 to a register,
 * nop: IA-32 has no EIP-relative operand, so only branches, calls and
 * what reads EIP are left out), taken until at least five
 * bytes (a jmp rel32) are covered: `push %ebp; mov %esp,%ebp; sub $N,%esp`
 * and the like. Anything else is refused with the byte offset and the
 * opcode, as is a displaced tail holding another probe's site. A jump
 * from elsewhere in the function into bytes 1..len-1 would land inside
 * the jmp; the guest has no symbol table and cannot see every jump of a
 * function, so the host refuses those sites before it sends them, reading
 * the whole function in the ELF (bench/trace/sites.py, as optprobes
 * decodes the whole function); the guest refuses what it can see. Return
 * sites (pop %ebp, leave, ret: nothing of five bytes follows a ret) are
 * never jump-optimized: under opt they take the int3, as a kprobe that
 * optprobes cannot optimize stays an int3 kprobe; the run's mechanism is
 * one, so entry and return probes can run together.
 *
 * The detour (opt_detour.S) builds a struct trapframe of a trap at the
 * site, records with interrupts masked through the fire path's own
 * record_fire (fbt.c), restores every register and EFLAGS, runs the copy
 * of the displaced instructions and jumps back to site + len.
 *
 * Installation never lets a CPU decode half of the change, and every
 * execution of the site meanwhile is traced. It goes in stages, each
 * made for every probe of a batch at once (a whole `probe enable all`),
 * so a batch costs three rounds of IPIs however many probes it holds:
 *   1. probe_set (tarch_arm): int3 over byte 0. Then the settle's first
 *      sync (tracer_settle): from now on a CPU reaching the site traps,
 *      records, and resumes in the detour's copy (or, before the detour
 *      is written, has the instruction emulated as under int3) — nobody
 *      enters bytes 1..len-1 any more;
 *   2. opt_stage (tarch_stage, from the settle): every other CPU is parked
 *      (smp_stop_others) and every thread's stack is read once from its
 *      saved (or parked) stack pointer up, every nested trap frame
 *      included. No displaced instruction calls, so the only way a thread
 *      can be between them is a trap frame (saved EIP, the kernel's CS,
 *      EFLAGS with its always-one bit 1, side by side): a site whose tail
 *      some frame's EIP lies in is held, the others get their detour (if
 *      not yet written for them, and no frame's EIP is in it) and bytes
 *      1..4 (the rel32) while every CPU is parked; the release syncs them;
 *   3. byte 0 of every site not held becomes the jmp (E9), and the
 *      settle's last sync follows. Held sites are tried again alone
 *      (release, yield, park again; OPT_TRIES times); one that never
 *      clears stays at its int3 stage (lossless, a trap per firing) and
 *      the console says which thread and EIP held it.
 * Removal runs the same stages backwards (int3 over the E9, sync, the
 * original bytes 1..4 with every CPU parked, the original byte 0). The
 * scan matches frames by their three words anywhere from the stack
 * pointer up, so a stale frame left in a gap of a live frame only delays
 * the change: the test errs on the side of waiting. The caller's own
 * stack is not read: it is in the command path, not interrupted inside
 * a site.
 *
 * A slot keeps its detour after the probe is disarmed (an int3 left in a
 * CPU's pipeline, or a thread preempted in the copy, still finds it); it
 * is rewritten only when its probe id is reused for another site, and
 * then only once the same scan shows no thread inside the slot.
 *
 * Check mode picks the detour when the slot is written: with `probe check
 * on`, a slot gets check mode's variant (opt_detour.S: a second call after
 * the copies, opt_check.c), and a slot written in the other mode is
 * rewritten at its next arming from the site's own bytes, through the same
 * stages and scan as a slot given to another probe (a re-arm that finds
 * the jmp or its rel32 still there keeps the detour it has). With check
 * mode off the detour and the site's cost are those of a build without
 * check mode.
 */
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "opt.h"
#include "stamp.h"
#include "thread.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

#define OPT_TRIES 200

_Static_assert(offsetof(struct probe, id) == OPT_PROBE_ID &&
	       offsetof(struct probe, action) == OPT_PROBE_ACTION &&
	       offsetof(struct probe, gated) == OPT_PROBE_GATED &&
	       sizeof ((struct probe *)0)->id == 4 &&
	       TRACER_ACTION_NULL == OPT_ACTION_NULL &&
	       sizeof tracer_hits[0] == OPT_HITS_ROW &&
	       sizeof tracer_hits[0][0] == 4 &&
	       sizeof(struct tracer_fired) == 1u << OPT_FIRED_SHIFT &&
	       offsetof(struct cpu, self) == 0 &&
	       offsetof(struct cpu, id) == OPT_CPU_ID,
	       "opt.h: the counting path's offsets are the C structures'");

extern char opt_detours[], opt_detours_end[], opt_common[];
extern char opt_common_checked[], opt_common_after[];
extern const char boot_stack[], boot_stack_top[];

_Static_assert(OPT_COPY_OFFSET_CHECKED + OPT_MAX_COPY + OPT_AFTER_BYTES + 5 <= OPT_DETOUR_BYTES,
	       "opt.h: check mode's detour (head, copy, second call, jmp) fits a slot");
_Static_assert(OPT_COPY_OFFSET + OPT_MAX_COPY + 5 <= OPT_SLOW_OFFSET &&
	       OPT_SLOW_OFFSET + 23 <= OPT_DETOUR_BYTES,
	       "opt.h: a plain detour (counting path, copy, jmp, way into C) fits a slot");

/* Where a slot's site is in its change (opt_arm, opt_disarm, opt_stage). */
enum opt_stage {
	OPT_ORIG,       /* the site holds its own bytes */
	OPT_INT3,       /* int3 over byte 0, its own tail: arming */
	OPT_INT3_REL,   /* int3 over byte 0, the jmp's rel32 in the tail: disarming */
	OPT_JMP,        /* jmp detour */
};

struct opt_slot {
	uintptr_t site;            /* the site the detour was written for, 0: none */
	const struct probe *probe; /* ... and the probe it pushes (or will) */
	uint8_t   len;             /* bytes displaced */
	uint8_t   bytes[OPT_MAX_COPY];
	uint8_t   stage;           /* enum opt_stage */
	bool      want;            /* armed: the jmp is wanted, else the original */
	bool      checked;         /* written as check mode's detour */
	bool      todo, held;      /* in this stage's scan: to change, and held */
	unsigned  held_tid;        /* held: by which thread, which word, why */
	uint32_t  held_word;
	const char *held_what;
};

static struct opt_slot slots[OPT_SLOTS];
unsigned long opt_tries;        /* stopped-world scans made (read it with gdb) */
unsigned long opt_stages;       /* opt_stage calls that changed a site (gdb) */
static uint16_t slot_of[TRACER_MAX_PROBES];     /* probe id -> slot + 1 */
static bool pending;            /* a slot waits at its int3 stage */

static struct opt_slot *slot(const struct probe *p)
{
	return &slots[slot_of[p->id] - 1];
}

static char *slot_code_at(unsigned i)
{
	return opt_detours + i * OPT_DETOUR_BYTES;
}

static char *slot_code(const struct probe *p)
{
	return slot_code_at(slot_of[p->id] - 1u);
}

/* The slot's detour is written for its probe at its probe's site. */
static bool written(const struct opt_slot *s)
{
	return s->probe && s->site == s->probe->addr;
}

/* ... and in the variant check mode asks for now: else an arming
 * rewrites it. */
static bool current(const struct opt_slot *s)
{
	return written(s) && s->checked == tracer_check_mode;
}

bool opt_checked(const struct probe *p)
{
	return slot_of[p->id] && slot(p)->probe == p && slot(p)->checked;
}

/* A slot for p: its own; one written for p at this site; one never
 * written; one whose probe is not enabled (rewritten once no thread is
 * inside it, opt_stage). -1 if all hold enabled probes' detours. A slot
 * whose site is not back to its own bytes is never taken. */
static int slot_for(const struct probe *p)
{
	if (slot_of[p->id]) {
		const struct opt_slot *own = &slots[slot_of[p->id] - 1];
		if (own->stage == OPT_ORIG || own->probe == p)
			return slot_of[p->id] - 1;
	}
	int spare = -1;
	for (int i = 0; i < OPT_SLOTS; i++) {
		const struct opt_slot *s = &slots[i];
		if (s->stage != OPT_ORIG)
			continue;
		if (s->probe == p && s->site == p->addr)
			return i;
		if (!s->probe)
			return i;
		if (spare < 0 && s->probe->state != PROBE_ENABLED)
			spare = i;
	}
	return spare;
}

/* Length of one relocatable instruction at c, or 0 with *why. */
static unsigned insn_len(const uint8_t *c, size_t avail, const char **why)
{
	uint8_t op = c[0];
	if ((op >= 0x50 && op <= 0x5f) || op == 0x90)
		return 1;                                /* push/pop reg, nop */
	if (op >= 0xb8 && op <= 0xbf)
		return avail >= 5 ? 5 : 0;               /* mov $imm32, reg */
	bool modrm = op == 0x89 || op == 0x8b || op == 0x01 || op == 0x03 ||
		     op == 0x29 || op == 0x2b || op == 0x31 || op == 0x33 ||
		     op == 0x09 || op == 0x0b || op == 0x21 || op == 0x23 ||
		     op == 0x39 || op == 0x3b || op == 0x85 || op == 0x83 ||
		     op == 0x81;
	if (!modrm) {
		*why = "not on opt's list of relocatable instructions";
		return 0;
	}
	if (avail < 2)
		return 0;
	/* ModRM, SIB, displacement: every 32-bit form is a register plus a
	 * constant, or a constant (no EIP-relative form), so it runs the
	 * same from the copy. */
	unsigned mod = c[1] >> 6, rm = c[1] & 7, n = 2;
	if (mod != 3 && rm == 4) {
		if (avail < 3)
			return 0;
		n++;
		if (mod == 0 && (c[2] & 7) == 5)
			n += 4;
	}
	if (mod == 0 && rm == 5)
		n += 4;
	else if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	n += op == 0x83 ? 1 : op == 0x81 ? 4 : 0;
	return avail >= n ? n : 0;
}

static char why_buf[WIRE_MAX_REASON];

bool opt_can_arm(const struct probe *p, const char **why)
{
	int i = slot_for(p);
	if (i < 0) {
		ksnprintf(why_buf, sizeof why_buf, "all %u detour slots hold enabled "
			  "opt probes", OPT_SLOTS);
		*why = why_buf;
		return false;
	}
	struct opt_slot *s = &slots[i];
	const uint8_t *c = (const uint8_t *)p->addr;
	size_t avail = (uintptr_t)__text_end - p->addr;
	unsigned len = 0;
	bool known = s->probe == p && s->site == p->addr;
	if (known)                      /* decoded before; the site may hold its int3 */
		len = s->len;
	while (len < 5) {
		const char *reason = "the function's text ends";
		unsigned n = len < avail ? insn_len(c + len, avail - len, &reason) : 0;
		if (!n || len + n > OPT_MAX_COPY) {
			ksnprintf(why_buf, sizeof why_buf, "byte +%u (opcode 0x%02x): %s; "
				  "the jmp needs 5 bytes of whole relocatable "
				  "instructions", len, len < avail ? c[len] : 0, reason);
			*why = why_buf;
			return false;
		}
		len += n;
	}
	for (unsigned k = 1; k < len; k++) {
		const struct probe *q = tracer_lookup(p->addr + k);
		if (q) {
			ksnprintf(why_buf, sizeof why_buf, "probe %u's site is byte +%u, "
				  "inside the %u bytes the jmp displaces", q->id, k, len);
			*why = why_buf;
			return false;
		}
	}
	if (tracer_check_mode && !opt_checkable(c, len, why))
		return false;           /* what the record cannot hold (opt_check.c) */
	if (!known) {                   /* the slot is (re)written by opt_stage */
		if (s->probe && s->probe != p &&        /* its old probe falls back */
		    slot_of[s->probe->id] == (uint16_t)(i + 1))     /* to int3 */
			slot_of[s->probe->id] = 0;
		s->site = 0;
		s->len = (uint8_t)len;
		memcpy(s->bytes, c, len);
	}
	slot_of[p->id] = (uint16_t)(i + 1);
	return true;
}

const struct probe *opt_covering(uintptr_t addr)
{
	for (unsigned i = 0; i < OPT_SLOTS; i++) {
		const struct opt_slot *s = &slots[i];
		if (s->stage != OPT_ORIG && s->probe &&
		    addr > s->probe->addr && addr < s->probe->addr + s->len)
			return s->probe;
	}
	return 0;
}

uint32_t opt_resume(const struct probe *p)
{
	if (!slot_of[p->id] || slot(p)->probe != p || !written(slot(p)))
		return 0;
	return (uint32_t)(uintptr_t)slot_code(p) +
	       (slot(p)->checked ? OPT_COPY_OFFSET_CHECKED : OPT_COPY_OFFSET);
}

/* ---- writing code ---- */

static void store(uintptr_t addr, uint8_t b)
{
	*(volatile uint8_t *)tracer_text_alias(addr) = b;
}

static void store32(uintptr_t addr, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		store(addr + i, (uint8_t)(v >> (8 * i)));
}

/* Bytes at d, in order; the number written. */
static unsigned put(uintptr_t d, const uint8_t *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		store(d + i, b[i]);
	return n;
}

/* opcode [modrm] disp32 [imm8]: an instruction with an absolute or
 * base-plus-disp32 operand; the number of bytes written. */
static unsigned put_disp(uintptr_t d, const uint8_t *op, unsigned n, uint32_t disp,
			 int imm8)
{
	unsigned k = put(d, op, n);
	store32(d + k, disp);
	k += 4;
	if (imm8 >= 0)
		store(d + k++, (uint8_t)imm8);
	return k;
}

/* The plain detour (opt_detour.S): the counting path, the copy, the jmp
 * back, and the way into C. */
static void write_plain(uintptr_t d, const struct opt_slot *s, const struct probe *p)
{
	static const uint8_t cmpb[] = { 0x80, 0x3d }, cmpl[] = { 0x83, 0x3d };
	static const uint8_t cpu_id[] = { 0x64, 0xa1, OPT_CPU_ID, 0, 0, 0 };  /* movl %fs:id,%eax */
	static const uint8_t imul[] = { 0x69, 0xc0 }, incl[] = { 0xff, 0x80 };
	static const uint8_t shl[] = { 0xc1, 0xe0, OPT_FIRED_SHIFT };
	static const uint8_t add[] = { 0x83, 0x80 }, adc[] = { 0x83, 0x90 };
	uintptr_t c = d, probe = (uintptr_t)p;
	uintptr_t hits = (uintptr_t)&tracer_hits[0][p->id];
	uintptr_t fired = (uintptr_t)&tracer_fired[0].n;

	c += put(c, (const uint8_t[]){ 0x9c, 0xfa }, 2);              /* pushfl; cli */
	c += put_disp(c, cmpb, 2, probe + OPT_PROBE_GATED, 0);          /* cmpb $0,gated */
	c += put(c, (const uint8_t[]){ 0x75, (uint8_t)(d + OPT_SLOW_OFFSET - (c + 2)) }, 2);
	c += put_disp(c, cmpb, 2, probe + OPT_PROBE_ACTION, OPT_ACTION_NULL);
	c += put(c, (const uint8_t[]){ 0x75, (uint8_t)(d + OPT_SLOW_OFFSET - (c + 2)) }, 2);
	c += put_disp(c, cmpl, 2, (uint32_t)(uintptr_t)&tracer_stamp_cpu, 0);
	c += put(c, (const uint8_t[]){ 0x75, (uint8_t)(d + OPT_SLOW_OFFSET - (c + 2)) }, 2);
	c += put(c, (const uint8_t[]){ 0x50 }, 1);                   /* pushl %eax */
	c += put(c, cpu_id, sizeof cpu_id);
	c += put_disp(c, imul, 2, OPT_HITS_ROW, -1);                  /* imull $row,%eax,%eax */
	c += put_disp(c, incl, 2, (uint32_t)hits, -1);                /* incl hits(%eax) */
	c += put(c, cpu_id, sizeof cpu_id);
	c += put(c, shl, sizeof shl);                                 /* shll $6,%eax */
	c += put_disp(c, add, 2, (uint32_t)fired, 1);                 /* addl $1,fired(%eax) */
	c += put_disp(c, adc, 2, (uint32_t)fired + 4, 0);             /* adcl $0,fired+4(%eax) */
	c += put(c, (const uint8_t[]){ 0x58, 0x9d }, 2);              /* popl %eax; popfl */
	if (c != d + OPT_COPY_OFFSET)
		panic("opt: the counting path is %u bytes, opt.h says %u",
		      (unsigned)(c - d), OPT_COPY_OFFSET);
	c += put(c, s->bytes, s->len);                                /* the copy */
	store(c, 0xe9);                                               /* jmp site + len */
	store32(c + 1, (uint32_t)(p->addr + s->len - (c + 5)));

	c = d + OPT_SLOW_OFFSET;
	store(c, 0x0e);                                               /* pushl %cs */
	store(c + 1, 0x68);                                           /* pushl $site */
	store32(c + 2, (uint32_t)p->addr);
	store(c + 6, 0x68);                                           /* pushl $probe */
	store32(c + 7, (uint32_t)probe);
	store(c + 11, 0xe8);                                          /* call opt_common */
	store32(c + 12, (uint32_t)((uintptr_t)opt_common - (c + 16)));
	c += 16;
	c += put(c, (const uint8_t[]){ 0x8d, 0x64, 0x24, 0x0c, 0x9d }, 5);  /* leal 12(%esp),%esp; popfl */
	store(c, 0xeb);                                               /* jmp copy */
	store(c + 1, (uint8_t)(d + OPT_COPY_OFFSET - (c + 2)));
}

/* Check mode's detour (opt_detour.S): no counting path; a second call
 * after the copy. */
static void write_checked(uintptr_t d, const struct opt_slot *s, const struct probe *p)
{
	static const uint8_t head[] = { 0x9c, 0xfa, 0x0e };    /* pushfl; cli; push %cs */
	static const uint8_t tail[] = { 0x8d, 0x64, 0x24, 0x0c, 0x9d };  /* leal 12(%esp),%esp; popfl */
	put(d, head, sizeof head);
	store(d + 3, 0x68);                                    /* push $site */
	store32(d + 4, (uint32_t)p->addr);
	store(d + 8, 0x68);                                    /* push $probe */
	store32(d + 9, (uint32_t)(uintptr_t)p);
	store(d + 13, 0xe8);                                   /* call opt_common_checked */
	store32(d + 14, (uint32_t)((uintptr_t)opt_common_checked - (d + 18)));
	put(d + 18, tail, sizeof tail);
	uintptr_t c = d + OPT_COPY_OFFSET_CHECKED;
	c += put(c, s->bytes, s->len);
	store(c, 0x9c);                                        /* pushfl */
	store(c + 1, 0x0e);                                    /* push %cs */
	store(c + 2, 0x68);                                    /* push $site + len */
	store32(c + 3, (uint32_t)(p->addr + s->len));
	store(c + 7, 0x68);                                    /* push $probe */
	store32(c + 8, (uint32_t)(uintptr_t)p);
	store(c + 12, 0xe8);                                   /* call opt_common_after */
	store32(c + 13, (uint32_t)((uintptr_t)opt_common_after - (c + 17)));
	put(c + 17, tail, sizeof tail);                        /* leal; popfl */
	c += OPT_AFTER_BYTES;
	store(c, 0xe9);                                        /* jmp site + len */
	store32(c + 1, (uint32_t)(p->addr + s->len - (c + 5)));
}

static void write_slot(unsigned i, const struct probe *p)
{
	struct opt_slot *s = &slots[i];
	bool checked = tracer_check_mode;
	uintptr_t d = (uintptr_t)slot_code_at(i);
	if (checked)
		write_checked(d, s, p);
	else
		write_plain(d, s, p);
	s->checked = checked;
}

/* ---- proving no thread is inside a range ---- */

struct scan {
	uint32_t cs;                  /* the kernel's code selector */
	const struct thread *me;
	uintptr_t lo, hi;             /* every todo slot's ranges lie inside */
};

static bool within(uintptr_t x, uintptr_t lo, uintptr_t hi)
{
	return x >= lo && x < hi;
}

/* The top of the stack holding sp, 0 if none we know. */
static uintptr_t stack_top(const struct thread *t, uintptr_t sp)
{
	if (t->stack && within(sp, (uintptr_t)t->stack,
			       (uintptr_t)t->stack + t->stack_size))
		return (uintptr_t)t->stack + t->stack_size;
	if (within(sp, (uintptr_t)boot_stack, (uintptr_t)boot_stack_top + 1))
		return (uintptr_t)boot_stack_top;
	for (unsigned i = 0; i < cpu_count(); i++)
		if (within(sp, cpus[i].boot_stack_lo, cpus[i].boot_stack_hi + 1))
			return cpus[i].boot_stack_hi;
	return 0;
}

static void hold(struct opt_slot *s, unsigned tid, uint32_t word, const char *what)
{
	if (s->held)
		return;
	s->held = true;
	s->held_tid = tid;
	s->held_word = word;
	s->held_what = what;
}

/* Which todo slots a saved EIP w holds: inside a tail, or inside a
 * detour that is to be (re)written. */
static void hold_at(unsigned tid, uint32_t w)
{
	for (unsigned i = 0; i < OPT_SLOTS; i++) {
		struct opt_slot *s = &slots[i];
		if (!s->todo)
			continue;
		uintptr_t a = s->probe->addr, d = (uintptr_t)slot_code_at(i);
		if (within(w, a + 1, a + s->len))
			hold(s, tid, w, "saved EIP");
		else if (s->want && !current(s) && within(w, d, d + OPT_DETOUR_BYTES))
			hold(s, tid, w, "saved EIP inside the detour slot");
	}
}

static void scan_thread(struct thread *t, void *arg)
{
	const struct scan *j = arg;
	if (t == j->me)
		return;
	uintptr_t sp = 0;
	unsigned self = this_cpu()->id;
	for (unsigned i = 0; i < cpu_count(); i++)
		if (i != self && cpus[i].current == t)
			sp = cpus[i].stopped_sp;
	if (!sp)
		sp = t->ctx.esp;
	uintptr_t top = stack_top(t, sp);
	if (!top) {
		for (unsigned i = 0; i < OPT_SLOTS; i++)
			if (slots[i].todo)
				hold(&slots[i], t->id, (uint32_t)sp,
				     "stack pointer on no stack the tracer knows");
		return;
	}
	for (uintptr_t a = sp & ~(uintptr_t)3; a + 12 <= top; a += 4) {
		const volatile uint32_t *w3 = (const volatile uint32_t *)a;
		uint32_t w = w3[0];
		if (within(w, j->lo, j->hi) && w3[1] == j->cs && (w3[2] & 2))
			hold_at(t->id, w);
	}
}

static uint32_t kernel_cs(void)
{
	uint32_t cs;
	__asm__ volatile("movl %%cs, %0" : "=r"(cs));
	return cs;
}

static void store_tail(uintptr_t site, const uint8_t *b)
{
	for (unsigned i = 0; i < 4; i++)
		store(site + 1 + i, b[i]);
}

static void rel_bytes(unsigned i, const struct probe *p, uint8_t *b)
{
	uint32_t rel = (uint32_t)((uintptr_t)slot_code_at(i) - (p->addr + 5));
	for (unsigned k = 0; k < 4; k++)
		b[k] = (uint8_t)(rel >> (8 * k));
}

/* On the CPU that stopped the others, while they are parked: every
 * thread's stack is scanned once for every todo slot, and each slot no
 * thread holds gets its tail (and, arming, its detour first). */
static void parked(void *arg)
{
	sched_for_each_thread(scan_thread, arg);
	for (unsigned i = 0; i < OPT_SLOTS; i++) {
		struct opt_slot *s = &slots[i];
		if (!s->todo || s->held)
			continue;
		const struct probe *p = s->probe;
		uint8_t b[4];
		if (s->want) {
			if (!current(s)) {
				write_slot(i, p);
				s->site = p->addr;
			}
			rel_bytes(i, p, b);
		} else {
			memcpy(b, s->bytes + 1, 4);
		}
		store_tail(p->addr, b);
	}
}

/* Stage 1 (probe_set, through tarch_arm): the int3 over byte 0; the
 * tail and the jmp wait for opt_stage, at the settle after the sync. A
 * site at its jmp only has the same bytes stored again (settle's
 * re-store); one whose tail still holds the rel32 (a disarm not yet
 * staged, or held) gets its jmp back at once. */
void opt_arm(struct probe *p)
{
	struct opt_slot *s = slot(p);
	uintptr_t a = p->addr;
	s->want = true;
	if (s->probe != p) {            /* the detour is written at the stage */
		s->probe = p;
		s->site = 0;
	}
	switch (s->stage) {
	case OPT_JMP: {
		uint8_t b[4];
		rel_bytes((unsigned)(s - slots), p, b);
		store(a, 0xe9);
		store_tail(a, b);
		break;
	}
	case OPT_INT3_REL:
		store(a, 0xe9);
		s->stage = OPT_JMP;
		break;
	default:
		store(a, 0xcc);
		s->stage = OPT_INT3;
		pending = true;
	}
}

/* Stage 1 of removal: int3 over the jmp's E9; a site that never got past
 * its int3 (or is settling) gets its own byte 0 back at once. */
void opt_disarm(struct probe *p)
{
	uintptr_t a = p->addr;
	if (!slot_of[p->id]) {          /* never armed here: its own byte */
		store(a, p->site.insn.orig[0]);
		return;
	}
	struct opt_slot *s = slot(p);
	s->want = false;
	switch (s->stage) {
	case OPT_JMP:
	case OPT_INT3_REL:
		store(a, 0xcc);
		s->stage = OPT_INT3_REL;
		pending = true;
		break;
	default:
		store(a, s->bytes[0]);
		s->stage = OPT_ORIG;
	}
}

static void held(const struct opt_slot *s)
{
	kprintf("opt: probe %u at 0x%lx stays at its int3 stage (%s): thread %u's "
		"%s 0x%x after %u tries\n", s->probe->id, (unsigned long)s->probe->addr,
		s->want ? "arming" : "disarming", s->held_tid, s->held_what,
		(unsigned)s->held_word, OPT_TRIES);
}

/* Stages 2 and 3 for every slot waiting at its int3, all at once, after
 * the settle's first sync (tarch_stage): one stopped world writes every
 * tail no thread holds (the release is the sync), then every such site's
 * byte 0 becomes the jmp or its own byte again; the settle's last sync
 * follows. Slots a thread holds are tried again, alone, OPT_TRIES times. */
void opt_stage(void)
{
	if (!pending)
		return;
	pending = false;
	opt_stages++;
	for (unsigned try = 0; try < OPT_TRIES; try++) {
		struct scan j = { .cs = kernel_cs(), .me = thread_current(),
				  .lo = ~(uintptr_t)0, .hi = 0 };
		unsigned todo = 0;
		for (unsigned i = 0; i < OPT_SLOTS; i++) {
			struct opt_slot *s = &slots[i];
			s->held = false;
			s->todo = s->probe && (s->want ? s->stage == OPT_INT3 :
					       s->stage == OPT_INT3_REL);
			if (!s->todo)
				continue;
			todo++;
			uintptr_t a = s->probe->addr, d = (uintptr_t)slot_code_at(i);
			j.lo = a + 1 < j.lo ? a + 1 : j.lo;
			j.hi = a + s->len > j.hi ? a + s->len : j.hi;
			if (s->want && !current(s)) {
				j.lo = d < j.lo ? d : j.lo;
				j.hi = d + OPT_DETOUR_BYTES > j.hi ? d + OPT_DETOUR_BYTES : j.hi;
			}
		}
		if (!todo)
			return;
		opt_tries++;
		smp_stop_others(parked, &j);
		unsigned left = 0;
		for (unsigned i = 0; i < OPT_SLOTS; i++) {
			struct opt_slot *s = &slots[i];
			if (!s->todo)
				continue;
			if (s->held) {
				left++;
				continue;
			}
			s->todo = false;
			if (s->want) {
				store(s->probe->addr, 0xe9);
				s->stage = OPT_JMP;
			} else {
				store(s->probe->addr, s->bytes[0]);
				s->stage = OPT_ORIG;
			}
		}
		if (!left)
			return;
		thread_yield();
	}
	for (unsigned i = 0; i < OPT_SLOTS; i++)
		if (slots[i].todo && slots[i].held)
			held(&slots[i]);
}
