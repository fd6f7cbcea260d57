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
 * execution of the site meanwhile is traced:
 *   1. the detour slot is written (while no CPU is inside it, below);
 *   2. int3 over byte 0, sync every CPU: from now on a CPU reaching the
 *      site traps, records, and resumes in the detour's copy — nobody
 *      enters bytes 1..len-1 any more;
 *   3. every other CPU is parked (smp_stop_others) and every thread's
 *      stack is read from its saved (or parked) stack pointer up, every
 *      nested trap frame included. No displaced instruction calls, so the
 *      only way a thread can be between them is a trap frame (saved EIP,
 *      the kernel's CS, EFLAGS with its always-one bit 1, side by side):
 *      if one holds an EIP inside bytes 1..len-1, that thread was
 *      interrupted between the displaced instructions and will resume
 *      there, so the bytes cannot change yet — release, yield,
 *      try again (OPT_TRIES times); if it never clears, the probe stays at
 *      its int3 stage (lossless, a trap per firing) and the console says
 *      which thread and EIP held it. Otherwise bytes 1..4 (the rel32) are
 *      written while every CPU is parked, and the release syncs them;
 *   4. byte 0 becomes the jmp (E9).
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
 */
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "opt.h"
#include "thread.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

#define OPT_TRIES 200

extern char opt_detours[], opt_detours_end[], opt_common[];
extern const char boot_stack[], boot_stack_top[];

struct opt_slot {
	uintptr_t site;            /* the site the detour was written for, 0: none */
	const struct probe *probe; /* ... and the probe it pushes */
	uint8_t   len;             /* bytes displaced */
	uint8_t   bytes[OPT_MAX_COPY];
	bool      jumped;          /* the site holds the jmp */
};

static struct opt_slot slots[OPT_SLOTS];
unsigned long opt_tries;        /* stopped-world scans made (read it with gdb) */
static uint16_t slot_of[TRACER_MAX_PROBES];     /* probe id -> slot + 1 */

static struct opt_slot *slot(const struct probe *p)
{
	return &slots[slot_of[p->id] - 1];
}

static char *slot_code(const struct probe *p)
{
	return opt_detours + (slot_of[p->id] - 1) * OPT_DETOUR_BYTES;
}

/* A slot for p: its own; one written for p at this site; one never
 * written; one whose probe is not enabled (rewritten once no thread is
 * inside it, opt_arm). -1 if all hold enabled probes' detours. */
static int slot_for(const struct probe *p)
{
	if (slot_of[p->id] && !slots[slot_of[p->id] - 1].jumped)
		return slot_of[p->id] - 1;
	int spare = -1;
	for (int i = 0; i < OPT_SLOTS; i++) {
		const struct opt_slot *s = &slots[i];
		if (s->jumped)
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

static char why_buf[128];

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
	if (!known) {                   /* the slot is (re)written by opt_arm */
		if (s->probe && s->probe != p)  /* its old probe falls back to int3 */
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
		if (s->jumped && addr > s->site && addr < s->site + s->len)
			return s->probe;
	}
	return 0;
}

uint32_t opt_resume(const struct probe *p)
{
	if (!slot_of[p->id] || slot(p)->probe != p)
		return 0;
	return (uint32_t)(uintptr_t)slot_code(p) + OPT_COPY_OFFSET;
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

static void write_slot(const struct probe *p)
{
	const struct opt_slot *s = slot(p);
	uintptr_t d = (uintptr_t)slot_code(p);
	static const uint8_t head[] = { 0x9c, 0xfa, 0x0e };    /* pushfl; cli; push %cs */
	for (unsigned i = 0; i < sizeof head; i++)
		store(d + i, head[i]);
	store(d + 3, 0x68);                                    /* push $site */
	store32(d + 4, (uint32_t)p->addr);
	store(d + 8, 0x68);                                    /* push $probe */
	store32(d + 9, (uint32_t)(uintptr_t)p);
	store(d + 13, 0xe8);                                   /* call opt_common */
	store32(d + 14, (uint32_t)((uintptr_t)opt_common - (d + 18)));
	static const uint8_t tail[] = { 0x8d, 0x64, 0x24, 0x0c, 0x9d };  /* leal 12(%esp),%esp; popfl */
	for (unsigned i = 0; i < sizeof tail; i++)
		store(d + 18 + i, tail[i]);
	uintptr_t c = d + OPT_COPY_OFFSET;
	for (unsigned i = 0; i < s->len; i++)
		store(c + i, s->bytes[i]);
	store(c + s->len, 0xe9);                               /* jmp site + len */
	store32(c + s->len + 1, (uint32_t)(p->addr + s->len - (c + s->len + 5)));
}

/* ---- proving no thread is inside a range ---- */

struct scan {
	uintptr_t lo, hi;             /* the range no saved EIP may lie in */
	uint32_t cs;                  /* the kernel's code selector */
	const struct thread *me;
	bool found;
	unsigned tid;
	uint32_t word;
	const char *what;             /* "saved EIP" or "stack pointer on no known stack" */
	void (*write)(void *);        /* made while parked, if nothing is found */
	void *write_arg;
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

static void scan_thread(struct thread *t, void *arg)
{
	struct scan *j = arg;
	if (j->found || t == j->me)
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
		*j = (struct scan){ .found = true, .tid = t->id, .word = (uint32_t)sp,
				    .what = "stack pointer on no stack the tracer knows" };
		return;
	}
	for (uintptr_t a = sp & ~(uintptr_t)3; a + 12 <= top; a += 4) {
		const volatile uint32_t *w3 = (const volatile uint32_t *)a;
		uint32_t w = w3[0];
		if (within(w, j->lo, j->hi) && w3[1] == j->cs && (w3[2] & 2)) {
			j->found = true;
			j->tid = t->id;
			j->word = w;
			j->what = "saved EIP";
			return;
		}
	}
}

static void parked(void *arg)
{
	struct scan *j = arg;
	sched_for_each_thread(scan_thread, j);
	if (!j->found && j->write)
		j->write(j->write_arg);
}

static uint32_t kernel_cs(void)
{
	uint32_t cs;
	__asm__ volatile("movl %%cs, %0" : "=r"(cs));
	return cs;
}

/* Park the other CPUs, prove no thread is in [lo, hi), and make write's
 * stores meanwhile; try OPT_TRIES times. true once written. */
static bool quiet_write(uintptr_t lo, uintptr_t hi, void (*write)(void *),
			void *arg, struct scan *last)
{
	for (unsigned try = 0; try < OPT_TRIES; try++) {
		*last = (struct scan){ .lo = lo, .hi = hi, .cs = kernel_cs(),
				       .me = thread_current(),
				       .write = write, .write_arg = arg };
		opt_tries++;
		smp_stop_others(parked, last);
		if (!last->found)
			return true;
		thread_yield();
	}
	return false;
}

struct tail_write {
	uintptr_t site;
	uint8_t   bytes[4];
};

static void write_tail(void *arg)
{
	const struct tail_write *w = arg;
	for (unsigned i = 0; i < 4; i++)
		store(w->site + 1 + i, w->bytes[i]);
}

static void write_slot_parked(void *arg)
{
	write_slot(arg);
}

static void held(const struct probe *p, const char *doing, const struct scan *j)
{
	kprintf("opt: probe %u at 0x%lx stays at its int3 stage (%s): thread %u's "
		"%s 0x%x after %u tries\n", p->id, (unsigned long)p->addr, doing,
		j->tid, j->what, (unsigned)j->word, OPT_TRIES);
}

void opt_arm(struct probe *p)
{
	struct opt_slot *s = slot(p);
	struct scan j;
	uintptr_t a = p->addr;
	uint32_t rel = (uint32_t)((uintptr_t)slot_code(p) - (a + 5));

	if (s->jumped) {        /* settling: the same bytes again */
		store(a, 0xe9);
		store32(a + 1, rel);
		return;
	}
	if (s->site != a || s->probe != p) {
		uintptr_t d = (uintptr_t)slot_code(p);
		if (!quiet_write(d, d + OPT_DETOUR_BYTES, write_slot_parked, p, &j)) {
			kprintf("opt: probe %u at 0x%lx is not armed: thread %u's %s 0x%x "
				"is inside its detour slot\n", p->id, (unsigned long)a,
				j.tid, j.what, (unsigned)j.word);
			return;
		}
		s->site = a;
		s->probe = p;
	}
	store(a, 0xcc);
	tracer_sync_cpus();
	struct tail_write w = { a, { (uint8_t)rel, (uint8_t)(rel >> 8),
				     (uint8_t)(rel >> 16), (uint8_t)(rel >> 24) } };
	if (!quiet_write(a + 1, a + s->len, write_tail, &w, &j)) {
		held(p, "arming", &j);
		return;
	}
	store(a, 0xe9);
	s->jumped = true;
}

void opt_disarm(struct probe *p)
{
	struct opt_slot *s = slot(p);
	struct scan j;
	uintptr_t a = p->addr;
	if (!s->jumped) {       /* never got past int3, or settling */
		store(a, s->bytes[0]);
		return;
	}
	store(a, 0xcc);
	tracer_sync_cpus();
	struct tail_write w = { a, { s->bytes[1], s->bytes[2], s->bytes[3],
				     s->bytes[4] } };
	if (!quiet_write(a + 1, a + s->len, write_tail, &w, &j)) {
		held(p, "disarming", &j);
		return;
	}
	s->jumped = false;
	store(a, s->bytes[0]);
}
