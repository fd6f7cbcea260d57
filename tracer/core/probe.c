/*
 * probe.c — the probe table and the `probe` / `trace` commands.
 *
 * The host numbers probes; probe N lives in tracer_probes[N]. An address
 * index (open addressing, keyed by site address) lets the fire path find a
 * probe without a lock: `probe add` fills in the probe, then publishes its
 * index slot; nothing is removed until `probe clear`, which runs only when
 * every probe is disabled and after every CPU has answered an IPI (so no
 * fire path is still inside). Commands run in the command loop's thread,
 * one at a time, so they need no lock among themselves.
 *
 * A probe that fires after it was disabled (the CPU trapped just before
 * the original was written back) is still found, recorded and emulated:
 * its site stays valid until clear.
 *
 * Refusals name their reason, e.g. "refused: 0x00101234 is code of the
 * tracer or trap path", and change nothing.
 */
#include "tracer.h"
#include "arch.h"
#include "buffer.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "mm.h"
#include "notrace.h"
#include "tracer_arch.h"
#include "wire.h"

#define HASH_SLOTS (2 * TRACER_MAX_PROBES)   /* a power of two */
#define DEFAULT_BUFFER_BYTES (256u * 1024)

struct probe tracer_probes[TRACER_MAX_PROBES];
static volatile uint16_t hash_slot[HASH_SLOTS];   /* probe index + 1; 0 empty */
volatile bool tracer_check_mode;
volatile unsigned tracer_mechanism;
static unsigned probes_added, probes_enabled;

static uint8_t **text_alias;         /* one writable alias per text page */

#define compiler_barrier() __asm__ volatile("" ::: "memory")

static unsigned hash_of(uintptr_t addr)
{
	uint32_t h = (uint32_t)addr * 2654435761u;
	return h & (HASH_SLOTS - 1);
}

struct probe *tracer_lookup(uintptr_t addr)
{
	for (unsigned i = hash_of(addr), n = 0; n < HASH_SLOTS;
	     i = (i + 1) & (HASH_SLOTS - 1), n++) {
		unsigned slot = hash_slot[i];
		if (!slot)
			return 0;
		struct probe *p = &tracer_probes[slot - 1];
		if (p->addr == addr)
			return p;
	}
	return 0;
}

uint8_t *tracer_text_alias(uintptr_t addr)
{
	uintptr_t page = mm_page_size;
	uintptr_t base = (uintptr_t)__text_start & ~(page - 1);
	return text_alias[(addr - base) / page] + (addr & (page - 1));
}

void tracer_init(void)
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
	if (!buffer_resize(DEFAULT_BUFFER_BYTES))
		panic("tracer: no memory for the trace buffers");
	buffer_start_drain();
}

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


/* Make a batch of site stores visible to every CPU's instruction stream.
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
	tracer_sync_cpus();
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
}

/* ---- commands ---- */

