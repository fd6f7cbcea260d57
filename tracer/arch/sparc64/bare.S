/*
 * bare.S — cost reference points; sparc64 has no probe emulation yet, so
 * both are plain returns.
 */
	.text
	.global tracer_bare_trap, tracer_bare_none
tracer_bare_trap:
tracer_bare_none:
	retl
	 nop
