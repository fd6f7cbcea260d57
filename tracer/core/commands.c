/*
 * commands.c — the tracer's commands on the serial line: `probe`, `trace`
 * and `program`.
 *
 * Both register with the kernel's command loop through COMMAND()
 * (command.h), so the kernel never names the tracer. Each is a table of
 * subcommands — name, arguments, handler — and a line picks its row by
 * its second word; a line that names none is answered with the usage of
 * every row. A handler checks its own arguments and answers through
 * command_reply(); it changes nothing unless every argument is good (a
 * list of probe ids is checked whole before the first is touched).
 *
 * The work itself is probe.c's (the probe table, add, arm, settle, clear),
 * buffer.c's (the per-CPU buffers), program.c's (program slots), gate.c's
 * (what a probe runs, how often, the per-probe counts) and aggregate.c's;
 * commands run one at a time in the command loop's thread.
 */
#include "aggregate.h"
#include "arch.h"
#include "buffer.h"
#include "command.h"
#include "console.h"
#include "cpu.h"
#include "kstring.h"
#include "gate.h"
#include "miss_account.h"
#include "mm.h"
#include "program.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

struct subcommand {
	const char *name;
	const char *args;       /* what follows the name; NULL: an alias, unlisted */
	int (*run)(const struct subcommand *s, int argc, char **argv,
		   struct command_reply *r);
};

/* "usage: CMD SUB ARGS" for one row. */
static int usage_of(const struct subcommand *s, char **argv, struct command_reply *r)
{
	return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: %s %s%s%s", argv[0],
			     s->name, s->args && *s->args ? " " : "",
			     s->args ? s->args : "");
}

/* Run argv[1]'s row of table, or answer with every row's usage. */
static int dispatch(const struct subcommand *table, unsigned n, int argc,
		    char **argv, struct command_reply *r)
{
	if (argc >= 2)
		for (unsigned i = 0; i < n; i++)
			if (strcmp(argv[1], table[i].name) == 0)
				return table[i].run(&table[i], argc, argv, r);
	size_t used = ksnprintf(r->msg, r->size, "usage: %s", argv[0]);
	for (unsigned i = 0, listed = 0; i < n; i++) {
		if (!table[i].args)
			continue;
		used += ksnprintf(r->msg + used, used < r->size ? r->size - used : 0,
				  "%s %s%s%s", listed++ ? " |" : "", table[i].name,
				  *table[i].args ? " " : "", table[i].args);
	}
	return WIRE_REPLY_BAD_ARGS;
}

static bool parse_id(const char *s, unsigned *id)
{
	uint64_t v;
	if (!parse_u64(s, &v) || v >= TRACER_MAX_PROBES)
		return false;
	*id = (unsigned)v;
	return true;
}

/* 1 for "on", 0 for "off", -1 for anything else. */
static int on_off(const char *s)
{
	return !strcmp(s, "on") ? 1 : !strcmp(s, "off") ? 0 : -1;
}

/* argv[2..argc-2] as probe ids, or "all" for every probe added, into ids
 * (checked whole: any bad one and nothing is returned). Returns
 * WIRE_REPLY_OK with *n set, or the status of the reply made. */
static int probe_ids(int argc, char **argv, unsigned *ids, unsigned *n,
		     struct command_reply *r)
{
	*n = 0;
	if (argc == 4 && strcmp(argv[2], "all") == 0) {
		for (unsigned i = 0; i < TRACER_MAX_PROBES; i++)
			if (tracer_probes[i].state != PROBE_FREE)
				ids[(*n)++] = i;
		return WIRE_REPLY_OK;
	}
	for (int i = 2; i < argc - 1; i++, (*n)++) {
		if (!parse_id(argv[i], &ids[*n]))
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "\"%s\": not a probe id", argv[i]);
		if (tracer_probes[ids[*n]].state == PROBE_FREE)
			return command_reply(r, WIRE_REPLY_FAILED, "no probe %u", ids[*n]);
	}
	return WIRE_REPLY_OK;
}

static unsigned id_list[TRACER_MAX_PROBES];

/* ---- probe ---- */

static const char *const probe_state_names[] = {
	[PROBE_FREE] = "free", [PROBE_DISABLED] = "disabled",
	[PROBE_ENABLED] = "enabled",
};

