/*
 * virtio_console.h — one named port of a virtio-console device
 * (virtio-serial-pci + virtserialport), transmit only, for the link's
 * trace channel (core/link.c).
 */
#ifndef VIRTIO_CONSOLE_H
#define VIRTIO_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of one transmit buffer: the link packs whole frames into it (up
 * to 15 of the largest), so that one descriptor and one kick carry them. */
#define VCON_SLOT_BYTES 32768

struct vcon_stats {
	unsigned vs_port;           /* the port's id on the device */
	bool     vs_host_open;      /* the host end is connected (PORT_OPEN) */
	unsigned vs_slots;          /* transmit buffers */
	uint64_t vs_frames, vs_bytes;
	uint64_t vs_full;           /* times every buffer was with the device */
	uint32_t vs_max_ports;      /* the device's config: max_nr_ports */
};

/* Find the device and its port called name; false with *why. */
bool vcon_open(const char *name, const char **why);
/* A free transmit buffer of VCON_SLOT_BYTES, or NULL while every one is
 * still with the device (the host is not reading). One caller at a time. */
uint8_t *vcon_tx_get(void);
/* Transmit buffers the device has given back so far: progress of a host
 * that reads, however slowly. */
uint64_t vcon_tx_returned(void);
/* Send len bytes of a buffer vcon_tx_get returned. */
void vcon_tx_put(uint8_t *buf, size_t len);
void vcon_get_stats(struct vcon_stats *out);

#endif
