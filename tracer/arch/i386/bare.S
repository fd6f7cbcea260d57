/*
 * bare.S — the reference points for the cost of a probe: tracer_bare_trap
 * executes an int3 that the #BP handler recognises by its address and
 * returns from at once (trap entry, dispatch, IRET: the bare round trip);
 * tracer_bare_none is the same call with a nop instead. The difference of
 * two loops over them is what a trap costs before any probe work.
 */
	.text
	.global tracer_bare_trap, tracer_bare_int3, tracer_bare_none
tracer_bare_trap:
tracer_bare_int3:
	int3
	ret
tracer_bare_none:
	nop
	ret
