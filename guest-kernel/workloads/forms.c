/*
 * forms.c — calls functions built from every prologue/epilogue form the
 * probe emulators handle (the arch provides them: arch/i386/forms.S) n
 * times each, checks their answers, and reports the call counts as ground
 * truth. With check mode on, a traced run of it verifies every form.
 */
#include "arch.h"
#include "workload.h"

static void run_forms(const uint64_t *v, struct workload_result *res)
{
	uint64_t n = v[0];
	res->ok = arch_forms_run(n, &res->value);
}

static const struct workload_param forms_params[] = {
	{ "n", 100, 1, 1000000, "calls of each function" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(forms) = {
	"forms", "functions made of every emulated prologue/epilogue form; "
	"value = calls", forms_params, run_forms,
};
