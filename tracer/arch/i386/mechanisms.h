/*
 * mechanisms.h — the i386 probe mechanisms (mechanism.h says what a row
 * is); fbt.c explains each. The host reads this table for the names, the
 * default (the first row), which are lossy baselines and which send
 * returns through a trampoline.
 */
#ifndef I386_MECHANISMS_H
#define I386_MECHANISMS_H

#include "mechanism.h"

/* X(NAME, FLAGS, "word", "what it does") */
#define TARCH_MECHANISMS(X) \
	X(INT3, 0, "int3", "int3, emulate the displaced instruction") \
	X(UD,   0, "ud",   "ud2 (#UD), emulate the displaced instruction") \
	X(STEP, MECHANISM_LOSSY, "step", \
	  "int3, put the original back, single-step (lossy)") \
	X(OPT,  MECHANISM_RETURN_TRAMPOLINE, "opt", \
	  "jmp to a detour that records and runs the displaced instructions (entry sites; returns ride on the entry, or take int3)")

#endif
