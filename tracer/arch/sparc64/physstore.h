/*
 * physstore.h — the branch provider's view of physstore.c: how `trace
 * bytes` reads a delay slot's word, and the reading itself (which the
 * probe trap also uses for its own word while execute-only pages exist).
 */
#ifndef SPARC64_PHYSSTORE_H
#define SPARC64_PHYSSTORE_H

#include <stdint.h>
#include "tracer_arch.h"

extern enum tarch_code_bytes sparc_code_bytes;
bool sparc_code_read(uintptr_t va, uint32_t *word);
uint32_t sparc_code_word(uintptr_t va);       /* 0 if it cannot be read */

#endif
