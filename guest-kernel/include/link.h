/*
 * link.h — sending frames on the serial line (the guest's only output).
 *
 * link_send() emits one whole frame, a head struct plus a body, under the
 * link lock, numbering frames with the link's sequence counter. Payloads
 * longer than WIRE_MAX_PAYLOAD are the caller's bug and panic.
 */
#ifndef LINK_H
#define LINK_H

#include <stddef.h>

void link_init(void);
void link_send(unsigned type, const void *head, size_t head_len,
	       const void *body, size_t body_len);
/* Drop the lock for the dump paths (see console_panic_mode). */
void link_panic_mode(void);

#endif
