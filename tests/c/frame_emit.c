/*
 * frame_emit.c — host program around the guest's own framing code
 * (tracer/core/frame.c): prints frames for the deframer tests.
 *
 *   frame_emit frames N   N TEXT frames "frame <i>" with seq 0..N-1
 *
 * (The struct layouts are checked by a program tests/test_wire.py writes
 * from what the host read of wire.h, so no field is listed by hand.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frame.h"
#include "wire.h"

static void emit(unsigned type, uint32_t seq, const void *payload, size_t len)
{
	uint8_t hdr[WIRE_HEADER_SIZE], tr[WIRE_CRC_SIZE];
	wire_header(hdr, type, seq, len);
	uint32_t crc = wire_crc32(wire_crc32(0, hdr, sizeof hdr), payload, len);
	wire_trailer(tr, crc);
	fwrite(hdr, 1, sizeof hdr, stdout);
	fwrite(payload, 1, len, stdout);
	fwrite(tr, 1, sizeof tr, stdout);
}

int main(int argc, char **argv)
{
	wire_init();
	if (argc == 3 && strcmp(argv[1], "frames") == 0) {
		int n = atoi(argv[2]);
		for (int i = 0; i < n; i++) {
			char text[32];
			int len = snprintf(text, sizeof text, "frame %d", i);
			emit(WIRE_FRAME_TEXT, (uint32_t)i, text, (size_t)len);
		}
		return 0;
	}
	fprintf(stderr, "usage: frame_emit frames N\n");
	return 2;
}