/* probe add ID ADDR KIND [NARGS]: NARGS words of arguments for an entry,
 * of the value for a return (2 where a value takes two registers) */
static int probe_add(const struct subcommand *s, int argc, char **argv,
		     struct command_reply *r)
{
	unsigned id;
	uint64_t addr, nargs = 0;
	char kinds[64];

	if (argc < 5 || argc > 6 || !parse_id(argv[2], &id) ||
	    !parse_u64(argv[3], &addr) ||
	    (argc == 6 && (!parse_u64(argv[5], &nargs) || nargs > TRACER_MAX_ARGS))) {
		tracer_probe_kind_words(kinds, sizeof kinds, "|", "|");
		return command_reply(r, WIRE_REPLY_BAD_ARGS,
				     "usage: probe add ID ADDR %s [NARGS], ID < %d, "
				     "NARGS <= %d", kinds, TRACER_MAX_PROBES,
				     TRACER_MAX_ARGS);
	}
	int kind = tracer_probe_kind(argv[4]);
	if (kind < 0) {
		tracer_probe_kind_words(kinds, sizeof kinds, ", ", " or ");
		return command_reply(r, WIRE_REPLY_BAD_ARGS,
				     "probe kind \"%s\": expected %s", argv[4], kinds);
	}
	if ((uint64_t)(uintptr_t)addr != addr)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: 0x%llx is outside "
				     "kernel text", (unsigned long long)addr);
	char why[128];
	if (tracer_probe_add(id, (uintptr_t)addr, (unsigned)kind, (unsigned)nargs, why,
			     sizeof why) != 0)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
	return command_reply(r, WIRE_REPLY_OK, "probe %u at 0x%lx", id,
			     (unsigned long)addr);
}

/* probe enable|disable all|ID... */
static int probe_switch(const struct subcommand *s, int argc, char **argv,
			struct command_reply *r)
{
	bool enable = strcmp(s->name, "enable") == 0;
	unsigned ids[COMMAND_MAX_ARGS];
	unsigned n = 0;
	char why[128], other[128];

	if (argc < 3)
		return usage_of(s, argv, r);
	if (argc == 3 && strcmp(argv[2], "all") == 0) {
		unsigned changed = 0, refused = 0;
		/* The reply's cycles: when every probe was armed (enable), or
		 * before the first was disarmed (disable) — the window in which
		 * all of them were live, for the host's checks. */
		uint64_t before = arch_cycles();
		for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
			struct probe *p = &tracer_probes[i];
			if (p->state == PROBE_FREE || (p->state == PROBE_ENABLED) == enable ||
			    p->kind == WIRE_EVENT_WATCH)      /* `watch` owns those */
				continue;
			if (tracer_probe_set(i, enable, refused ? other : why,
					     sizeof why) == 0)
				changed++;
			else
				refused++;
		}
		/* Every CPU executes the new bytes before the window opens. */
		tracer_settle();
		/* Refused ones stay as they were (the host knows them from
		 * enabling each); the rest form the window all the same. */
		if (refused)
			return command_reply(r, WIRE_REPLY_FAILED,
					     "%u probes enabled, %u refused, cycles=%llu; "
					     "first: %s", changed, refused,
					     (unsigned long long)(enable ? arch_cycles()
								 : before), why);
		return command_reply(r, WIRE_REPLY_OK,
				     "%u probes %s, %u enabled, cycles=%llu", changed,
				     enable ? "enabled" : "disabled",
				     tracer_probes_enabled(),
				     (unsigned long long)(enable ? arch_cycles()
								 : before));
	}
	/* Check every id first: a bad one changes nothing. */
	for (int i = 2; i < argc; i++) {
		if (!parse_id(argv[i], &ids[n]))
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "\"%s\": not a probe id", argv[i]);
		if (tracer_probes[ids[n]].state == PROBE_FREE)
			return command_reply(r, WIRE_REPLY_FAILED, "no probe %u", ids[n]);
		n++;
	}
	for (unsigned i = 0; i < n; i++)
		if (tracer_probe_set(ids[i], enable, why, sizeof why) != 0) {
			tracer_settle();
			return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
		}
	tracer_settle();
	return command_reply(r, WIRE_REPLY_OK, "%u enabled", tracer_probes_enabled());
}

