/*
 * acpi.c — just enough ACPI to find the CPUs: the RSDP in the BIOS area,
 * the RSDT, and the MADT's processor-local-APIC entries (type 0, flag bit 0
 * = enabled). Every table's checksum is verified; a table that fails is
 * ignored, and with no usable MADT the machine has one CPU.
 */
#include "arch_i386.h"
#include "kstring.h"

struct sdt_header {
	char     signature[4];
	uint32_t length;
	uint8_t  revision, checksum;
	char     oem[6], oem_table[8];
	uint32_t oem_revision, creator, creator_revision;
} __attribute__((packed));

static bool checksum_ok(const void *p, size_t n)
{
	uint8_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += ((const uint8_t *)p)[i];
	return sum == 0;
}

static const uint8_t *find_rsdp(void)
{
	/* The EBDA pointer lives in page 0, which we leave unmapped; QEMU's
	 * firmware puts the RSDP in the BIOS area, which is where we look. */
	for (uintptr_t a = 0xe0000; a < 0x100000; a += 16)
		if (memcmp((const void *)a, "RSD PTR ", 8) == 0 &&
		    checksum_ok((const void *)a, 20))
			return (const uint8_t *)a;
	return 0;
}

unsigned acpi_find_cpus(unsigned *apic_ids, unsigned max, uint32_t *lapic_phys)
{
	const uint8_t *rsdp = find_rsdp();
	if (!rsdp)
		return 0;
	const struct sdt_header *rsdt =
		(const void *)(uintptr_t)*(const uint32_t *)(rsdp + 16);
	if (memcmp(rsdt->signature, "RSDT", 4) || !checksum_ok(rsdt, rsdt->length))
		return 0;

	unsigned entries = (rsdt->length - sizeof *rsdt) / 4;
	const uint32_t *ptrs = (const uint32_t *)(rsdt + 1);
	for (unsigned i = 0; i < entries; i++) {
		const struct sdt_header *t = (const void *)(uintptr_t)ptrs[i];
		if (memcmp(t->signature, "APIC", 4) || !checksum_ok(t, t->length))
			continue;
		const uint8_t *p = (const uint8_t *)t + sizeof *t;
		*lapic_phys = *(const uint32_t *)p;
		const uint8_t *end = (const uint8_t *)t + t->length;
		unsigned n = 0, boot = lapic_id();
		apic_ids[n++] = boot;
		for (p += 8; p + 2 <= end && p[1] >= 2; p += p[1]) {
			if (p[0] == 0 && (*(const uint32_t *)(p + 4) & 1) &&
			    p[3] != boot && n < max)
				apic_ids[n++] = p[3];
		}
		return n;
	}
	return 0;
}
