/*
 * stubs.c — the kernel and the arch layer as the fuzz targets see them:
 * one CPU, one thread, no interrupts, a text segment that is a page-aligned
 * mapping at a fixed address (FAKE_TEXT, so that a dictionary and saved
 * inputs can name its addresses), and a window of memory (FAKE_MAP) whose
 * odd pages are mapped PROT_NONE. The guest's own peek.c reads that memory
 * under trap_try, which is a sigsetjmp here: a SIGSEGV or SIGBUS inside a
 * try comes back as a caught trap, anywhere else it goes on to the handler
 * that was there before (libFuzzer's, ASan's), which reports the crash.
 * The arch's probe layer decodes any aligned word of the fake text and
 * arms by storing FAKE_TRAP over it; stub_check_text() proves that every
 * enabled probe's word holds the trap and every other word its original.
 * Frames the guest sends (link.c through serial_write) are kept in
 * stub_out for the target to deframe. A store to a page dirty.c tracks
 * faults first, and goes on once dirty.c has marked it. Nothing here
 * names a real arch.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "stubs.h"
#include "dirty.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "exit.h"
#include "init.h"
#include "link.h"
#include "mm.h"
#include "miss_account.h"
#include "selftest.h"
#include "serial.h"
#include "spinlock.h"
#include "thread.h"
#include "timer.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "tarch/mechanisms.h"
#include "virtio_console.h"
#include "watch.h"
#include "stack.h"

/* ---- the address space ---- */

__asm__(".globl __text_start\n.set __text_start, " STUB_STR(FAKE_TEXT) "\n"
	".globl __text_end\n.set __text_end, " STUB_STR(FAKE_TEXT_END) "\n"
	".globl __notrace_start\n.set __notrace_start, " STUB_STR(FAKE_NOTRACE) "\n"
	".globl __notrace_end\n.set __notrace_end, " STUB_STR(FAKE_NOTRACE_END) "\n"
	".globl __tracer_text_start\n.set __tracer_text_start, " STUB_STR(FAKE_NOTRACE) "\n"
	".globl __tracer_text_end\n.set __tracer_text_end, " STUB_STR(FAKE_NOTRACE_END) "\n"
	".globl __kernel_end\n.set __kernel_end, " STUB_STR(FAKE_KERNEL_END) "\n"
	".globl __notrace_data_start\n.set __notrace_data_start, " STUB_STR(FAKE_TEXT_END) "\n"
	".globl __notrace_data_end\n.set __notrace_data_end, " STUB_STR(FAKE_NOTRACE_DATA_END) "\n"
	".globl __notrace_bss_start\n.set __notrace_bss_start, " STUB_STR(FAKE_NOTRACE_DATA_END) "\n"
	".globl __notrace_bss_end\n.set __notrace_bss_end, " STUB_STR(FAKE_NOTRACE_DATA_END) "\n");

const unsigned mm_page_size = 4096;
uint8_t stub_original[FAKE_TEXT_BYTES];

static void map_fixed(uintptr_t at, size_t bytes, int prot)
{
	void *p = mmap((void *)at, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS |
		       MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)at) {
		fprintf(stderr, "stubs: cannot map %#lx\n", (unsigned long)at);
		abort();
	}
}

/* The fake text: every word a different value, so that a store that lands
 * on the wrong word is seen; the data after it for watches; the window. */
static void map_memory(void)
{
	map_fixed(FAKE_TEXT, FAKE_KERNEL_END - FAKE_TEXT, PROT_READ | PROT_WRITE);
	for (unsigned i = 0; i < FAKE_TEXT_BYTES; i++)
		stub_original[i] = (uint8_t)(i * 13 + 7);
	stub_original[0] = FAKE_REFUSED;          /* a word the arch refuses */
	memcpy((void *)FAKE_TEXT, stub_original, FAKE_TEXT_BYTES);
	map_fixed(FAKE_MAP, FAKE_MAP_BYTES, PROT_READ | PROT_WRITE);
	for (unsigned i = 0; i < FAKE_MAP_BYTES; i++)
		((uint8_t *)FAKE_MAP)[i] = (uint8_t)(i % 251 ? i : 0);
	for (uintptr_t pg = FAKE_MAP + 4096; pg < FAKE_MAP + FAKE_MAP_BYTES; pg += 8192)
		mprotect((void *)pg, 4096, PROT_NONE);
}

/* ---- trap_try: a fault inside fn comes back as a caught trap ---- */

