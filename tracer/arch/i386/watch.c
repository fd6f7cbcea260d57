/*
 * watch.c — i386 watches in the debug registers DR0-DR3, on every CPU.
 *
 * Slot i is DRi, with its enable bit and R/W and LEN fields in DR7 (x 00,
 * w 01, io 10 with CR4.DE, rw 11; 1, 2 or 4 bytes, aligned; `r` alone is
 * no IA-32 type). Arming or disarming loads the new DR0-3/DR7 here and, by
 * IPI, on every other CPU before it returns; every thread runs under the
 * same registers, and every CPU is online before the tracer's init, so
 * none comes up without them. The fire path is a #DB hook registered
 * before the step baseline's: one WATCH record per slot DR6 names. Data
 * and I/O watches trap after the access (EIP is the next instruction);
 * an execute watch faults before it, and fires before a probe on the
 * same instruction.
 */
#include "arch/trapframe.h"
#include "arch/vectors.h"
#include "arch/x86.h"
#include "context.h"
#include "console.h"
#include "cpu.h"
#include "mm.h"
#include "spinlock.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

#define DR6_B_MASK  0xfu
#define DR6_BS      0x4000u
#define DR7_GE_LE   0x300u         /* exact data breakpoints, as Intel advises */
#define CR4_DE      0x8u
#define EFLAGS_RF   0x10000u

const unsigned tarch_watch_slots = 4;

struct dregs {
	uint32_t addr[4];
	uint32_t dr7;
};

/* What every CPU loads; the fire path's view of each slot. */
static struct dregs table;
static volatile uint32_t slot_probe[4];     /* probe id + 1, 0: free */
static uint8_t slot_type[4], slot_len[4];
/* A second mapping of each data watch's page (mm.h): the fire path reads
 * the value through it, since a read at the watched address itself would
 * match an rw watch again, inside its own handler, for ever. */
static const volatile uint8_t *slot_alias[4];

static uint32_t read_dr6(void)
{
	uint32_t v;
	__asm__ volatile("mov %%dr6, %0" : "=r"(v));
	return v;
}

static void write_dr6(uint32_t v)
{
	__asm__ volatile("mov %0, %%dr6" :: "r"(v));
}

static void set_de(void)
{
	uint32_t cr4;
	__asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
	if (!(cr4 & CR4_DE))
		__asm__ volatile("mov %0, %%cr4" :: "r"(cr4 | CR4_DE));
}

/* This CPU loads the table (interrupts masked: the IPI handler, or arm). */
static void load_table(void *arg)
{
	(void)arg;
	set_de();
	__asm__ volatile("mov %0, %%dr7" :: "r"(0u));
	__asm__ volatile("mov %0, %%dr0" :: "r"(table.addr[0]));
	__asm__ volatile("mov %0, %%dr1" :: "r"(table.addr[1]));
	__asm__ volatile("mov %0, %%dr2" :: "r"(table.addr[2]));
	__asm__ volatile("mov %0, %%dr3" :: "r"(table.addr[3]));
	__asm__ volatile("mov %0, %%dr7" :: "r"(table.dr7));
}

static void load_everywhere(void)
{
	irqflags_t f = arch_irq_save();
	load_table(0);
	arch_irq_restore(f);
	smp_call_others(load_table, 0);
}

static uint32_t rw_bits(unsigned type)
{
	switch (type) {
	case WIRE_WATCH_EXEC:  return 0;
	case WIRE_WATCH_WRITE: return 1;
	case WIRE_WATCH_IO:    return 2;
	default:               return 3;     /* RW */
	}
}

static uint32_t len_bits(unsigned len)
{
	return len == 1 ? 0 : len == 2 ? 1 : 3;
}

bool tarch_watch_check(unsigned type, uintptr_t addr, unsigned len,
		       const char **why)
{
	if (type == WIRE_WATCH_READ) {
		*why = "IA-32 debug registers watch writes (w) or reads and writes (rw), "
		       "not reads alone";
		return false;
	}
	if (type == WIRE_WATCH_EXEC && len != 1) {
		*why = "an execute watch is one instruction: length 1";
		return false;
	}
	if (len != 1 && len != 2 && len != 4) {
		*why = "a debug register watches 1, 2 or 4 bytes";
		return false;
	}
	if (addr & (len - 1)) {
		*why = "the address must be aligned to the length";
		return false;
	}
	return true;
}

