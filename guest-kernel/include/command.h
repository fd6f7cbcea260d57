/*
 * command.h — the serial command loop, and how a command joins it.
 *
 * The host sends one text line per command: a name and whitespace-separated
 * arguments. The guest runs it and answers with one REPLY frame whose status
 * is a WIRE_REPLY_* value (wire.h) and whose message the command wrote with
 * command_reply(). The kernel's own commands are a table in
 * core/command.c; a client of the kernel (the tracer's `probe` and `trace`)
 * adds its own with COMMAND(), which places the descriptor in the .commands
 * section, as WORKLOAD() does for workloads (workload.h): the kernel never
 * names its clients, and `help` lists the table, then the section.
 */
#ifndef COMMAND_H
#define COMMAND_H

#define COMMAND_MAX_ARGS 16

_Noreturn void command_loop(void);

/* Where a command writes a short message for the REPLY (may stay empty). */
struct command_reply {
	char  *msg;
	unsigned size;
};

/* Format the REPLY's message into r and return status, so that a command
 * ends with `return command_reply(r, WIRE_REPLY_OK, "...", ...)`. */
int command_reply(struct command_reply *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct command {
	const char *name;
	const char *usage;      /* one line for `help` */
	/* argv[0] is the name, argv[argc] NULL; rest is the line after the
	 * name, verbatim. Returns a WIRE_REPLY_* status. */
	int (*run)(int argc, char **argv, const char *rest, struct command_reply *r);
};

/* COMMAND(ident) = { "name", "usage", run }; in a client's file. */
#define COMMAND(ident) \
	static const struct command command_##ident \
	__attribute__((used, section(".commands"), aligned(sizeof(void *))))

extern const struct command __commands_start[], __commands_end[];

#endif
