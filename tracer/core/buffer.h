/*
 * buffer.h — the tracer core's view of its per-CPU buffers (buffer.c).
 * The fire path's half (tracer_fire, tracer_record) is in tracer.h.
 */
#ifndef TRACER_BUFFER_H
#define TRACER_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Each CPU's buffer from boot, and again when a bigger one cannot be had. */
#define BUFFER_DEFAULT_BYTES (256u * 1024)

void buffer_start_drain(void);
/* The shm channel: the ring table announced, channel changes watched. */
void buffer_init_channels(void);
/* Wait until every record written before the call has been sent. */
void buffer_flush(void);
/* One STATS frame per CPU. */
void buffer_send_stats(void);
/* How often, summed over CPUs, a ring past half full woke its drain
 * before its tick (sched_kick_self). */
uint64_t buffer_kicks(void);
/* `trace kick off` leaves the drains to their ticks (to measure what the
 * wake-up is worth); on is the default. */
void buffer_kick_enable(bool on);
bool buffer_kick_enabled(void);
void buffer_reset_counters(void);
/* New rings of `bytes` (a power of two, at least a page) on every CPU;
 * false if memory ran out (then no CPU has a ring). */
bool buffer_resize(size_t bytes);
size_t buffer_size(void);
/* Seed 003's method 2: write every ring by physical address (on) or
 * through its mapping (off). NULL, or why not (then it is off). */
const char *buffer_set_physical(bool on);
bool buffer_physical(void);

#endif