/* probe mechanism [NAME] (also under its old word, `probe mode`) */
static int probe_mechanism(const struct subcommand *s, int argc, char **argv,
			   struct command_reply *r)
{
	if (argc == 2)
		return command_reply(r, WIRE_REPLY_OK, "mechanism %s",
				     tarch_mechanisms[tracer_mechanism].name);
	if (argc != 3)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: probe %s [NAME]",
				     s->name);
	int err = tracer_set_mechanism(argv[2]);
	if (err == 0)
		return command_reply(r, WIRE_REPLY_OK, "mechanism %s",
				     tarch_mechanisms[tracer_mechanism].name);
	if (err == -2)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %u probes are "
				     "enabled; disable them first",
				     tracer_probes_enabled());
	char names[128] = "";
	size_t used = 0;
	for (unsigned m = 0; m < tarch_nmechanisms; m++)
		used += ksnprintf(names + used, sizeof names - used, "%s%s",
				  m ? ", " : "", tarch_mechanisms[m].name);
	return command_reply(r, WIRE_REPLY_BAD_ARGS, "no mechanism \"%s\"; "
			     "mechanisms: %s", argv[2], names);
}

/* probe action all|ID... record|null: checked whole before any change */
static int probe_action(const struct subcommand *s, int argc, char **argv,
			struct command_reply *r)
{
	unsigned action = TRACER_NACTIONS, n = 0;
	char why[128];

	if (argc >= 4)
		for (unsigned a = 0; a < TRACER_NACTIONS; a++)
			if (strcmp(argv[argc - 1], tracer_action_names[a]) == 0)
				action = a;
	if (argc < 4 || action == TRACER_NACTIONS)
		return usage_of(s, argv, r);
	if (argc == 4 && strcmp(argv[2], "all") == 0) {
		for (unsigned i = 0; i < TRACER_MAX_PROBES; i++)
			if (tracer_probes[i].state != PROBE_FREE) {
				tracer_probes[i].action = (uint8_t)action;
				n++;
			}
		return command_reply(r, WIRE_REPLY_OK, "%u probes: action %s", n,
				     tracer_action_names[action]);
	}
	unsigned ids[COMMAND_MAX_ARGS];
	for (int i = 2; i < argc - 1; i++, n++) {
		if (!parse_id(argv[i], &ids[n]))
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "\"%s\": not a probe id", argv[i]);
		if (tracer_probes[ids[n]].state == PROBE_FREE)
			return command_reply(r, WIRE_REPLY_FAILED, "no probe %u", ids[n]);
	}
	for (unsigned i = 0; i < n; i++)
		tracer_probe_action(ids[i], action, why, sizeof why);
	return command_reply(r, WIRE_REPLY_OK, "%u probes: action %s", n,
			     tracer_action_names[action]);
}

/* probe program all|ID... SLOT|none: what the probes run instead of their
 * action; any time, even enabled (gate.c says why) */
static int probe_program(const struct subcommand *s, int argc, char **argv,
			 struct command_reply *r)
{
	uint64_t v = 0;
	unsigned n;
	char why[128];
	bool none = argc >= 4 && strcmp(argv[argc - 1], "none") == 0;

	if (argc < 4 || (!none && (!parse_u64(argv[argc - 1], &v) || v >= WIRE_PROGRAMS)))
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: probe program "
				     "all|ID... SLOT|none, SLOT < %u", WIRE_PROGRAMS);
	int slot = none ? -1 : (int)v;
	if (!none && !programs[slot].installed)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: slot %d holds no "
				     "program (program check)", slot);
	int status = probe_ids(argc, argv, id_list, &n, r);
	if (status != WIRE_REPLY_OK)
		return status;
	for (unsigned i = 0; i < n; i++)
		if (tracer_probe_program(id_list[i], slot, why, sizeof why) != 0)
			return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
	if (none)
		return command_reply(r, WIRE_REPLY_OK, "%u probes: no program", n);
	return command_reply(r, WIRE_REPLY_OK, "%u probes: program %d", n, slot);
}

