/*
 * probe.c — the probe table: add, look up, arm and disarm, clear.
 *
 * The host numbers probes; probe N lives in tracer_probes[N]. An address
 * index (open addressing, keyed by site address) lets the fire path find a
 * probe without a lock: tracer_probe_add fills in the probe, then publishes
 * its index slot; nothing is removed until tracer_clear, which runs only
 * when every probe is disabled and after every CPU has answered an IPI (so
 * no fire path is still inside). The callers — the `probe` and `trace`
 * commands (commands_probe.c, commands_trace.c), workloads and self-tests —
 * run in one thread at a time (the command loop's), so they need no lock
 * among themselves.
 *
 * A probe that traps after it was disabled (the CPU trapped just before
 * the original was written back, or still ran a translation of the trap)
 * is still found and its instruction run — its site stays valid until
 * clear — but it is late, not a firing: neither counted nor recorded
 * (tracer.h's tracer_late). Its state is stored before its bytes and the
 * settle's syncs wait out every firing that saw it enabled, so once
 * `probe disable` answers no firing of it is counted any more.
 *
 * Refusals name their reason, e.g. "refused: 0x00101234 is code of the
 * tracer or trap path", and change nothing.
 *
 * The drain thread also changes the table: it disables spent probes
 * (gate.c). So every call here that changes it holds the table's lock
 * (tracer.h) for its duration — set and settle each whole, which is what
 * keeps settle's guarantee when the two threads interleave: a store made
 * by a set is followed by some settle whose first sync comes after it.
 */
#include "tracer.h"
#include "watch.h"
#include "arch.h"
#include "atomic.h"
#include "buffer.h"
#include "gate.h"
#include "console.h"
#include "cpu.h"
#include "init.h"
#include "kstring.h"
#include "mm.h"
#include "miss_account.h"
#include "notrace.h"
#include "thread.h"
#include "tracer_arch.h"
#include "wire.h"

#define HASH_SLOTS TRACER_HASH_SLOTS
#define hash_slot tracer_hash_slot
#define hash_of tracer_hash_of

struct probe tracer_probes[TRACER_MAX_PROBES];
volatile uint16_t tracer_hash_slot[TRACER_HASH_SLOTS];
volatile bool tracer_check_mode;
volatile unsigned tracer_mechanism;
static unsigned probes_added, probes_enabled;
static volatile unsigned probes_recording;

static uint8_t **text_alias;         /* one writable alias per text page */

#define compiler_barrier() __asm__ volatile("" ::: "memory")

/* The table's lock: the thread holding it (0: none) and how often. */
static volatile unsigned long lock_owner;
static unsigned lock_depth;

bool tracer_trylock(void)
{
	unsigned long me = (unsigned long)(uintptr_t)thread_current();
	if (lock_owner == me) {
		lock_depth++;
		return true;
	}
	if (atomic_cas(&lock_owner, 0, me) != 0)
		return false;
	lock_depth = 1;
	return true;
}

void tracer_lock(void)
{
	while (!tracer_trylock())
		thread_sleep(1);
}

void tracer_unlock(void)
{
	if (--lock_depth)
		return;
	compiler_barrier();
	lock_owner = 0;
}

uint8_t *tracer_text_alias(uintptr_t addr)
{
	uintptr_t page = mm_page_size;
	uintptr_t base = (uintptr_t)__text_start & ~(page - 1);
	return text_alias[(addr - base) / page] + (addr & (page - 1));
}

/* The tracer's text, one range in the linker scripts. */
extern const char __tracer_text_start[], __tracer_text_end[];

/* Boot (init.h): map the text aliases, set the arch up, allocate the
 * default buffers, start the drain. */
static void tracer_init(void)
{
	uintptr_t page = mm_page_size;
	uintptr_t base = (uintptr_t)__text_start & ~(page - 1);
	size_t npages = ((uintptr_t)__text_end - base + page - 1) / page;
	static uint8_t *aliases[4096];

	if (npages > sizeof aliases / sizeof aliases[0])
		panic("tracer: %zu text pages, room for %zu aliases", npages,
		      sizeof aliases / sizeof aliases[0]);
	for (size_t i = 0; i < npages; i++) {
		aliases[i] = mm_alias_writable((const void *)(base + i * page));
		if (!aliases[i])
			panic("tracer: no writable alias for text page %zu", i);
	}
	text_alias = aliases;
	/* Count the TLB misses and faults our own code takes (miss_account.h). */
	miss_account_code((uintptr_t)__tracer_text_start, (uintptr_t)__tracer_text_end);
	tarch_init();
	if (!buffer_resize(BUFFER_DEFAULT_BYTES))
		panic("tracer: no memory for the trace buffers");
	buffer_init_channels();
	buffer_start_drain();
}
KERNEL_INIT(tracer_init);

