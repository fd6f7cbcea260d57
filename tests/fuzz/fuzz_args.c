/*
 * fuzz_args.c — libFuzzer target: the arguments of `probe`, `watch`,
 * `program`, `trace` and `itrace`, reached through lines this target
 * builds, so that the fuzzer spends its time past the parsers' first
 * refusal: the subcommand is a row of the tracer's own tables
 * (probe_subcommands, ...; a row added there is fuzzed with no change
 * here), the kinds and watch types are wire.h's, and every argument is
 * one of a pool (ids around the table's ends, addresses on, off and
 * around the fake text's words, slots, sizes, numbers at the edges of
 * their types, words of the tables) or, for `program load`, hex of the
 * input's own bytes. The lines then go through fuzz_command.c's
 * machinery — the command loop, the replies, "refused changes nothing"
 * and the text checked against the probe table — unchanged.
 */
#define LLVMFuzzerTestOneInput command_input
#include "fuzz_command.c"
#undef LLVMFuzzerTestOneInput
#include "commands.h"

#define KIND_WORD(name, value, word) word,
#define WATCH_WORD(name, value, word) word,
static const char *const kinds[] = { WIRE_PROBE_KINDS(KIND_WORD) "entryx", "" };
static const char *const watch_types[] = { WIRE_WATCH_TYPES(WATCH_WORD) "q" };

static const char *const pool[] = {
	"0", "1", "2", "7", "15", "16", "255", "256", "4095", "4096", "65535",
	"4294967295", "4294967296", "18446744073709551615", "18446744073709551616",
	"-1", "0x", "0x10000000", "0x10000004", "0x10000100", "0x10000101",
	"0x10002ffc", "0x10003000", "0x10003ffc", "0x10004000", "0x10004004",
	"0x10005000", "0x10007ffc", "0x10008000", "0x20000000", "0xffffffff",
	"all", "none", "on", "off", "record", "null", "host", "address",
	"previous", "reset", "pages", "mapped", "physical", "4", "8", "3", "1048576",
	"4096", "65536", "1073741824", "2147483648", "01", "0100", "zz",
};

struct cmd { const char *name; const struct subcommand_table *t; };
static const char *const watch_subs[] = { "add", "remove", "list", "clear" };
static const char *const itrace_subs[] = { "on", "off", "stats" };

static const uint8_t *in;
static size_t in_len, in_at;
static unsigned next(void) { return in_at < in_len ? in[in_at++] : 0; }

static char text[1 << 16];
static size_t used;

static void word(const char *w)
{
	size_t n = strlen(w);
	if (used + n + 2 >= sizeof text)
		return;
	if (used && text[used - 1] != '\n')
		text[used++] = ' ';
	memcpy(text + used, w, n);
	used += n;
}

static void arg(void)
{
	unsigned c = next();
	char buf[2 * 64 + 1];
	switch (c >> 5) {
	case 0: word(kinds[c % (sizeof kinds / sizeof *kinds)]); break;
	case 1: word(watch_types[c % (sizeof watch_types / sizeof *watch_types)]); break;
	case 2: {       /* hex of the input's next bytes */
		unsigned n = c & 31;
		for (unsigned i = 0; i < n; i++) {
			unsigned b = next();
			buf[2 * i] = "0123456789abcdef"[b >> 4];
			buf[2 * i + 1] = "0123456789abcdef"[b & 15];
		}
		buf[2 * n] = 0;
		word(n ? buf : "00");
		break;
	}
	case 3:         /* a word of the fake text, or next to one */
		snprintf(buf, sizeof buf, "%#x", FAKE_TEXT + (next() << 6 | (c & 31)) * 4 % 0x5000 + (c >> 7));
		word(buf);
		break;
	default: word(pool[(c + next()) % (sizeof pool / sizeof *pool)]); break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct cmd cmds[] = {
		{ "probe", &probe_subcommands }, { "program", &program_subcommands },
		{ "trace", &trace_subcommands }, { "watch", 0 }, { "itrace", 0 },
	};
	in = data, in_len = size, in_at = 0, used = 0;
	/* At most 24 lines: each is checked against a copy of the whole
	 * probe table, and a short sequence reaches the same states sooner. */
	for (unsigned n = 0; n < 24 && in_at < in_len && used < sizeof text - 512; n++) {
		const struct cmd *c = &cmds[next() % 5];
		word(c->name);
		unsigned s = next();
		if (c->t)
			word(c->t->rows[s % c->t->n].name);
		else if (c->name[0] == 'w')
			word(watch_subs[s % 4]);
		else
			word(itrace_subs[s % 3]);
		for (unsigned n = next() % 7; n; n--)
			arg();
		text[used++] = '\n';
	}
	return command_input((const uint8_t *)text, used);
}