/* probe pass all|ID... N and probe maxhits all|ID... N (0: no limit) */
static int probe_count_limit(const struct subcommand *s, int argc, char **argv,
			     struct command_reply *r)
{
	bool pass = strcmp(s->name, "pass") == 0;
	uint64_t v;
	unsigned n;
	char why[128];

	if (argc < 4 || !parse_u64(argv[argc - 1], &v) ||
	    (pass && v > UINT32_MAX) || (unsigned long)v != v)
		return usage_of(s, argv, r);
	int status = probe_ids(argc, argv, id_list, &n, r);
	if (status != WIRE_REPLY_OK)
		return status;
	for (unsigned i = 0; i < n; i++) {
		int rc = pass ? tracer_probe_pass(id_list[i], (uint32_t)v, why, sizeof why)
			      : tracer_probe_maxhits(id_list[i], (unsigned long)v, why,
						     sizeof why);
		if (rc != 0)
			return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
	}
	return command_reply(r, WIRE_REPLY_OK, "%u probes: %s %llu", n, s->name,
			     (unsigned long long)v);
}

/* probe hooks on|off */
static int probe_hooks(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	if (argc != 3 || on_off(argv[2]) < 0)
		return usage_of(s, argv, r);
	tracer_hooks_on = on_off(argv[2]);
	return command_reply(r, WIRE_REPLY_OK, "compiler hooks %s", argv[2]);
}

/* probe check on|off */
static int probe_check(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	if (argc != 3 || on_off(argv[2]) < 0)
		return usage_of(s, argv, r);
	if (on_off(argv[2]) && !tarch_check_words)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: no check mode "
				     "on %s", arch_name);
	tracer_check_mode = on_off(argv[2]);
	return command_reply(r, WIRE_REPLY_OK, "check mode %s", argv[2]);
}

/* probe list: a TEXT line per probe, the totals in the reply */
static int probe_list(const struct subcommand *s, int argc, char **argv,
		      struct command_reply *r)
{
	if (argc != 2)
		return usage_of(s, argv, r);
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
		const struct probe *p = &tracer_probes[i];
		if (p->state == PROBE_FREE || p->kind == WIRE_EVENT_WATCH)
			continue;               /* `watch list` shows watches */
		const struct probe_gate *g = &probe_gates[i];
		char program[16] = "none";
		if (g->program)
			ksnprintf(program, sizeof program, "%u", g->program->slot);
		/* Each CPU's ungated hits (hits.c), after the totals. */
		char cpus[KERNEL_MAX_CPUS * 12] = "";
		size_t used = 0;
		for (unsigned c = 0; c < cpu_count(); c++)
			used += ksnprintf(cpus + used, sizeof cpus - used, "%s%lu",
					  c ? "," : "", tracer_hits[c][i]);
		kprintf("probe %u 0x%lx %s %s nargs=%u mechanism=%s action=%s hits=%lu"
			" program=%s pass=%u maxhits=%lu runs=%lu faults=%lu over=%lu"
			" cpus=%s\n",
			p->id, (unsigned long)p->addr, tracer_probe_kind_word(p->kind),
			probe_state_names[p->state], p->nargs,
			tarch_mechanisms[p->mechanism].name,
			tracer_action_names[p->action], tracer_probe_hits(p->id), program,
			(unsigned)g->pass, g->maxhits, g->runs, g->faults, g->over, cpus);
	}
	return command_reply(r, WIRE_REPLY_OK, "%u probes, %u enabled, mechanism %s%s",
			     tracer_probes_added(), tracer_probes_enabled(),
			     tarch_mechanisms[tracer_mechanism].name,
			     tracer_check_mode ? ", check mode" : "");
}

/* probe clear */
static int probe_clear(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	if (argc != 2)
		return usage_of(s, argv, r);
	return command_reply(r, WIRE_REPLY_OK, "%u probes removed", tracer_clear());
}

static const struct subcommand probe_subcommands[] = {
	{ "add",       "ID ADDR KIND [NARGS]",         probe_add },
	{ "enable",    "all|ID...",                    probe_switch },
	{ "disable",   "all|ID...",                    probe_switch },
	{ "mechanism", "[NAME]",                       probe_mechanism },
	{ "mode",      0,                              probe_mechanism },
	{ "action",    "all|ID... record|null",    probe_action },
	{ "program",   "all|ID... SLOT|none",          probe_program },
	{ "pass",      "all|ID... N",                  probe_count_limit },
	{ "maxhits",   "all|ID... N",                  probe_count_limit },
	{ "hooks",     "on|off",                       probe_hooks },
	{ "check",     "on|off",                       probe_check },
	{ "list",      "",                             probe_list },
	{ "clear",     "",                             probe_clear },
};

