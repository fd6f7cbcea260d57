/*
 * benchloop.h — DProbes' base loop, per arch (guest-kernel/arch/<arch>/
 * benchloop.c), for the dprobes workload.
 *
 * bench_loop(n) runs n iterations of three one-cycle instructions: on
 * i386 `dec; nop; jnz`, on sparc64 `subcc; bne,pt; nop` (the nop in the
 * delay slot). bench_loop_site is the instruction the experiments probe:
 * one an emulating mechanism emulates and the lossy baseline steps or
 * swaps — the nop on i386 (an entry form), the branch on sparc64 (a CTI,
 * a branch probe); bench_loop_kind is the probe kind to add it as.
 *
 * bench_loop2(n) is the same loop with two probeable instructions an
 * iteration (bench_loop2_sites): the lossy baselines need it, because the
 * shell game puts a probe's trap back only when the next probe fires —
 * alone in a loop, it would fire once. Both loops: n at least 1.
 */
#ifndef BENCHLOOP_H
#define BENCHLOOP_H

void bench_loop(unsigned long n);
extern const char bench_loop_site[];
extern const unsigned bench_loop_kind;
void bench_loop2(unsigned long n);
extern const char bench_loop2_a[], bench_loop2_b[];

#endif
