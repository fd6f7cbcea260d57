/*
 * gate.h — the tracer core's view of gate.c: what a gated probe's firing
 * does (maximum hit count, pass count, program), the per-probe counts it
 * keeps and sends, and the disarming of spent probes.
 */
#ifndef TRACER_GATE_H
#define TRACER_GATE_H

#include <stdbool.h>
#include "tracer.h"

/* Fire path, interrupts masked, for a probe whose `gated` is set: count
 * the hit and do what its ordinal calls for; true if the probe's own
 * action is still to be done. */
bool gate_fire(const struct probe *p, const struct tarch_context *ctx);
/* The drain thread, every tick: disable the probes past their maximum. */
void gate_reap(void);
/* PROBES frames: every probe added, its hits, runs, faults and over. */
void gate_send_counts(void);
/* Zero every probe's counts (`trace reset`). */
void gate_reset_counts(void);
/* Whether probe id runs a program in place of its own record. */
bool gate_runs_program(unsigned id);
/* No probe runs the program of slot any more. */
void gate_detach(unsigned slot);

#endif
