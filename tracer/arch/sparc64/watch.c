/*
 * watch.c — sparc64 watches, by trap and emulate on the watched page.
 *
 * QEMU's sun4u never raises a watchpoint trap, so a watch hides its 8 KiB
 * page from the MMU (mmu_page_hide); every data access to it then takes
 * the miss handler's no-fault-only TTE and raises data_access_exception.
 * This hook emulates the instruction at TPC through a second mapping of
 * the page and moves TPC past it — no single step, so no thread ever runs
 * unwatched — and fires the watches whose range the access touches; an
 * access elsewhere on the page is emulated without firing. Removing the
 * last watch of a page maps it normally again. In check mode every
 * emulated access writes a CHECK record (check.h's SPARC64_WCHECK) that
 * the host re-executes in unicorn (bench/check/sparc64_watch.py).
 */
#include "arch/arch_sparc64.h"
#include "arch/sparc64.h"
#include "arch/trapframe.h"
#include "check.h"
#include "console.h"
#include "context.h"
#include "mm.h"
#include "notrace.h"
#include "trap.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

#define TT_DATA_ACCESS_EXCEPTION 0x30
#define ASI_N   0x04
#define ASI_P   0x80

const unsigned tarch_watch_slots = 4;

struct wslot {
	uint32_t probe;            /* id + 1; 0: free */
	uint8_t  type, len;
	uintptr_t addr, page;
	uint64_t tte;              /* the page's TTE, put back at the end */
	volatile uint8_t *alias;   /* the page through a second mapping */
	const char *stopped;       /* why it stopped watching, or 0 (cannot) */
	uintptr_t stopped_pc;
	uint32_t stopped_word;
};

/* The page may not hold what the trap path touches (notrace.h's data and
 * bss, page-aligned apart by the linker script): a TL > 0 access there
 * would fault inside the miss handlers. */
static struct wslot slots[4];
/* The hook is firing or recording (one CPU; interrupts masked in it). */
static bool recording;

static uintptr_t page_of(uintptr_t a)
{
	return a & ~(PAGE_SIZE - 1);
}

static bool page_overlaps(uintptr_t page, const char *lo, const char *hi)
{
	return page < page_of((uintptr_t)hi + PAGE_SIZE - 1) &&
	       (uintptr_t)lo < page + PAGE_SIZE && lo != hi;
}

bool tarch_watch_check(unsigned type, uintptr_t addr, unsigned len,
		       const char **why)
{
	if (type == WIRE_WATCH_EXEC || type == WIRE_WATCH_IO) {
		*why = "sparc64 watches data accesses (r, w, rw): it has no I/O space, "
		       "and execute watches are probes' work here";
		return false;
	}
	if (len != 1 && len != 2 && len != 4 && len != 8) {
		*why = "a watch covers 1, 2, 4 or 8 bytes";
		return false;
	}
	if (addr & (len - 1)) {
		*why = "the address must be aligned to the length";
		return false;
	}
	uintptr_t page = page_of(addr);
	if (page_overlaps(page, __notrace_data_start, __notrace_data_end) ||
	    page_overlaps(page, __notrace_bss_start, __notrace_bss_end)) {
		*why = "its 8 KiB page holds data of the trap path or the tracer, which "
		       "must never fault";
		return false;
	}
	return true;
}

static uint64_t any_tte(uintptr_t page)
{
	for (unsigned i = 0; i < 4; i++)
		if (slots[i].probe && slots[i].page == page)
			return slots[i].tte;
	return 0;
}

static struct wslot *same_page(uintptr_t page, const struct wslot *not)
{
	for (unsigned i = 0; i < 4; i++)
		if (slots[i].probe && &slots[i] != not && slots[i].page == page)
			return &slots[i];
	return 0;
}

