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

static struct {
	struct probe      probes[TRACER_MAX_PROBES];
	struct probe_gate gates[TRACER_MAX_PROBES];
	struct { struct wire_program head; bool installed;
		 struct wire_rpn_insn insn[WIRE_PROGRAM_MAX_INSNS]; } prog[WIRE_PROGRAMS];
	uint8_t           text[FAKE_TEXT_BYTES];
} before, now;      /* before: as the last REPLY left it */

static void take(void *s)
{
	typeof(before) *t = s;
	memcpy(t->probes, tracer_probes, sizeof t->probes);
	memcpy((void *)t->gates, (const void *)probe_gates, sizeof t->gates);
	for (unsigned k = 0; k < WIRE_PROGRAMS; k++) {
		t->prog[k].head = programs[k].head;
		t->prog[k].installed = programs[k].installed;
		memcpy(t->prog[k].insn, programs[k].insn, sizeof t->prog[k].insn);
	}
	memcpy(t->text, (const void *)FAKE_TEXT, sizeof t->text);
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
		take(&before);      /* what the next line starts from */
		return;
	}
	take(&now);
	if (memcmp(&before, &now, sizeof now) != 0) {
		fprintf(stderr, "refused line changed the tracer's state: %s"
			"reply %d: %.*s\n", line_text, r.status,
			(int)(len - sizeof r), (const char *)payload + sizeof r);
		abort();
	}
}

void stub_on_write(void)
{
	read_to = deframe(stub_out, read_to, stub_out_len, on_frame);
}

static void reset(void)
{
	char why[160];
	tracer_clear();         /* watches too, which probes_added omits */
	/* program_clear walks every probe for each slot: only the slots that
	 * hold something, which keeps an input's cost its own. */
	for (unsigned k = 0; k < WIRE_PROGRAMS; k++) {
		if (programs[k].installed && program_clear((int)k, why, sizeof why)) {
			fprintf(stderr, "reset: %s\n", why);
			abort();
		}
		if (program_staged(k))  /* refused, and the staging emptied */
			program_install(k, 0, why, sizeof why);
	}
	memset((void *)program_globals, 0, sizeof program_globals);  /* as clear all */
	tracer_hooks_on = false;
	tracer_check_mode = false;
	tracer_mechanism = 0;
	stub_out_len = read_to = 0;
	have_seq = 0;
	lines = replies = 0;
	line_start = 0;
	take(&before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stub_init();
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
	stub_check_text();
	return 0;
}
