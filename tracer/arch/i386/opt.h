/*
 * opt.h — the jump-optimized mechanism's layout, shared by its C files
 * (opt.c, opt_detour.c, opt_stage.c; opt_slots.h holds their private
 * part) and opt_detour.S, and what the fire path (fire.c) asks of it.
 */
#ifndef I386_OPT_H
#define I386_OPT_H

#define OPT_SLOTS          256     /* detours: enabled opt entry probes at most */
#define OPT_DETOUR_BYTES   384
/* The displaced instructions' copy in a slot: after the counting path in
 * a plain detour, after the head in check mode's (opt_detour.S). */
#define OPT_COPY_OFFSET    73
#define OPT_COPY_OFFSET_CHECKED 23
/* A plain detour's way out of the counting path: the stub into the
 * recording path (opt_fast.h) if its probe takes it, then the way into C. */
#define OPT_SLOW_OFFSET    90
#define OPT_C_OFFSET       109     /* OPT_SLOW_OFFSET + OPT_FAST_STUB_BYTES */
/* A plain detour of an entry whose return rides on it: its own counting
 * path, opt_detour.S's opt_ride_template, after the way into C. */
#define OPT_RIDE_OFFSET    148
#define OPT_MAX_COPY       12      /* bytes displaced: >= 5, whole instructions */
/* A detour written in check mode (opt_check.c) follows the copy with a
 * second call, OPT_AFTER_BYTES before the jmp back. */
#define OPT_AFTER_BYTES    22

/* What a plain detour's counting path (opt_detour.S) reads, as numbers
 * opt.c writes into it; opt.c asserts each against the C structures. */
#define OPT_PROBE_ID       4       /* offsetof(struct probe, id) */
#define OPT_PROBE_ACTION   13      /* offsetof(struct probe, action) */
#define OPT_PROBE_GATED    14      /* offsetof(struct probe, gated) */
#define OPT_ACTION_NULL    1       /* TRACER_ACTION_NULL */
#define OPT_HITS_ROW       (4096 * 4)  /* sizeof tracer_hits[0] */
#define OPT_FIRED_SHIFT    6       /* sizeof tracer_fired[0] == 1 << this */
#define OPT_CPU_ID         4       /* %fs:OPT_CPU_ID is this_cpu()->id */

/* What the return trampoline's counting path (opt_return.S) reads, as
 * numbers; opt_return.c asserts each against the C structures. */
#define OPT_PROBE_KIND     8       /* offsetof(struct probe, kind) */
#define OPT_PROBE_STATE    10      /* offsetof(struct probe, state) */
#define OPT_PROBE_MECHANISM 11     /* offsetof(struct probe, mechanism) */
#define OPT_PROBE_RIDE     0x40    /* offsetof(struct probe, site.ride) */
#define OPT_PROBE_ENABLED  2       /* PROBE_ENABLED */
#define OPT_EVENT_RETURN   2       /* WIRE_EVENT_RETURN */
#define OPT_MECHANISM_OPT  3       /* MECHANISM_OPT */
/* The word at OPT_PROBE_KIND, nargs masked off (& 0xffff00ff), of an
 * enabled return probe under opt; and the word at OPT_PROBE_ACTION of a
 * probe that counts only (the null action, not gated). */
#define OPT_RIDING_RETURN  (OPT_EVENT_RETURN | OPT_PROBE_ENABLED << 16 | \
			    OPT_MECHANISM_OPT << 24)
#define OPT_CPU_CURRENT    0x10    /* %fs:OPT_CPU_CURRENT is this_cpu()->current */
#define OPT_THREAD_SLOT    0x54    /* offsetof(struct thread, slot) */
#define OPT_RET_STACK      1032    /* sizeof(struct ret_stack) */
#define OPT_RET_DEPTH      4       /* offsetof(struct ret_stack, depth) */
#define OPT_RET_FRAMES     8       /* offsetof(struct ret_stack, f) */
#define OPT_RET_FRAME      16      /* sizeof(struct ret_frame): real, slot, */
#define OPT_FRAME_SLOT     4       /* ret, ret_addr */
#define OPT_FRAME_RET      8
#define OPT_FRAME_RET_ADDR 12
#define OPT_RET_DEPTH_MAX  64      /* OPT_RETURN_DEPTH (opt_return.h) */
#define OPT_THREAD_STACK   44      /* offsetof(struct thread, stack) */
#define OPT_THREAD_STACK_SIZE 48 /* offsetof(struct thread, stack_size) */

/* The C a firing under opt runs (the detour's i386_opt_fire, the return
 * trampoline and its i386_opt_return), together on a page of their own
 * (kernel.ld): under TCG a direct call to another page is a block lookup,
 * one to the same page a chained jump. */
#define OPT_HOT_SECTION    ".text.opt_hot"

