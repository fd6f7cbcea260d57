/*
 * virtio_console.c — the trace port of a virtio-console device.
 *
 * QEMU's virtio-serial-pci is a virtio console with the MULTIPORT
 * feature: port 0 uses queues 0/1, the control channel queues 2 (device
 * to driver) and 3 (driver to device), and port n >= 1 queues 2n+2/2n+3.
 * Ports are found through the control channel: the driver posts receive
 * buffers and says DEVICE_READY; the device answers PORT_ADD per port;
 * the driver says PORT_READY for each, and the device names it
 * (PORT_NAME) and says whether the host end is connected (PORT_OPEN).
 * The driver opens the one port it wants with PORT_OPEN. The device's
 * config says how many ports it has (max_nr_ports, read through
 * virtio_config_read in the guest's byte order); a port id at or beyond
 * it is refused, so a config read in the wrong order cannot pass
 * unnoticed (it reads 31 as 0x1f000000 on sun4u). The handshake polls
 * for the port's name for at most a quarter of a second: QEMU answers a
 * kick at once (ioeventfd=off) or from its main loop soon after.
 *
 * Transmit: VCON_SLOT_BYTES buffers, one descriptor each (descriptor id =
 * buffer index). The link builds frames in place in a buffer and puts it
 * when it is full or the sender goes idle; a buffer comes back once the
 * device wrote it to the host. When the
 * host stops reading, QEMU holds the buffers, vcon_tx_get returns NULL
 * and the caller waits or drops; nothing here ever spins on the host.
 */
#include "virtio_console.h"
#include "arch.h"
#include "console.h"
#include "kstring.h"
#include "mm.h"
#include "pages.h"
#include "pci.h"
#include "virtio.h"

enum { VIRTIO_VENDOR = 0x1af4, VIRTIO_CONSOLE_LEGACY = 0x1003 };
enum { VIRTIO_CONSOLE_F_MULTIPORT = 1u << 1 };
enum {
	CTRL_DEVICE_READY = 0, CTRL_PORT_ADD = 1, CTRL_PORT_REMOVE = 2,
	CTRL_PORT_READY = 3, CTRL_CONSOLE_PORT = 4, CTRL_RESIZE = 5,
	CTRL_PORT_OPEN = 6, CTRL_PORT_NAME = 7,
};
enum { CTRL_RXQ = 2, CTRL_TXQ = 3 };
enum { CTRL_BUFS = 16, CTRL_BUF_BYTES = 128, CTRL_TX_BUFS = 4 };
enum { MAX_SLOTS = 32, NO_PORT = 0xffffffffu };

/* The device's config (virtio spec 5.3.4); max_nr_ports with MULTIPORT. */
struct vcon_config {
	uint16_t cols, rows;
	uint32_t max_nr_ports;
	uint32_t emerg_wr;
};

struct vcon_control {
	uint32_t id;
	uint16_t event;
	uint16_t value;
};

static struct virtio_dev dev;
static struct virtq ctrl_rx, ctrl_tx, port_tx;
static uint8_t ctrl_rx_buf[CTRL_BUFS][CTRL_BUF_BYTES] __attribute__((aligned(8)));
static struct vcon_control ctrl_tx_buf[CTRL_TX_BUFS];
static bool ctrl_tx_busy[CTRL_TX_BUFS];
static const char *wanted;
static uint32_t port = NO_PORT;
static bool port_named, host_open;
static uint32_t max_ports;

static uint8_t *slots;
static unsigned nslots;
static uint64_t slot_busy;        /* bit per slot with the device */
static uint64_t frames, bytes, full;
static volatile uint64_t returned;   /* transmit buffers the device gave back */

static void ctrl_reap_tx(void)
{
	uint16_t id;
	uint32_t len;
	while (virtq_reclaim(&ctrl_tx, &id, &len))
		if (id < CTRL_TX_BUFS)
			ctrl_tx_busy[id] = false;
}

/* Send one control message; false if every control buffer stayed busy
 * for a millisecond (QEMU answers a kick at once, or soon from its main
 * loop when the notify register is an ioeventfd). */
static bool ctrl_send(uint32_t id, uint16_t event, uint16_t value)
{
	uint64_t t0 = arch_cycles();
	do {
		ctrl_reap_tx();
		for (uint16_t b = 0; b < CTRL_TX_BUFS; b++) {
			if (ctrl_tx_busy[b])
				continue;
			ctrl_tx_buf[b] = (struct vcon_control){ id, event, value };
			ctrl_tx_busy[b] = true;
			virtq_post(&ctrl_tx, b, &ctrl_tx_buf[b], sizeof ctrl_tx_buf[b], false);
			virtq_kick(&ctrl_tx);
			return true;
		}
		arch_cpu_relax();
	} while (arch_cycles() - t0 < arch_cycles_hz() / 1000);
	return false;
}

