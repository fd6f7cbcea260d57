/*
 * pci.c — sun4u's PCI: the sabre host bridge and simba B behind it.
 *
 * QEMU's sun4u (hw/pci-host/sabre.c, hw/pci-bridge/simba.c) has one root
 * bus: sabre itself at 0:0.0 and two simba PCI-PCI bridges, B at 0:1.0 and
 * A at 0:1.1. The on-board devices (ebus with the 16550s, the IDE) sit
 * behind A; the free slots are behind B, where the harness puts
 * virtio-serial-pci (`bus=pciB,addr=3`). Nothing is set up at reset and
 * there is no firmware to do it (our own PROM), so arch_pci_setup does
 * what OpenBIOS would for B: secondary and subordinate bus 1, an I/O
 * window, and I/O + bus-master in its command register. The kernel then
 * scans buses 0 and 1, and core/pci.c gives the BARs it finds unassigned
 * addresses inside the window this file names (arch_pci_io_window). A is
 * left as the reset leaves it, so the console never moves.
 *
 * Address map (physical, reached with the MMU's bypass ASIs):
 *   0x1fe01000000 + (bus << 16 | devfn << 8 | reg)   configuration space
 *   0x1fe02000000 + port                             PCI I/O space
 * Both regions are little-endian devices in QEMU (sabre.c, virtio-pci.c), so
 * 16- and 32-bit accesses use ASI 0x1d, ASI_PHYS_BYPASS_EC_E_L: the CPU
 * swaps the bytes and the value comes out as the device meant it, which
 * is what arch.h asks of these accessors. (Bytes are the same through
 * either ASI.) Each access is one instruction to one address — no
 * address/data register pair as on the pc — and sun4u has one CPU, so no
 * lock is needed.
 *
 * DMA: sabre's IOMMU is off after reset, and QEMU's sun4u_iommu.c then
 * passes every PCI address through as the physical address; the kernel
 * maps RAM one to one, so mm_virt_to_phys gives the bus address of a ring
 * or buffer as it does on the pc. Simba B's bus-master bit is set, as a
 * bridge needs to forward its devices' DMA upstream; QEMU 7.2 does not
 * check it (with the bit clear the port still worked), so nothing here
 * proves it is needed, only that it is what the hardware asks.
 */
#include "arch.h"
#include "arch_sparc64.h"

#define SABRE_PCI_CONFIG  UL(0x1fe01000000)
#define SABRE_PCI_IO      UL(0x1fe02000000)

enum {
	PCI_REG_ID = 0x00, PCI_REG_COMMAND = 0x04,
	BRIDGE_REG_BUSES = 0x18,        /* primary, secondary, subordinate, latency */
	BRIDGE_REG_IO = 0x1c,           /* I/O base, limit; secondary status above */
	BRIDGE_REG_IO_UPPER = 0x30,     /* base and limit bits 31:16 */
	BRIDGE_IO_32BIT = 0x01,         /* low nibble of I/O base/limit: 32-bit */
};
enum { CMD_IO = 1, CMD_MEMORY = 2, CMD_MASTER = 4 };

enum { SUN_VENDOR = 0x108e, SABRE_DEVICE = 0xa000, SIMBA_DEVICE = 0x5000 };
enum { SIMBA_B_DEV = 1, SIMBA_B_FN = 0, BUS_B = 1 };

/* The I/O addresses routed to bus B: 64 KiB above everything the ebus
 * decodes behind A (its ISA ports, the power register at 0x7240), so the
 * two windows can never overlap, whatever A's window is widened to. */
enum { IO_WINDOW_BASE = 0x10000, IO_WINDOW_LIMIT = 0x1ffff };

static inline uint32_t lduwa_le(uint64_t pa)
{
	uint32_t v;
	__asm__ volatile("lduwa [%1] 0x1d, %0" : "=r"(v) : "r"(pa) : "memory");
	return v;
}

static inline void stwa_le(uint64_t pa, uint32_t v)
{
	__asm__ volatile("stwa %0, [%1] 0x1d" : : "r"(v), "r"(pa) : "memory");
}

