/*
 * tramp.h — sparc64's trap-free mechanism (`probe mechanism tramp`,
 * tramp.c): the slot layout that tramp_slots.S and tramp.c share, and
 * what fbt.c and the fire path ask of it.
 *
 * A slot is TRAMP_SLOT_WORDS words: a copy of tramp_template (the
 * counting path, the recording path with its five words of a return's
 * value at TRAMP_VALUE_WORD, the way into C), whose four tail words at TRAMP_TAIL
 * hold the displaced instruction (and the `ba` back, or the return's
 * delay slot; check mode's mark), whose call at TRAMP_CALL_WORD is
 * re-aimed at sparc64_tramp_fire from the slot, and the probe's address
 * in the doubleword at TRAMP_PROBE_WORD. The template reads the probe's fields at the
 * offsets below; tramp.c asserts each against the C structures.
 */
#ifndef SPARC64_TRAMP_H
#define SPARC64_TRAMP_H

#define TRAMP_SLOTS        512     /* enabled tramp probes at most */
#define TRAMP_SLOT_WORDS   252     /* 1008 bytes a slot, a multiple of 8 */
#define TRAMP_TAIL         37      /* the words the slot runs last: 4 */
#define TRAMP_PROBE_WORD   250     /* the probe's address, a doubleword */

#define TRAMP_P_ADDR       0       /* offsetof(struct probe, addr) */
#define TRAMP_P_ID         8       /* offsetof(struct probe, id) */
#define TRAMP_P_STATE      14      /* offsetof(struct probe, state) */
#define TRAMP_P_ACTION     17      /* offsetof(struct probe, action) */
#define TRAMP_P_GATED      18      /* offsetof(struct probe, gated) */
#define TRAMP_P_WINDOW     33      /* offsetof(struct probe, site.window) */
#define TRAMP_P_CHECKED    34      /* offsetof(struct probe, site.checked) */
#define TRAMP_P_NARGS      13      /* offsetof(struct probe, nargs) */
#define TRAMP_P_FAST       36      /* offsetof(struct probe, site.fast) */
#define TRAMP_P_NARGMAP    70      /* offsetof(struct probe, nargmap) */
#define TRAMP_BRANCH_WORD  16      /* the counting path's test (tramp.c) */
#define TRAMP_FAST_WORD    41      /* the recording path (site.fast) */
#define TRAMP_VALUE_WORD   118     /* its five words of a return's value */
#define TRAMP_SLOW_WORD    175     /* the way into C */
#define TRAMP_CALL_WORD    233     /* its call of sparc64_tramp_fire */
/* Ends a checked slot's displaced instruction (tramp_check.c): no probe's
 * index, nor ool.h's mark, nor an unwritten slot's. */
