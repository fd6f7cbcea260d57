/*
 * ool_slots.S — the out-of-line slots of i386 probes (ool.c): OOL_SLOTS
 * slots of OOL_SLOT_BYTES, on pages of their own inside the tracer's
 * text (executable, never probed, written through the text alias before
 * a probe is armed; pages of their own so that writing a slot never
 * throws away the translations of the fire path's code). Unwritten bytes
 * are int3, which no probe claims: a jump into an unwritten slot stops
 * the kernel with an unexpected #BP rather than running on.
 */
#include "ool.h"

	.section .text.notrace.ool, "ax"
	.balign	4096
	.global	ool_slots, ool_slots_end
ool_slots:
	.fill	OOL_SLOTS * OOL_SLOT_BYTES, 1, 0xcc
ool_slots_end:
	.balign	4096