void tarch_watch_arm(unsigned slot, const struct probe *p, unsigned type,
		     unsigned len)
{
	struct wslot *s = &slots[slot];
	uintptr_t page = page_of(p->addr);
	struct wslot *other = same_page(page, s);
	s->type = (uint8_t)type;
	s->len = (uint8_t)len;
	s->addr = p->addr;
	s->page = page;
	if (other) {
		s->tte = other->tte;
		s->alias = other->alias;
		s->stopped = other->stopped;        /* the page is not hidden now */
		s->stopped_pc = other->stopped_pc;
		s->stopped_word = other->stopped_word;
	} else {
		uint8_t *a = mm_alias_writable((const void *)page);
		if (!a)
			panic("watch %u: no alias of the page 0x%lx", p->id,
			      (unsigned long)page);
		s->alias = a;
	}
	irqflags_t f = arch_irq_save();
	s->probe = p->id + 1;
	if (!other)
		s->tte = mmu_page_hide(page);
	arch_irq_restore(f);
}

void tarch_watch_disarm(unsigned slot)
{
	struct wslot *s = &slots[slot];
	irqflags_t f = arch_irq_save();
	s->probe = 0;
	struct wslot *other = same_page(s->page, s);
	if (!other)
		mmu_page_restore(s->page, s->tte);
	arch_irq_restore(f);
	if (!other)
		mm_alias_release((void *)s->alias);
	*s = (struct wslot){ 0 };
}

/* ---- decode and emulate ---- */

#define OP(w)      ((w) >> 30)
#define OP3(w)     (((w) >> 19) & 0x3f)
#define RD(w)      (((w) >> 25) & 0x1f)
#define RS1(w)     (((w) >> 14) & 0x1f)
#define IBIT(w)    (((w) >> 13) & 1)
#define RS2(w)     ((w) & 0x1f)
#define IMM_ASI(w) (((w) >> 5) & 0xff)
#define SIMM13(w)  ((uint64_t)((int64_t)((uint64_t)(w) << 51) >> 51))

enum access { LOAD, STORE, LDSTUB, SWAP, CAS };

struct mem_op {
	enum access what;
	uint8_t size;
	bool sign;
};

/* op3 & 0x2f (the ASI forms are op3 | 0x10) of the plain forms. */
static bool classify(uint32_t w, struct mem_op *m, const char **why)
{
	unsigned op3 = OP3(w);
	if (OP(w) != 3) {
		*why = "not a load or store";
		return false;
	}
	if (op3 == 0x3c || op3 == 0x3e) {
		*m = (struct mem_op){ CAS, op3 == 0x3c ? 4 : 8, false };
		return true;
	}
	if (op3 >= 0x20) {
		*why = "a floating-point or prefetch access";
		return false;
	}
	switch (op3 & 0x0f) {
	case 0x0: *m = (struct mem_op){ LOAD, 4, false }; return true;   /* lduw */
	case 0x1: *m = (struct mem_op){ LOAD, 1, false }; return true;   /* ldub */
	case 0x2: *m = (struct mem_op){ LOAD, 2, false }; return true;   /* lduh */
	case 0x4: *m = (struct mem_op){ STORE, 4, false }; return true;  /* stw */
	case 0x5: *m = (struct mem_op){ STORE, 1, false }; return true;  /* stb */
	case 0x6: *m = (struct mem_op){ STORE, 2, false }; return true;  /* sth */
	case 0x8: *m = (struct mem_op){ LOAD, 4, true }; return true;    /* ldsw */
	case 0x9: *m = (struct mem_op){ LOAD, 1, true }; return true;    /* ldsb */
	case 0xa: *m = (struct mem_op){ LOAD, 2, true }; return true;    /* ldsh */
	case 0xb: *m = (struct mem_op){ LOAD, 8, false }; return true;   /* ldx */
	case 0xd: *m = (struct mem_op){ LDSTUB, 1, false }; return true;
	case 0xe: *m = (struct mem_op){ STORE, 8, false }; return true;  /* stx */
	case 0xf: *m = (struct mem_op){ SWAP, 4, false }; return true;
	}
	*why = "ldd, std or an undefined load/store";
	return false;
}

static bool is_asi_form(uint32_t w)
{
	unsigned op3 = OP3(w);
	return (op3 >= 0x10 && op3 < 0x20) || op3 == 0x3c || op3 == 0x3e;
}

