/*
 * frame.c — frame header, CRC-32 and trailer of the wire format (wire.h).
 *
 * The header is written byte by byte in little-endian order, each field
 * at its offset in struct wire_frame_header (wire.h), so the same code
 * yields the same bytes on i386 and sparc64. The CRC is the reflected
 * IEEE polynomial 0xEDB88320 with pre- and post-inversion, which is what
 * zlib.crc32 computes on the host. It is computed slicing-by-4: four
 * tables, one 32-bit word of input per step (four lookups, no carried
 * byte dependency), then a byte at a time for the tail. The drain pays
 * this on every byte it sends; under TCG the word loop is about three
 * times faster than the byte loop.
 */
#include "frame.h"

/* crc_table[0] is the classic byte table; crc_table[k][b] is the CRC of
 * byte b followed by k zero bytes. */
static uint32_t crc_table[4][256];

void wire_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 4; k++)
			crc_table[k][i] = crc_table[0][crc_table[k - 1][i] & 0xff] ^
					  (crc_table[k - 1][i] >> 8);
}

uint32_t wire_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	crc = ~crc;
	for (; len >= 4; len -= 4, p += 4) {
		/* The four bytes in stream order, whatever the CPU's byte order. */
		crc ^= (uint32_t)p[0] | (uint32_t)p[1] << 8 |
		       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		crc = crc_table[3][crc & 0xff] ^ crc_table[2][(crc >> 8) & 0xff] ^
		      crc_table[1][(crc >> 16) & 0xff] ^ crc_table[0][crc >> 24];
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* value's n low bytes at out, least significant first. */
static void put_le(uint8_t *out, uint32_t value, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(value >> (8 * i));
}

#define AT(field)   offsetof(struct wire_frame_header, field)
#define SIZE(field) sizeof(((struct wire_frame_header *)0)->field)

void wire_header(uint8_t hdr[WIRE_HEADER_SIZE], unsigned type, uint32_t seq,
		 size_t payload_len)
{
	hdr[AT(magic)] = WIRE_MAGIC0;
	hdr[AT(magic) + 1] = WIRE_MAGIC1;
	hdr[AT(version)] = WIRE_VERSION;
	hdr[AT(type)] = (uint8_t)type;
	put_le(hdr + AT(seq), seq, SIZE(seq));
	put_le(hdr + AT(length), (uint32_t)payload_len, SIZE(length));
	put_le(hdr + AT(reserved), 0, SIZE(reserved));
}

void wire_trailer(uint8_t out[WIRE_CRC_SIZE], uint32_t crc)
{
	put_le(out, crc, WIRE_CRC_SIZE);
}
