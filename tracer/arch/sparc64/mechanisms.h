/*
 * mechanisms.h — the sparc64 probe mechanisms (mechanism.h says what a
 * row is); fbt.c explains each. The host reads this table for the names,
 * the default (the first row), which are lossy baselines and which take
 * no trap at entry and return sites.
 */
#ifndef SPARC64_MECHANISMS_H
#define SPARC64_MECHANISMS_H

#include "mechanism.h"

/* X(NAME, FLAGS, "word", "what it does") */
#define TARCH_MECHANISMS(X) \
	X(EMULATE,   0, "emulate", \
	  "illtrap const22, emulate the displaced instruction") \
	X(SHELLGAME, MECHANISM_LOSSY, "shellgame", \
	  "illtrap, put the original back until the next probe fires (lossy)") \
	X(TRAMP,     MECHANISM_NO_TRAP, "tramp", \
	  "ba,a to a trampoline that records and runs the displaced word (entry and return sites; others take the illtrap)")

#endif
