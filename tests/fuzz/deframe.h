/*
 * deframe.h — the targets' own reader of what the guest sent (stub_out):
 * frames back to back from `from`, each header checked against wire.h
 * (magic, version, a known type, reserved 0, length at most
 * WIRE_MAX_PAYLOAD), its CRC recomputed here from the polynomial rather
 * than with frame.c's tables (a table of its own, each entry the bitwise
 * division of one byte, built once: bitwise per byte was most of a
 * command target's execution), and seq one more than the frame before. A frame that
 * fails any of these aborts: the guest never sends a bad frame, whatever
 * it was sent. Calls each(type, payload, len) per frame.
 */
#ifndef FUZZ_DEFRAME_H
#define FUZZ_DEFRAME_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wire.h"

static uint32_t deframe_crc(uint32_t crc, const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	if (!table[1])
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t c = b;
			for (int k = 0; k < 8; k++)
				c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[b] = c;
		}
	crc = ~crc;
	while (n--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint32_t le(const uint8_t *p, unsigned n)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

#define DEFRAME_TYPE(name, value, meaning) case value:
static int deframe_known(unsigned type)
{
	switch (type) {
	WIRE_FRAME_TYPES(DEFRAME_TYPE)
		return 1;
	}
	return 0;
}

static int have_seq;
static uint32_t next_seq;

#define DEFRAME_FAIL(...) do { fprintf(stderr, "bad frame: " __VA_ARGS__); \
	fprintf(stderr, "\n"); abort(); } while (0)

/* Frames in buf[from..to); returns where the first incomplete one starts. */
static size_t deframe(const uint8_t *buf, size_t from, size_t to,
		      void (*each)(unsigned type, const uint8_t *payload, size_t len))
{
	while (to - from >= WIRE_HEADER_SIZE) {
		const uint8_t *h = buf + from;
		size_t len = le(h + offsetof(struct wire_frame_header, length), 2);
		if (h[0] != WIRE_MAGIC0 || h[1] != WIRE_MAGIC1 || h[2] != WIRE_VERSION)
			DEFRAME_FAIL("magic/version %02x %02x %02x at %zu", h[0], h[1], h[2], from);
		if (!deframe_known(h[3]))
			DEFRAME_FAIL("type %u", h[3]);
		if (le(h + offsetof(struct wire_frame_header, reserved), 2))
			DEFRAME_FAIL("reserved not 0");
		if (len > WIRE_MAX_PAYLOAD)
			DEFRAME_FAIL("length %zu", len);
		if (to - from < WIRE_HEADER_SIZE + len + WIRE_CRC_SIZE)
			break;
		uint32_t crc = deframe_crc(0, h, WIRE_HEADER_SIZE + len);
		if (crc != le(h + WIRE_HEADER_SIZE + len, WIRE_CRC_SIZE))
			DEFRAME_FAIL("CRC");
		uint32_t seq = le(h + offsetof(struct wire_frame_header, seq), 4);
		if (have_seq && seq != next_seq)
			DEFRAME_FAIL("seq %u after %u", seq, next_seq - 1);
		have_seq = 1;
		next_seq = seq + 1;
		each(h[3], h + WIRE_HEADER_SIZE, len);
		from += WIRE_HEADER_SIZE + len + WIRE_CRC_SIZE;
	}
	return from;
}

#endif
