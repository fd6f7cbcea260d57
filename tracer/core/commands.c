/*
 * commands.c — the tracer's commands on the serial line, `probe`, `trace`
 * and `program`, registered in one place, and the dispatch they share.
 *
 * The three register with the kernel's command loop through COMMAND()
 * (command.h), so the kernel never names the tracer. Each is a table of
 * subcommands — name, arguments, handler — kept beside its handlers
 * (commands_probe.c, commands_trace.c, commands_program.c); a line picks
 * its row by its second word, and a line that names none is answered with
 * the usage of every row. A handler checks its own arguments and answers
 * through command_reply(); it changes nothing unless every argument is
 * good. Commands run one at a time in the command loop's thread.
 */
#include "commands.h"
#include "console.h"
#include "kstring.h"
#include "wire.h"

int subcommand_usage(const struct subcommand *s, char **argv, struct command_reply *r)
{
	return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: %s %s%s%s", argv[0],
			     s->name, s->args && *s->args ? " " : "",
			     s->args ? s->args : "");
}

/* Run argv[1]'s row of t, or answer with every row's usage. */
static int dispatch(const struct subcommand_table *t, int argc, char **argv,
		    struct command_reply *r)
{
	const struct subcommand *table = t->rows;
	unsigned n = t->n;

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

static int cmd_probe(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	return dispatch(&probe_subcommands, argc, argv, r);
}

static int cmd_trace(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	return dispatch(&trace_subcommands, argc, argv, r);
}

static int cmd_program(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	return dispatch(&program_subcommands, argc, argv, r);
}

COMMAND(probe) = {
	"probe", "probe SUBCOMMAND ...: add, arm and list probes (`probe`: usage)",
	cmd_probe,
};

COMMAND(trace) = {
	"trace", "trace SUBCOMMAND ...: the trace buffers (`trace`: usage)",
	cmd_trace,
};

COMMAND(program) = {
	"program", "program SUBCOMMAND ...: load, check and list probe programs "
	"(`program`: usage)", cmd_program,
};
