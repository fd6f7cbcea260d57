/*
 * uart16550.c — the 16550 driver shared by both arches.
 *
 * The registers are the same on the PC's COM1 and on sun4u's ebus UART; only
 * the access differs (port I/O vs a physical-bypass ASI), which the arch
 * hides behind arch_uart_read/write. 8N1, FIFOs on, receive-data interrupt
 * on. TX polls THRE: under QEMU the transmitter is never slow, and polling
 * keeps output usable from any context, including the fault dumps. RX fills
 * a ring from the interrupt handler (one producer) that the command loop
 * drains (one consumer), and wakes the reader; a full ring counts overruns
 * rather than overwriting unread input.
 */
#include "serial.h"
#include "arch.h"
#include "waitq.h"

enum {
	UART_RBR = 0, UART_THR = 0, UART_DLL = 0,
	UART_IER = 1, UART_DLM = 1,
	UART_FCR = 2,
	UART_LCR = 3,
	UART_MCR = 4,
	UART_LSR = 5,
};
#define IER_RDA     0x01
#define LCR_8N1     0x03
#define LCR_DLAB    0x80
#define FCR_ENABLE  0x07   /* enable, clear RX and TX FIFOs */
#define MCR_DTR_RTS 0x03
#define MCR_OUT2    0x08   /* gates the interrupt line on a PC */
#define MCR_LOOP    0x10
#define LSR_DR      0x01
#define LSR_THRE    0x20

#define RX_RING 1024       /* power of two */

static volatile unsigned char rx_ring[RX_RING];
static volatile unsigned rx_head, rx_tail;   /* head: writer, tail: reader */
static volatile unsigned long rx_overruns;
/* Bytes written to THR and read from RBR since boot (serial.h): writers
 * hold the link lock, the reader is the UART's interrupt. */
static volatile unsigned long tx_bytes, rx_bytes;
static struct waitq rx_waiters = WAITQ_INIT("uart rx");

void serial_init(void)
{
	arch_uart_write(UART_IER, 0);
	arch_uart_write(UART_LCR, LCR_DLAB);
	arch_uart_write(UART_DLL, 1);          /* 115200 baud */
	arch_uart_write(UART_DLM, 0);
	arch_uart_write(UART_LCR, LCR_8N1);
	arch_uart_write(UART_FCR, FCR_ENABLE);
	arch_uart_write(UART_MCR, MCR_DTR_RTS | MCR_OUT2);
	while (arch_uart_read(UART_LSR) & LSR_DR)
		(void)arch_uart_read(UART_RBR);
	arch_uart_write(UART_IER, IER_RDA);
	arch_uart_irq_enable();
}

void serial_write(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	while (len--) {
		while (!(arch_uart_read(UART_LSR) & LSR_THRE))
			;
		arch_uart_write(UART_THR, *p++);
		tx_bytes++;
	}
}

void uart_interrupt(void)
{
	bool got = false;
	while (arch_uart_read(UART_LSR) & LSR_DR) {
		unsigned char c = arch_uart_read(UART_RBR);
		rx_bytes++;
		if (rx_head - rx_tail == RX_RING) {
			rx_overruns++;
			continue;
		}
		rx_ring[rx_head % RX_RING] = c;
		arch_barrier();
		rx_head++;
		got = true;
	}
	if (got)
		waitq_wake_all(&rx_waiters);
}

static bool input_waiting(void *unused)
{
	(void)unused;
	return rx_head != rx_tail;
}

void serial_wait_input(void)
{
	waitq_wait(&rx_waiters, input_waiting, 0);
}

int serial_getc(void)
{
	irqflags_t flags = arch_irq_save();
	int c = -1;
	if (rx_tail != rx_head) {
		c = rx_ring[rx_tail % RX_RING];
		rx_tail++;
	}
	arch_irq_restore(flags);
	return c;
}

unsigned long serial_tx_bytes(void)
{
	return tx_bytes;
}

unsigned long serial_rx_bytes(void)
{
	return rx_bytes;
}

unsigned long serial_rx_overruns(void)
{
	return rx_overruns;
}

bool serial_loopback_test(unsigned n)
{
	bool ok = true;
	irqflags_t flags = arch_irq_save();

	arch_uart_write(UART_IER, 0);
	arch_uart_write(UART_MCR, MCR_LOOP | MCR_DTR_RTS);
	for (unsigned i = 0; i < n && ok; i++) {
		unsigned char sent = (unsigned char)(i * 37 + 11);
		serial_write(&sent, 1);
		unsigned spins = 0;
		while (!(arch_uart_read(UART_LSR) & LSR_DR) && ++spins < 1000000)
			;
		ok = (arch_uart_read(UART_LSR) & LSR_DR) &&
		     arch_uart_read(UART_RBR) == sent;
	}
	arch_uart_write(UART_MCR, MCR_DTR_RTS | MCR_OUT2);
	arch_uart_write(UART_IER, IER_RDA);
	arch_irq_restore(flags);
	return ok;
}
