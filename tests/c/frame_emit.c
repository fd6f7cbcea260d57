/*
 * frame_emit.c — host program around the guest's own framing code
 * (tracer/core/frame.c): prints frames for the deframer tests, and the
 * sizes/offsets of the wire structs for the header-reader test.
 *
 *   frame_emit frames N   N TEXT frames "frame <i>" with seq 0..N-1
 *   frame_emit layout     one line per struct field: struct field offset size
 */
#include <stddef.h>
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

#define FIELD(s, f) printf(#s " " #f " %zu %zu\n", offsetof(struct s, f), \
			   sizeof(((struct s *)0)->f))

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
	if (argc == 2 && strcmp(argv[1], "layout") == 0) {
		FIELD(wire_hello, byte_order); FIELD(wire_hello, arch);
		FIELD(wire_hello, word_bytes); FIELD(wire_hello, max_command);
		FIELD(wire_hello, reserved0); FIELD(wire_hello, reserved1);
		FIELD(wire_hello, reserved2); FIELD(wire_hello, ncpus);
		FIELD(wire_hello, timer_hz); FIELD(wire_hello, page_size);
		FIELD(wire_hello, cycles_at_hello); FIELD(wire_hello, cycles_hz);
		FIELD(wire_reply, status); FIELD(wire_reply, command);
		FIELD(wire_exit, status);
		FIELD(wire_result, status); FIELD(wire_result, reserved);
		FIELD(wire_result, value); FIELD(wire_result, cycles);
		FIELD(wire_event, kind); FIELD(wire_event, nwords);
		FIELD(wire_event, thread); FIELD(wire_event, probe);
		FIELD(wire_event, cycles);
		FIELD(wire_events, cpu); FIELD(wire_events, count);
		FIELD(wire_events, reserved); FIELD(wire_stats, reserved);
		FIELD(wire_stats, cpu); FIELD(wire_stats, fired);
		FIELD(wire_stats, recorded); FIELD(wire_stats, dropped);
		FIELD(wire_stats, sent); FIELD(wire_stats, buffer_bytes);
		FIELD(wire_expect, calls);
		printf("sizeof wire_hello %zu\nsizeof wire_reply %zu\n"
		       "sizeof wire_exit %zu\nsizeof wire_result %zu\n",
		       sizeof(struct wire_hello), sizeof(struct wire_reply),
		       sizeof(struct wire_exit), sizeof(struct wire_result));
		printf("sizeof wire_event %zu\nsizeof wire_events %zu\n"
		       "sizeof wire_stats %zu\nsizeof wire_expect %zu\n",
		       sizeof(struct wire_event), sizeof(struct wire_events),
		       sizeof(struct wire_stats), sizeof(struct wire_expect));
		return 0;
	}
	fprintf(stderr, "usage: frame_emit frames N | layout\n");
	return 2;
}
