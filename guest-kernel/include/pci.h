/*
 * pci.h — the PCI functions the machine has, found once at boot
 * (core/pci.c) through the arch's configuration accessors (arch.h).
 */
#ifndef PCI_H
#define PCI_H

#include <stdbool.h>
#include <stdint.h>

struct pci_function {
	uint8_t  pf_bus, pf_dev, pf_fn;
	uint16_t pf_vendor, pf_device;
	uint32_t pf_class;          /* class, subclass, prog-if, revision */
	uint32_t pf_bar[6];         /* as read: bit 0 set for an I/O BAR */
};

enum {
	PCI_COMMAND_IO = 1 << 0, PCI_COMMAND_MEMORY = 1 << 1,
	PCI_COMMAND_MASTER = 1 << 2,
	PCI_BAR_IO = 1,
};

/* Enumerate (once); returns the number of functions found. */
unsigned pci_init(void);
/* The first function with this vendor and device id, or NULL. */
const struct pci_function *pci_find(uint16_t vendor, uint16_t device);
/* Set bits in the function's command register. */
void pci_enable(const struct pci_function *f, uint16_t command_bits);
/* Why the machine has no PCI functions to offer ("" if it has). */
const char *pci_absent_reason(void);

#endif
