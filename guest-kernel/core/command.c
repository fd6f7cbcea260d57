/*
 * command.c — the command loop on the serial line, and the kernel's own
 * commands.
 *
 * The host writes one line per command; the guest answers each line with
 * exactly one REPLY frame (wire.h), after whatever TEXT or RESULT frames
 * the command produced — except `exit`, answered by the EXIT frame. A
 * line's first word names the command: one of the kernel's own (the table
 * below), else one a client registered with COMMAND() (command.h; the
 * tracer's `probe` and `trace`). Bad input never stops the loop: a line
 * that is too long is discarded up to its '\n' and answered TOO_LONG; a
 * control byte, too many arguments, an unknown command or a bad argument
 * is answered with a status and a message saying what was wrong, and
 * nothing runs.
 *
 * While no input waits, the command loop's thread blocks until the UART's
 * receive interrupt wakes it, leaving its CPU to other threads.
 */
#include "command.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "exit.h"
#include "kstring.h"
#include "link.h"
#include "virtio_console.h"
#include "selftest.h"
#include "serial.h"
#include "thread.h"
#include "timer.h"
#include "wire.h"
#include "workload.h"

static const struct command commands[];

int command_reply(struct command_reply *r, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	kvsnprintf(r->msg, r->size, fmt, ap);
	va_end(ap);
	return status;
}

static int cmd_help(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)argv, (void)rest;
	if (argc != 1)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: help");
	for (const struct command *c = commands; c->name; c++)
		kprintf("%-10s %s\n", c->name, c->usage);
	for (const struct command *c = __commands_start; c < __commands_end; c++)
		kprintf("%-10s %s\n", c->name, c->usage);
	return WIRE_REPLY_OK;
}

static int cmd_echo(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)argc, (void)argv;
	return command_reply(r, WIRE_REPLY_OK, "%s", rest);
}

static int cmd_exit(int argc, char **argv, const char *rest, struct command_reply *r)
{
	uint64_t status;
	(void)rest;
	if (argc != 2 || !parse_u64(argv[1], &status) || status > EXIT_USER_MAX)
		return command_reply(r, WIRE_REPLY_BAD_ARGS,
				     "usage: exit N, with N from 0 to %d", EXIT_USER_MAX);
	/* Answered by the EXIT frame instead of a REPLY. */
	kernel_exit((unsigned)status);
}

static int cmd_selftest(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	if (argc > 2)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: selftest [area]");
	unsigned failed = selftest_run(argc == 2 ? argv[1] : "");
	if (failed)
		return command_reply(r, WIRE_REPLY_FAILED, "%u self-tests failed", failed);
	return command_reply(r, WIRE_REPLY_OK, "all self-tests passed");
}

static const struct workload *find_workload(const char *name)
{
	for (const struct workload *w = __workloads_start; w < __workloads_end; w++)
		if (strcmp(w->name, name) == 0)
			return w;
	return 0;
}

static int cmd_workloads(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)argv, (void)rest;
	if (argc != 1)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: workloads");
	for (const struct workload *w = __workloads_start; w < __workloads_end; w++) {
		kprintf("%s: %s\n", w->name, w->help);
		for (const struct workload_param *p = w->params; p && p->name; p++)
			kprintf("  %s=%llu (%llu..%llu) %s\n", p->name,
				(unsigned long long)p->def, (unsigned long long)p->min,
				(unsigned long long)p->max, p->help);
	}
	return WIRE_REPLY_OK;
}

