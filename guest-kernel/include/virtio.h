/*
 * virtio.h — legacy virtio over PCI and its split virtqueues
 * (core/virtio.c); core/virtio_console.c is the one device driver.
 */
#ifndef VIRTIO_H
#define VIRTIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "pci.h"

struct vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vring_used_elem {
	uint32_t id;
	uint32_t len;
};

enum { VRING_DESC_F_WRITE = 2 };

struct virtio_dev {
	uint32_t vd_io;             /* I/O BAR 0: the legacy header */
	uint32_t vd_features;       /* negotiated */
};

struct virtq {
	struct virtio_dev      *vq_dev;
	uint16_t                vq_index, vq_num;
	struct vring_desc      *vq_desc;
	volatile uint16_t      *vq_avail;   /* flags, idx, ring[num] */
	volatile uint16_t      *vq_used;    /* flags, idx, then elems */
	uint16_t                vq_avail_idx, vq_last_used;
};

/* Reset f, acknowledge it and agree on want & what it offers; false with
 * *why if f is not a legacy virtio function. */
bool virtio_open(const struct pci_function *f, struct virtio_dev *d,
		 uint32_t want, const char **why);
/* len bytes of the device-specific configuration from offset, as the
 * device's config struct lays them out in the guest's byte order (read
 * byte by byte: virtio.c says why). */
void virtio_config_read(const struct virtio_dev *d, unsigned offset, void *out,
			size_t len);
/* Queue `index`: allocate and register its rings; false with *why. */
bool virtq_setup(struct virtio_dev *d, struct virtq *q, unsigned index,
		 const char **why);
/* Tell the device the driver is ready (after the queues it needs). */
void virtio_driver_ok(struct virtio_dev *d);
/* Give the device descriptor `id` over len bytes at buf (device_writes:
 * a receive buffer); the caller owns the ids and reuses one only after
 * virtq_reclaim gave it back. */
void virtq_post(struct virtq *q, uint16_t id, const void *buf, uint32_t len,
		bool device_writes);
/* Notify the device of what was posted. */
void virtq_kick(struct virtq *q);
/* One buffer the device is done with: true with its id and the bytes it
 * wrote; false if none. */
bool virtq_reclaim(struct virtq *q, uint16_t *id, uint32_t *len);

#endif
