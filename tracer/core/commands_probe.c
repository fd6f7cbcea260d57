/*
 * commands_probe.c — `probe`'s subcommands: add, arm and disarm, list and
 * clear probes, and set what a firing does (mechanism, action, program,
 * pass and maximum hit counts, compiler hooks, check mode).
 *
 * A handler checks its own arguments and changes nothing unless every one
 * is good: a list of probe ids ("all" or ID...) is checked whole before the
 * first probe is touched. The work is probe.c's (the probe table, add,
 * arm, settle, clear) and gate.c's (what a probe runs, how often, the
 * per-probe counts); enabling or disabling ends with tracer_settle(), so
 * every CPU runs the new bytes before the reply. The table at the end is
 * what commands.c registers as `probe`.
 */
#include "arch.h"
#include "commands.h"
#include "console.h"
#include "cpu.h"
#include "gate.h"
#include "kstring.h"
#include "program.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

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

static const char *const probe_state_names[] = {
	[PROBE_FREE] = "free", [PROBE_DISABLED] = "disabled",
	[PROBE_ENABLED] = "enabled",
};

/* probe add ID ADDR KIND [NARGS [MAP]]: NARGS words of arguments for an
 * entry, of the value for a return (2 where a value takes two registers);
 * MAP, an entry's: where each word is (args.c) */
static int probe_add(const struct subcommand *s, int argc, char **argv,
		     struct command_reply *r)
{
	unsigned id;
	uint64_t addr, nargs = 0;
	char kinds[64];

	if (argc < 5 || argc > 7 || !parse_id(argv[2], &id) ||
	    !parse_u64(argv[3], &addr) ||
	    (argc >= 6 && (!parse_u64(argv[5], &nargs) || nargs > TRACER_MAX_ARGS))) {
		tracer_probe_kind_words(kinds, sizeof kinds, "|", "|");
		return command_reply(r, WIRE_REPLY_BAD_ARGS,
				     "usage: probe add ID ADDR %s [NARGS [MAP]], ID < %d, "
				     "NARGS <= %d", kinds, TRACER_MAX_PROBES,
				     TRACER_MAX_ARGS);
	}
	uint8_t map[TRACER_MAX_ARGS];
	char why[WIRE_MAX_REASON];
	if (argc == 7 && tracer_argmap_parse(argv[6], (unsigned)nargs, map, why,
					     sizeof why) != 0)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "%s", why);
	int kind = tracer_probe_kind(argv[4]);
	if (kind < 0) {
		tracer_probe_kind_words(kinds, sizeof kinds, ", ", " or ");
		return command_reply(r, WIRE_REPLY_BAD_ARGS,
				     "probe kind \"%s\": expected %s", argv[4], kinds);
	}
	if ((uint64_t)(uintptr_t)addr != addr)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: 0x%llx is outside "
				     "kernel text", (unsigned long long)addr);
	if (tracer_probe_add(id, (uintptr_t)addr, (unsigned)kind, (unsigned)nargs, why,
			     sizeof why) != 0)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
	if (argc == 7)
		tracer_probe_argmap(id, map, (unsigned)nargs);
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
	char why[WIRE_MAX_REASON], other[WIRE_MAX_REASON];

	if (argc < 3)
		return subcommand_usage(s, argv, r);
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
	/* A probe refused (a watch, a site the mechanism cannot arm) puts back
	 * those this line already switched: a refused line arms nothing. */
	uint8_t was[COMMAND_MAX_ARGS];
	for (unsigned i = 0; i < n; i++) {
		was[i] = tracer_probes[ids[i]].state;
		if (tracer_probe_set(ids[i], enable, why, sizeof why) != 0) {
			while (i--)
				tracer_probe_set(ids[i], was[i] == PROBE_ENABLED, other,
						 sizeof other);
			tracer_settle();
			return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
		}
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
	char why[WIRE_MAX_REASON];

	if (argc >= 4)
		for (unsigned a = 0; a < TRACER_NACTIONS; a++)
			if (strcmp(argv[argc - 1], tracer_action_names[a]) == 0)
				action = a;
	if (argc < 4 || action == TRACER_NACTIONS)
		return subcommand_usage(s, argv, r);
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
	char why[WIRE_MAX_REASON];
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
	char why[WIRE_MAX_REASON];

	if (argc < 4 || !parse_u64(argv[argc - 1], &v) ||
	    (pass && v > UINT32_MAX) || (unsigned long)v != v)
		return subcommand_usage(s, argv, r);
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
		return subcommand_usage(s, argv, r);
	tracer_hooks_on = on_off(argv[2]);
	return command_reply(r, WIRE_REPLY_OK, "compiler hooks %s", argv[2]);
}

/* probe check on|off */
static int probe_check(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	if (argc != 3 || on_off(argv[2]) < 0)
		return subcommand_usage(s, argv, r);
	if (on_off(argv[2]) && !tarch_check_words)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: no check mode "
				     "on %s", arch_name);
	tracer_check_mode = on_off(argv[2]);
	return command_reply(r, WIRE_REPLY_OK, "check mode %s", argv[2]);
}

/* probe ride ENTRY RETURN: RETURN's firings come from ENTRY's return
 * trampoline under a mechanism that has one (mechanism.h); both added and
 * disabled, ENTRY an entry probe and RETURN a return probe. `probe ride`
 * alone: how many calls were trampolined, fell back to the return site's
 * trap, and were abandoned (never returned through their `ret`). */
static int probe_ride(const struct subcommand *s, int argc, char **argv,
		      struct command_reply *r)
{
	unsigned e, x;
	if (argc == 2) {
		unsigned long n[TARCH_RIDE_STATS] = { 0 };
		tarch_ride_stats(n);
		return command_reply(r, WIRE_REPLY_OK, "trampolined %lu fallbacks %lu "
				     "abandoned %lu", n[0], n[1], n[2]);
	}
	if (argc != 4 || !parse_id(argv[2], &e) || !parse_id(argv[3], &x))
		return subcommand_usage(s, argv, r);
	char why[WIRE_MAX_REASON];
	if (tracer_probe_ride(e, x, why, sizeof why) != 0)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
	return command_reply(r, WIRE_REPLY_OK, "probe %u rides on probe %u", x, e);
}

/* probe list: a TEXT line per probe, the totals in the reply */
static int probe_list(const struct subcommand *s, int argc, char **argv,
		      struct command_reply *r)
{
	if (argc != 2)
		return subcommand_usage(s, argv, r);
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
		return subcommand_usage(s, argv, r);
	return command_reply(r, WIRE_REPLY_OK, "%u probes removed", tracer_clear());
}

/* `probe`, as commands.c registers it; an alias has no args and goes
 * unlisted in the usage. */
static const struct subcommand probe_rows[] = {
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
	{ "ride",      "[ENTRY RETURN]",               probe_ride },
	{ "list",      "",                             probe_list },
	{ "clear",     "",                             probe_clear },
};

const struct subcommand_table probe_subcommands = SUBCOMMAND_TABLE(probe_rows);
