/*
 * commands.h — how the tracer's commands (`probe`, `trace`, `program`) are
 * built: each is a table of subcommands, and a line picks its row by its
 * second word (commands.c). A command's handlers and its table live in its
 * own file (commands_probe.c, commands_trace.c, commands_program.c);
 * commands.c registers the three with the kernel's command loop.
 */
#ifndef COMMANDS_H
#define COMMANDS_H

#include "command.h"

struct subcommand {
	const char *name;
	const char *args;       /* what follows the name; NULL: an alias, unlisted */
	int (*run)(const struct subcommand *s, int argc, char **argv,
		   struct command_reply *r);
};

struct subcommand_table {
	const struct subcommand *rows;
	unsigned n;
};

#define SUBCOMMAND_TABLE(rows) { rows, sizeof rows / sizeof rows[0] }

/* Answer "usage: CMD SUB ARGS" for s's row (WIRE_REPLY_BAD_ARGS). */
int subcommand_usage(const struct subcommand *s, char **argv, struct command_reply *r);

extern const struct subcommand_table probe_subcommands, trace_subcommands,
	program_subcommands;

#endif
