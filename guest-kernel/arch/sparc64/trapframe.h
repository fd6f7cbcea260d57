/*
 * trapframe.h — the sparc64 trap frame as trap_entry.S builds it.
 *
 * A trap leaves the interrupted state in the TL=1 trap registers (TSTATE,
 * TPC, TNPC, TT) and in the register file: the normal globals, and the
 * trapped window, whose %o registers become our %i after trap_entry's
 * `save`. trap_entry copies the trap registers, %y, the normal globals and
 * those %o registers into this frame, drops to TL 0 and calls C; on the way
 * back it reloads all of them, so whatever C changed here — TPC/TNPC for a
 * trap_try landing, the registers a trap hook's emulation wrote (trap.h:
 * the tracer's) — takes effect at `retry`.
 * The trapped window's %l and %i are not copied into the frame: trap_entry
 * stores them in the window's own register save area at o[6] + STACK_BIAS
 * (the trapped %sp), where C can read them. To change one, C must flushw
 * first — then the window is in memory only, and the `restore` on the way
 * back refills it from there.
 *
 * An emulated `save` (the tracer's entry probe) sets save_sp: trap_entry's
 * own `save` already made the window the callee needs — its %i are the
 * trapped %o, CANSAVE/CANRESTORE moved as a real save moves them — so the
 * way back skips the `restore`, sets that window's %sp to save_sp and
 * retries in it. An emulated `return` sets restore2: the way back
 * restores once more, into the window `return` restores to (a fill if it
 * is not in the register file). trap_entry clears both on every trap.
 *
 * The TF_* offsets are for assembly; the struct is checked against them.
 */
#ifndef SPARC64_TRAPFRAME_H
#define SPARC64_TRAPFRAME_H

#define TF_TSTATE  0
#define TF_TPC     8
#define TF_TNPC    16
#define TF_TT      24
#define TF_TL      32
#define TF_Y       40
#define TF_G       48     /* %g0..%g7; g[0] is always 0 */
#define TF_O       112    /* the trapped window's %o0..%o7 */
#define TF_SAVE_SP 176    /* nonzero: resume in trap_entry's window (below) */
#define TF_RESTORE2 184   /* nonzero: one more restore before retry (below) */
#define TF_SIZE    192    /* a multiple of 16: keeps %sp aligned */

/*
 * The double-fault record: a trap at TL > 1 that no inline handler takes
 * cannot use trap_entry (its own state may be what broke), so
 * double_fault_entry copies the trap registers of every level and the
 * registers it can still see into this static record with physical
 * stores, which cannot miss in the TLB, before it touches anything else.
 */
#define DF_MAX_LEVELS 8
#define DF_TL      0
#define DF_LEVELS  8      /* per level 1..TL: tt, tpc, tnpc, tstate */
#define DF_LEVEL_SIZE 32
#define DF_G       (DF_LEVELS + DF_MAX_LEVELS * DF_LEVEL_SIZE)
#define DF_O       (DF_G + 64)
#define DF_L       (DF_O + 64)
#define DF_I       (DF_L + 64)
#define DF_SIZE    (DF_I + 64)

#ifndef __ASSEMBLY__
#include <stddef.h>
#include <stdint.h>

struct trapframe {
	uint64_t tstate, tpc, tnpc, tt, tl, y;
	uint64_t g[8];
	uint64_t o[8];
	uint64_t save_sp, restore2;
};

_Static_assert(offsetof(struct trapframe, tstate) == TF_TSTATE, "TF_TSTATE");
_Static_assert(offsetof(struct trapframe, tpc) == TF_TPC, "TF_TPC");
_Static_assert(offsetof(struct trapframe, tnpc) == TF_TNPC, "TF_TNPC");
_Static_assert(offsetof(struct trapframe, tt) == TF_TT, "TF_TT");
_Static_assert(offsetof(struct trapframe, tl) == TF_TL, "TF_TL");
_Static_assert(offsetof(struct trapframe, y) == TF_Y, "TF_Y");
_Static_assert(offsetof(struct trapframe, g) == TF_G, "TF_G");
_Static_assert(offsetof(struct trapframe, o) == TF_O, "TF_O");
_Static_assert(offsetof(struct trapframe, save_sp) == TF_SAVE_SP, "TF_SAVE_SP");
_Static_assert(offsetof(struct trapframe, restore2) == TF_RESTORE2, "TF_RESTORE2");
_Static_assert(sizeof(struct trapframe) == TF_SIZE, "TF_SIZE");

struct df_level {
	uint64_t tt, tpc, tnpc, tstate;
};

struct df_record {
	uint64_t tl;
	struct df_level level[DF_MAX_LEVELS];   /* level[n - 1] is TL n */
	uint64_t g[8], o[8], l[8], i[8];        /* window of the failing handler */
};

_Static_assert(offsetof(struct df_record, level) == DF_LEVELS, "DF_LEVELS");
_Static_assert(sizeof(struct df_level) == DF_LEVEL_SIZE, "DF_LEVEL_SIZE");
_Static_assert(offsetof(struct df_record, g) == DF_G, "DF_G");
_Static_assert(offsetof(struct df_record, i) == DF_I, "DF_I");
_Static_assert(sizeof(struct df_record) == DF_SIZE, "DF_SIZE");

/* The trapped %sp (the frame's o[6]) — its register save area holds the
 * trapped window's %l0..%l7, %i0..%i7 once the windows are flushed. */
static inline uint64_t trapframe_sp(const struct trapframe *tf)
{
	return tf->o[6];
}
#endif

#endif
