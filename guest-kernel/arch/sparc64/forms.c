/*
 * forms.c — the `forms` workload on sparc64. Its CTI forms (call, jmpl,
 * branches) arrive with the sparc64 probe emulator; until then it makes no
 * calls and says so in its value (0).
 */
#include "arch.h"

bool arch_forms_run(uint64_t n, uint64_t *calls)
{
	(void)n;
	*calls = 0;
	return true;
}
