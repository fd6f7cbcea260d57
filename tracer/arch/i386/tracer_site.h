/*
 * tracer_site.h — what an i386 probe remembers about its site: the decoded
 * original instruction(s) (emulate.h), and for a site run out of line
 * (insn.kind I386_OOL, ool.c) the whole instruction, which its slot
 * copies. Included by tracer.h.
 */
#ifndef I386_TRACER_SITE_H
#define I386_TRACER_SITE_H

#include "emulate.h"
#include "insn.h"

struct tarch_site {
	struct i386_site insn;
	uint8_t          next;     /* the byte after a one-byte site (ud2 covers it) */
	uint8_t          copy[I386_OOL_COPY_MAX];   /* OOL: copy_len bytes: the
						     * instruction, or an indirect
						     * call rewritten (insn.h) */
	uint8_t          copy_len;
	uint8_t          icall;    /* OOL: the copy is a rewritten indirect call */
	/* A fused prologue whose mov is another probe's site (an insn probe
	 * at +1): emulate the push alone, so the mov's own trap fires. */
	uint8_t          split;
	/* OOL: the slot holds check mode's variant (ool_check.c), written
	 * so when the probe was armed with check mode on. */
	uint8_t          checked;
	/* Under opt (opt_return.c): an entry's riding return probe, a return
	 * probe's entry, id + 1 (0: none; `probe ride`); and whether a
	 * riding return probe's int3 is written (the fallback). */
	uint16_t         ride;
	uint8_t          trapping;
	/* Under opt: what its recording path does (opt_fast.h), set at
	 * arming; 0: its records go into C. */
	uint8_t          fast;
};

#endif