static int reply(struct command_reply *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int reply(struct command_reply *r, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	kvsnprintf(r->msg, r->size, fmt, ap);
	va_end(ap);
	return status;
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

static const char *const state_names[] = { "free", "disabled", "enabled" };
const char *const tracer_action_names[TRACER_NACTIONS] = {
	[TRACER_ACTION_RECORD] = "record",
	[TRACER_ACTION_SUM]    = "sum",
	[TRACER_ACTION_NULL]   = "null",
};

static bool parse_id(const char *s, unsigned *id)
{
	uint64_t v;
	if (!parse_u64(s, &v) || v >= TRACER_MAX_PROBES)
		return false;
	*id = (unsigned)v;
	return true;
}

int tracer_probe_add(unsigned id, uintptr_t a, unsigned kind, unsigned nargs,
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
	p->action = TRACER_ACTION_RECORD;
	p->site = site;
	p->hits = 0;
	p->state = PROBE_DISABLED;
	compiler_barrier();
	unsigned i = hash_of(a);
	while (hash_slot[i])
		i = (i + 1) & (HASH_SLOTS - 1);
	hash_slot[i] = (uint16_t)(id + 1);
	probes_added++;
	return 0;
}

/* probe add ID ADDR entry|return|branch [NARGS] */
static int probe_add(int argc, char **argv, struct command_reply *r)
{
	unsigned id;
	uint64_t addr, nargs = 0;
	char kinds[64];

	if (argc < 5 || argc > 6 || !parse_id(argv[2], &id) ||
	    !parse_u64(argv[3], &addr) ||
	    (argc == 6 && (!parse_u64(argv[5], &nargs) || nargs > TRACER_MAX_ARGS))) {
		tracer_probe_kind_words(kinds, sizeof kinds, "|", "|");
		return reply(r, WIRE_REPLY_BAD_ARGS,
			     "usage: probe add ID ADDR %s [NARGS], ID < %d, "
			     "NARGS <= %d", kinds, TRACER_MAX_PROBES, TRACER_MAX_ARGS);
	}
	int kind = tracer_probe_kind(argv[4]);
	if (kind < 0) {
		tracer_probe_kind_words(kinds, sizeof kinds, ", ", " or ");
		return reply(r, WIRE_REPLY_BAD_ARGS, "probe kind \"%s\": expected %s",
			     argv[4], kinds);
	}
	if ((uint64_t)(uintptr_t)addr != addr)
		return reply(r, WIRE_REPLY_FAILED, "refused: 0x%llx is outside kernel "
			     "text", (unsigned long long)addr);
	char why[128];
	if (tracer_probe_add(id, (uintptr_t)addr, (unsigned)kind, (unsigned)nargs, why,
			     sizeof why) != 0)
		return reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
	return reply(r, WIRE_REPLY_OK, "probe %u at 0x%lx", id, (unsigned long)addr);
}

int tracer_probe_set(unsigned id, bool enable, char *why, size_t why_size)
{
	if (id >= TRACER_MAX_PROBES || tracer_probes[id].state == PROBE_FREE) {
		ksnprintf(why, why_size, "no probe %u", id);
		return -1;
	}
	struct probe *p = &tracer_probes[id];
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
	return 0;
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
	tracer_probes[id].action = (uint8_t)action;
	return 0;
}

/* probe action all|ID... record|sum|null: checked whole before any change */
static int probe_action(int argc, char **argv, struct command_reply *r)
{
	unsigned action = TRACER_NACTIONS, n = 0;
	char why[128];

	if (argc >= 4)
		for (unsigned a = 0; a < TRACER_NACTIONS; a++)
			if (strcmp(argv[argc - 1], tracer_action_names[a]) == 0)
				action = a;
	if (argc < 4 || action == TRACER_NACTIONS)
		return reply(r, WIRE_REPLY_BAD_ARGS, "usage: probe action all|ID... "
			     "record|sum|null");
	if (argc == 4 && strcmp(argv[2], "all") == 0) {
		for (unsigned i = 0; i < TRACER_MAX_PROBES; i++)
			if (tracer_probes[i].state != PROBE_FREE) {
				tracer_probes[i].action = (uint8_t)action;
				n++;
			}
		return reply(r, WIRE_REPLY_OK, "%u probes: action %s", n,
			     tracer_action_names[action]);
	}
	unsigned ids[COMMAND_MAX_ARGS];
	for (int i = 2; i < argc - 1; i++, n++) {
		if (!parse_id(argv[i], &ids[n]))
			return reply(r, WIRE_REPLY_BAD_ARGS, "\"%s\": not a probe id",
				     argv[i]);
		if (tracer_probes[ids[n]].state == PROBE_FREE)
			return reply(r, WIRE_REPLY_FAILED, "no probe %u", ids[n]);
	}
	for (unsigned i = 0; i < n; i++)
		tracer_probe_action(ids[i], action, why, sizeof why);
	return reply(r, WIRE_REPLY_OK, "%u probes: action %s", n,
		     tracer_action_names[action]);
}

/* probe enable|disable all|ID... */
static int probe_switch(int argc, char **argv, bool enable, struct command_reply *r)
{
	unsigned ids[COMMAND_MAX_ARGS];
	unsigned n = 0;
	char why[128], other[128];

	if (argc < 3)
		return reply(r, WIRE_REPLY_BAD_ARGS, "usage: probe %s all|ID...",
			     argv[1]);
	if (argc == 3 && strcmp(argv[2], "all") == 0) {
		unsigned changed = 0, refused = 0;
		/* The reply's cycles: when every probe was armed (enable), or
		 * before the first was disarmed (disable) — the window in which
		 * all of them were live, for the host's checks. */
		uint64_t before = arch_cycles();
		for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
			struct probe *p = &tracer_probes[i];
			if (p->state == PROBE_FREE || (p->state == PROBE_ENABLED) == enable)
				continue;
			if (tracer_probe_set(i, enable, refused ? other : why,
					     sizeof why) == 0)
				changed++;
			else
				refused++;
		}
		/* Every CPU executes the new bytes before the window opens. */
		tracer_settle();
		if (refused)
			return reply(r, WIRE_REPLY_FAILED, "%u probes enabled, %u refused; "
				     "first: %s", changed, refused, why);
		return reply(r, WIRE_REPLY_OK, "%u probes %s, %u enabled, cycles=%llu",
			     changed, enable ? "enabled" : "disabled", probes_enabled,
			     (unsigned long long)(enable ? arch_cycles() : before));
	}
	/* Check every id first: a bad one changes nothing. */
	for (int i = 2; i < argc; i++) {
		if (!parse_id(argv[i], &ids[n]))
			return reply(r, WIRE_REPLY_BAD_ARGS, "\"%s\": not a probe id",
				     argv[i]);
		if (tracer_probes[ids[n]].state == PROBE_FREE)
			return reply(r, WIRE_REPLY_FAILED, "no probe %u", ids[n]);
		n++;
	}
	for (unsigned i = 0; i < n; i++)
		if (tracer_probe_set(ids[i], enable, why, sizeof why) != 0) {
			tracer_settle();
			return reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
		}
	tracer_settle();
	return reply(r, WIRE_REPLY_OK, "%u enabled", probes_enabled);
}

int tracer_set_mechanism(const char *name)
{
	for (unsigned m = 0; m < tarch_nmechanisms; m++) {
		if (strcmp(name, tarch_mechanisms[m].name) == 0) {
			if (probes_enabled)
				return -2;
			tracer_mechanism = m;
			return 0;
		}
	}
	return -1;
}

unsigned tracer_clear(void)
{
	char why[64];
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
	return n;
}

/* probe mechanism [NAME] (argv[1] is also its old word, mode) */
static int probe_mechanism(int argc, char **argv, struct command_reply *r)
{
	if (argc == 2)
		return reply(r, WIRE_REPLY_OK, "mechanism %s",
			     tarch_mechanisms[tracer_mechanism].name);
	if (argc != 3)
		return reply(r, WIRE_REPLY_BAD_ARGS, "usage: probe %s [NAME]", argv[1]);
	int err = tracer_set_mechanism(argv[2]);
	if (err == 0)
		return reply(r, WIRE_REPLY_OK, "mechanism %s",
			     tarch_mechanisms[tracer_mechanism].name);
	if (err == -2)
		return reply(r, WIRE_REPLY_FAILED, "refused: %u probes are enabled; "
			     "disable them first", probes_enabled);
	char names[128] = "";
	size_t used = 0;
	for (unsigned m = 0; m < tarch_nmechanisms; m++)
		used += ksnprintf(names + used, sizeof names - used, "%s%s",
				  m ? ", " : "", tarch_mechanisms[m].name);
	return reply(r, WIRE_REPLY_BAD_ARGS, "no mechanism \"%s\"; mechanisms: %s",
		     argv[2], names);
}

static int probe_clear(struct command_reply *r)
{
	return reply(r, WIRE_REPLY_OK, "%u probes removed", tracer_clear());
}

static int probe_list(struct command_reply *r)
{
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
		const struct probe *p = &tracer_probes[i];
		if (p->state == PROBE_FREE)
			continue;
		kprintf("probe %u 0x%lx %s %s nargs=%u mechanism=%s action=%s hits=%lu\n", p->id,
			(unsigned long)p->addr, tracer_probe_kind_word(p->kind),
			state_names[p->state], p->nargs,
			tarch_mechanisms[p->mechanism].name, tracer_action_names[p->action],
			p->hits);
	}
	return reply(r, WIRE_REPLY_OK, "%u probes, %u enabled, mechanism %s%s",
		     probes_added, probes_enabled, tarch_mechanisms[tracer_mechanism].name,
		     tracer_check_mode ? ", check mode" : "");
}