static int cmd_probe(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	return dispatch(probe_subcommands,
			sizeof probe_subcommands / sizeof probe_subcommands[0],
			argc, argv, r);
}

COMMAND(probe) = {
	"probe", "probe SUBCOMMAND ...: add, arm and list probes (`probe`: usage)",
	cmd_probe,
};

/* ---- trace ---- */

/* trace flush: every record written so far is sent, then the STATS, the
 * per-probe counts (PROBES) and the aggregations (AGGS) */
static int trace_flush(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	unsigned entries;
	unsigned long dropped;
	if (argc != 2)
		return usage_of(s, argv, r);
	buffer_flush();
	buffer_send_stats();
	gate_send_counts();
	agg_send(&entries, &dropped);
	return command_reply(r, WIRE_REPLY_OK, "flushed");
}

/* trace stats: a STATS frame per CPU, then the per-probe counts (PROBES) */
static int trace_stats(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	if (argc != 2)
		return usage_of(s, argv, r);
	buffer_send_stats();
	gate_send_counts();
	return command_reply(r, WIRE_REPLY_OK, "stats sent; drains woken early %llu times",
			     (unsigned long long)buffer_kicks());
}

/* trace aggregations: every CPU's aggregation entries (AGGS frames) */
static int trace_aggregations(const struct subcommand *s, int argc, char **argv,
			      struct command_reply *r)
{
	unsigned entries;
	unsigned long dropped;
	if (argc != 2)
		return usage_of(s, argv, r);
	agg_send(&entries, &dropped);
	return command_reply(r, WIRE_REPLY_OK, "aggregations: %u entries, %lu dropped",
			     entries, dropped);
}

/* trace reset: zero every counter, the per-probe counts and the
 * aggregations, with no probe enabled */
static int trace_reset(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	if (argc != 2)
		return usage_of(s, argv, r);
	if (tracer_probes_enabled())
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %u probes enabled",
				     tracer_probes_enabled());
	tracer_sync_cpus();
	buffer_flush();
	buffer_reset_counters();
	gate_reset_counts();
	agg_clear(-1);
	return command_reply(r, WIRE_REPLY_OK, "counters reset");
}

/* trace buffer [BYTES]: show, or give every CPU new buffers of BYTES */
static int trace_buffer(const struct subcommand *s, int argc, char **argv,
			struct command_reply *r)
{
	uint64_t bytes;
	if (argc == 2)
		return command_reply(r, WIRE_REPLY_OK, "%zu bytes per cpu", buffer_size());
	if (argc != 3)
		return usage_of(s, argv, r);
	if (!parse_u64(argv[2], &bytes) || bytes < mm_page_size ||
	    (bytes & (bytes - 1)) || bytes > (1u << 30))
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "buffer size: a power of "
				     "two from %u to %u bytes", mm_page_size, 1u << 30);
	if (tracer_probes_enabled())
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %u probes enabled",
				     tracer_probes_enabled());
	tracer_sync_cpus();
	buffer_flush();
	if (!buffer_resize((size_t)bytes)) {
		buffer_resize(BUFFER_DEFAULT_BYTES);
		return command_reply(r, WIRE_REPLY_FAILED,
				     "no memory for %u x %llu bytes; back to %u",
				     cpu_count(), (unsigned long long)bytes,
				     BUFFER_DEFAULT_BYTES);
	}
	return command_reply(r, WIRE_REPLY_OK, "%zu bytes per cpu", buffer_size());
}

/* trace kick [on|off]: whether a CPU's ring past half full wakes its
 * drain at once (buffer.c), or the drain waits for its tick */
static int trace_kick(const struct subcommand *s, int argc, char **argv,
		      struct command_reply *r)
{
	if (argc == 3 && (!strcmp(argv[2], "on") || !strcmp(argv[2], "off")))
		buffer_kick_enable(!strcmp(argv[2], "on"));
	else if (argc != 2)
		return usage_of(s, argv, r);
	return command_reply(r, WIRE_REPLY_OK, "kick %s; drains woken early %llu times",
			     buffer_kick_enabled() ? "on" : "off",
			     (unsigned long long)buffer_kicks());
}

