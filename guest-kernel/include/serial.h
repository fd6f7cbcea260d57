/*
 * serial.h — the 16550 UART, arch-neutral driver (core/uart16550.c) over the
 * arch's register accessors. TX is polled; RX is interrupt-driven into a
 * ring the command loop reads, so the line is never read from trap context.
 */
#ifndef SERIAL_H
#define SERIAL_H

#include <stdbool.h>
#include <stddef.h>

void serial_init(void);
void serial_write(const void *buf, size_t len);
/* Next received byte, or -1 if none is waiting. */
int serial_getc(void);
/* Block the calling thread until a byte is waiting. */
void serial_wait_input(void);
/* Bytes lost because the receive ring was full. */
unsigned long serial_rx_overruns(void);
/* Bytes written to the data register (THR) and read from it (RBR) since
 * boot: what an I/O watch on the data port must count. */
unsigned long serial_tx_bytes(void);
unsigned long serial_rx_bytes(void);
/* 16550 internal loopback: returns true if n bytes written came back
 * unchanged. Interrupts for the UART are masked meanwhile. */
bool serial_loopback_test(unsigned n);

#endif
