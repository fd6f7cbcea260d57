/*
 * tracer_site.h — what a sparc64 probe remembers about its site: the
 * original instruction word. Included by tracer.h.
 */
#ifndef SPARC64_TRACER_SITE_H
#define SPARC64_TRACER_SITE_H

#include <stdint.h>

struct tarch_site {
	uint32_t insn;
};

#endif
