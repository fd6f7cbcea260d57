/*
 * command.h — the serial command loop.
 *
 * The host sends one text line per command: a name and whitespace-separated
 * arguments. The guest runs it and answers with one REPLY frame whose status
 * is a WIRE_REPLY_* value (wire.h). Commands are a static table in
 * core/command.c; workloads register themselves (workload.h).
 */
#ifndef COMMAND_H
#define COMMAND_H

#define COMMAND_MAX_ARGS 16

_Noreturn void command_loop(void);

/* A command writes a short message for the REPLY (may leave it empty). */
struct command_reply {
	char  *msg;
	unsigned size;
};

#endif