/* Parse `NAME [key=value ...]` (argv[1..]) into *w and values. */
static int parse_workload(int argc, char **argv, const struct workload **wp,
			  uint64_t *values, struct command_reply *r)
{
	if (argc < 2)
		return command_reply(r, WIRE_REPLY_BAD_ARGS,
				     "usage: %s <workload> [key=value ...]", argv[0]);
	const struct workload *w = find_workload(argv[1]);
	if (!w)
		return command_reply(r, WIRE_REPLY_BAD_ARGS,
				     "no workload \"%s\" (see `workloads`)", argv[1]);

	unsigned nparams = 0;
	for (const struct workload_param *p = w->params; p && p->name; p++) {
		if (nparams == WORKLOAD_MAX_PARAMS)
			return command_reply(r, WIRE_REPLY_FAILED, "%s declares more "
					     "than %u parameters (workload.h)", w->name,
					     WORKLOAD_MAX_PARAMS);
		values[nparams++] = p->def;
	}

	for (int i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq)
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "\"%s\": expected key=value", argv[i]);
		*eq = '\0';
		unsigned k;
		for (k = 0; k < nparams && strcmp(w->params[k].name, argv[i]); k++)
			;
		if (k == nparams)
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "%s has no parameter \"%s\"", w->name,
					     argv[i]);
		const struct workload_param *p = &w->params[k];
		uint64_t v;
		if (!parse_u64(eq + 1, &v) || v < p->min || v > p->max)
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "%s=%s: expected a number from %llu to %llu",
					     p->name, eq + 1, (unsigned long long)p->min,
					     (unsigned long long)p->max);
		values[k] = v;
	}
	*wp = w;
	return WIRE_REPLY_OK;
}

/* One workload run: the thread that runs it and what it found. */
static struct {
	const struct workload *w;
	uint64_t               values[WORKLOAD_MAX_PARAMS];
	struct workload_result res;
	uint64_t               cycles;
	struct thread         *thread;     /* a `start`ed run not yet waited for */
} job;

static void job_run(void)
{
	job.res = (struct workload_result){ 0, false };
	uint64_t t0 = arch_cycles();
	job.w->run(job.values, &job.res);
	job.cycles = arch_cycles() - t0;
}

static void job_thread(void *arg)
{
	(void)arg;
	job_run();
}

static int job_report(struct command_reply *r)
{
	struct wire_result wr = {
		.status = job.res.ok ? 0 : 1, .value = job.res.value, .cycles = job.cycles,
	};
	console_flush();
	link_send(WIRE_FRAME_RESULT, &wr, sizeof wr, job.w->name, strlen(job.w->name));
	if (!job.res.ok)
		return command_reply(r, WIRE_REPLY_FAILED, "%s: wrong result %llu",
				     job.w->name, (unsigned long long)job.res.value);
	return command_reply(r, WIRE_REPLY_OK, "%s = %llu", job.w->name,
			     (unsigned long long)job.res.value);
}

void workload_expect(const char *function, uint64_t calls)
{
	struct wire_expect e = { .calls = calls };
	link_send(WIRE_FRAME_EXPECT, &e, sizeof e, function, strlen(function));
}

/* Take the workload of argv as the job, unless one is still running. */
static int job_set(int argc, char **argv, struct command_reply *r)
{
	if (job.thread)
		return command_reply(r, WIRE_REPLY_FAILED,
				     "refused: %s is running (`wait`)",
				     job.w->name);
	return parse_workload(argc, argv, &job.w, job.values, r);
}

static int cmd_run(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	int status = job_set(argc, argv, r);
	if (status != WIRE_REPLY_OK)
		return status;
	job_run();
	return job_report(r);
}

static int cmd_start(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	int status = job_set(argc, argv, r);
	if (status != WIRE_REPLY_OK)
		return status;
	job.thread = thread_create("workload", job_thread, 0, THREAD_ANY_CPU);
	if (!job.thread)
		return command_reply(r, WIRE_REPLY_FAILED, "no memory for a thread");
	return command_reply(r, WIRE_REPLY_OK, "%s started", job.w->name);
}

/* wait [TICKS]: with TICKS, give up after that many ticks and answer
 * "NAME still running" (the host polls between, e.g. for a D script's
 * exit()); the workload goes on and a later `wait` reaps it. */
static int cmd_wait(int argc, char **argv, const char *rest, struct command_reply *r)
{
	uint64_t ticks = 0;
	(void)rest;
	if (argc > 2 || (argc == 2 && (!parse_u64(argv[1], &ticks) || !ticks)))
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: wait [TICKS], "
				     "TICKS > 0");
	if (!job.thread)
		return command_reply(r, WIRE_REPLY_FAILED, "no workload was started");
	for (uint64_t t = 0; argc == 2 && job.thread->state != THREAD_ZOMBIE; t++) {
		if (t == ticks)
			return command_reply(r, WIRE_REPLY_OK, "%s still running",
					     job.w->name);
		thread_sleep(1);
	}
	thread_join(job.thread);
	job.thread = 0;
	return job_report(r);
}

