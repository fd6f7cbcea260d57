/*
 * pci.c — find the machine's PCI functions once, at boot.
 *
 * A brute-force scan in the manner of Linux's pci_scan_bus without the
 * bridges: every device number of every bus the arch says it can reach,
 * function 0 first and functions 1-7 only when the header type says
 * multi-function. A vendor id of 0xffff means nothing answered. What is
 * found is kept in a small table (the first PCI_MAX_FUNCTIONS) that the
 * drivers search by id and the `pci` command lists. BARs are read as the
 * firmware left them, except that an I/O BAR nobody assigned (it reads
 * zero, as after reset on a machine without PCI firmware: sun4u under our
 * own PROM) gets an address from the I/O window the arch routed to its
 * buses (arch_pci_io_window), aligned to its size as PCI requires.
 * Memory BARs are never assigned: legacy virtio, the one driver, needs
 * only its I/O BAR, and an unassigned memory BAR stays disabled (the
 * drivers set only the command bits they need).
 */
#include "pci.h"
#include "arch.h"
#include "command.h"
#include "console.h"
#include "wire.h"

enum { PCI_MAX_FUNCTIONS = 32 };
enum { REG_ID = 0x00, REG_COMMAND = 0x04, REG_CLASS = 0x08, REG_HEADER = 0x0c,
       REG_BAR0 = 0x10 };

static struct pci_function functions[PCI_MAX_FUNCTIONS];
static unsigned nfunctions;
static bool scanned;
static const char *absent = "";
static bool io_window;                  /* the arch has one to give from */
static uint32_t io_next, io_limit;      /* its next free address, its last */
static unsigned io_unplaced;            /* I/O BARs that did not fit */

/* Give BAR b of bus:dev.fn an address in the I/O window if it is an I/O
 * BAR without one: all ones written, the read-back says its size (bits
 * 31:16 may be hardwired to zero: a 64 KiB I/O space). */
static void assign_io_bar(unsigned bus, unsigned dev, unsigned fn, unsigned b)
{
	unsigned reg = REG_BAR0 + 4 * b;
	uint32_t v = arch_pci_config_read(bus, dev, fn, reg);
	if (!io_window || !(v & PCI_BAR_IO) || (v & ~3u))
		return;
	arch_pci_config_write(bus, dev, fn, reg, 0xffffffffu);
	uint32_t mask = arch_pci_config_read(bus, dev, fn, reg) & ~3u;
	if (!mask) {                    /* not implemented after all */
		arch_pci_config_write(bus, dev, fn, reg, 0);
		return;
	}
	if (!(mask & 0xffff0000u))
		mask |= 0xffff0000u;
	uint32_t size = ~mask + 1;
	uint32_t at = (io_next + size - 1) & ~(size - 1);
	if (at < io_next || at > io_limit || io_limit - at < size - 1) {
		arch_pci_config_write(bus, dev, fn, reg, 0);
		io_unplaced++;
		return;
	}
	arch_pci_config_write(bus, dev, fn, reg, at);
	io_next = at + size;
}

static void add(unsigned bus, unsigned dev, unsigned fn, uint32_t id)
{
	if (nfunctions == PCI_MAX_FUNCTIONS)
		return;
	struct pci_function *f = &functions[nfunctions++];
	f->pf_bus = (uint8_t)bus;
	f->pf_dev = (uint8_t)dev;
	f->pf_fn = (uint8_t)fn;
	f->pf_vendor = (uint16_t)id;
	f->pf_device = (uint16_t)(id >> 16);
	f->pf_class = arch_pci_config_read(bus, dev, fn, REG_CLASS);
	unsigned header = (arch_pci_config_read(bus, dev, fn, REG_HEADER) >> 16) & 0x7f;
	unsigned nbars = header == 0 ? 6 : header == 1 ? 2 : 0;
	for (unsigned b = 0; b < nbars; b++) {
		if (header == 0)
			assign_io_bar(bus, dev, fn, b);
		f->pf_bar[b] = arch_pci_config_read(bus, dev, fn, REG_BAR0 + 4 * b);
	}
}

unsigned pci_init(void)
{
	if (scanned)
		return nfunctions;
	scanned = true;
	unsigned buses = arch_pci_setup(&absent);
	io_window = arch_pci_io_window(&io_next, &io_limit);
	for (unsigned bus = 0; bus < buses; bus++)
		for (unsigned dev = 0; dev < 32; dev++) {
			uint32_t id = arch_pci_config_read(bus, dev, 0, REG_ID);
			if ((id & 0xffff) == 0xffff)
				continue;
			add(bus, dev, 0, id);
			uint32_t header = arch_pci_config_read(bus, dev, 0, REG_HEADER);
			if (!(header & (0x80u << 16)))
				continue;
			for (unsigned fn = 1; fn < 8; fn++) {
				id = arch_pci_config_read(bus, dev, fn, REG_ID);
				if ((id & 0xffff) != 0xffff)
					add(bus, dev, fn, id);
			}
		}
	if (buses && !nfunctions)
		absent = "no PCI function answered";
	return nfunctions;
}

const struct pci_function *pci_find(uint16_t vendor, uint16_t device)
{
	for (unsigned i = 0; i < nfunctions; i++)
		if (functions[i].pf_vendor == vendor && functions[i].pf_device == device)
			return &functions[i];
	return 0;
}

void pci_enable(const struct pci_function *f, uint16_t command_bits)
{
	uint32_t v = arch_pci_config_read(f->pf_bus, f->pf_dev, f->pf_fn, REG_COMMAND);
	/* The upper half is the status register, whose bits clear on a 1. */
	v = (v & 0xffff) | command_bits;
	arch_pci_config_write(f->pf_bus, f->pf_dev, f->pf_fn, REG_COMMAND, v);
}

const char *pci_absent_reason(void)
{
	return absent;
}

static int cmd_pci(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)argv, (void)rest;
	if (argc != 1)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: pci");
	for (unsigned i = 0; i < nfunctions; i++) {
		const struct pci_function *f = &functions[i];
		kprintf("%02x:%02x.%u %04x:%04x class %06x bar0 %08x bar1 %08x\n",
			f->pf_bus, f->pf_dev, f->pf_fn, f->pf_vendor, f->pf_device,
			f->pf_class >> 8, f->pf_bar[0], f->pf_bar[1]);
	}
	if (!nfunctions)
		return command_reply(r, WIRE_REPLY_OK, "no PCI functions: %s", absent);
	if (io_unplaced)
		return command_reply(r, WIRE_REPLY_OK,
				     "%u PCI functions, %u I/O BARs left without an "
				     "address (the I/O window is full)", nfunctions, io_unplaced);
	return command_reply(r, WIRE_REPLY_OK, "%u PCI functions", nfunctions);
}
COMMAND(pci) = { "pci", "list the PCI functions found at boot", cmd_pci };