static sigjmp_buf *volatile trying;
static struct sigaction old_segv, old_bus;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	if (sig == SIGSEGV && dirty_fault(si->si_addr))
		return;         /* a first store to a tracked page: it goes on */
	if (trying) {
		sigjmp_buf *j = trying;
		trying = 0;
		siglongjmp(*j, sig);
	}
	struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
	if (old->sa_flags & SA_SIGINFO)
		old->sa_sigaction(sig, si, uc);
	else if (old->sa_handler != SIG_IGN && old->sa_handler != SIG_DFL)
		old->sa_handler(sig);
	else {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

bool trap_try(void (*fn)(void *), void *arg, struct caught_trap *caught)
{
	sigjmp_buf here, *outer = trying;
	int sig = sigsetjmp(here, 1);
	if (sig) {
		trying = outer;
		memset(caught, 0, sizeof *caught);
		caught->vector = (unsigned)sig;
		caught->name = sig == SIGSEGV ? "SIGSEGV" : "SIGBUS";
		stub_faults++;
		return true;
	}
	trying = &here;
	fn(arg);
	trying = outer;
	return false;
}

unsigned long stub_faults;

/* ---- one CPU, one thread ---- */

struct cpu cpus[KERNEL_MAX_CPUS];
static struct thread me = { .id = 1 };

struct cpu *host_cpu(void) { return &cpus[0]; }
unsigned cpu_count(void) { return 1; }
struct thread *thread_current(void) { return &me; }
void thread_sleep(uint64_t ticks) { (void)ticks; }
void thread_yield(void) { }
void thread_set_prompt(struct thread *t, bool prompt) { (void)t, (void)prompt; }
void sched_kick_self(void) { }
void smp_call_others(void (*fn)(void *), void *arg) { (void)fn, (void)arg; }
struct thread *thread_create(const char *name, void (*fn)(void *), void *arg,
			     unsigned cpu)
{
	(void)name, (void)fn, (void)arg, (void)cpu;
	return &me;             /* never run: the targets drain nothing */
}
void thread_join(struct thread *t) { (void)t; }

uint64_t arch_cycles(void) { return 1000; }
uint64_t arch_cycles_hz(void) { return 1000000; }
irqflags_t arch_irq_save(void) { return 0; }
void arch_irq_restore(irqflags_t flags) { (void)flags; }
irqflags_t spin_lock_irqsave(spinlock_t *lock) { (void)lock; return 0; }
void spin_unlock_irqrestore(spinlock_t *lock, irqflags_t flags) { (void)lock, (void)flags; }
void spin_lock(spinlock_t *lock) { (void)lock; }
void spin_unlock(spinlock_t *lock) { (void)lock; }
const char arch_name[] = "host";
const char arch_crash_kinds[] = "none";
const unsigned arch_timer_hz_min = 10, arch_timer_hz_max = 20000;
void arch_crash(const char *kind) { (void)kind; }
static unsigned hz = 100;
unsigned timer_hz(void) { return hz; }
bool timer_set_hz(unsigned h) { if (h < 10) return false; hz = h; return true; }
uint64_t timer_ticks(void) { return 1; }
uint64_t timer_ticks_skipped(void) { return 0; }

/* What never returns in a guest ends the target's current input. */
jmp_buf stub_stop;
_Noreturn void kernel_exit(unsigned status) { (void)status; longjmp(stub_stop, 2); }
_Noreturn void arch_hang(void) { longjmp(stub_stop, 3); }
_Noreturn void panic(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "guest panic: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();                /* a panic is a finding */
}
unsigned selftest_run(const char *area) { (void)area; return 0; }
/* The reentrancy self-test (selftest_reentry.c) is the guest's own: off. */
volatile unsigned reentry_test, reentry_broken;
void reentry_probe_point(void) { abort(); }
/* One thread on the host: program_tls.c's slot is 0. */
unsigned thread_slot_claim(void) { return 0; }

/* ---- pages ----
 * From mmap, zero as the guest's allocator gives them, and lazily: a
 * `trace buffer` of megabytes costs nothing until it is written (zeroed
 * by memset, each resize faulted in every page, most of an `args`
 * execution). ASan does not watch mmap'd memory, so a PROT_NONE page on
 * each side stands in for its redzones: an allocation is whole pages, so
 * a store one byte past either end faults. */

void *pages_alloc(size_t npages)
{
	if (!npages || npages > (1ul << 40) / 4096)
		return 0;
	uint8_t *p = mmap(0, (npages + 2) * 4096, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	if (mprotect(p + 4096, npages * 4096, PROT_READ | PROT_WRITE) != 0) {
		munmap(p, (npages + 2) * 4096);
		return 0;
	}
	return p + 4096;
}
void pages_free(void *p, size_t npages)
{
	if (p && munmap((uint8_t *)p - 4096, (npages + 2) * 4096) != 0)
		abort();
}
void *mm_alias_writable(const void *va) { return (void *)va; }
uintptr_t mm_virt_to_phys(const void *va) { return (uintptr_t)va; }
bool mm_tlb_lock_data(const void *va) { (void)va; return false; }
void mm_tlb_unlock_all(void) { }
unsigned mm_tlb_locked(void) { return 0; }
const bool miss_account_tlb_visible = false;
void miss_account_code(uintptr_t lo, uintptr_t hi) { (void)lo, (void)hi; }
void miss_account_data(unsigned cpu, uintptr_t lo, uintptr_t hi) { (void)cpu, (void)lo, (void)hi; }
void miss_account_read(unsigned cpu, struct miss_cpu *out) { (void)cpu; memset(out, 0, sizeof *out); }
void miss_account_reset(void) { }
void miss_account_serve_xo(bool on) { (void)on; }

/* ---- the serial line and the console ---- */

uint8_t stub_out[STUB_OUT_BYTES];
size_t stub_out_len;
const uint8_t *stub_in;
size_t stub_in_len, stub_in_at;

void serial_write(const void *buf, size_t len)
{
	if (stub_out_len + len > sizeof stub_out) {
		fprintf(stderr, "stubs: more than %zu bytes sent for one input\n",
			sizeof stub_out);
		abort();
	}
	if (len)        /* link_send passes (0, 0) for an absent body */
		memcpy(stub_out + stub_out_len, buf, len);
	stub_out_len += len;
	stub_on_write();
}
int serial_getc(void)
{
	if (stub_in_at >= stub_in_len)
		return -1;
	int c = stub_in[stub_in_at++];
	if (c == '\n')
		stub_on_line();
	return c;
}
void serial_wait_input(void) { longjmp(stub_stop, 1); }
unsigned long serial_rx_overruns(void) { return 0; }
unsigned long serial_tx_bytes(void) { return stub_out_len; }
unsigned long serial_rx_bytes(void) { return stub_in_at; }
int kvprintf(const char *fmt, va_list ap)
{
	char buf[256];
	return kvsnprintf(buf, sizeof buf, fmt, ap);   /* formatted, not kept */
}
int kprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = kvprintf(fmt, ap);
	va_end(ap);
	return n;
}
void console_flush(void) { }

bool vcon_open(const char *name, const char **why) { (void)name; *why = "host: none"; return false; }
uint8_t *vcon_tx_get(void) { return 0; }
uint64_t vcon_tx_returned(void) { return 0; }
void vcon_tx_put(uint8_t *buf, size_t len) { (void)buf, (void)len; }
void vcon_get_stats(struct vcon_stats *out) { memset(out, 0, sizeof *out); }

/* ---- the tracer's arch layer ---- */

enum { TARCH_MECHANISMS(MECHANISM_ENUM) };
const struct tarch_mechanism tarch_mechanisms[] = { TARCH_MECHANISMS(MECHANISM_ROW) };
const unsigned tarch_nmechanisms = sizeof tarch_mechanisms / sizeof tarch_mechanisms[0];
const bool tarch_phys_stores = false;
const unsigned tarch_watch_slots = 2;
const unsigned tarch_check_words = 0;
const unsigned tarch_cost_kind = WIRE_EVENT_ENTRY;
void tarch_init(void) { }
void tarch_phys_store(uintptr_t pa, const void *src, unsigned bytes) { (void)pa, (void)src, (void)bytes; abort(); }
const char *tarch_set_code_bytes(enum tarch_code_bytes how) { (void)how; return "the host build reads no code bytes"; }

int tarch_decode(uintptr_t addr, unsigned kind, struct tarch_site *site, const char **why)
{
	(void)kind;
	if (addr & 3) {
		*why = "misaligned";
		return -1;
	}
	if (addr == FAKE_TEXT) {
		*why = "the host arch refuses the first word";
		return -1;
	}
	memcpy(&site->insn, (const void *)addr, 4);
	if (site->insn == FAKE_TRAP) {
		*why = "a trap is already there";
		return -1;
	}
	return 0;
}
bool tarch_can_arm(const struct probe *p, const char **why) { (void)p, (void)why; return true; }
void tarch_arm(struct probe *p)
{
	uint32_t trap = FAKE_TRAP;
	memcpy(tracer_text_alias(p->addr), &trap, 4);
}
void tarch_disarm(struct probe *p)
{
	memcpy(tracer_text_alias(p->addr), &p->site.insn, 4);
}
void tarch_stage(void) { }

/* Return trampolines (i386 opt's): none here, as on an arch without. */
int tarch_probe_ride(struct probe *entry, struct probe *ret, const char **why)
{
	(void)entry, (void)ret;
	*why = "the fuzz host has no return trampolines";
	return -1;
}
void tarch_ride_stats(unsigned long n[TARCH_RIDE_STATS])
{
	for (unsigned i = 0; i < TARCH_RIDE_STATS; i++)
		n[i] = 0;
}

/* A stack walk: a fixed two frames from the context's registers, so the
 * `stack` instruction's table (stacks.c) is fuzzed with real ids. */
unsigned tarch_stack_walk(const struct tarch_context *ctx, const struct probe *p,
			  uintptr_t *pcs, unsigned max)
{
	(void)p;
	const struct stub_context *c = (const void *)ctx;
	unsigned n = 0;
	for (; n < max && n < 2; n++)
		pcs[n] = c ? (uintptr_t)c->reg[n] : 0x1000 + n;
	return n;
}

bool tarch_context_reg(const struct tarch_context *ctx, const struct probe *p,
		       unsigned reg, unsigned long *value)
{
	(void)p;
	const struct stub_context *c = (const void *)ctx;
	if (reg >= STUB_REGS)
		abort();        /* the validator let a register through */
	*value = c->reg[reg];
	return true;
}
bool tarch_context_arg(const struct tarch_context *ctx, const struct probe *p,
		       unsigned n, unsigned long *value)
{
	(void)p;
	const struct stub_context *c = (const void *)ctx;
	if (n >= STUB_ARGS)
		abort();        /* the validator or args.c let a word through */
	if (!c->have_args)
		return false;
	*value = c->arg[n];
	return true;
}
bool tarch_context_retval(const struct tarch_context *ctx, const struct probe *p,
			  unsigned long *value)
{
	(void)p;
	const struct stub_context *c = (const void *)ctx;
	*value = c->reg[0];
	return c->have_args;
}

bool tarch_watch_check(unsigned type, uintptr_t addr, unsigned len, const char **why)
{
	(void)type, (void)addr, (void)len, (void)why;
	return true;
}
void tarch_watch_arm(unsigned slot, const struct probe *p, unsigned type, unsigned len)
{
	(void)p, (void)type, (void)len;
	if (slot >= tarch_watch_slots)
		abort();
}
void tarch_watch_disarm(unsigned slot)
{
	if (slot >= tarch_watch_slots)
		abort();
}
const char *tarch_watch_stopped(unsigned slot, uintptr_t *pc, uint32_t *word)
{
	(void)slot, (void)pc, (void)word;
	return 0;
}
int tarch_itrace_arm(const struct probe *p, unsigned method, unsigned long skip,
		     unsigned long regions, const char **why)
{
	(void)p, (void)method, (void)skip, (void)regions;
	*why = "the host build traces no instructions";
	return -1;
}
void tarch_itrace_disarm(void) { }
size_t tarch_itrace_stats(char *buf, size_t size) { return ksnprintf(buf, size, "none"); }

/* ---- start-up ---- */

void stub_init(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	map_memory();
	cpus[0].self = &cpus[0];
	cpus[0].online = true;
	cpus[0].current = &me;
	link_init();
	for (kernel_init_fn *const *f = __kernel_init_start; f < __kernel_init_end; f++)
		(*f)();
}

/* The probe table and the text agree: an enabled probe's word is the trap,
 * every other word of the text the original. */
void stub_check_text(void)
{
	static uint8_t want[FAKE_TEXT_BYTES];
	memcpy(want, stub_original, sizeof want);
	for (unsigned id = 0; id < TRACER_MAX_PROBES; id++) {
		const struct probe *p = &tracer_probes[id];
		if (p->state != PROBE_ENABLED || p->kind == WIRE_EVENT_WATCH)
			continue;
		if (p->addr < FAKE_TEXT || p->addr + 4 > FAKE_TEXT_END) {
			fprintf(stderr, "probe %u enabled outside the text at %#lx\n",
				id, (unsigned long)p->addr);
			abort();
		}
		uint32_t trap = FAKE_TRAP;
		memcpy(want + (p->addr - FAKE_TEXT), &trap, 4);
	}
	if (memcmp(want, (const void *)FAKE_TEXT, sizeof want) != 0) {
		for (unsigned i = 0; i < sizeof want; i++)
			if (want[i] != ((const uint8_t *)FAKE_TEXT)[i]) {
				fprintf(stderr, "text byte %#lx is %#x, the probes "
					"say %#x\n", (unsigned long)(FAKE_TEXT + i),
					((const uint8_t *)FAKE_TEXT)[i], want[i]);
				break;
			}
		abort();
	}
}
