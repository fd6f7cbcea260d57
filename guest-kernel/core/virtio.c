/*
 * virtio.c — legacy ("0.9.5") virtio over PCI, and split virtqueues.
 *
 * Why legacy: a transitional virtio-pci function (QEMU's default on a
 * conventional PCI bus, which both pc and sun4u have) offers its header
 * in I/O BAR 0, a register block that needs no capability walk and no
 * memory BAR. Modern virtio (1.0) would need the vendor capabilities and
 * memory BARs mapped on both machines; it buys nothing this kernel uses.
 *
 * Byte order, which is where big-endian sun4u differs (QEMU 7.2,
 * hw/virtio/virtio.c and virtio-pci.c; the same on the pc, where every
 * order is little-endian):
 *   - the legacy header (features, queue PFN/size/select/notify, status)
 *     is a little-endian PCI register block: its values go through the
 *     arch's PCI I/O accessors, which return a register's value as the
 *     device meant it (sun4u: the little-endian bypass ASI);
 *   - the rings, descriptors and the virtio-console control messages are
 *     in the guest's own byte order: a legacy device takes the target's
 *     (virtio_is_big_endian: target_words_bigendian() on sparc64), so the
 *     plain C structs below are right on both machines, no swap;
 *   - the device-specific configuration after the header is byte-swapped
 *     by QEMU for a big-endian legacy device (virtio_pci_config_read), so
 *     that its bytes at ascending I/O addresses are the config struct as
 *     the guest lays it out. virtio_config_read therefore copies bytes,
 *     never a 16- or 32-bit register read: one arch-neutral loop that is
 *     right on both, where a word read would be swapped on sun4u.
 *
 * A queue is one block of pages: descriptors, then the available ring,
 * then, at the next 4096-byte boundary, the used ring; its page frame
 * number (address >> 12) goes to QUEUE_PFN. Addresses given to the device
 * are physical (mm_virt_to_phys): the pc has no IOMMU, and sun4u's is off
 * and passes bus addresses through (arch/sparc64/pci.c). The driver never
 * chains descriptors: each buffer is one descriptor, and the caller names
 * it by an id it owns, so buffers and descriptors map one to one with no
 * free list. Completion is polled (virtq_reclaim): no interrupt line is
 * used, so no CPU is taken from the workload to field one.
 */
#include "virtio.h"
#include "arch.h"
#include "kstring.h"
#include "mm.h"
#include "pages.h"

enum {
	VIRTIO_PCI_HOST_FEATURES = 0x00, VIRTIO_PCI_GUEST_FEATURES = 0x04,
	VIRTIO_PCI_QUEUE_PFN = 0x08, VIRTIO_PCI_QUEUE_NUM = 0x0c,
	VIRTIO_PCI_QUEUE_SEL = 0x0e, VIRTIO_PCI_QUEUE_NOTIFY = 0x10,
	VIRTIO_PCI_STATUS = 0x12,
	VIRTIO_PCI_CONFIG = 0x14,       /* device config, with MSI-X off */
};
enum {
	STATUS_ACKNOWLEDGE = 1, STATUS_DRIVER = 2, STATUS_DRIVER_OK = 4,
	STATUS_FAILED = 0x80,
};
enum { VRING_ALIGN = 4096, QUEUE_ADDR_SHIFT = 12 };

#define compiler_barrier() __asm__ volatile("" ::: "memory")

bool virtio_open(const struct pci_function *f, struct virtio_dev *d,
		 uint32_t want, const char **why)
{
	if (!(f->pf_bar[0] & PCI_BAR_IO) || (f->pf_bar[0] & ~3u) == 0) {
		*why = "BAR 0 is not an assigned I/O BAR (not a legacy virtio function)";
		return false;
	}
	pci_enable(f, PCI_COMMAND_IO | PCI_COMMAND_MASTER);
	d->vd_io = f->pf_bar[0] & ~3u;
	arch_pci_io_write8(d->vd_io + VIRTIO_PCI_STATUS, 0);
	arch_pci_io_write8(d->vd_io + VIRTIO_PCI_STATUS, STATUS_ACKNOWLEDGE);
	arch_pci_io_write8(d->vd_io + VIRTIO_PCI_STATUS,
			   STATUS_ACKNOWLEDGE | STATUS_DRIVER);
	d->vd_features = arch_pci_io_read32(d->vd_io + VIRTIO_PCI_HOST_FEATURES) & want;
	arch_pci_io_write32(d->vd_io + VIRTIO_PCI_GUEST_FEATURES, d->vd_features);
	return true;
}

