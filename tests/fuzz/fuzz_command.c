/*
 * fuzz_command.c — libFuzzer target: bytes on the serial line, read by the
 * guest's own command loop (guest-kernel/core/command.c) and run by its
 * commands and the tracer's (tracer/core/commands*.c), answered through
 * its own link.c and frame.c into stubs.c's serial line.
 *
 * Properties beside "no crash, no sanitizer report, no panic":
 *  - every frame sent is well formed (deframe.h), and every line ('\n')
 *    gets exactly one REPLY, numbered 1, 2, ... with a known status
 *    (`exit` and `hang`, which end the guest, none);
 *  - a line answered with any status but OK changed nothing in the probe
 *    table, the gates, the program slots or the text;
 *  - after the input, every enabled probe's word holds the trap and every
 *    other word of the text its original (stub_check_text).
 * Each input starts from no probes, no programs and the default settings.
 * The state a refused line must not change is watched page by page
 * (dirty.c), so that a line costs what it wrote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stubs.h"
#include "command.h"
#include "program.h"
#include "tracer.h"
#include "wire.h"
#include "deframe.h"
#include "dirty.h"

/* The state a refused line must leave alone: the probe table, the gates,
 * the program slots and the text, each tracked by dirty.c against its
 * copy as the last OK reply left it (a line's cost is the pages it
 * wrote, not the 400 KiB of the four). */
static void track(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	dirty_track(tracer_probes, sizeof tracer_probes);
	dirty_track(probe_gates, sizeof probe_gates);
	dirty_track(programs, sizeof programs);
	dirty_track((const void *)FAKE_TEXT, FAKE_TEXT_BYTES);
}

static const char *region_of(const void *at)
{
	uintptr_t a = (uintptr_t)at;
	if (a - (uintptr_t)tracer_probes < sizeof tracer_probes)
		return "the probe table";
	if (a - (uintptr_t)probe_gates < sizeof probe_gates)
		return "the gates";
	if (a - (uintptr_t)programs < sizeof programs)
		return "the program slots";
	return "the text";
}

/* The slots `program load` wrote to this input (linked with
 * --wrap=program_load): the reset empties their staging alone, where
 * asking program_staged of every slot walked 16 bitmaps an input. */
static unsigned loaded_slots;
int __real_program_load(unsigned slot, unsigned long offset, const char *hex,
			char *why, size_t why_size);
int __wrap_program_load(unsigned slot, unsigned long offset, const char *hex,
			char *why, size_t why_size)
{
	if (slot < WIRE_PROGRAMS)
		loaded_slots |= 1u << slot;
	return __real_program_load(slot, offset, hex, why, why_size);
}

static unsigned lines, replies;
static size_t read_to;
static char line_text[WIRE_MAX_COMMAND + 2];
static size_t line_start;

void stub_on_line(void)
{
	lines++;
	size_t n = stub_in_at - line_start;
	if (n > sizeof line_text - 1)
		n = sizeof line_text - 1;
	memcpy(line_text, stub_in + line_start, n);
	line_text[n] = 0;
	line_start = stub_in_at;
}

static void on_frame(unsigned type, const uint8_t *payload, size_t len)
{
	if (type != WIRE_FRAME_REPLY)
		return;
	struct wire_reply r;
	if (len < sizeof r)
		DEFRAME_FAIL("REPLY of %zu bytes", len);
	memcpy(&r, payload, sizeof r);
	replies++;
	if (r.command != replies || replies > lines)
		DEFRAME_FAIL("REPLY %u for line %u of %u", r.command, replies, lines);
	if (r.status < WIRE_REPLY_OK || r.status > WIRE_REPLY_FAILED)
		DEFRAME_FAIL("status %d", r.status);
	if (r.status == WIRE_REPLY_OK) {
		dirty_look(true);   /* what the next line starts from */
		return;
	}
	const void *changed = dirty_look(false);
	if (changed) {
		fprintf(stderr, "refused line changed the tracer's state (%s, "
			"byte %p): %sreply %d: %.*s\n", region_of(changed), changed,
			line_text, r.status, (int)(len - sizeof r),
			(const char *)payload + sizeof r);
		abort();
	}
}

void stub_on_write(void)
{
	read_to = deframe(stub_out, read_to, stub_out_len, on_frame);
}

/* The text was not checked against the probe table since a reset cleared
 * it: the next input's end checks it even if the input touched neither. */
static bool unchecked;

/* Back to no probes, no programs, the default settings: what the last
 * input touched alone (tracer_clear walks the whole table, and stores to
 * every probe's state: opened whole for it rather than a fault a page). */
static void reset(void)
{
	static bool first = true;
	char why[160];
	if (first || dirty_touched(tracer_probes) || dirty_touched(probe_gates) ||
	    dirty_touched((const void *)FAKE_TEXT)) {
		dirty_open(tracer_probes);
		tracer_clear(); /* watches too, which probes_added omits */
		unchecked = true;
	}
	for (unsigned k = 0; k < WIRE_PROGRAMS; k++) {
		if (programs[k].installed && program_clear((int)k, why, sizeof why)) {
			fprintf(stderr, "reset: %s\n", why);
			abort();
		}
		if ((first || loaded_slots >> k & 1) && program_staged(k))
			program_install(k, 0, why, sizeof why);  /* refused, the staging emptied */
	}
	first = false;
	loaded_slots = 0;
	memset((void *)program_globals, 0, sizeof program_globals);  /* as clear all */
	tracer_hooks_on = false;
	tracer_check_mode = false;
	tracer_mechanism = 0;
	stub_out_len = read_to = 0;
	have_seq = 0;
	lines = replies = 0;
	line_start = 0;
	dirty_look(true);
	dirty_forget();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stub_init();
	track();
	reset();
	stub_in = data;
	stub_in_len = size;
	stub_in_at = 0;
	int stop = setjmp(stub_stop);
	if (!stop)
		command_loop();
	if (read_to != stub_out_len)
		DEFRAME_FAIL("%zu bytes of a frame left over", stub_out_len - read_to);
	unsigned want = stop == 1 ? lines : lines - 1;
	if (replies != want) {
		fprintf(stderr, "%u lines, %u replies (last: %s)\n", lines, replies,
			line_text);
		abort();
	}
	/* Neither the table nor the text written since they were checked
	 * (or cleared): they agree as they did. */
	if (unchecked || dirty_touched(tracer_probes) || dirty_touched((const void *)FAKE_TEXT))
		stub_check_text();
	unchecked = false;
	return 0;
}
