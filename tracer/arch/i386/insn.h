/*
 * insn.h — the IA-32 length decoder behind the out-of-line path: how long
 * the instruction at a site is, and whether a copy of it can run at
 * another address with the same effect (insn.c says which cannot, and
 * why).
 *
 * Pure C with no kernel dependency, like emulate.c: the host compiles it
 * and compares every length with capstone's over the whole kernel image
 * (tests/test_ool.py).
 */
#ifndef TRACER_I386_INSN_H
#define TRACER_I386_INSN_H

#include <stddef.h>
#include <stdint.h>

#define I386_INSN_MAX 15       /* the architectural limit */

/* The length of the instruction at code (at most avail bytes readable),
 * 1..15, if a copy of it runs the same anywhere; else 0 with *why set to
 * a static string: an instruction that reads or is relative to EIP, one
 * that traps by design, one whose effect depends on the instruction after
 * it, a privileged or segment-loading one, or bytes it cannot decode. */
unsigned i386_insn_relocatable(const uint8_t *code, size_t avail, const char **why);

/* Its length alone, whatever it is (0 if undecodable or cut off): what
 * the host compares with capstone, and what `insn:` boundaries use. */
unsigned i386_insn_length(const uint8_t *code, size_t avail);

#endif
