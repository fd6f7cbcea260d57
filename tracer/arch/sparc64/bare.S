/*
 * bare.S — the reference points for the cost of a probe: tracer_bare_trap
 * executes an illtrap that the illegal_instruction handler recognises by
 * its address and resumes past at once (trap entry, dispatch, retry at
 * nPC: the bare round trip); tracer_bare_none is the same call with a nop.
 * The difference of two loops over them is what a trap costs before any
 * probe work.
 */
	.text
	.global tracer_bare_trap, tracer_bare_illtrap, tracer_bare_none
tracer_bare_trap:
tracer_bare_illtrap:
	illtrap	0
	retl
	 nop
tracer_bare_none:
	nop
	retl
	 nop