#define TRAMP_CHECK_MARK   0x003ffffd
/* ... and a return's delay slot word, run after the first mark. */
#define TRAMP_CHECK_SLOT_MARK 0x003ffffc
#define TRAMP_ACTION_NULL  1       /* TRACER_ACTION_NULL */
#define TRAMP_ENABLED      2       /* PROBE_ENABLED */
#define TRAMP_CPU_ID       8       /* offsetof(struct cpu, id) */
#define TRAMP_HITS_SHIFT   15      /* sizeof tracer_hits[0] == 1 << this */
#define TRAMP_FIRED_SHIFT  6       /* sizeof tracer_fired[0] == 1 << this */
#define TRAMP_F_IN_FIRE    24      /* offsetof(struct tracer_fired, in_fire) */
#define TRAMP_CPU_CURRENT  24      /* offsetof(struct cpu, current) */
#define TRAMP_THREAD_ID    8       /* offsetof(struct thread, id) */
/* One CPU's buffer (core/buffer_cpu.h), as the recording path reads it. */
#define TRAMP_T_BYTES      256     /* sizeof(struct tracer_cpu) */
#define TRAMP_T_DATA       0       /* offsetof(struct tracer_cpu, data) */
#define TRAMP_T_PHYS       8       /* ... phys */
#define TRAMP_T_SIZE       16      /* ... size */
#define TRAMP_T_HEAD       20      /* ... head */
#define TRAMP_T_TAIL       24      /* ... tail */
#define TRAMP_T_RECORDED   32      /* ... recorded */
#define TRAMP_T_KICKED     88      /* ... kicked */
#define TRAMP_T_LOST       92      /* ... lost */
#define TRAMP_T_SB_ON      112     /* ... sb.on */
#define TRAMP_T_SB_OPEN    113     /* ... sb.open */
#define TRAMP_T_SB_SUBBUF  116     /* ... sb.subbuf */
#define TRAMP_T_SB_OFF     124     /* ... sb.off */
#define TRAMP_T_SB_COUNT   128     /* ... sb.count */
#define TRAMP_T_SB_LAST_OFF 132    /* ... sb.last_off */
#define TRAMP_T_SB_FIRST   144     /* ... sb.first */
#define TRAMP_T_SB_LAST    160     /* ... sb.last */
#define TRAMP_T_SB_CUR     184     /* ... sb.cur */
/* site.fast: the kind of record a slot writes itself, 0: none (C). */
#define TRAMP_FAST_ENTRY   1       /* WIRE_EVENT_ENTRY */
#define TRAMP_FAST_RETURN  2       /* WIRE_EVENT_RETURN */

#ifndef __ASSEMBLY__
#include <stdbool.h>
#include <stdint.h>

struct probe;
struct trapframe;

/* Whether p's site takes the trampoline under the tramp mechanism: an
 * entry probe (a save, or any word that runs out of line) or a return
 * probe (ret, retl, return). Other sites take the illtrap, as emulate. */
bool tramp_site(const struct probe *p);
/* Whether p can have its trampoline (a slot, the reach of a branch, a
 * delay slot that runs from a copy); if not, *why says why. */
bool tramp_can_arm(const struct probe *p, const char **why);
/* The slot written (if it is not already p's), then `ba,a slot` over
 * the site; the original word back. */
void tramp_arm(struct probe *p);
void tramp_disarm(struct probe *p);
/* The slot's C half (tramp_fire.c), from the slot's way into C with the
 * state at the site in tf: record p's firing. */
void sparc64_tramp_fire(struct trapframe *tf, struct probe *p);
/* `ba,a` (annul 1) or `ba` (annul 0) from `from` to `to`; false if out
 * of the 22-bit displacement's reach (+-8 MiB). */
bool tramp_branch(uintptr_t from, uintptr_t to, bool annul, uint32_t *word);
/* Whether a checked return's delay slot word is checked too: one an
 * out-of-line record can carry (ool_checkable), or a `restore`, whose
 * record is an emulation's with the caller's window (tramp_slot_restore). */
bool tramp_slot_checkable(const struct probe *p);
bool tramp_slot_restore(const struct probe *p);
/* What p's slot records itself (tramp_fast.c): TRAMP_FAST_ENTRY or
 * _RETURN (site.fast), or 0; into v, the slot's five words at
 * TRAMP_VALUE_WORD (a return's value; else nops). */
unsigned tramp_fast_kind(const struct probe *p, bool checked, uint32_t v[5]);
extern volatile unsigned tramp_fast_off, tramp_fast_broken;
/* Whether no thread but the caller holds a word pointing into slot i on
 * its stack (tramp.c: a slot is rewritten for another probe only then). */
bool tramp_slot_quiet(unsigned i);
/* The probe slot i was written for in check mode, else 0. */
const struct probe *tramp_checked_probe(unsigned i);
extern uint32_t tramp_slots[], tramp_slots_end[];

/* Check mode (tramp_check.c): from the C half of a checked probe's
 * firing, the state before, with IE cleared in tf for the slot to keep;
 * the hook on the mark that ends a checked slot. */
struct sparc_regs;
void tramp_check_before(const struct probe *p, struct trapframe *tf,
			const struct sparc_regs *r);
void tramp_check_init(void);
#endif

#endif
