/*
 * fuzz_frame.c — libFuzzer target: the frames the guest builds, through
 * its own link.c and frame.c, read back by deframe.h. The input is a
 * script: each step takes a type byte and a length (two bytes, taken
 * modulo what fits in a frame) and sends that many of the input's next
 * bytes, split between link_send's head and body at the script's third
 * byte, or as a bulk frame (link_bulk_begin/end on the serial channel).
 * Every frame must come back whole, with its type, its payload byte for
 * byte, a good CRC and the next seq; no step may panic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stubs.h"
#include "link.h"
#include "wire.h"
#include "deframe.h"

void stub_on_line(void) { }
void stub_on_write(void) { }

static unsigned want_type;
static const uint8_t *want_payload;
static size_t want_len;
static unsigned got;

static void on_frame(unsigned type, const uint8_t *payload, size_t len)
{
	if (type != want_type || len != want_len || memcmp(payload, want_payload, len)) {
		fprintf(stderr, "sent type %u, %zu bytes; read type %u, %zu bytes\n",
			want_type, want_len, type, len);
		abort();
	}
	got++;
}

#define TYPE_ROW(name, value, meaning) value,
static const uint8_t types[] = { WIRE_FRAME_TYPES(TYPE_ROW) };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stub_init();
	have_seq = 0;
	for (size_t at = 0; at + 4 <= size;) {
		unsigned type = types[data[at] % sizeof types];
		bool bulk = data[at] & 0x80;
		size_t len = (data[at + 1] | (size_t)data[at + 2] << 8) % (WIRE_MAX_PAYLOAD + 1);
		size_t split = data[at + 3];
		at += 4;
		if (len > size - at)
			len = size - at;
		if (split > len)
			split = len;
		stub_out_len = 0;
		want_type = type;
		want_payload = data + at;
		want_len = len;
		got = 0;
		if (bulk) {
			uint8_t *buf = link_bulk_begin();
			if (!buf)
				abort();        /* the serial channel always has room */
			memcpy(buf, data + at, len);
			link_bulk_end(type, len);
		} else {
			link_send(type, data + at, split, data + at + split, len - split);
		}
		size_t end = deframe(stub_out, 0, stub_out_len, on_frame);
		if (got != 1 || end != stub_out_len) {
			fprintf(stderr, "%u frames for one send, %zu bytes left\n", got,
				stub_out_len - end);
			abort();
		}
		at += len;
	}
	return 0;
}
