/*
 * tracer_site.h — what the host build's stub arch remembers of a site
 * (tracer.h includes it): the word that stubs.c's tarch_decode read from
 * the fake text, so that arming and disarming can be checked to put it
 * back.
 */
#ifndef HOST_TRACER_SITE_H
#define HOST_TRACER_SITE_H

#include <stdint.h>

struct tarch_site {
	uint32_t insn;
};

#endif
