/*
 * tracer_site.h — what a sparc64 probe remembers about its site, decoded
 * once when the probe is added. Included by tracer.h.
 *
 * A site is one of:
 *   CTI   a control transfer (emulate.h's classes): branch probes, and
 *         return probes on `ret` / `retl`;
 *   SAVE  `save %rs1, simm13|%rs2, %sp`, a function's first instruction:
 *         entry probes, emulated by resuming in the window trap_entry
 *         already saved (trapframe.h);
 *   RETURN the V9 `return`;
 *   OOL   any other word that runs the same from a copy: run from the
 *         probe's out-of-line slot (ool.c).
 * slot is the word after the site (a CTI's delay slot): a return probe
 * computes the value the caller will see from it.
 */
#ifndef SPARC64_TRACER_SITE_H
#define SPARC64_TRACER_SITE_H

#include <stdint.h>
#include "emulate.h"

enum sparc_site_what { SPARC_SITE_CTI, SPARC_SITE_SAVE, SPARC_SITE_RETURN,
		       SPARC_SITE_OOL };

struct tarch_site {
	uint32_t         insn;     /* the original word */
	uint32_t         slot;     /* the word after it */
	uint8_t          what;     /* enum sparc_site_what */
	/* The fire path reads the trapped window's %l/%i (from its save
	 * area, a walk of the page table away): the site is not a CTI, or
	 * it or the return value in its delay slot names one of them. */
	uint8_t          window;
	/* An OOL site armed in check mode: its firings run the checked
	 * slot (ool_check.c). Set when the probe is armed. */
	uint8_t          checked;
	/* A count-only firing may take the quick path (quick.h): an
	 * emulate probe, not checked, on an OOL site, a save reading no
	 * %l/%i, or a branch on the CCR or a call. Set when the probe is
	 * armed. */
	uint8_t          quick;
	/* Under tramp, the record its slot writes itself when the probe is
	 * plain (tramp_slots.S): its kind, or 0 (every firing into C).
	 * Set when the probe is armed (tramp.c). */
	uint8_t          fast;
	struct sparc_cti cti;      /* CTI sites */
};

#endif
