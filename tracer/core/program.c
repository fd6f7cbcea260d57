/*
 * program.c — the program slots: staging, installing, clearing.
 *
 * Each slot has a staging buffer, which `program load` fills a command
 * line's worth of bytes at a time, remembering which bytes were written,
 * and an installed program, which `program check` replaces with the staged
 * bytes once each was loaded since the last check and the validator
 * (program_check.c) accepts them. Every check empties the staging buffer,
 * so no check sees bytes left from an earlier one. The fire path reads an
 * installed program with no lock, so it is replaced or removed only while
 * no probe that can fire runs it, and after every CPU has answered an IPI;
 * its aggregations go with it; clearing every slot also empties the
 * globals and the thread-local words. All under the probe table's lock (tracer.h).
 */
#include "program.h"
#include "aggregate.h"
#include "console.h"
#include "gate.h"
#include "kstring.h"
#include "tracer.h"
#include "tracer_arch.h"

struct program programs[WIRE_PROGRAMS];

static struct staging {
	uint8_t bytes[PROGRAM_MAX_BYTES];
	uint8_t loaded[(PROGRAM_MAX_BYTES + 7) / 8];    /* a bit per byte */
} staging[WIRE_PROGRAMS];

#define compiler_barrier() __asm__ volatile("" ::: "memory")

static bool bad_slot(unsigned slot, char *why, size_t why_size)
{
	if (slot < WIRE_PROGRAMS)
		return false;
	ksnprintf(why, why_size, "no slot %u: there are %u", slot, WIRE_PROGRAMS);
	return true;
}

int program_load(unsigned slot, unsigned long offset, const char *hex,
		 char *why, size_t why_size)
{
	size_t digits = strlen(hex);
	if (bad_slot(slot, why, why_size))
		return -1;
	if (!digits || digits % 2) {
		ksnprintf(why, why_size, "%zu hex digits: bytes are two each", digits);
		return -1;
	}
	for (size_t i = 0; i < digits; i++)
		if (hex_digit(hex[i]) < 0) {
			ksnprintf(why, why_size, "'%c' is not a hex digit", hex[i]);
			return -1;
		}
	size_t n = digits / 2;
	if (offset > PROGRAM_MAX_BYTES || n > PROGRAM_MAX_BYTES - offset) {
		ksnprintf(why, why_size, "bytes %lu to %lu: a program is at most %zu",
			  offset, offset + n - 1, PROGRAM_MAX_BYTES);
		return -1;
	}
	struct staging *s = &staging[slot];
	for (size_t i = 0; i < n; i++) {
		size_t at = offset + i;
		s->bytes[at] = (uint8_t)(hex_digit(hex[2 * i]) << 4 | hex_digit(hex[2 * i + 1]));
		s->loaded[at / 8] |= (uint8_t)(1u << (at % 8));
	}
	return 0;
}

unsigned program_staged(unsigned slot)
{
	unsigned n = 0;
	for (unsigned at = 0; at < PROGRAM_MAX_BYTES; at++)
		n += staging[slot].loaded[at / 8] >> (at % 8) & 1;
	return n;
}

/* A probe can fire while enabled, and while merely added if the compiler
 * hooks are on (hooks.c fires added probes). */
int program_user(unsigned slot)
{
	for (unsigned i = 0; i < TRACER_MAX_PROBES; i++) {
		const struct probe *p = &tracer_probes[i];
		if (p->state != PROBE_FREE && probe_gates[i].program == &programs[slot] &&
		    (p->state == PROBE_ENABLED || tracer_hooks_on))
			return (int)i;
	}
	return -1;
}

static bool in_use(unsigned slot, char *why, size_t why_size)
{
	int user = program_user(slot);
	if (user < 0)
		return false;
	ksnprintf(why, why_size, "slot %u is run by probe %d, which can fire; "
		  "disable it first", slot, user);
	return true;
}

/* The slot runs nothing, and no CPU is inside its program: a hook's or a
 * just-disabled probe's firing may be until every CPU answered the IPI. */
static void uninstall(unsigned slot)
{
	programs[slot].installed = false;
	tracer_sync_cpus();
	agg_clear((int)slot);
}

static int install(unsigned slot, unsigned long bytes, char *why, size_t why_size)
{
	struct staging *s = &staging[slot];
	if (bytes > PROGRAM_MAX_BYTES) {
		ksnprintf(why, why_size, "%lu bytes: a program is at most %zu", bytes,
			  PROGRAM_MAX_BYTES);
		return -1;
	}
	for (unsigned long at = 0; at < bytes; at++)
		if (!(s->loaded[at / 8] >> (at % 8) & 1)) {
			ksnprintf(why, why_size, "byte %lu was not loaded since the "
				  "slot's last check", at);
			return -1;
		}
	if (in_use(slot, why, why_size) || program_validate(s->bytes, bytes, why,
							     why_size) != 0)
		return -1;
	struct program *prog = &programs[slot];
	uninstall(slot);
	memcpy(&prog->head, s->bytes, sizeof prog->head);
	memset(prog->insn, 0, sizeof prog->insn);
	memcpy(prog->insn, s->bytes + sizeof prog->head, bytes - sizeof prog->head);
	prog->slot = (uint8_t)slot;
	compiler_barrier();
	prog->installed = true;
	return 0;
}

int program_install(unsigned slot, unsigned long bytes, char *why, size_t why_size)
{
	if (bad_slot(slot, why, why_size))
		return -1;
	tracer_lock();
	int rc = install(slot, bytes, why, why_size);
	memset(&staging[slot], 0, sizeof staging[slot]);
	tracer_unlock();
	return rc;
}

int program_clear(int slot, char *why, size_t why_size)
{
	unsigned first = slot < 0 ? 0 : (unsigned)slot;
	unsigned end = slot < 0 ? WIRE_PROGRAMS : first + 1;

	if (slot >= 0 && bad_slot(first, why, why_size))
		return -1;
	tracer_lock();
	for (unsigned s = first; s < end; s++)
		if (in_use(s, why, why_size)) {
			tracer_unlock();
			return -1;
		}
	for (unsigned s = first; s < end; s++) {
		gate_detach(s);
		uninstall(s);
		memset(&programs[s], 0, sizeof programs[s]);
	}
	if (slot < 0) {
		for (unsigned g = 0; g < WIRE_PROGRAM_GLOBALS; g++)
			program_globals[g] = 0;
		program_tls_clear();
	}
	tracer_unlock();
	return 0;
}