void virtio_config_read(const struct virtio_dev *d, unsigned offset, void *out,
			size_t len)
{
	uint8_t *p = out;
	for (size_t i = 0; i < len; i++)
		p[i] = arch_pci_io_read8(d->vd_io + VIRTIO_PCI_CONFIG + offset + (uint32_t)i);
}

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

bool virtq_setup(struct virtio_dev *d, struct virtq *q, unsigned index,
		 const char **why)
{
	arch_pci_io_write16(d->vd_io + VIRTIO_PCI_QUEUE_SEL, (uint16_t)index);
	unsigned num = arch_pci_io_read16(d->vd_io + VIRTIO_PCI_QUEUE_NUM);
	if (num == 0) {
		*why = "the device has no such queue";
		return false;
	}
	size_t used_at = align_up(16 * num + 2 * (3 + num), VRING_ALIGN);
	size_t bytes = used_at + align_up(2 * 3 + 8 * num, VRING_ALIGN);
	size_t npages = align_up(bytes, mm_page_size) / mm_page_size;
	uint8_t *ring = pages_alloc(npages);
	if (!ring) {
		*why = "no memory for the rings";
		return false;
	}
	memset(ring, 0, npages * mm_page_size);
	q->vq_dev = d;
	q->vq_index = (uint16_t)index;
	q->vq_num = (uint16_t)num;
	q->vq_desc = (struct vring_desc *)ring;
	q->vq_avail = (volatile uint16_t *)(ring + 16 * num);
	q->vq_used = (volatile uint16_t *)(ring + used_at);
	q->vq_avail_idx = q->vq_last_used = 0;
	arch_pci_io_write32(d->vd_io + VIRTIO_PCI_QUEUE_PFN,
			    (uint32_t)(mm_virt_to_phys(ring) >> QUEUE_ADDR_SHIFT));
	return true;
}

void virtio_driver_ok(struct virtio_dev *d)
{
	arch_pci_io_write8(d->vd_io + VIRTIO_PCI_STATUS,
			   STATUS_ACKNOWLEDGE | STATUS_DRIVER | STATUS_DRIVER_OK);
}

void virtq_post(struct virtq *q, uint16_t id, const void *buf, uint32_t len,
		bool device_writes)
{
	struct vring_desc *desc = &q->vq_desc[id];
	desc->addr = mm_virt_to_phys(buf);
	desc->len = len;
	desc->flags = device_writes ? VRING_DESC_F_WRITE : 0;
	desc->next = 0;
	q->vq_avail[2 + q->vq_avail_idx % q->vq_num] = id;
	/* The descriptor and the ring slot before the index that publishes them. */
	arch_barrier();
	q->vq_avail[1] = ++q->vq_avail_idx;
}

void virtq_kick(struct virtq *q)
{
	arch_barrier();
	arch_pci_io_write16(q->vq_dev->vd_io + VIRTIO_PCI_QUEUE_NOTIFY, q->vq_index);
}

bool virtq_reclaim(struct virtq *q, uint16_t *id, uint32_t *len)
{
	if (q->vq_used[1] == q->vq_last_used)
		return false;
	compiler_barrier();
	const volatile struct vring_used_elem *e = (const volatile void *)
		((const volatile uint8_t *)q->vq_used + 4 +
		 8 * (q->vq_last_used % q->vq_num));
	*id = (uint16_t)e->id;
	*len = e->len;
	compiler_barrier();
	q->vq_last_used++;
	return true;
}
