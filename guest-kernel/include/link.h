/*
 * link.h — sending frames: on the 16550, and on the trace channel.
 *
 * link_send() emits one whole frame, a head struct plus a body, under the
 * link lock, numbering frames with the link's sequence counter. Payloads
 * longer than WIRE_MAX_PAYLOAD are the caller's bug and panic.
 */
#ifndef LINK_H
#define LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void link_init(void);
void link_send(unsigned type, const void *head, size_t head_len,
	       const void *body, size_t body_len);
/*
 * The trace channel (wire.h WIRE_CHANNELS). link_channel_init looks for
 * the virtio port once, after the UART is up; the 16550 is used when it
 * is absent (link_channel_absent says why) or chosen by link_channel_set.
 * A bulk frame is built in place: link_bulk_begin returns room for
 * WIRE_MAX_PAYLOAD bytes (NULL: the channel is full, try later), then
 * exactly one of link_bulk_end (send len bytes as a frame of type) or
 * link_bulk_cancel. Interrupts are masked from begin to end.
 */
void link_channel_init(void);
unsigned link_channel(void);
const char *link_channel_absent(void);
bool link_channel_set(unsigned channel);
/* The shm channel (include/shm.h): a kernel client (the tracer) announces
 * its table's physical address before HELLO, which carries it; without
 * one, `channel shm` is refused. The watcher is told every channel chosen
 * at run time (it may sleep: the command thread calls it). */
void link_shm_announce(uintptr_t table_phys);
uintptr_t link_shm_table(void);
void link_channel_watch(void (*fn)(unsigned channel));
/* Frames sent on the virtio stream so far (its next seq), pushed. */
uint32_t link_channel_frames(void);
uint8_t *link_bulk_begin(void);
void link_bulk_end(unsigned type, size_t len);
void link_bulk_cancel(void);
/* Hand the frames built so far to the channel now (a sender going idle). */
void link_bulk_push(void);
/* A count that grows while the channel takes bulk frames (virtio: buffers
 * the device gave back; 0 on the 16550, which never refuses one). */
uint64_t link_bulk_progress(void);

/* Drop the lock for the dump paths (see console_panic_mode). */
void link_panic_mode(void);

#endif
