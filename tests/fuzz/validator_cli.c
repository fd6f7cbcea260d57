/*
 * validator_cli.c — the guest's validator (tracer/core/program_check.c)
 * as a filter, for the accept/reject table (tests/test_validator_table.py):
 * one program per input line in hex, one answer per output line, "ok" or
 * the reason the guest gives a refused program, word for word as
 * `program check` replies "refused: ...". Built like the fuzz targets
 * (bench/check/libfuzz.py's tool()), sanitizers on.
 */
#include <stdio.h>
#include <string.h>
#include "program.h"

int main(void)
{
	static char line[2 * PROGRAM_MAX_BYTES + 64];
	static uint8_t bytes[PROGRAM_MAX_BYTES + 16];
	while (fgets(line, sizeof line, stdin)) {
		size_t n = 0;
		for (char *p = line; p[0] && p[1] && p[0] != '\n' && n < sizeof bytes; p += 2) {
			unsigned v;
			if (sscanf(p, "%2x", &v) != 1)
				break;
			bytes[n++] = (uint8_t)v;
		}
		char why[160];
		if (program_validate(bytes, n, why, sizeof why) == 0)
			puts("ok");
		else
			puts(why);
		fflush(stdout);
	}
	return 0;
}
