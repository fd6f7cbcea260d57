/*
 * commands_program.c — `program`'s subcommands: a probe program reaches the
 * guest in pieces (load: hex bytes into a slot's staging buffer), is
 * validated and installed whole (check), and is listed or cleared; a
 * global variable's word is read back (global).
 *
 * The slots, the validator and the interpreter are program.c's,
 * program_check.c's and program_run.c's; which probes run a program is
 * `probe program`'s (commands_probe.c). A handler here parses, passes a
 * refusal's reason on to the host, and answers. The table at the end is
 * what commands.c registers as `program`.
 */
#include "atomic.h"
#include "commands.h"
#include "console.h"
#include "gate.h"
#include "kstring.h"
#include "program.h"
#include "tracer.h"
#include "wire.h"

/* program load SLOT OFFSET HEX: bytes into the slot's staging buffer */
static int program_load_cmd(const struct subcommand *s, int argc, char **argv,
			    struct command_reply *r)
{
	uint64_t slot, offset;
	char why[WIRE_MAX_REASON];
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
	char why[WIRE_MAX_REASON];
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
	char why[WIRE_MAX_REASON];
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
		return subcommand_usage(s, argv, r);
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

/* program global N: global variable N's word, in decimal (a D script's
 * globals for its END clause; exit()'s flag while the workload runs) */
static int program_global_cmd(const struct subcommand *s, int argc, char **argv,
			      struct command_reply *r)
{
	uint64_t n;
	if (argc != 3 || !parse_u64(argv[2], &n) || n >= WIRE_PROGRAM_GLOBALS)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: program global N, "
				     "N < %u", WIRE_PROGRAM_GLOBALS);
	return command_reply(r, WIRE_REPLY_OK, "%llu",
			     (unsigned long long)atomic64_read(&program_globals[n]));
}

/* `program`, as commands.c registers it. */
static const struct subcommand program_rows[] = {
	{ "load",  "SLOT OFFSET HEX", program_load_cmd },
	{ "check", "SLOT BYTES",      program_check_cmd },
	{ "clear", "[SLOT]",          program_clear_cmd },
	{ "list",  "",                program_list_cmd },
	{ "global", "N",              program_global_cmd },
};

const struct subcommand_table program_subcommands = SUBCOMMAND_TABLE(program_rows);
