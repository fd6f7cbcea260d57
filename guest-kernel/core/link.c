/*
 * link.c — the serial link layer: one frame at a time, numbered.
 *
 * A frame is written under the link lock (a spinlock, so interrupts are
 * masked too): no other CPU and no interrupt handler can put bytes inside
 * it. The sequence number increments only once a frame is complete, so
 * the host's gap detection counts frames that were lost, not frames that
 * were cut. In panic mode the lock is not taken: the dump of a fault taken
 * while sending (the lock's holder may be the CPU that faulted) must still
 * get out.
 */
#include "link.h"
#include "arch.h"
#include "console.h"
#include "frame.h"
#include "serial.h"
#include "spinlock.h"

static uint32_t link_seq;
static spinlock_t link_lock = SPINLOCK_INIT("link");
static volatile bool link_panicking;

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

	bool locked = !link_panicking;
	irqflags_t flags = locked ? spin_lock_irqsave(&link_lock) : arch_irq_save();

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

	if (locked)
		spin_unlock_irqrestore(&link_lock, flags);
	else
		arch_irq_restore(flags);
}
