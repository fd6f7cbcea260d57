/*
 * ool_slots.S — the out-of-line slots of sparc64 probes (ool.c): one word
 * per probe id, on pages of their own inside the tracer's text
 * (executable, never probed, written through the text alias before a
 * probe is armed; pages of their own so that writing a slot never drops
 * the translations of the fire path's code). An unwritten slot holds
 * `illtrap 0x3fffff`, which no probe claims: reaching it stops the kernel
 * with an unexpected illegal_instruction rather than running on.
 *
 * ool_check_slots are check mode's (ool_check.c): two words per probe id,
 * the copy and the ILLTRAP that ends it.
 */
#include "ool.h"

	.section .text.notrace.ool, "ax"
	.align	8192
	.global	ool_slots, ool_slots_end
ool_slots:
	.fill	OOL_SLOTS, 4, 0x003fffff
ool_slots_end:
	.align	8192
	.global	ool_check_slots, ool_check_slots_end
ool_check_slots:
	.fill	2 * OOL_SLOTS, 4, 0x003fffff
ool_check_slots_end:
	.align	8192
