/*
 * registers.h — the registers a probe program reads in the fuzz targets'
 * host build: sparc64's table (tracer/arch/sparc64/registers.h), whose
 * words are 64 bits wide like the host's, so that the validator checks
 * `reg` against a real arch's count and `load 8` is allowed.
 */
#include "../../../../tracer/arch/sparc64/registers.h"