/* trace misses [reset|pages]: per CPU, the TLB misses and faults the
 * tracer's own code took (miss_account.h), beside every miss; reset zeroes
 * them; pages lists the pages of its last DTLB misses, newest first */
static int trace_misses(const struct subcommand *s, int argc, char **argv,
			struct command_reply *r)
{
	if (argc == 3 && !strcmp(argv[2], "reset")) {
		miss_account_reset();
		return command_reply(r, WIRE_REPLY_OK, "misses reset");
	}
	if (argc == 3 && !strcmp(argv[2], "pages")) {
		char line[24 * MC_SEEN_SLOTS * 2];
		size_t used = 0;
		for (unsigned c = 0; c < cpu_count() && used < sizeof line; c++) {
			struct miss_cpu m;
			miss_account_read(c, &m);
			unsigned n = m.seen_n < MC_SEEN_SLOTS ? (unsigned)m.seen_n : MC_SEEN_SLOTS;
			used += ksnprintf(line + used, sizeof line - used, "%scpu%u:",
					  c ? "; " : "", c);
			for (unsigned i = 0; i < n && used < sizeof line; i++)
				used += ksnprintf(line + used, sizeof line - used, " 0x%lx",
						  (unsigned long)m.seen[(m.seen_n - 1 - i) % MC_SEEN_SLOTS]);
		}
		return command_reply(r, WIRE_REPLY_OK, "%s", line);
	}
	if (argc != 2)
		return usage_of(s, argv, r);
	char line[112 * KERNEL_MAX_CPUS];
	size_t used = 0;
	for (unsigned c = 0; c < cpu_count(); c++) {
		struct miss_cpu m;
		miss_account_read(c, &m);
		used += ksnprintf(line + used, sizeof line - used,
				  "%scpu%u itlb=%lu dtlb=%lu buffer=%lu served=%lu faults=%lu "
				  "(pf=%lu gp=%lu) window=%lu (all: itlb=%lu dtlb=%lu)",
				  c ? "; " : "", c,
				  (unsigned long)m.itlb, (unsigned long)m.dtlb,
				  (unsigned long)m.dtlb_data, (unsigned long)m.xo_served,
				  (unsigned long)m.faults, (unsigned long)m.fault_pf,
				  (unsigned long)m.fault_gp, (unsigned long)m.window,
				  (unsigned long)m.itlb_all, (unsigned long)m.dtlb_all);
		if (used >= sizeof line)
			break;
	}
	return command_reply(r, WIRE_REPLY_OK, "%s%s", line,
			     miss_account_tlb_visible ? "" : " [TLB misses not visible]");
}

/* trace physical [on|off]: show, or switch, how the fire path writes the
 * buffers: by physical address (seed 003's method 2) or through their
 * mapping */
static int trace_physical(const struct subcommand *s, int argc, char **argv,
			  struct command_reply *r)
{
	if (argc == 3 && (!strcmp(argv[2], "on") || !strcmp(argv[2], "off"))) {
		const char *why = buffer_set_physical(argv[2][1] == 'n');
		if (why)
			return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
	} else if (argc != 2) {
		return usage_of(s, argv, r);
	}
	return command_reply(r, WIRE_REPLY_OK, "physical %s",
			     buffer_physical() ? "on" : "off");
}

/* trace bytes [off|mapped|physical]: branch records carry their delay
 * slot's word, read through the mapping or by physical address (seed
 * 003's method 1 from the reader's side) */
static int trace_bytes(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	static const char *const names[] = { "off", "mapped", "physical" };
	static unsigned current;
	if (argc == 3) {
		unsigned how = 0;
		while (how < 3 && strcmp(argv[2], names[how]))
			how++;
		if (how == 3)
			return usage_of(s, argv, r);
		const char *why = tarch_set_code_bytes((enum tarch_code_bytes)how);
		if (why)
			return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
		current = how;
	} else if (argc != 2) {
		return usage_of(s, argv, r);
	}
	return command_reply(r, WIRE_REPLY_OK, "bytes %s", names[current]);
}

