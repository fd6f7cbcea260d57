/*
 * benchloop.c — DProbes' base loop on SPARC V9 (benchloop.h): three
 * instructions, `subcc; bne,pt %xcc; nop`, counting %o0 down from n, the
 * nop in the branch's delay slot. The probed instruction is the branch,
 * a CTI: ILLTRAP over it is emulated (PC/nPC from the condition codes
 * subcc set), the shell game swaps it back for one execution. A leaf
 * routine: no save, so the loop touches no register window.
 * bench_loop2 has two branches an iteration, `be,pn` out (not taken until
 * the end) and `ba,pt` back: `subcc; be,pn; nop; ba,pt; nop`.
 */
#include "benchloop.h"
#include "wire.h"

const unsigned bench_loop_kind = WIRE_EVENT_BRANCH;

__asm__(
	".text\n"
	".align 4\n"
	".global bench_loop, bench_loop_site\n"
	".type bench_loop, #function\n"
	"bench_loop:\n"
	"1:	subcc %o0, 1, %o0\n"
	"bench_loop_site:\n"
	"	bne,pt %xcc, 1b\n"
	"	 nop\n"
	"	retl\n"
	"	 nop\n"
	".size bench_loop, . - bench_loop\n"
	".global bench_loop2, bench_loop2_a, bench_loop2_b\n"
	".type bench_loop2, #function\n"
	"bench_loop2:\n"
	"1:	subcc %o0, 1, %o0\n"
	"bench_loop2_a:\n"
	"	be,pn %xcc, 2f\n"
	"	 nop\n"
	"bench_loop2_b:\n"
	"	ba,pt %xcc, 1b\n"
	"	 nop\n"
	"2:	retl\n"
	"	 nop\n"
	".size bench_loop2, . - bench_loop2\n");
