/*
 * frame.c — frame header, CRC-32 and trailer of the wire format (wire.h).
 *
 * The header is written byte by byte in little-endian order, so the same
 * code yields the same bytes on i386 and sparc64. The CRC is the reflected
 * IEEE polynomial 0xEDB88320 with pre- and post-inversion, table-driven
 * (one lookup per byte), which is what zlib.crc32 computes on the host.
 */
#include "frame.h"

static uint32_t crc_table[256];

void wire_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t wire_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

void wire_header(uint8_t hdr[WIRE_HEADER_SIZE], unsigned type, uint32_t seq,
		 size_t payload_len)
{
	hdr[0] = WIRE_MAGIC0;
	hdr[1] = WIRE_MAGIC1;
	hdr[2] = WIRE_VERSION;
	hdr[3] = (uint8_t)type;
	hdr[4] = (uint8_t)seq;
	hdr[5] = (uint8_t)(seq >> 8);
	hdr[6] = (uint8_t)(seq >> 16);
	hdr[7] = (uint8_t)(seq >> 24);
	hdr[8] = (uint8_t)payload_len;
	hdr[9] = (uint8_t)(payload_len >> 8);
	hdr[10] = 0;
	hdr[11] = 0;
}

void wire_trailer(uint8_t out[WIRE_CRC_SIZE], uint32_t crc)
{
	out[0] = (uint8_t)crc;
	out[1] = (uint8_t)(crc >> 8);
	out[2] = (uint8_t)(crc >> 16);
	out[3] = (uint8_t)(crc >> 24);
}