/* trace serve [on|off]: the kernel's DTLB miss handler serves the
 * tracer's reads of execute-only pages (seed 003's Fig. 2 extension) */
static int trace_serve(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	static bool on;
	if (argc == 3 && (!strcmp(argv[2], "on") || !strcmp(argv[2], "off"))) {
		on = argv[2][1] == 'n';
		miss_account_serve_xo(on);
	} else if (argc != 2) {
		return usage_of(s, argv, r);
	}
	return command_reply(r, WIRE_REPLY_OK, "serve %s", on ? "on" : "off");
}

/* trace lock [on [ADDR...]|off]: lock the DTLB translations of the pages
 * of ADDR..., or of those the tracer's own misses were last on (the kernel
 * keeps them: miss_account.h) — seed 003's locked translations, applied to
 * what the tracer touches; each `on` adds to the locked pages */
static int trace_lock(const struct subcommand *s, int argc, char **argv,
		      struct command_reply *r)
{
	unsigned refused = 0;
	if (argc == 3 && !strcmp(argv[2], "off")) {
		mm_tlb_unlock_all();
	} else if (argc > 3 && !strcmp(argv[2], "on")) {
		for (int i = 3; i < argc; i++) {
			uint64_t a;
			if (!parse_u64(argv[i], &a))
				return usage_of(s, argv, r);
		}
		for (int i = 3; i < argc; i++) {
			uint64_t a = 0;
			parse_u64(argv[i], &a);
			if (!mm_tlb_lock_data((const void *)(uintptr_t)a))
				refused++;
		}
	} else if (argc == 3 && !strcmp(argv[2], "on")) {
		for (unsigned c = 0; c < cpu_count(); c++) {
			struct miss_cpu m;
			miss_account_read(c, &m);
			unsigned n = m.seen_n < MC_SEEN_SLOTS ? (unsigned)m.seen_n : MC_SEEN_SLOTS;
			for (unsigned i = 0; i < n; i++)
				if (!mm_tlb_lock_data((const void *)(uintptr_t)m.seen[i]))
					refused++;
		}
		if (!mm_tlb_locked() && refused)
			return command_reply(r, WIRE_REPLY_FAILED, "refused: no page "
					     "could be locked (%u tried)", refused);
	} else if (argc != 2) {
		return usage_of(s, argv, r);
	}
	return command_reply(r, WIRE_REPLY_OK, "%u pages locked (%u refused)",
			     mm_tlb_locked(), refused);
}

static const struct subcommand trace_subcommands[] = {
	{ "flush",  "",        trace_flush },
	{ "stats",  "",        trace_stats },
	{ "aggregations", "",  trace_aggregations },
	{ "reset",  "",        trace_reset },
	{ "buffer", "[BYTES]", trace_buffer },
	{ "kick",   "[on|off]", trace_kick },
	{ "misses", "[reset|pages]", trace_misses },
	{ "physical", "[on|off]", trace_physical },
	{ "bytes",  "[off|mapped|physical]", trace_bytes },
	{ "serve",  "[on|off]", trace_serve },
	{ "lock",   "[on [ADDR...]|off]", trace_lock },
};

static int cmd_trace(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	return dispatch(trace_subcommands,
			sizeof trace_subcommands / sizeof trace_subcommands[0],
			argc, argv, r);
}

COMMAND(trace) = {
	"trace", "trace SUBCOMMAND ...: the trace buffers (`trace`: usage)",
	cmd_trace,
};

/* ---- program ---- */

/* program load SLOT OFFSET HEX: bytes into the slot's staging buffer */
static int program_load_cmd(const struct subcommand *s, int argc, char **argv,
			    struct command_reply *r)
{
	uint64_t slot, offset;
	char why[128];
	if (argc != 5 || !parse_u64(argv[2], &slot) || !parse_u64(argv[3], &offset) ||
	    slot >= WIRE_PROGRAMS || offset >= PROGRAM_MAX_BYTES)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: program load SLOT "
				     "OFFSET HEX, SLOT < %u, OFFSET < %zu", WIRE_PROGRAMS,
				     PROGRAM_MAX_BYTES);
	if (program_load((unsigned)slot, (unsigned long)offset, argv[4], why,
			 sizeof why) != 0)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "%s", why);
	return command_reply(r, WIRE_REPLY_OK, "slot %u: %zu bytes at %llu, %u staged",
			     (unsigned)slot, strlen(argv[4]) / 2,
			     (unsigned long long)offset, program_staged((unsigned)slot));
}

