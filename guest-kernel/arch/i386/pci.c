/*
 * pci.c — the pc machine's PCI accessors: configuration mechanism #1 and
 * the I/O port space.
 *
 * Mechanism #1 writes the enable bit, bus, device, function and register
 * to the address port 0xcf8 and moves the data through 0xcfc. SeaBIOS has
 * already given every BAR an address before the kernel runs; core/pci.c
 * only reads them. The address/data pair is one shared register, so the
 * two accesses are made under a lock with interrupts masked. PCI I/O space
 * is the x86 port space, little-endian like the CPU.
 */
#include "arch.h"
#include "spinlock.h"
#include "x86.h"

enum { PCI_CONFIG_ADDRESS = 0xcf8, PCI_CONFIG_DATA = 0xcfc };

static spinlock_t pci_config_lock = SPINLOCK_INIT("pci-config");

static uint32_t config_address(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	return 0x80000000u | (bus & 0xff) << 16 | (dev & 0x1f) << 11 |
	       (fn & 7) << 8 | (reg & 0xfc);
}

unsigned arch_pci_setup(const char **why)
{
	(void)why;
	return 256;     /* mechanism #1 reaches every bus; SeaBIOS numbered them */
}

bool arch_pci_io_window(uint32_t *base, uint32_t *limit)
{
	(void)base, (void)limit;
	return false;   /* SeaBIOS gave every BAR its address */
}

uint32_t arch_pci_config_read(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	irqflags_t flags = spin_lock_irqsave(&pci_config_lock);
	outl(PCI_CONFIG_ADDRESS, config_address(bus, dev, fn, reg));
	uint32_t v = inl(PCI_CONFIG_DATA);
	spin_unlock_irqrestore(&pci_config_lock, flags);
	return v;
}

void arch_pci_config_write(unsigned bus, unsigned dev, unsigned fn, unsigned reg,
			   uint32_t value)
{
	irqflags_t flags = spin_lock_irqsave(&pci_config_lock);
	outl(PCI_CONFIG_ADDRESS, config_address(bus, dev, fn, reg));
	outl(PCI_CONFIG_DATA, value);
	spin_unlock_irqrestore(&pci_config_lock, flags);
}

uint8_t arch_pci_io_read8(uint32_t port)   { return inb((uint16_t)port); }
uint16_t arch_pci_io_read16(uint32_t port) { return inw((uint16_t)port); }
uint32_t arch_pci_io_read32(uint32_t port) { return inl((uint16_t)port); }
void arch_pci_io_write8(uint32_t port, uint8_t v)   { outb((uint16_t)port, v); }
void arch_pci_io_write16(uint32_t port, uint16_t v) { outw((uint16_t)port, v); }
void arch_pci_io_write32(uint32_t port, uint32_t v) { outl((uint16_t)port, v); }
