/*
 * itrace.c — the `itrace` command: instruction tracing of the threads
 * that enter a function, from its entry probe to its matching return
 * (the arch's tracer/arch/<arch>/itrace.c does the tracing; wire.h's
 * ITRACE records carry it; bench/trace/itrace.py decodes them).
 *
 *   itrace on ID METHOD [SKIP [REGIONS]]   probe ID (an entry probe the
 *       host added) starts regions; METHOD a WIRE_ITRACE_METHODS word or
 *       value; the first SKIP entries are not traced, then at most
 *       REGIONS are (0 or absent: every one)
 *   itrace off                             start no more regions
 *   itrace stats                           the traps tracing caused, per
 *       CPU (TEXT lines) and in total (the reply)
 *
 * Bad arguments change nothing: the reply says which.
 */
#include "command.h"
#include "kstring.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

#define METHOD_ROW(name, value, word) { word, value },
static const struct { const char *word; unsigned value; } methods[] = {
	WIRE_ITRACE_METHODS(METHOD_ROW)
};

static int method_of(const char *s)
{
	uint64_t v;
	for (unsigned i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (!strcmp(s, methods[i].word) ||
		    (parse_u64(s, &v) && v == methods[i].value))
			return (int)methods[i].value;
	return -1;
}

static int cmd_itrace(int argc, char **argv, const char *rest,
		      struct command_reply *r)
{
	(void)rest;
	if (argc >= 4 && argc <= 6 && !strcmp(argv[1], "on")) {
		uint64_t id, skip = 0, regions = 0;
		int m = method_of(argv[3]);
		if (!parse_u64(argv[2], &id) || id >= TRACER_MAX_PROBES ||
		    tracer_probes[id].state == PROBE_FREE)
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "itrace on: %s is no probe", argv[2]);
		if (m < 0)
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "itrace on: method %s: address (3), previous (4) "
					     "or next (5)", argv[3]);
		if ((argc >= 5 && !parse_u64(argv[4], &skip)) ||
		    (argc == 6 && !parse_u64(argv[5], &regions)))
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "itrace on: SKIP and REGIONS are counts");
		const char *why = "";
		if (tarch_itrace_arm(&tracer_probes[id], (unsigned)m, skip,
				     regions, &why) != 0)
			return command_reply(r, WIRE_REPLY_FAILED, "itrace on: %s", why);
		return command_reply(r, WIRE_REPLY_OK, "itrace on probe %u, method %d",
				     (unsigned)id, m);
	}
	if (argc == 2 && !strcmp(argv[1], "off")) {
		tarch_itrace_disarm();
		return command_reply(r, WIRE_REPLY_OK, "itrace off");
	}
	if (argc == 2 && !strcmp(argv[1], "stats")) {
		char buf[256];
		tarch_itrace_stats(buf, sizeof buf);
		return command_reply(r, WIRE_REPLY_OK, "%s", buf);
	}
	return command_reply(r, WIRE_REPLY_BAD_ARGS,
			     "usage: itrace on ID address|previous [SKIP [REGIONS]] | "
			     "off | stats");
}

COMMAND(itrace) = {
	"itrace", "itrace on|off|stats ...: trace every instruction of a function's "
	"callers' regions (`itrace`: usage)",
	cmd_itrace,
};