/* Handle every control message the device has sent; returns how many. */
static unsigned ctrl_poll(void)
{
	uint16_t b;
	uint32_t len;
	unsigned n = 0;
	while (virtq_reclaim(&ctrl_rx, &b, &len)) {
		n++;
		if (b >= CTRL_BUFS)
			continue;
		struct vcon_control m;
		if (len >= sizeof m) {
			memcpy(&m, ctrl_rx_buf[b], sizeof m);
			switch (m.event) {
			case CTRL_PORT_ADD:
				ctrl_send(m.id, CTRL_PORT_READY, 1);
				break;
			case CTRL_PORT_NAME: {
				size_t nlen = len - sizeof m, want = strlen(wanted);
				if (port == NO_PORT && nlen >= want && nlen <= want + 1 &&
				    memcmp(ctrl_rx_buf[b] + sizeof m, wanted, want) == 0) {
					port = m.id;
					port_named = true;
				}
				break;
			}
			case CTRL_PORT_OPEN:
				if (m.id == port)
					host_open = m.value != 0;
				break;
			case CTRL_PORT_REMOVE:
				if (m.id == port)
					host_open = false;
				break;
			default:
				break;      /* CONSOLE_PORT, RESIZE: not ours */
			}
		}
		virtq_post(&ctrl_rx, b, ctrl_rx_buf[b], CTRL_BUF_BYTES, true);
	}
	if (n)
		virtq_kick(&ctrl_rx);
	return n;
}

bool vcon_open(const char *name, const char **why)
{
	if (!pci_init()) {
		*why = pci_absent_reason();
		return false;
	}
	const struct pci_function *f = pci_find(VIRTIO_VENDOR, VIRTIO_CONSOLE_LEGACY);
	if (!f) {
		*why = "no virtio-serial-pci function (1af4:1003) on the PCI bus";
		return false;
	}
	if (!virtio_open(f, &dev, VIRTIO_CONSOLE_F_MULTIPORT, why))
		return false;
	if (!(dev.vd_features & VIRTIO_CONSOLE_F_MULTIPORT)) {
		*why = "the device does not offer MULTIPORT (no named ports)";
		return false;
	}
	struct vcon_config config;
	virtio_config_read(&dev, 0, &config, sizeof config);
	max_ports = config.max_nr_ports;
	if (max_ports == 0 || max_ports > 0x7fff) {
		*why = "the device's max_nr_ports is out of range (its config misread?)";
		return false;
	}
	if (!virtq_setup(&dev, &ctrl_rx, CTRL_RXQ, why) ||
	    !virtq_setup(&dev, &ctrl_tx, CTRL_TXQ, why))
		return false;
	wanted = name;
	for (uint16_t b = 0; b < CTRL_BUFS; b++)
		virtq_post(&ctrl_rx, b, ctrl_rx_buf[b], CTRL_BUF_BYTES, true);
	virtio_driver_ok(&dev);
	virtq_kick(&ctrl_rx);
	ctrl_send(0, CTRL_DEVICE_READY, 1);
	/* The device answers each message (PORT_ADD -> our PORT_READY ->
	 * PORT_NAME); QEMU may do so later, from its main loop (an ioeventfd
	 * behind the notify register), so wait for the name, bounded. */
	uint64_t hz = arch_cycles_hz(), t0 = arch_cycles();
	while (!port_named && arch_cycles() - t0 < hz / 4) {
		if (!ctrl_poll())
			arch_cpu_relax();
	}
	if (!port_named) {
		*why = "the device has no port with the trace channel's name";
		return false;
	}
	if (port >= max_ports) {
		*why = "the device named a port beyond its max_nr_ports";
		return false;
	}
	if (!virtq_setup(&dev, &port_tx, 2 * port + 3, why))
		return false;
	nslots = port_tx.vq_num < MAX_SLOTS ? port_tx.vq_num : MAX_SLOTS;
	size_t npages = (nslots * VCON_SLOT_BYTES + mm_page_size - 1) / mm_page_size;
	slots = pages_alloc(npages);
	if (!slots) {
		*why = "no memory for the transmit buffers";
		return false;
	}
	ctrl_send(port, CTRL_PORT_OPEN, 1);
	ctrl_poll();
	return true;
}

static void tx_reap(void)
{
	uint16_t id;
	uint32_t len;
	while (virtq_reclaim(&port_tx, &id, &len))
		if (id < nslots) {
			slot_busy &= ~(1ull << id);
			returned++;
		}
}

uint64_t vcon_tx_returned(void)
{
	return returned;
}

uint8_t *vcon_tx_get(void)
{
	tx_reap();
	ctrl_poll();
	for (unsigned s = 0; s < nslots; s++)
		if (!(slot_busy & (1ull << s)))
			return slots + (size_t)s * VCON_SLOT_BYTES;
	full++;
	return 0;
}

void vcon_tx_put(uint8_t *buf, size_t len)
{
	uint16_t s = (uint16_t)((size_t)(buf - slots) / VCON_SLOT_BYTES);
	if (s >= nslots || len > VCON_SLOT_BYTES)
		panic("vcon_tx_put: not a transmit buffer (%p, %zu bytes)", buf, len);
	slot_busy |= 1ull << s;
	virtq_post(&port_tx, s, buf, (uint32_t)len, false);
	virtq_kick(&port_tx);
	frames++;
	bytes += len;
}

void vcon_get_stats(struct vcon_stats *out)
{
	*out = (struct vcon_stats){
		.vs_port = port, .vs_host_open = host_open, .vs_slots = nslots,
		.vs_max_ports = max_ports,
		.vs_frames = frames, .vs_bytes = bytes, .vs_full = full,
	};
}
