/*
 * pci.c — sun4u's PCI accessors: not yet driven, so the machine offers no
 * PCI bus to core/pci.c and the trace stays on the 16550.
 *
 * What a driver needs here (docs/FACTS.md): configuration space at physical
 * 0x1fe01000000 + (bus << 16 | devfn << 8 | reg), little-endian through
 * ASI 0x1d; simba B's secondary bus numbers programmed before anything
 * behind it answers (QEMU puts virtio-serial-pci there, bus=pciB); I/O
 * space at 0x1fe02000000; and DMA through sabre's IOMMU or its bypass.
 * Until that exists every access reads all ones and writes nothing, and
 * arch_pci_setup says why.
 */
#include "arch.h"

unsigned arch_pci_setup(const char **why)
{
	*why = "sun4u: sabre/simba configuration is not driven by this kernel";
	return 0;
}

uint32_t arch_pci_config_read(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	(void)bus, (void)dev, (void)fn, (void)reg;
	return 0xffffffffu;
}

void arch_pci_config_write(unsigned bus, unsigned dev, unsigned fn, unsigned reg,
			   uint32_t value)
{
	(void)bus, (void)dev, (void)fn, (void)reg, (void)value;
}

uint8_t arch_pci_io_read8(uint32_t port)   { (void)port; return 0xff; }
uint16_t arch_pci_io_read16(uint32_t port) { (void)port; return 0xffff; }
uint32_t arch_pci_io_read32(uint32_t port) { (void)port; return 0xffffffffu; }
void arch_pci_io_write8(uint32_t port, uint8_t v)   { (void)port, (void)v; }
void arch_pci_io_write16(uint32_t port, uint16_t v) { (void)port, (void)v; }
void arch_pci_io_write32(uint32_t port, uint32_t v) { (void)port, (void)v; }
