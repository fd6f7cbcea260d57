/*
 * mechanism.h — the ways a probe gets control at its site.
 *
 * A mechanism is one row of the arch's TARCH_MECHANISMS table
 * (tracer/arch/<arch>/mechanisms.h): int3, ud, step and opt on i386; emulate,
 * shellgame and tramp on sparc64. The run picks one (`probe mechanism NAME`); each
 * probe remembers the one it was armed with. Rows carry flags, defined
 * here once for both arches and read by the host too (bench/wire/cdefs.py
 * follows this include from the arch's table):
 *
 *   MECHANISM_LOSSY  a baseline of the seeds (single-step in situ, the
 *                    shell game): it may miss firings by design, so the
 *                    host measures its losses instead of failing on them.
 *   MECHANISM_RETURN_TRAMPOLINE  a return probe linked to its function's
 *                    entry (`probe ride`) is recorded by a trampoline
 *                    the entry puts in place of the return address: the
 *                    return takes no trap (i386's opt, opt_return.c).
 *   MECHANISM_NO_TRAP  entry and return sites branch to a trampoline and
 *                    take no trap at all (sparc64's tramp, tramp.c): the
 *                    host judges its null firing against the bare trap
 *                    and its calltree against -finstrument-functions.
 *
 * A table row is X(NAME, FLAGS, "word", "what it does"): NAME makes the C
 * enum MECHANISM_NAME (the index in tarch_mechanisms[], the first row the
 * default), "word" is the command's word for it.
 */
#ifndef TRACER_MECHANISM_H
#define TRACER_MECHANISM_H

#define MECHANISM_LOSSY  0x1
#define MECHANISM_RETURN_TRAMPOLINE 0x2
#define MECHANISM_NO_TRAP 0x4

#ifndef __ASSEMBLY__
#include <stdbool.h>

struct tarch_mechanism {
	const char *name;       /* the command word, e.g. "int3" */
	const char *what;       /* what it does, for `probe mechanism` */
	unsigned    flags;      /* MECHANISM_* */
};

#define MECHANISM_ENUM(name, flags, word, what) MECHANISM_##name,
#define MECHANISM_ROW(name, flags, word, what) \
	[MECHANISM_##name] = { word, what, flags },

extern const struct tarch_mechanism tarch_mechanisms[];
extern const unsigned tarch_nmechanisms;

static inline bool mechanism_lossy(unsigned m)
{
	return tarch_mechanisms[m].flags & MECHANISM_LOSSY;
}
#endif

#endif
