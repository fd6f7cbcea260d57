/*
 * stamp.c — the stage stamps' storage and names (stamp.h).
 */
#include "stamp.h"

#define TRACER_STAMP_NAME(name, text) text,
const char *const tracer_stamp_names[TRACER_NSTAMPS] = { TRACER_STAMPS(TRACER_STAMP_NAME) };
volatile unsigned tracer_stamp_cpu;
volatile unsigned long tracer_stamps[TRACER_NSTAMPS];
