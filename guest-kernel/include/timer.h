/*
 * timer.h — the periodic tick, arch-neutral view.
 */
#ifndef TIMER_H
#define TIMER_H

#include <stdbool.h>
#include <stdint.h>

uint64_t timer_ticks(void);
unsigned timer_hz(void);
/* Change the rate; false (nothing changed) if the arch cannot do hz. */
bool timer_set_hz(unsigned hz);
/* Sleep with interrupts on until n more ticks have passed. */
void timer_wait_ticks(uint64_t n);

#define TIMER_DEFAULT_HZ 100

#endif
