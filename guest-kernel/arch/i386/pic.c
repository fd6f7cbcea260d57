/*
 * pic.c — the two 8259 PICs and the 8254 PIT channel 0.
 *
 * The PICs are remapped to vectors PIC_VECTOR_BASE..+15, clear of the CPU
 * exceptions, with every line masked until a driver unmasks it. The PIT
 * only serves to calibrate the LAPIC timer and TSC (lapic.c); its line
 * stays masked. IRQ 7 and 15
 * can be spurious; we read the in-service register to tell, and a spurious
 * IRQ 15 still needs an EOI to the master (which did see the cascade).
 */
#include "arch_i386.h"
#include "vectors.h"
#include "x86.h"

#define PIC1_CMD  0x20
#define PIC1_DATA 0x21
#define PIC2_CMD  0xa0
#define PIC2_DATA 0xa1
#define PIC_EOI   0x20
#define PIC_READ_ISR 0x0b

#define PIT_CH0   0x40
#define PIT_CMD   0x43

static uint16_t irq_mask = 0xffff & ~(1u << 2);   /* cascade stays open */

static void write_mask(void)
{
	outb(PIC1_DATA, irq_mask & 0xff);
	outb(PIC2_DATA, irq_mask >> 8);
}

void pic_init(void)
{
	outb(PIC1_CMD, 0x11);          /* ICW1: edge, cascade, ICW4 follows */
	outb(PIC2_CMD, 0x11);
	outb(PIC1_DATA, PIC_VECTOR_BASE);     /* ICW2: vector offsets */
	outb(PIC2_DATA, PIC_VECTOR_BASE + 8);
	outb(PIC1_DATA, 0x04);         /* ICW3: slave on line 2 */
	outb(PIC2_DATA, 0x02);
	outb(PIC1_DATA, 0x01);         /* ICW4: 8086 mode */
	outb(PIC2_DATA, 0x01);
	write_mask();
}

void pic_unmask(unsigned irq)
{
	irqflags_t flags = arch_irq_save();
	irq_mask &= ~(1u << irq);
	write_mask();
	arch_irq_restore(flags);
}

void pic_mask(unsigned irq)
{
	irqflags_t flags = arch_irq_save();
	irq_mask |= 1u << irq;
	write_mask();
	arch_irq_restore(flags);
}

void pic_eoi(unsigned irq)
{
	if (irq >= 8)
		outb(PIC2_CMD, PIC_EOI);
	outb(PIC1_CMD, PIC_EOI);
}

bool pic_spurious(unsigned irq)
{
	if (irq == 7) {
		outb(PIC1_CMD, PIC_READ_ISR);
		return !(inb(PIC1_CMD) & 0x80);
	}
	if (irq == 15) {
		outb(PIC2_CMD, PIC_READ_ISR);
		if (!(inb(PIC2_CMD) & 0x80)) {
			outb(PIC1_CMD, PIC_EOI);
			return true;
		}
	}
	return false;
}

uint16_t pit_read_count(void)
{
	outb(PIT_CMD, 0x00);           /* latch channel 0 */
	uint8_t lo = inb(PIT_CH0);
	return (uint16_t)(lo | inb(PIT_CH0) << 8);
}

void pit_set_divisor(uint16_t divisor)
{
	outb(PIT_CMD, 0x34);           /* channel 0, lo/hi byte, mode 2 */
	outb(PIT_CH0, divisor & 0xff);
	outb(PIT_CH0, divisor >> 8);
}
