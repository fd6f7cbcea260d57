/*
 * mechanisms.h — the host build's one probe mechanism, for the fuzz
 * targets (mechanism.h says what a row is): the commands can name it, and
 * arming it stores nothing (stubs.c's tarch_arm).
 */
#ifndef HOST_MECHANISMS_H
#define HOST_MECHANISMS_H

#include "mechanism.h"

#define TARCH_MECHANISMS(X) \
	X(HOST, 0, "host", "the fuzz targets' stand-in: arming stores nothing")

#endif
