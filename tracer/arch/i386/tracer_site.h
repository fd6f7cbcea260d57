/*
 * tracer_site.h — what an i386 probe remembers about its site: the decoded
 * original instruction(s) (emulate.h). Included by tracer.h.
 */
#ifndef I386_TRACER_SITE_H
#define I386_TRACER_SITE_H

#include "emulate.h"

struct tarch_site {
	struct i386_site insn;
	uint8_t          next;     /* the byte after a one-byte site (ud2 covers it) */
};

#endif