static uint64_t reg(struct trapframe *tf, unsigned n)
{
	if (!n)
		return 0;
	const uint64_t *v = trapframe_reg_read(tf, n);
	if (!v)
		panic("watch: the trapped window's registers are unreadable");
	return *v;
}

static void set_reg(struct trapframe *tf, unsigned n, uint64_t v)
{
	if (!n)
		return;
	uint64_t *slot = trapframe_reg(tf, n);
	if (!slot)
		panic("watch: the trapped window's registers are unwritable");
	*slot = v;
}

static uint64_t mem_read(volatile uint8_t *a, unsigned size)
{
	switch (size) {
	case 1:  return *a;
	case 2:  return *(volatile uint16_t *)a;
	case 4:  return *(volatile uint32_t *)a;
	default: return *(volatile uint64_t *)a;
	}
}

static void mem_write(volatile uint8_t *a, unsigned size, uint64_t v)
{
	switch (size) {
	case 1:  *a = (uint8_t)v; break;
	case 2:  *(volatile uint16_t *)a = (uint16_t)v; break;
	case 4:  *(volatile uint32_t *)a = (uint32_t)v; break;
	default: *(volatile uint64_t *)a = v; break;
	}
}

static uint64_t sign_extend(uint64_t v, unsigned size)
{
	unsigned shift = 64 - 8 * size;
	return (uint64_t)((int64_t)(v << shift) >> shift);
}

/* An instruction the hook does not emulate touched a watched page: the
 * watches of that page stop — the page is mapped again and the
 * instruction re-runs natively — and say why (tarch_watch_stopped), so
 * the kernel runs on and the host reports the watch refused. */
static int cannot(struct trapframe *tf, uint32_t w, uintptr_t page, const char *why)
{
	for (unsigned i = 0; i < 4; i++) {
		struct wslot *s = &slots[i];
		if (!s->probe || s->page != page)
			continue;
		s->stopped = why;
		s->stopped_pc = tf->tpc;
		s->stopped_word = w;
	}
	mmu_page_restore(page, any_tte(page));
	return TRAP_HANDLED;            /* TPC unchanged: it runs again, mapped */
}

const char *tarch_watch_stopped(unsigned slot, uintptr_t *pc, uint32_t *word)
{
	const struct wslot *s = &slots[slot];
	*pc = s->stopped_pc;
	*word = s->stopped_word;
	return s->stopped;
}

static void fire(const struct wslot *s, struct trapframe *tf,
		 const struct tarch_context *ctx, uint64_t value)
{
	unsigned long words[WIRE_WATCH_NWORDS];
	words[WIRE_WATCH_W_PC] = tf->tpc;
	words[WIRE_WATCH_W_ADDR] = s->addr;
	words[WIRE_WATCH_W_VALUE] = value;
	words[WIRE_WATCH_W_SIZE] = s->len;
	words[WIRE_WATCH_W_TYPE] = s->type;
	tracer_fire(&tracer_probes[s->probe - 1], WIRE_EVENT_WATCH, words,
		    WIRE_WATCH_NWORDS, ctx);
}

/* Emulated: the ld/st family of every size, signed and unsigned,
 * ldstub, swap, casa and casxa, and their ASI forms with ASI_P or ASI_N
 * (an immediate ASI or %asi); with one CPU and interrupts masked here
 * the atomics are atomic. Anything else on the page (ldd, std, an FP
 * access: the kernel is built -mno-fpu) stops the page's watches
 * (cannot). Loads fire r and rw, stores w and rw, ldstub, swap and a cas
 * that stores all three; the record's PC is the access itself. An access
 * made while the hook records (the fire path's own, on data the page
 * shares) is emulated and nothing more, or it would come back here for
 * ever. */
