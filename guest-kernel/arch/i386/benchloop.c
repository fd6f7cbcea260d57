/*
 * benchloop.c — DProbes' base loop on IA-32 (benchloop.h): the seed's own
 * three instructions, `dec; nop; jnz`, counting %eax down from n. The
 * probed instruction is the nop, an entry form every i386 mechanism takes
 * (int3 emulates it, step single-steps it in place); ud2 does not fit its
 * one byte. Emulating or stepping the nop leaves EFLAGS as dec set them,
 * which jnz then reads. bench_loop2 has two nops: `dec; nop; nop; jnz`.
 */
#include "benchloop.h"
#include "wire.h"

const unsigned bench_loop_kind = WIRE_EVENT_ENTRY;

__asm__(
	".text\n"
	".global bench_loop, bench_loop_site\n"
	".type bench_loop, @function\n"
	"bench_loop:\n"
	"	movl 4(%esp), %eax\n"
	"1:	decl %eax\n"
	"bench_loop_site:\n"
	"	nop\n"
	"	jnz 1b\n"
	"	ret\n"
	".size bench_loop, . - bench_loop\n"
	".global bench_loop2, bench_loop2_a, bench_loop2_b\n"
	".type bench_loop2, @function\n"
	"bench_loop2:\n"
	"	movl 4(%esp), %eax\n"
	"1:	decl %eax\n"
	"bench_loop2_a:\n"
	"	nop\n"
	"bench_loop2_b:\n"
	"	nop\n"
	"	jnz 1b\n"
	"	ret\n"
	".size bench_loop2, . - bench_loop2\n");