static int cmd_timer(int argc, char **argv, const char *rest, struct command_reply *r)
{
	uint64_t hz;
	(void)rest;
	if (argc == 2 && parse_u64(argv[1], &hz) && hz <= arch_timer_hz_max &&
	    timer_set_hz((unsigned)hz))
		return command_reply(r, WIRE_REPLY_OK, "timer at %u Hz", timer_hz());
	if (argc == 1)
		return command_reply(r, WIRE_REPLY_OK, "timer at %u Hz", timer_hz());
	return command_reply(r, WIRE_REPLY_BAD_ARGS,
			     "usage: timer [HZ], HZ from %u to %u",
			     arch_timer_hz_min, arch_timer_hz_max);
}

static int cmd_info(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)argv, (void)rest;
	if (argc != 1)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: info");
	return command_reply(r, WIRE_REPLY_OK,
			     "arch=%s cpus=%u hz=%u ticks=%llu skipped=%llu cycles=%llu "
			     "rx_overruns=%lu",
			     arch_name, cpu_count(), timer_hz(),
			     (unsigned long long)timer_ticks(),
			     (unsigned long long)timer_ticks_skipped(),
			     (unsigned long long)arch_cycles(), serial_rx_overruns());
}

#define CHANNEL_WORD(name, value, word, meaning) [value] = word,
static const char *const channel_words[] = { WIRE_CHANNELS(CHANNEL_WORD) };

static int cmd_channel(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	if (argc > 2)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: channel [serial|virtio|shm]");
	if (argc == 2) {
		unsigned want = 0;
		for (unsigned c = 1; c < sizeof channel_words / sizeof *channel_words; c++)
			if (channel_words[c] && strcmp(argv[1], channel_words[c]) == 0)
				want = c;
		if (!want)
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "unknown channel '%s': serial, virtio or shm", argv[1]);
		if (!link_channel_set(want) && want == WIRE_CHANNEL_SHM)
			return command_reply(r, WIRE_REPLY_FAILED,
					     "no shm channel: no ring table was announced");
		if (link_channel() != want)
			return command_reply(r, WIRE_REPLY_FAILED, "no virtio channel: %s",
					     link_channel_absent());
	}
	struct vcon_stats vs;
	vcon_get_stats(&vs);
	if (!*link_channel_absent())
		return command_reply(r, WIRE_REPLY_OK,
				     "channel=%s virtio: port=%u host_open=%d slots=%u "
				     "frames=%llu bytes=%llu full=%llu max_ports=%u",
				     channel_words[link_channel()], vs.vs_port,
				     vs.vs_host_open, vs.vs_slots,
				     (unsigned long long)vs.vs_frames,
				     (unsigned long long)vs.vs_bytes,
				     (unsigned long long)vs.vs_full,
				     (unsigned)vs.vs_max_ports);
	return command_reply(r, WIRE_REPLY_OK, "channel=%s virtio: absent (%s)",
			     channel_words[link_channel()], link_channel_absent());
}

static int cmd_crash(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)rest;
	if (argc == 2)
		arch_crash(argv[1]);     /* returns only for an unknown kind */
	return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: crash KIND, KIND one of: %s",
			     arch_crash_kinds);
}

static int cmd_hang(int argc, char **argv, const char *rest, struct command_reply *r)
{
	(void)argv, (void)rest;
	if (argc != 1)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: hang");
	arch_hang();
}

static const struct command commands[] = {
	{ "help",      "list commands", cmd_help },
	{ "echo",      "echo TEXT: reply with TEXT", cmd_echo },
	{ "info",      "arch, cpus, timer rate, ticks, cycles", cmd_info },
	{ "selftest",  "selftest [AREA]: run self-tests, PASS/FAIL lines", cmd_selftest },
	{ "workloads", "list workloads and their parameters", cmd_workloads },
	{ "run",       "run WORKLOAD [key=value ...]: run and check a workload", cmd_run },
	{ "start",     "start WORKLOAD [key=value ...]: run it in the background", cmd_start },
	{ "wait",      "wait [TICKS]: wait for the started workload (at most TICKS); its result", cmd_wait },
	{ "timer",     "timer [HZ]: show or set the tick rate", cmd_timer },
	{ "channel",   "channel [serial|virtio|shm]: show or choose the trace channel", cmd_channel },
	{ "crash",     "crash KIND: raise an exception nobody catches", cmd_crash },
	{ "hang",      "mask interrupts and halt forever", cmd_hang },
	{ "exit",      "exit N: stop the guest with status N", cmd_exit },
	{ 0, 0, 0 },
};

