/*
 * timer.h — the periodic tick, arch-neutral view.
 */
#ifndef TIMER_H
#define TIMER_H

#include <stdbool.h>
#include <stdint.h>

uint64_t timer_ticks(void);
/* The arch skipped n ticks: its interrupt came a period or more late (a
 * vCPU the host did not run) and the tick does not burst to catch up.
 * Counted for the boot CPU, beside its ticks: ticks + skipped is the
 * rate times the time. (i386 keeps the tick's deadlines only while the
 * sampling timer runs; otherwise the LAPIC's own period is the tick, and
 * QEMU's coalescing of it is not seen.) */
void timer_skipped(uint64_t n);
uint64_t timer_ticks_skipped(void);
unsigned timer_hz(void);
/* Change the rate; false (nothing changed) if the arch cannot do hz. */
bool timer_set_hz(unsigned hz);
/* Sleep with interrupts on until n more ticks have passed. */
void timer_wait_ticks(uint64_t n);

#define TIMER_DEFAULT_HZ 100

#endif
