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
 *
 * The trace channel: bulk frames (wire.h WIRE_BULK_FRAMES: records and
 * the raw channel's filler) are built in place by their sender between
 * link_bulk_begin and link_bulk_end. With a virtio-console port (found at
 * boot, core/virtio_console.c) the buffer is the device's transmit buffer,
 * so a record is copied once, from its CPU's ring into the frame the host
 * receives, and the frame is numbered in the virtio stream's own seq.
 * Frames are packed into the buffer until the next might not fit, then
 * the buffer goes to the device as one descriptor; a sender going idle
 * pushes a partly filled one (link_bulk_push), and so does every REPLY,
 * whose channel_frames tells the host how far the stream has gone.
 * Without one, or after `channel serial`, the buffer is a static one sent
 * through link_send on the 16550. A sender that finds every virtio buffer
 * still with the device (the host stopped reading) gets NULL and tries
 * later; the command line on the 16550 never waits for the trace channel.
 *
 * `channel shm` (wire.h, include/shm.h) sends no records at all: the host
 * reads the tracer's rings out of guest RAM through the table whose
 * physical address a kernel client announced (link_shm_announce) and
 * HELLO carries. The link only keeps the choice, tells the client
 * (link_channel_watch), and sends the remaining bulk frames (the raw
 * channel's filler) over the virtio port, or the 16550 without one.
 */
#include "link.h"
#include "arch.h"
#include "console.h"
#include "frame.h"
#include "serial.h"
#include "spinlock.h"
#include "virtio_console.h"

static uint32_t link_seq;
static spinlock_t link_lock = SPINLOCK_INIT("link");
static volatile bool link_panicking;

#define WIRE_PORT_NAME(name, value, port_name) port_name
static const char trace_port_name[] = WIRE_VIRTIO_PORTS(WIRE_PORT_NAME);

static spinlock_t bulk_lock = SPINLOCK_INIT("link-bulk");
static irqflags_t bulk_flags;
static unsigned bulk_channel = WIRE_CHANNEL_SERIAL;    /* how bulk frames go */
static unsigned trace_channel = WIRE_CHANNEL_SERIAL;   /* what `channel` says */
static uintptr_t shm_table;
static void (*channel_watch)(unsigned channel);
static bool virtio_present;
static const char *virtio_absent = "not probed yet";
static volatile uint32_t bulk_seq;      /* frames of the virtio stream */
static uint8_t *bulk_buf;               /* between begin and end */
static uint8_t *bulk_slot;              /* virtio buffer being filled */
static size_t bulk_used;                /* its bytes of whole frames */
enum { FRAME_MAX = WIRE_HEADER_SIZE + WIRE_MAX_PAYLOAD + WIRE_CRC_SIZE };
static uint8_t serial_payload[WIRE_MAX_PAYLOAD] __attribute__((aligned(8)));

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

void link_channel_init(void)
{
	virtio_present = vcon_open(trace_port_name, &virtio_absent);
	if (virtio_present) {
		virtio_absent = "";
		bulk_channel = trace_channel = WIRE_CHANNEL_VIRTIO;
	}
}

unsigned link_channel(void)
{
	return trace_channel;
}

void link_shm_announce(uintptr_t table_phys)
{
	shm_table = table_phys;
}

uintptr_t link_shm_table(void)
{
	return shm_table;
}

void link_channel_watch(void (*fn)(unsigned channel))
{
	channel_watch = fn;
}

const char *link_channel_absent(void)
{
	return virtio_absent;
}

bool link_channel_set(unsigned channel)
{
	if (channel == WIRE_CHANNEL_VIRTIO && !virtio_present)
		return false;
	if (channel == WIRE_CHANNEL_SHM && !shm_table)
		return false;
	link_bulk_push();
	irqflags_t flags = spin_lock_irqsave(&bulk_lock);
	trace_channel = channel;
	bulk_channel = channel != WIRE_CHANNEL_SHM ? channel :
		virtio_present ? WIRE_CHANNEL_VIRTIO : WIRE_CHANNEL_SERIAL;
	spin_unlock_irqrestore(&bulk_lock, flags);
	if (channel_watch)
		channel_watch(channel);
	return true;
}

uint64_t link_bulk_progress(void)
{
	return bulk_channel == WIRE_CHANNEL_VIRTIO ? vcon_tx_returned() : 0;
}

void link_bulk_push(void)
{
	irqflags_t flags = spin_lock_irqsave(&bulk_lock);
	if (bulk_slot && bulk_used) {
		vcon_tx_put(bulk_slot, bulk_used);
		bulk_slot = 0;
	}
	spin_unlock_irqrestore(&bulk_lock, flags);
}

uint32_t link_channel_frames(void)
{
	link_bulk_push();
	return bulk_seq;
}

uint8_t *link_bulk_begin(void)
{
	bulk_flags = spin_lock_irqsave(&bulk_lock);
	if (bulk_channel == WIRE_CHANNEL_SERIAL) {
		bulk_buf = serial_payload;
		return bulk_buf;
	}
	if (!bulk_slot) {
		bulk_slot = vcon_tx_get();
		bulk_used = 0;
	}
	if (!bulk_slot) {
		spin_unlock_irqrestore(&bulk_lock, bulk_flags);
		return 0;
	}
	bulk_buf = bulk_slot + bulk_used;
	return bulk_buf + WIRE_HEADER_SIZE;
}

void link_bulk_cancel(void)
{
	bulk_buf = 0;
	spin_unlock_irqrestore(&bulk_lock, bulk_flags);
}

void link_bulk_end(unsigned type, size_t len)
{
	if (len > WIRE_MAX_PAYLOAD)
		panic("link_bulk_end: payload of %zu bytes exceeds %d", len,
		      WIRE_MAX_PAYLOAD);
	if (bulk_channel == WIRE_CHANNEL_SERIAL) {
		link_send(type, serial_payload, len, 0, 0);
	} else {
		uint8_t *frame = bulk_buf;
		wire_header(frame, type, bulk_seq, len);
		uint32_t crc = wire_crc32(0, frame, WIRE_HEADER_SIZE + len);
		wire_trailer(frame + WIRE_HEADER_SIZE + len, crc);
		bulk_used += WIRE_HEADER_SIZE + len + WIRE_CRC_SIZE;
		bulk_seq++;
		if (VCON_SLOT_BYTES - bulk_used < FRAME_MAX) {
			vcon_tx_put(bulk_slot, bulk_used);
			bulk_slot = 0;
		}
	}
	bulk_buf = 0;
	spin_unlock_irqrestore(&bulk_lock, bulk_flags);
}