static int sparc64_watch_trap(struct trapframe *tf)
{
	uint64_t sfar = ldxa_asi(MMU_SFAR, ASI_DMMU);
	uintptr_t page = page_of(sfar);
	struct wslot *any = 0;
	for (unsigned i = 0; i < 4 && !any; i++)
		if (slots[i].probe && slots[i].page == page && !slots[i].stopped)
			any = &slots[i];
	if (!any)
		return TRAP_DECLINED;          /* not ours: the kernel's fault */
	stxa_asi(0, MMU_SFSR, ASI_DMMU);

	uint32_t w = *(const uint32_t *)tf->tpc;
	struct mem_op m;
	const char *why = "?";
	if (!classify(w, &m, &why))
		return cannot(tf, w, page, why);
	if (is_asi_form(w)) {
		unsigned asi = IBIT(w) ? (unsigned)(tf->tstate >> 24) & 0xff : IMM_ASI(w);
		if (asi != ASI_P && asi != ASI_N)
			return cannot(tf, w, page, "an ASI other than ASI_P or ASI_N");
	}
	uint64_t ea = reg(tf, RS1(w));
	if (m.what != CAS)
		ea += IBIT(w) ? SIMM13(w) : reg(tf, RS2(w));
	if (page_of(ea) != page || (ea & (m.size - 1)))
		return cannot(tf, w, page, "its address is not in the page, or misaligned");

	struct sparc_regs r;
	if (!sparc64_load_regs(tf, &r, true))
		panic("watch: the trapped window's registers are unreadable");
	const struct tarch_context ctx = { tf, &r };
	volatile uint8_t *a = any->alias + (ea - page);
	uint64_t before = mem_read(a, m.size), rd_before = reg(tf, RD(w));
	bool reads = true, writes = true;
	switch (m.what) {
	case LOAD:
		set_reg(tf, RD(w), m.sign ? sign_extend(before, m.size) : before);
		writes = false;
		break;
	case STORE:
		mem_write(a, m.size, rd_before);
		reads = false;
		break;
	case LDSTUB:
		mem_write(a, 1, 0xff);
		set_reg(tf, RD(w), before);
		break;
	case SWAP:
		mem_write(a, 4, rd_before);
		set_reg(tf, RD(w), before);
		break;
	case CAS: {
		uint64_t cmp = reg(tf, RS2(w));
		if (m.size == 4)
			cmp &= 0xffffffffu;
		writes = before == cmp;
		if (writes)
			mem_write(a, m.size, rd_before);
		set_reg(tf, RD(w), before);
		break;
	}
	}
	uint64_t after = mem_read(a, m.size);
	/* An access made while this hook records (the fire path's own, on
	 * data the page shares) is emulated and nothing more: recording it
	 * would come back here for ever. */
	bool own = recording;
	recording = true;
	if (tracer_check_mode && !own) {
		unsigned long c[SPARC64_WCHECK_WORDS];
		c[SPARC64_WCHECK_INSN] = w;
		c[SPARC64_WCHECK_EA] = ea;
		c[SPARC64_WCHECK_RS1] = r.r[RS1(w)];
		c[SPARC64_WCHECK_RS2] = r.r[RS2(w)];
		c[SPARC64_WCHECK_RD_BEFORE] = rd_before;
		c[SPARC64_WCHECK_MEM_BEFORE] = before;
		c[SPARC64_WCHECK_RD_AFTER] = reg(tf, RD(w));
		c[SPARC64_WCHECK_MEM_AFTER] = after;
		c[SPARC64_WCHECK_ASI] = (tf->tstate >> 24) & 0xff;
		tracer_record(&tracer_probes[any->probe - 1], WIRE_EVENT_CHECK, c,
			      SPARC64_WCHECK_WORDS);
	}
	for (unsigned i = 0; i < 4; i++) {
		const struct wslot *s = &slots[i];
		if (own || !s->probe || s->page != page || ea >= s->addr + s->len ||
		    s->addr >= ea + m.size)
			continue;
		bool hit = (s->type == WIRE_WATCH_RW && (reads || writes)) ||
			   (s->type == WIRE_WATCH_READ && reads) ||
			   (s->type == WIRE_WATCH_WRITE && writes);
		if (hit)        /* what the watched bytes hold now: read or written */
			fire(s, tf, &ctx, mem_read(s->alias + (s->addr - page), s->len));
	}
	recording = own;
	tf->tpc = tf->tnpc;
	tf->tnpc += 4;
	return TRAP_HANDLED;
}

void sparc64_watch_init(void)
{
	trap_hook_add(TT_DATA_ACCESS_EXCEPTION, sparc64_watch_trap);
}
