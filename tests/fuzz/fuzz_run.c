/*
 * fuzz_run.c — libFuzzer target: the guest's interpreter
 * (tracer/core/program_run.c) on every program its validator accepts.
 *
 * An input is 8 bytes that seed the firing's registers and arguments
 * (each one of: an address in stubs.c's window, whose odd pages fault; a
 * small number; a word of all ones; the input's own bits), one byte of
 * flags (bit 0: the context has arguments), then the program's bytes. The
 * program goes in the way `program load` and `program check` put it in
 * (program.c into slot 0); a refused one must leave the slot as it was.
 * An accepted one runs with the instructions past its end poisoned for
 * ASan, so a run that goes past its length is reported, as is any touch
 * outside its stack, locals, globals, log buffer (an exact heap block) and
 * aggregation tables; the fault-safe reads are the guest's peek.c under
 * stubs.c's trap_try. Properties besides: the run ends in one of
 * program_end's three ways, a LOG record is no longer than
 * WIRE_PROGRAM_LOG_BYTES, only a program with a global store changes a
 * global, and walker.h agrees with the validator's promises. Each input
 * starts from slot 0 empty, the globals 0 and no thread-local words.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sanitizer/asan_interface.h>
#include "stubs.h"
#include "program.h"
#include "tracer.h"
#include "walker.h"

void stub_on_line(void) { }
void stub_on_write(void) { }

static unsigned long pick(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	unsigned long r = (unsigned long)(*s >> 33);
	switch (r & 3) {
	case 0: return FAKE_MAP + ((r >> 2) % FAKE_MAP_BYTES);
	case 1: return (r >> 2) & 0xff;
	case 2: return ~0ul;
	default: return (unsigned long)*s;
	}
}

static const char hexd[] = "0123456789abcdef";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char hex[2 * PROGRAM_MAX_BYTES + 1];
	static struct program was;
	char why[160];
	stub_init();
	if (size < 9 || size - 9 > PROGRAM_MAX_BYTES)
		return 0;
	uint64_t seed;
	memcpy(&seed, data, 8);
	struct stub_context ctx;
	for (unsigned i = 0; i < STUB_REGS; i++)
		ctx.reg[i] = pick(&seed);
	for (unsigned i = 0; i < STUB_ARGS; i++)
		ctx.arg[i] = pick(&seed);
	ctx.have_args = data[8] & 1;
	const uint8_t *prog = data + 9;
	size_t n = size - 9;

	struct program *slot = &programs[0];
	ASAN_UNPOISON_MEMORY_REGION(slot->insn, sizeof slot->insn);
	if (program_clear(0, why, sizeof why) != 0)
		abort();
	/* Nor globals nor thread-local words left by the input before: an
	 * input's run is its own, and a crash it finds replays alone (the
	 * first sum overflow was found on a word an earlier input had left). */
	memset((void *)program_globals, 0, sizeof program_globals);
	program_tls_clear();
	memcpy(&was, slot, sizeof was);
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = hexd[prog[i] >> 4];
		hex[2 * i + 1] = hexd[prog[i] & 15];
	}
	hex[2 * n] = 0;
	if (n && program_load(0, 0, hex, why, sizeof why) != 0) {
		fprintf(stderr, "program load refused %zu bytes: %s\n", n, why);
		abort();
	}
	int rc = program_install(0, n, why, sizeof why);
	int valid = program_validate(prog, n, why, sizeof why);
	if ((rc == 0) != (valid == 0)) {
		fprintf(stderr, "install %d, validate %d\n", rc, valid);
		abort();
	}
	if (rc != 0) {
		if (memcmp(&was, slot, sizeof was) != 0) {
			fprintf(stderr, "a refused program changed its slot: %s\n", why);
			abort();
		}
		return 0;
	}
	int depth[WIRE_PROGRAM_MAX_INSNS];
	const char *wrong = walk(&slot->head, slot->insn, depth);
	if (wrong) {
		fprintf(stderr, "accepted a program where %s\n", wrong);
		abort();
	}
	bool stores = false;
	for (unsigned i = 0; i < slot->head.ninsns; i++)
		stores |= slot->insn[i].op == WIRE_RPN_GSET || slot->insn[i].op == WIRE_RPN_GADD;
	prog_word globals[WIRE_PROGRAM_GLOBALS];
	memcpy(globals, (const void *)program_globals, sizeof globals);

	ASAN_POISON_MEMORY_REGION(&slot->insn[slot->head.ninsns],
				  (WIRE_PROGRAM_MAX_INSNS - slot->head.ninsns) *
				  sizeof slot->insn[0]);
	struct probe p = { .addr = FAKE_TEXT + 0x100, .id = 7, .kind = WIRE_EVENT_ENTRY };
	struct program_log *log = malloc(sizeof *log);
	enum program_end end = program_run(slot, &p, (const struct tarch_context *)&ctx, log);
	ASAN_UNPOISON_MEMORY_REGION(slot->insn, sizeof slot->insn);
	if (end != PROGRAM_EXIT && end != PROGRAM_ABORT && end != PROGRAM_FAULT)
		abort();
	if (end == PROGRAM_EXIT) {
		if (log->nwords > PROGRAM_LOG_WORDS ||
		    log->words[WIRE_LOG_BYTES] > WIRE_PROGRAM_LOG_BYTES ||
		    log->nwords != WIRE_LOG_DATA + (log->words[WIRE_LOG_BYTES] +
						    sizeof(unsigned long) - 1) / sizeof(unsigned long)) {
			fprintf(stderr, "LOG record of %u words, %lu bytes\n", log->nwords,
				log->words[WIRE_LOG_BYTES]);
			abort();
		}
	}
	free(log);
	if (!stores && memcmp(globals, (const void *)program_globals, sizeof globals)) {
		fprintf(stderr, "a program without gset/gadd changed a global\n");
		abort();
	}
	return 0;
}