static void ipi_nothing(void *arg)
{
	(void)arg;
}

/* Every other CPU has left any fire path it was in (and, being
 * interrupted, will fetch instructions anew). */
void tracer_sync_cpus(void)
{
	smp_call_others(ipi_nothing, 0);
}


/* Make a batch of site stores visible to every CPU's instruction stream
 * (between the first sync and the re-stores, an arch whose trap goes in
 * stages makes its later stages for the whole batch: tarch_stage).
 * One store and one sync are not enough under QEMU's multi-threaded TCG:
 * a CPU that is translating a block over the site while the store lands
 * reads the old bytes, and publishes its translation after the store's
 * invalidation has run, so it keeps executing the old code until the
 * page is written again (seen as a return probe missing for a whole
 * armed window). After the first sync no translation is in flight, so
 * storing the same bytes again invalidates any such block, and every
 * translation begun after it reads the new bytes. On hardware the second
 * store changes nothing. */
void tracer_settle(void)
{
	tracer_lock();
	tracer_sync_cpus();
	tarch_stage();          /* staged traps: the rest, for the whole batch */
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
		struct probe *p = &tracer_probes[i];
		if (!p->unsettled)
			continue;
		p->unsettled = 0;
		if (p->state == PROBE_ENABLED)
			tarch_arm(p);
		else if (p->state == PROBE_DISABLED)
			tarch_disarm(p);
	}
	tracer_sync_cpus();
	tracer_unlock();
}

/* The kinds a probe is added as, with their command words (wire.h). */
#define PROBE_KIND_ROW(name, value, word) { word, value },
static const struct { const char *word; uint8_t kind; } probe_kinds[] = {
	WIRE_PROBE_KINDS(PROBE_KIND_ROW)
};
#undef PROBE_KIND_ROW
#define NPROBE_KINDS (sizeof probe_kinds / sizeof probe_kinds[0])

const char *tracer_probe_kind_word(unsigned kind)
{
	for (unsigned i = 0; i < NPROBE_KINDS; i++)
		if (probe_kinds[i].kind == kind)
			return probe_kinds[i].word;
	return 0;
}

int tracer_probe_kind(const char *word)
{
	for (unsigned i = 0; i < NPROBE_KINDS; i++)
		if (strcmp(word, probe_kinds[i].word) == 0)
			return probe_kinds[i].kind;
	return -1;
}

size_t tracer_probe_kind_words(char *buf, size_t size, const char *sep,
			       const char *last_sep)
{
	size_t used = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < NPROBE_KINDS; i++)
		used += ksnprintf(buf + used, used < size ? size - used : 0, "%s%s",
				  !i ? "" : i + 1 < NPROBE_KINDS ? sep : last_sep,
				  probe_kinds[i].word);
	return used;
}

const char *const tracer_action_names[TRACER_NACTIONS] = {
	[TRACER_ACTION_RECORD] = "record",
	[TRACER_ACTION_NULL]   = "null",
};

static int probe_add(unsigned id, uintptr_t a, unsigned kind, unsigned nargs,
		     char *why, size_t why_size)
{
	if (id >= TRACER_MAX_PROBES || nargs > TRACER_MAX_ARGS ||
	    !tracer_probe_kind_word(kind)) {
		ksnprintf(why, why_size, "bad id, kind or nargs");
		return -1;
	}
	if (tracer_probes[id].state != PROBE_FREE) {
		ksnprintf(why, why_size, "probe id %u is in use (at 0x%lx)", id,
			  (unsigned long)tracer_probes[id].addr);
		return -1;
	}
	if (a < (uintptr_t)__text_start || a >= (uintptr_t)__text_end) {
		ksnprintf(why, why_size, "0x%lx is outside kernel text [0x%lx, 0x%lx)",
			  (unsigned long)a, (unsigned long)__text_start,
			  (unsigned long)__text_end);
		return -1;
	}
	if (a >= (uintptr_t)__notrace_start && a < (uintptr_t)__notrace_end) {
		ksnprintf(why, why_size, "0x%lx is code of the tracer or trap path",
			  (unsigned long)a);
		return -1;
	}
	struct probe *old = tracer_lookup(a);
	if (old) {
		ksnprintf(why, why_size, "0x%lx is already probed (probe %u)",
			  (unsigned long)a, old->id);
		return -1;
	}
	struct tarch_site site;
	const char *reason = "?";
	if (tarch_decode(a, kind, &site, &reason) != 0) {
		ksnprintf(why, why_size, "0x%lx: %s", (unsigned long)a, reason);
		return -1;
	}

	struct probe *p = &tracer_probes[id];
	p->addr = a;
	p->id = id;
	p->kind = (uint8_t)kind;
	p->nargs = (uint8_t)nargs;
	p->nargmap = 0;
	p->action = TRACER_ACTION_RECORD;
	p->site = site;
	p->gated = 0;
	probe_gates[id] = (struct probe_gate){ 0 };
	tracer_probe_hits_zero(id);
	p->state = PROBE_DISABLED;
	compiler_barrier();
	unsigned i = hash_of(a);
	while (hash_slot[i])
		i = (i + 1) & (HASH_SLOTS - 1);
	hash_slot[i] = (uint16_t)(id + 1);
	probes_added++;
	return 0;
}