int tracer_cmd_probe(int argc, char **argv, struct command_reply *r)
{
	if (argc >= 2) {
		const char *sub = argv[1];
		if (strcmp(sub, "add") == 0)
			return probe_add(argc, argv, r);
		if (strcmp(sub, "enable") == 0)
			return probe_switch(argc, argv, true, r);
		if (strcmp(sub, "disable") == 0)
			return probe_switch(argc, argv, false, r);
		if (strcmp(sub, "mechanism") == 0 || strcmp(sub, "mode") == 0)
			return probe_mechanism(argc, argv, r);
		if (strcmp(sub, "action") == 0)
			return probe_action(argc, argv, r);
		if (strcmp(sub, "hooks") == 0 && argc == 3 &&
		    (!strcmp(argv[2], "on") || !strcmp(argv[2], "off"))) {
			tracer_hooks_on = !strcmp(argv[2], "on");
			return reply(r, WIRE_REPLY_OK, "compiler hooks %s", argv[2]);
		}
		if (strcmp(sub, "clear") == 0 && argc == 2)
			return probe_clear(r);
		if (strcmp(sub, "list") == 0 && argc == 2)
			return probe_list(r);
		if (strcmp(sub, "check") == 0 && argc == 3 &&
		    (!strcmp(argv[2], "on") || !strcmp(argv[2], "off"))) {
			if (!strcmp(argv[2], "on") && !tarch_check_words)
				return reply(r, WIRE_REPLY_FAILED, "refused: no check "
					     "mode on %s", arch_name);
			tracer_check_mode = !strcmp(argv[2], "on");
			return reply(r, WIRE_REPLY_OK, "check mode %s", argv[2]);
		}
	}
	char kinds[64];
	tracer_probe_kind_words(kinds, sizeof kinds, "|", "|");
	return reply(r, WIRE_REPLY_BAD_ARGS,
		     "usage: probe add ID ADDR %s [NARGS] | enable all|ID... | "
		     "disable all|ID... | mechanism [NAME] | action all|ID... record|sum|null | "
		     "hooks on|off | check on|off | list | clear", kinds);
}