void tarch_watch_arm(unsigned slot, const struct probe *p, unsigned type,
		     unsigned len)
{
	slot_type[slot] = (uint8_t)type;
	slot_len[slot] = (uint8_t)len;
	if (type != WIRE_WATCH_EXEC && type != WIRE_WATCH_IO) {
		slot_alias[slot] = mm_alias_writable((const void *)p->addr);
		if (!slot_alias[slot])
			panic("watch %u: no alias of 0x%lx", p->id, (unsigned long)p->addr);
	}
	slot_probe[slot] = p->id + 1;
	table.addr[slot] = (uint32_t)p->addr;
	table.dr7 &= ~(3u << (2 * slot) | 0xfu << (16 + 4 * slot));
	table.dr7 |= 1u << (2 * slot) | DR7_GE_LE |
		     (rw_bits(type) | len_bits(len) << 2) << (16 + 4 * slot);
	load_everywhere();
}

const char *tarch_watch_stopped(unsigned slot, uintptr_t *pc, uint32_t *word)
{
	(void)slot; (void)pc; (void)word;
	return 0;                       /* the hardware watches whatever touches it */
}

void tarch_watch_disarm(unsigned slot)
{
	table.dr7 &= ~(3u << (2 * slot) | 0xfu << (16 + 4 * slot));
	table.addr[slot] = 0;
	if (!(table.dr7 & 0xffu))
		table.dr7 = 0;
	load_everywhere();
	slot_probe[slot] = 0;
	if (slot_alias[slot])
		mm_alias_release((void *)(uintptr_t)slot_alias[slot]);
	slot_alias[slot] = 0;
}

static unsigned long value_of(unsigned slot, const struct trapframe *tf)
{
	unsigned len = slot_len[slot];
	unsigned long mask = len == 4 ? 0xfffffffful : (1ul << (8 * len)) - 1;
	const volatile uint8_t *a = slot_alias[slot];
	switch (slot_type[slot]) {
	case WIRE_WATCH_EXEC:
		return 0;
	case WIRE_WATCH_IO:
		return tf->eax & mask;
	default:
		if (len == 1)
			return *a;
		if (len == 2)
			return *(const volatile uint16_t *)a;
		return *(const volatile uint32_t *)a;
	}
}

/* DR6's B0-B3 name the slots that matched; the CPU never clears them, so
 * the hook does. A #DB is also a single step only with TF set in the
 * frame (a DR6.BS left by an earlier step is stale): then the hook
 * declines after recording, and the step hook has it. An execute watch
 * sets EFLAGS.RF in the frame, so the iret runs the instruction without
 * matching again (QEMU 7.2 checks RF before a code breakpoint and clears
 * it after one instruction): each access fires once, none is skipped. */
static int i386_watch_trap(struct trapframe *tf)
{
	uint32_t dr6 = read_dr6();
	uint32_t hit = dr6 & DR6_B_MASK;
	if (!hit)
		return TRAP_DECLINED;
	/* The CPU never clears DR6: a BS left by an earlier single step
	 * (the step baseline's) is stale unless this trap is a step too. */
	bool step = (dr6 & DR6_BS) && (tf->eflags & EFLAGS_TF);
	write_dr6(dr6 & ~(DR6_B_MASK | (step ? 0 : DR6_BS)));
	const struct tarch_context ctx = { tf };
	bool ours = false;
	for (unsigned slot = 0; slot < 4; slot++) {
		uint32_t id = slot_probe[slot];
		if (!(hit & 1u << slot) || !id)
			continue;
		const struct probe *p = &tracer_probes[id - 1];
		unsigned type = slot_type[slot], len = slot_len[slot];
		unsigned long w[WIRE_WATCH_NWORDS];
		w[WIRE_WATCH_W_PC] = tf->eip;
		w[WIRE_WATCH_W_ADDR] = p->addr;
		w[WIRE_WATCH_W_VALUE] = value_of(slot, tf);
		w[WIRE_WATCH_W_SIZE] = len;
		w[WIRE_WATCH_W_TYPE] = type;
		tracer_fire(p, WIRE_EVENT_WATCH, w, WIRE_WATCH_NWORDS, &ctx);
		if (type == WIRE_WATCH_EXEC)
			tf->eflags |= EFLAGS_RF;
		ours = true;
	}
	if (step)
		return TRAP_DECLINED;          /* the single step's too: its hook */
	return ours ? TRAP_HANDLED : TRAP_DECLINED;
}

void i386_watch_init(void)
{
	trap_hook_add(VEC_DB, i386_watch_trap);
}