#ifdef __ASSEMBLY__
/* A null firing counted as tracer_fire_count does (tracer.h), interrupts
 * masked: this CPU's tracer_fired (64-bit) and its row of tracer_hits for
 * the probe at \probe. \cpu holds this CPU's id (%fs:OPT_CPU_ID) and is
 * spent; \row is scratch. */
.macro OPT_COUNT_FIRING probe, cpu, row
	movl	\cpu, \row
	shll	$OPT_FIRED_SHIFT, \cpu
	addl	$1, tracer_fired(\cpu)
	adcl	$0, tracer_fired+4(\cpu)
	shll	$12, \row          /* OPT_HITS_ROW / 4: the CPU's row */
	addl	OPT_PROBE_ID(\probe), \row
	incl	tracer_hits(,\row,4)
.endm

/* To \fail unless the probe at \ret is a return probe, enabled, under
 * opt and riding on its entry (kind, nargs, state and mechanism side by
 * side, tested as one word: under TCG each branch ends a block). \scratch
 * is spent. */
.macro OPT_RIDING ret, scratch, fail
	movl	OPT_PROBE_KIND(\ret), \scratch   /* kind, nargs, state, mechanism */
	andl	$0xffff00ff, \scratch
	cmpl	$OPT_RIDING_RETURN, \scratch
	jne	\fail              /* enabled, a return, under opt ... */
	cmpw	$0, OPT_PROBE_RIDE(\ret)
	je	\fail              /* ... riding */
.endm

/* A riding entry's call trampolined, as opt_return_enter does: a frame
 * pushed on the shadow stack at \stack (\ret the return probe, its
 * address, the slot \slot of the real return address and the address
 * itself), the slot pointed at opt_return_trampoline, and the CPU's
 * opt_return_calls counted. \frame holds the stack's depth (room
 * checked) and is left holding this CPU's id; \scratch is spent, and may
 * be \ret. */
.macro OPT_RIDE_PUSH ret, stack, frame, scratch, slot
	shll	$4, \frame          /* OPT_RET_FRAME */
	leal	OPT_RET_FRAMES(\stack,\frame), \frame   /* the frame pushed */
	movl	\ret, OPT_FRAME_RET(\frame)
	movl	(\ret), \scratch
	movl	\scratch, OPT_FRAME_RET_ADDR(\frame)
	leal	\slot, \scratch
	movl	\scratch, OPT_FRAME_SLOT(\frame)
	movl	\slot, \scratch
	movl	\scratch, (\frame)  /* the real return address */
	incl	OPT_RET_DEPTH(\stack)
	movl	$opt_return_trampoline, \slot
	movl	%fs:OPT_CPU_ID, \frame
	incl	opt_return_calls(,\frame,4)
.endm
#endif

#ifndef __ASSEMBLY__
#define OPT_HOT __attribute__((section(OPT_HOT_SECTION)))
#include <stdbool.h>
#include <stdint.h>

struct probe;
struct trapframe;

/* Whether p can be jump-optimized (its displaced run decoded into the
 * probe's slot); if not, *why says why (a per-call buffer). */
bool opt_can_arm(const struct probe *p, const char **why);
/* The site's jmp in / the original bytes back, through an int3 stage:
 * these store the int3 (stage 1) ... */
void opt_arm(struct probe *p);
void opt_disarm(struct probe *p);
/* ... and this, after the settle's first sync, makes every waiting
 * site's tail and then its byte 0, with one stopped world for all. */
void opt_stage(void);
/* Where a firing of p's int3 stage resumes: its displaced instructions'
 * copy in the detour, which jumps back past them; 0 if p has no detour
 * (its slot went to another probe: its site holds its own bytes, and a
 * late int3 is emulated as int3's). */
uint32_t opt_resume(const struct probe *p);
/* Whether addr lies in the displaced tail (bytes 1..len-1) of an armed
 * opt probe other than self. */
const struct probe *opt_covering(uintptr_t addr);
/* The detour's C half (fire.c); in check mode's detour, the same and
 * then the state before the copies run (opt_check.c). */
void i386_opt_fire(struct trapframe *tf);
void i386_opt_fire_checked(struct trapframe *tf);
/* Whether p's detour is check mode's (written while it was on). */
bool opt_checked(const struct probe *p);
/* Check mode (opt_check.c): the state at the site from tf (the detour's
 * frame or the int3 stage's trap frame), kept for this CPU, and IF
 * cleared in tf so that the copies run with interrupts masked ... */
void opt_check_before(const struct probe *p, struct trapframe *tf);
/* Whether check mode's record holds every memory access the len displaced
 * bytes at code make (the stack window only); false with *why if not. */
bool opt_checkable(const uint8_t *code, unsigned len, const char **why);
/* ... and, from the second call after the copies, the CHECK record of
 * both states, IF put back as it was. */
void i386_opt_after(struct trapframe *tf);
#endif

#endif