/* trace flush | stats | buffer [BYTES] | reset */
int tracer_cmd_trace(int argc, char **argv, struct command_reply *r)
{
	if (argc == 2 && strcmp(argv[1], "flush") == 0) {
		buffer_flush();
		buffer_send_stats();
		return reply(r, WIRE_REPLY_OK, "flushed");
	}
	if (argc == 2 && strcmp(argv[1], "stats") == 0) {
		buffer_send_stats();
		return reply(r, WIRE_REPLY_OK, "stats sent");
	}
	if (argc == 2 && strcmp(argv[1], "reset") == 0) {
		if (probes_enabled)
			return reply(r, WIRE_REPLY_FAILED, "refused: %u probes enabled",
				     probes_enabled);
		tracer_sync_cpus();
		buffer_flush();
		buffer_reset_counters();
		for (unsigned i = 0; i < TRACER_MAX_PROBES; i++)
			tracer_probes[i].hits = 0;
		return reply(r, WIRE_REPLY_OK, "counters reset");
	}
	if ((argc == 2 || argc == 3) && strcmp(argv[1], "buffer") == 0) {
		uint64_t bytes;
		if (argc == 2)
			return reply(r, WIRE_REPLY_OK, "%zu bytes per cpu", buffer_size());
		if (!parse_u64(argv[2], &bytes) || bytes < mm_page_size ||
		    (bytes & (bytes - 1)) || bytes > (1u << 30))
			return reply(r, WIRE_REPLY_BAD_ARGS, "buffer size: a power of two "
				     "from %u to %u bytes", mm_page_size, 1u << 30);
		if (probes_enabled)
			return reply(r, WIRE_REPLY_FAILED, "refused: %u probes enabled",
				     probes_enabled);
		tracer_sync_cpus();
		buffer_flush();
		if (!buffer_resize((size_t)bytes)) {
			buffer_resize(DEFAULT_BUFFER_BYTES);
			return reply(r, WIRE_REPLY_FAILED, "no memory for %u x %llu bytes; "
				     "back to %u", cpu_count(), (unsigned long long)bytes,
				     DEFAULT_BUFFER_BYTES);
		}
		return reply(r, WIRE_REPLY_OK, "%zu bytes per cpu", buffer_size());
	}
	return reply(r, WIRE_REPLY_BAD_ARGS,
		     "usage: trace flush | stats | reset | buffer [BYTES]");
}
