/*
 * sample.c — sampling probes: DTrace's profile-HZ (every CPU) and tick-HZ
 * (the boot CPU), on the kernel's sampling timer (sample.h).
 *
 * `profile HZ all|one SLOT` starts the timer and makes each sample run
 * the probe program in SLOT, in the timer interrupt, on the interrupted
 * state: the arch builds the context from the trap frame
 * (tarch_sample_run), so `arg 0` is the interrupted PC and `stack` the
 * interrupted stack, its first frame that PC. The sample's probe is no
 * probe of the table: its id is WIRE_NO_PROBE, its kind WIRE_EVENT_SAMPLE.
 * Each CPU counts its samples and their lateness (how long after its
 * deadline the interrupt came, as illumos records it); `profile off`
 * stops the timer and replies with them and the cycles it ran:
 * `samples=A,B,.. late_avg=A,B,.. late_max=A,B,.. cycles=N`.
 */
#include "arch.h"
#include "command.h"
#include "console.h"
#include "cpu.h"
#include "init.h"
#include "kstring.h"
#include "program.h"
#include "sample.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

static struct probe sample_probe = {
	.id = WIRE_NO_PROBE, .kind = WIRE_EVENT_SAMPLE,
};
static const struct program *volatile sample_program;
static uint64_t samples[KERNEL_MAX_CPUS], late_sum[KERNEL_MAX_CPUS],
		late_max[KERNEL_MAX_CPUS], faults;
static uint64_t started;
static unsigned running_hz;

static void on_sample(const struct trapframe *tf, uint64_t late)
{
	unsigned cpu = this_cpu()->id;
	samples[cpu]++;
	late_sum[cpu] += late;
	if (late > late_max[cpu])
		late_max[cpu] = late;
	const struct program *prog = sample_program;
	if (prog && tarch_sample_run(tf, &sample_probe, prog) == PROGRAM_FAULT)
		faults++;
}

static void sample_init(void)
{
	sample_hook = on_sample;
}
KERNEL_INIT(sample_init);

static size_t list(char *buf, size_t size, const char *name, const uint64_t *v)
{
	size_t n = ksnprintf(buf, size, " %s=", name);
	for (unsigned c = 0; c < cpu_count() && n < size; c++)
		n += ksnprintf(buf + n, size - n, "%s%llu", c ? "," : "",
			       (unsigned long long)v[c]);
	return n < size ? n : size - 1;
}

static int profile_off(struct command_reply *r)
{
	char buf[200];
	uint64_t avg[KERNEL_MAX_CPUS];
	arch_sample_set(0, false);
	sample_program = 0;
	uint64_t cycles = arch_cycles() - started;
	for (unsigned c = 0; c < cpu_count(); c++)
		avg[c] = samples[c] ? late_sum[c] / samples[c] : 0;
	size_t n = list(buf, sizeof buf, "samples", samples);
	n += list(buf + n, sizeof buf - n, "late_avg", avg);
	n += list(buf + n, sizeof buf - n, "late_max", late_max);
	running_hz = 0;
	return command_reply(r, WIRE_REPLY_OK, "profile off:%s cycles=%llu faults=%llu",
			     buf, (unsigned long long)cycles, (unsigned long long)faults);
}

static int cmd_profile(int argc, char **argv, const char *rest, struct command_reply *r)
{
	uint64_t hz, slot;
	(void)rest;
	if (argc == 2 && strcmp(argv[1], "off") == 0)
		return profile_off(r);
	if (argc != 4 || !parse_u64(argv[1], &hz) || !hz ||
	    (strcmp(argv[2], "all") && strcmp(argv[2], "one")) ||
	    !parse_u64(argv[3], &slot) || slot >= WIRE_PROGRAMS)
		return command_reply(r, WIRE_REPLY_BAD_ARGS, "usage: profile HZ all|one "
				     "SLOT | profile off");
	if (!programs[slot].installed)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: no program in slot %llu",
				     (unsigned long long)slot);
	if (running_hz)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: sampling at %u Hz "
				     "already (profile off first)", running_hz);
	if (hz > arch_sample_hz_max)
		return command_reply(r, WIRE_REPLY_FAILED, "refused: %llu Hz: at most %u",
				     (unsigned long long)hz, arch_sample_hz_max);
	for (unsigned c = 0; c < KERNEL_MAX_CPUS; c++)
		samples[c] = late_sum[c] = late_max[c] = 0;
	faults = 0;
	sample_program = &programs[slot];
	started = arch_cycles();
	if (!arch_sample_set((unsigned)hz, argv[2][0] == 'a')) {
		sample_program = 0;
		return command_reply(r, WIRE_REPLY_FAILED, "refused: the timer cannot "
				     "sample at %llu Hz", (unsigned long long)hz);
	}
	running_hz = (unsigned)hz;
	return command_reply(r, WIRE_REPLY_OK, "profile %u Hz on %s, program %llu",
			     running_hz, argv[2][0] == 'a' ? "every CPU" : "cpu0",
			     (unsigned long long)slot);
}

COMMAND(profile) = {
	"profile", "profile HZ all|one SLOT | off: sample every CPU (all, profile-HZ) "
	"or cpu0 (one, tick-HZ) HZ times a second, running program SLOT",
	cmd_profile,
};
