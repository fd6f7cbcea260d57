/*
 * commands_trace.c — `trace`'s subcommands: the per-CPU trace buffers and
 * what the host reads from them (flush, stats, aggregations, reset, buffer
 * size, drain kicks), and seed 003's measures against the tracer's own TLB
 * misses and faults (misses, physical, bytes, serve, lock).
 *
 * The buffers are buffer.c's, the per-probe counts gate.c's, the
 * aggregations aggregate.c's, the miss counters and TLB locks the kernel's
 * (miss_account.h, mm.h); a handler here parses, refuses what would lose
 * records (a reset or resize while probes are enabled), and answers. The
 * table at the end is what commands.c registers as `trace`.
 */
#include "aggregate.h"
#include "buffer.h"
#include "commands.h"
#include "console.h"
#include "cpu.h"
#include "gate.h"
#include "kstring.h"
#include "miss_account.h"
#include "mm.h"
#include "stack.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

/* trace flush: every record written so far is sent, then the STATS, the
 * per-probe counts (PROBES), the stacks (STACKS) and the aggregations (AGGS) */
static int trace_flush(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	unsigned entries, stacks;
	unsigned long dropped, stacks_dropped;
	if (argc != 2)
		return subcommand_usage(s, argv, r);
	buffer_flush();
	buffer_send_stats();
	gate_send_counts();
	stack_send(&stacks, &stacks_dropped);
	agg_send(&entries, &dropped);
	(void)stacks, (void)stacks_dropped;
	return command_reply(r, WIRE_REPLY_OK, "flushed");
}

/* trace stats: a STATS frame per CPU, then the per-probe counts (PROBES);
 * the reply adds every CPU's firings and late traps (tracer.h) */
static int trace_stats(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	if (argc != 2)
		return subcommand_usage(s, argv, r);
	buffer_send_stats();
	gate_send_counts();
	return command_reply(r, WIRE_REPLY_OK, "stats sent; drains woken early %llu times; "
			     "fired=%llu late=%llu", (unsigned long long)buffer_kicks(),
			     (unsigned long long)tracer_fired_count(),
			     (unsigned long long)tracer_late_count());
}

/* trace aggregations: every CPU's stacks (STACKS frames), which its keys
 * may name, and aggregation entries (AGGS frames) */
static int trace_aggregations(const struct subcommand *s, int argc, char **argv,
			      struct command_reply *r)
{
	unsigned entries, stacks;
	unsigned long dropped, stacks_dropped;
	if (argc != 2)
		return subcommand_usage(s, argv, r);
	stack_send(&stacks, &stacks_dropped);
	agg_send(&entries, &dropped);
	(void)stacks, (void)stacks_dropped;     /* the STACKS frames say */
	return command_reply(r, WIRE_REPLY_OK, "aggregations: %u entries, %lu dropped",
			     entries, dropped);
}

/* trace reset: zero every counter, the per-probe counts and the
 * aggregations, with no probe enabled */
static int trace_reset(const struct subcommand *s, int argc, char **argv,
		       struct command_reply *r)
{
	if (argc != 2)
		return subcommand_usage(s, argv, r);
	if (tracer_probes_enabled())
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %u probes enabled",
				     tracer_probes_enabled());
	tracer_sync_cpus();
	buffer_flush();
	buffer_reset_counters();
	gate_reset_counts();
	agg_clear(-1);
	stack_clear();
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
		return subcommand_usage(s, argv, r);
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
		return subcommand_usage(s, argv, r);
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
		return subcommand_usage(s, argv, r);
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
		return subcommand_usage(s, argv, r);
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
			return subcommand_usage(s, argv, r);
		const char *why = tarch_set_code_bytes((enum tarch_code_bytes)how);
		if (why)
			return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
		current = how;
	} else if (argc != 2) {
		return subcommand_usage(s, argv, r);
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
		return subcommand_usage(s, argv, r);
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
				return subcommand_usage(s, argv, r);
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
		return subcommand_usage(s, argv, r);
	}
	return command_reply(r, WIRE_REPLY_OK, "%u pages locked (%u refused)",
			     mm_tlb_locked(), refused);
}

/* `trace`, as commands.c registers it. */
static const struct subcommand trace_rows[] = {
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

const struct subcommand_table trace_subcommands = SUBCOMMAND_TABLE(trace_rows);
