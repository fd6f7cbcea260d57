/*
 * watch.c — i386 watches in the debug registers DR0-DR3, on every CPU.
 *
 * Slot i is DRi: its address, and in DR7 its enable bit L_i and its R/W
 * and LEN fields (x 00 with LEN 1, w 01, io 10 with CR4.DE, rw 11; LEN
 * 1, 2 or 4 bytes, the address aligned to it). Reads alone are not an
 * IA-32 type: `r` is refused. Arming writes the new DR0-3/DR7 image into
 * a table, loads it here with interrupts masked, and makes every other
 * CPU load it in its IPI handler (smp_call_others), so when arm or
 * disarm returns every CPU watches exactly the table. Every CPU runs the
 * same debug registers whatever thread it runs, so a switch changes
 * nothing. All CPUs are online before the tracer's init (init.h), so no
 * CPU comes up later with stale registers.
 *
 * The fire path is a #DB hook, registered before the single-step
 * baseline's. DR6's B0-B3 say which slots matched (masked with those
 * armed); the hook clears them — the CPU never does — records one WATCH
 * record per matched slot, and declines if the trap is also a single
 * step (DR6.BS with TF set in the frame: BS itself stays set from any
 * earlier step, since the CPU never clears DR6), so that a single step
 * that touched a watch goes on to the step hook. Data and
 * I/O watches are traps: the access is done, EIP is the next
 * instruction, and the value recorded is the one in memory (or eax)
 * now. An execute watch is a fault before the instruction runs: the hook
 * sets EFLAGS.RF in the frame so that the iret resumes the instruction
 * without matching again (QEMU 7.2 checks RF before raising a code
 * breakpoint and clears it after one instruction), so each access fires
 * once. An instruction that both executes at a watched address and has
 * a probe there fires the watch (#DB, fault) first, then the probe
 * (#BP/#UD).
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

/* The #DB hook (top of the file). */
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