/* program check SLOT BYTES: validate the staged bytes and install them */
static int program_check_cmd(const struct subcommand *s, int argc, char **argv,
			     struct command_reply *r)
{
	uint64_t slot, bytes;
	char why[160];
	if (argc != 4 || !parse_u64(argv[2], &slot) || !parse_u64(argv[3], &bytes) ||
	    slot >= WIRE_PROGRAMS)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: program check SLOT "
				     "BYTES, SLOT < %u", WIRE_PROGRAMS);
	if ((unsigned long)bytes != bytes)
		bytes = PROGRAM_MAX_BYTES + 1;  /* refused below as too long */
	if (program_install((unsigned)slot, (unsigned long)bytes, why, sizeof why) != 0)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
	const struct wire_program *h = &programs[slot].head;
	return command_reply(r, WIRE_REPLY_OK, "slot %u: %u instructions, %u "
			     "aggregations, major %u minor %u", (unsigned)slot,
			     h->ninsns, h->naggs, h->major, h->minor);
}

/* program clear [SLOT]: one slot, or every slot and the globals */
static int program_clear_cmd(const struct subcommand *s, int argc, char **argv,
			     struct command_reply *r)
{
	uint64_t slot = 0;
	char why[128];
	if (argc > 3 || (argc == 3 && (!parse_u64(argv[2], &slot) ||
				       slot >= WIRE_PROGRAMS)))
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: program clear "
				     "[SLOT], SLOT < %u", WIRE_PROGRAMS);
	if (program_clear(argc == 3 ? (int)slot : -1, why, sizeof why) != 0)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
	if (argc == 3)
		return command_reply(r, WIRE_REPLY_OK, "slot %u cleared", (unsigned)slot);
	return command_reply(r, WIRE_REPLY_OK, "every slot cleared, globals zeroed");
}

/* program list: a TEXT line per installed program, the count in the reply */
static int program_list_cmd(const struct subcommand *s, int argc, char **argv,
			    struct command_reply *r)
{
	unsigned n = 0;
	if (argc != 2)
		return usage_of(s, argv, r);
	for (unsigned slot = 0; slot < WIRE_PROGRAMS; slot++) {
		const struct program *prog = &programs[slot];
		char kinds[8 * WIRE_PROGRAM_MAX_AGGS + 8] = "", users[96] = "";
		size_t k = 0, u = 0;
		if (!prog->installed)
			continue;
		n++;
		for (unsigned a = 0; a < prog->head.naggs; a++)
			k += ksnprintf(kinds + k, k < sizeof kinds ? sizeof kinds - k : 0,
				       "%s%s", a ? "," : "",
				       program_agg_kind(prog->head.agg_kind[a]));
		for (unsigned i = 0; i < TRACER_MAX_PROBES; i++)
			if (tracer_probes[i].state != PROBE_FREE &&
			    probe_gates[i].program == prog)
				u += ksnprintf(users + u, u < sizeof users ? sizeof users - u : 0,
					       "%s%u", u ? "," : "", i);
		kprintf("program %u insns=%u major=%u minor=%u aggs=%s probes=%s\n", slot,
			prog->head.ninsns, prog->head.major, prog->head.minor,
			k ? kinds : "none", u ? users : "none");
	}
	return command_reply(r, WIRE_REPLY_OK, "%u programs installed", n);
}

static const struct subcommand program_subcommands[] = {
	{ "load",  "SLOT OFFSET HEX", program_load_cmd },
	{ "check", "SLOT BYTES",      program_check_cmd },
	{ "clear", "[SLOT]",          program_clear_cmd },
	{ "list",  "",                program_list_cmd },
};

static int cmd_program(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	return dispatch(program_subcommands,
			sizeof program_subcommands / sizeof program_subcommands[0],
			argc, argv, r);
}

COMMAND(program) = {
	"program", "program SUBCOMMAND ...: load, check and list probe programs "
	"(`program`: usage)", cmd_program,
};
