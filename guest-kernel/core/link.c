/*
 * link.c — the serial link layer: one frame at a time, numbered.
 *
 * A frame is written with interrupts masked so a timer tick that prints
 * cannot interleave its bytes with ours; the sequence number increments
 * only once a frame is complete, so the host's gap detection counts frames
 * that were lost, not frames that were cut. In panic mode the lock is
 * ignored: the dump of a fault taken while sending must still get out.
 */
#include "link.h"
#include "arch.h"
#include "console.h"
#include "frame.h"
#include "serial.h"

static uint32_t link_seq;
static volatile int link_busy;
static bool link_panicking;

void link_init(void)
{
	wire_init();
}

void link_panic_mode(void)
{
	link_panicking = true;
}

void link_send(unsigned type, const void *head, size_t head_len,
	       const void *body, size_t body_len)
{
	uint8_t hdr[WIRE_HEADER_SIZE], trailer[WIRE_CRC_SIZE];
	size_t len = head_len + body_len;

	if (len > WIRE_MAX_PAYLOAD)
		panic("link_send: payload of %zu bytes exceeds %d", len,
		      WIRE_MAX_PAYLOAD);

	irqflags_t flags = arch_irq_save();
	if (link_busy && !link_panicking) {
		/* Only a trap inside link_send can get here on one CPU. */
		arch_irq_restore(flags);
		panic("link_send re-entered");
	}
	link_busy = 1;

	wire_header(hdr, type, link_seq, len);
	uint32_t crc = wire_crc32(0, hdr, sizeof hdr);
	crc = wire_crc32(crc, head, head_len);
	crc = wire_crc32(crc, body, body_len);
	wire_trailer(trailer, crc);

	serial_write(hdr, sizeof hdr);
	serial_write(head, head_len);
	serial_write(body, body_len);
	serial_write(trailer, sizeof trailer);
	link_seq++;

	link_busy = 0;
	arch_irq_restore(flags);
}