/* The kernel's own commands first, then those clients registered. */
static const struct command *find_command(const char *name)
{
	for (const struct command *c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	for (const struct command *c = __commands_start; c < __commands_end; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return 0;
}

static void send_reply(uint32_t number, int status, const char *msg)
{
	struct wire_reply head = { .status = status, .command = number,
				   .channel_frames = link_channel_frames() };
	console_flush();
	link_send(WIRE_FRAME_REPLY, &head, sizeof head, msg, strlen(msg));
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static void execute(uint32_t number, char *line)
{
	/* echo returns a whole line; a refusal, its whole reason with a prefix */
	char msgbuf[WIRE_MAX_COMMAND + WIRE_MAX_REASON] = "";
	struct command_reply reply = { msgbuf, sizeof msgbuf };
	char *argv[COMMAND_MAX_ARGS + 1];
	int argc = 0, status;

	while (is_space(*line))
		line++;
	/* The text after the command name, verbatim, before tokenising
	 * writes NULs into the line. */
	char rest[WIRE_MAX_COMMAND + 1];
	const char *after = line;
	while (*after && !is_space(*after))
		after++;
	while (is_space(*after))
		after++;
	memcpy(rest, after, strlen(after) + 1);

	for (char *p = line; *p;) {
		if (argc == COMMAND_MAX_ARGS) {
			char msg[48];
			ksnprintf(msg, sizeof msg, "malformed line: more than %d words",
				  COMMAND_MAX_ARGS);
			send_reply(number, WIRE_REPLY_BAD_ARGS, msg);
			return;
		}
		argv[argc++] = p;
		while (*p && !is_space(*p))
			p++;
		if (*p) {
			*p++ = '\0';
			while (is_space(*p))
				p++;
		}
	}
	argv[argc] = 0;
	if (argc == 0) {
		send_reply(number, WIRE_REPLY_OK, "");
		return;
	}

	const struct command *c = find_command(argv[0]);
	if (!c) {
		ksnprintf(msgbuf, sizeof msgbuf,
			  "unknown command \"%.40s\" (try `help`)", argv[0]);
		status = WIRE_REPLY_UNKNOWN;
	} else {
		status = c->run(argc, argv, rest, &reply);
	}
	send_reply(number, status, msgbuf);
}

_Noreturn void command_loop(void)
{
	char line[WIRE_MAX_COMMAND + 1];
	unsigned len = 0, bad_column = 0;
	unsigned char bad_byte = 0;
	bool overlong = false;
	uint32_t number = 0;

	for (;;) {
		int c = serial_getc();
		if (c < 0) {
			serial_wait_input();
			continue;
		}

		if (c == '\r')
			continue;
		if (c != '\n') {
			if ((c < 0x20 && c != '\t') || c == 0x7f) {
				if (!bad_column) {
					bad_column = len + 1;
					bad_byte = (unsigned char)c;
				}
			}
			if (len < WIRE_MAX_COMMAND)
				line[len++] = (char)c;
			else
				overlong = true;
			continue;
		}
		number++;
		if (overlong) {
			char msg[64];
			ksnprintf(msg, sizeof msg, "line longer than %d bytes, discarded",
				  WIRE_MAX_COMMAND);
			send_reply(number, WIRE_REPLY_TOO_LONG, msg);
		} else if (bad_column) {
			char msg[80];
			ksnprintf(msg, sizeof msg,
				  "malformed line: control byte 0x%02x at column %u",
				  bad_byte, bad_column);
			send_reply(number, WIRE_REPLY_BAD_ARGS, msg);
		} else {
			line[len] = '\0';
			execute(number, line);
		}
		len = bad_column = 0;
		overlong = false;
	}
}
