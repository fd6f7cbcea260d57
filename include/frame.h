/*
 * frame.h — building frames of the wire format (wire.h). Pure functions
 * with no kernel dependency: the guest's link layer
 * (guest-kernel/core/link.c) and the host's test programs compile the same
 * tracer/core/frame.c, so this header sits beside wire.h in include/.
 */
#ifndef FRAME_H
#define FRAME_H

#include <stddef.h>
#include <stdint.h>
#include "wire.h"

/* Build the CRC table; call once before any other CPU can send. */
void wire_init(void);
/* IEEE CRC-32 as zlib.crc32: start with crc = 0, feed pieces in order. */
uint32_t wire_crc32(uint32_t crc, const void *buf, size_t len);
/* Fill the 12-byte header of a frame. */
void wire_header(uint8_t hdr[WIRE_HEADER_SIZE], unsigned type, uint32_t seq,
		 size_t payload_len);
/* The 4 little-endian trailer bytes for crc. */
void wire_trailer(uint8_t out[WIRE_CRC_SIZE], uint32_t crc);

#endif
