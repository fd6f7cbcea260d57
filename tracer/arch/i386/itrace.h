/*
 * itrace.h — what fire.c calls of i386 instruction tracing (itrace.c): its
 * hooks' registration at init, and the call after a probe's emulation,
 * made only while i386_itrace_live (an `itrace on` armed, or a region
 * still running), so that tracing off costs the fire path one load.
 */
#ifndef I386_ITRACE_H
#define I386_ITRACE_H

#include <stdbool.h>
#include <stdint.h>

struct probe;
struct trapframe;

extern volatile bool i386_itrace_live;
void i386_itrace_probe(const struct probe *p, uint32_t site, struct trapframe *tf);
void i386_itrace_init(void);

#endif