static inline uint16_t lduha_le(uint64_t pa)
{
	uint16_t v;
	__asm__ volatile("lduha [%1] 0x1d, %0" : "=r"(v) : "r"(pa) : "memory");
	return v;
}

static inline void stha_le(uint64_t pa, uint16_t v)
{
	__asm__ volatile("stha %0, [%1] 0x1d" : : "r"(v), "r"(pa) : "memory");
}

static uint64_t config_address(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	return SABRE_PCI_CONFIG | (bus & 0xff) << 16 | (dev & 0x1f) << 11 |
	       (fn & 7) << 8 | (reg & 0xfc);
}

uint32_t arch_pci_config_read(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	return lduwa_le(config_address(bus, dev, fn, reg));
}

void arch_pci_config_write(unsigned bus, unsigned dev, unsigned fn, unsigned reg,
			   uint32_t value)
{
	stwa_le(config_address(bus, dev, fn, reg), value);
	/* The write reprograms QEMU's routing (a bridge's windows, a BAR):
	 * let it land before the next access relies on it. */
	__asm__ volatile("membar #Sync" ::: "memory");
}

unsigned arch_pci_setup(const char **why)
{
	uint32_t id = arch_pci_config_read(0, 0, 0, PCI_REG_ID);
	if (id != ((uint32_t)SABRE_DEVICE << 16 | SUN_VENDOR)) {
		*why = "sun4u: no sabre host bridge (108e:a000) at 0:0.0";
		return 0;
	}
	id = arch_pci_config_read(0, SIMBA_B_DEV, SIMBA_B_FN, PCI_REG_ID);
	if (id != ((uint32_t)SIMBA_DEVICE << 16 | SUN_VENDOR)) {
		*why = "sun4u: no simba bridge (108e:5000) at 0:1.0";
		return 1;
	}
	/* Bus numbers: primary 0, secondary and subordinate 1. */
	arch_pci_config_write(0, SIMBA_B_DEV, SIMBA_B_FN, BRIDGE_REG_BUSES,
			      (uint32_t)BUS_B << 16 | (uint32_t)BUS_B << 8);
	/* I/O window: bits 15:12 in the base/limit bytes, 31:16 in the upper
	 * registers; zero in the secondary status half (its bits clear on 1). */
	arch_pci_config_write(0, SIMBA_B_DEV, SIMBA_B_FN, BRIDGE_REG_IO,
			      (((IO_WINDOW_LIMIT >> 8) & 0xf0) | BRIDGE_IO_32BIT) << 8 |
			      (((IO_WINDOW_BASE >> 8) & 0xf0) | BRIDGE_IO_32BIT));
	arch_pci_config_write(0, SIMBA_B_DEV, SIMBA_B_FN, BRIDGE_REG_IO_UPPER,
			      (uint32_t)(IO_WINDOW_LIMIT >> 16) << 16 | IO_WINDOW_BASE >> 16);
	uint32_t cmd = arch_pci_config_read(0, SIMBA_B_DEV, SIMBA_B_FN, PCI_REG_COMMAND);
	arch_pci_config_write(0, SIMBA_B_DEV, SIMBA_B_FN, PCI_REG_COMMAND,
			      (cmd & 0xffff) | CMD_IO | CMD_MASTER);
	return BUS_B + 1;
}

bool arch_pci_io_window(uint32_t *base, uint32_t *limit)
{
	*base = IO_WINDOW_BASE;
	*limit = IO_WINDOW_LIMIT;
	return true;
}

uint8_t arch_pci_io_read8(uint32_t port)   { return lduba_phys(SABRE_PCI_IO + port); }
uint16_t arch_pci_io_read16(uint32_t port) { return lduha_le(SABRE_PCI_IO + port); }
uint32_t arch_pci_io_read32(uint32_t port) { return lduwa_le(SABRE_PCI_IO + port); }
void arch_pci_io_write8(uint32_t port, uint8_t v)   { stba_phys(SABRE_PCI_IO + port, v); }
void arch_pci_io_write16(uint32_t port, uint16_t v) { stha_le(SABRE_PCI_IO + port, v); }
void arch_pci_io_write32(uint32_t port, uint32_t v) { stwa_le(SABRE_PCI_IO + port, v); }