int tracer_probe_add(unsigned id, uintptr_t a, unsigned kind, unsigned nargs,
		     char *why, size_t why_size)
{
	tracer_lock();
	int rc = probe_add(id, a, kind, nargs, why, why_size);
	tracer_unlock();
	return rc;
}

static int probe_set(unsigned id, bool enable, char *why, size_t why_size)
{
	if (id >= TRACER_MAX_PROBES || tracer_probes[id].state == PROBE_FREE) {
		ksnprintf(why, why_size, "no probe %u", id);
		return -1;
	}
	struct probe *p = &tracer_probes[id];
	if (p->kind == WIRE_EVENT_WATCH) {
		ksnprintf(why, why_size, "probe %u is a watch: it is armed while it "
			  "exists (watch remove %u)", id, id);
		return -1;
	}
	if (enable && p->state == PROBE_DISABLED) {
		const char *reason = "?";
		p->mechanism = (uint8_t)tracer_mechanism;
		if (!tarch_can_arm(p, &reason)) {
			ksnprintf(why, why_size, "probe %u at 0x%lx, mechanism %s: %s", id,
				  (unsigned long)p->addr, tarch_mechanisms[p->mechanism].name,
				  reason);
			return -1;
		}
		p->state = PROBE_ENABLED;
		compiler_barrier();
		tarch_arm(p);
		probes_enabled++;
		p->unsettled = 1;
	} else if (!enable && p->state == PROBE_ENABLED) {
		p->state = PROBE_DISABLED;
		compiler_barrier();
		tarch_disarm(p);
		probes_enabled--;
		p->unsettled = 1;
	}
	tracer_recount_recording();
	return 0;
}

int tracer_probe_set(unsigned id, bool enable, char *why, size_t why_size)
{
	tracer_lock();
	int rc = probe_set(id, enable, why, why_size);
	tracer_unlock();
	return rc;
}

int tracer_probe_action(unsigned id, unsigned action, char *why, size_t why_size)
{
	if (id >= TRACER_MAX_PROBES || tracer_probes[id].state == PROBE_FREE) {
		ksnprintf(why, why_size, "no probe %u", id);
		return -1;
	}
	if (action >= TRACER_NACTIONS) {
		ksnprintf(why, why_size, "no action %u", action);
		return -1;
	}
	tracer_lock();
	tracer_probes[id].action = (uint8_t)action;
	tracer_recount_recording();
	tracer_unlock();
	return 0;
}

int tracer_set_mechanism(const char *name)
{
	for (unsigned m = 0; m < tarch_nmechanisms; m++) {
		if (strcmp(name, tarch_mechanisms[m].name) == 0) {
			tracer_lock();
			int rc = probes_enabled ? -2 : 0;
			if (!rc)
				tracer_mechanism = m;
			tracer_unlock();
			return rc;
		}
	}
	return -1;
}

unsigned tracer_clear(void)
{
	char why[WIRE_MAX_REASON];
	tracer_lock();
	tracer_watch_clear();
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++)
		if (tracer_probes[i].state == PROBE_ENABLED)
			tracer_probe_set(i, false, why, sizeof why);
	tracer_settle();
	/* No fire path is inside now, and no site traps: reuse the memory. */
	for (unsigned i = 0; i < HASH_SLOTS; i++)
		hash_slot[i] = 0;
	compiler_barrier();
	unsigned n = probes_added;
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++)
		tracer_probes[i].state = PROBE_FREE;
	probes_added = 0;
	probes_recording = 0;
	tracer_unlock();
	return n;
}

unsigned tracer_probes_added(void)
{
	return probes_added;
}

unsigned tracer_probes_enabled(void)
{
	return probes_enabled;
}

/* Under the tracer's lock: a scan of the table at each change (commands,
 * never the fire path), so that a switch reads one word. */
void tracer_recount_recording(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
		const struct probe *p = &tracer_probes[i];
		n += p->state == PROBE_ENABLED && p->kind != WIRE_EVENT_WATCH &&
		     p->action == TRACER_ACTION_RECORD && !gate_runs_program(i);
	}
	probes_recording = n;
}

unsigned tracer_probes_recording(void)
{
	return probes_recording;
}
