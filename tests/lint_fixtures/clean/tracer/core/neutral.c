/* Clean for the arch-ifdef rule: guards and neutral macros named ARCH_*
 * are fine (tracer/arch/i386/fire.c may test __i386__, this file may not). */
#ifndef NEUTRAL_H
#define NEUTRAL_H
#if ARCH_TRAP_VECTORS > 16 /* not __sparc__ specific */
#endif
#ifdef __ASSEMBLY__
#endif
#endif
