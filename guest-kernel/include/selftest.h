/*
 * selftest.h — kvm-unit-tests style reporting.
 *
 * report(cond, "what") prints "PASS: <prefixes>: what" or "FAIL: ...";
 * prefixes nest with report_prefix_push/pop so lines read
 * "PASS: i386: traps: #PF: CR2 is the faulting address". report_info adds a
 * line without counting it; report_summary prints the totals that the host
 * cross-checks against the lines it received.
 *
 * A self-test registers itself with SELFTEST(rank, "area", fn), which
 * places it in the .selftests linker set (as WORKLOAD() does for
 * workloads): the kernel's core, each arch and each of the kernel's
 * clients add their own, and no table names them all. `selftest` runs
 * them in rank order, each under its area as the first prefix. A rank is
 * three digits, unique in the image: 1xx the arch-neutral core, 2xx
 * threads and the scheduler, 3xx the arch's own, 4xx the kernel's clients
 * (the tracer's probes; the host selects them by the area prefix).
 */
#ifndef SELFTEST_H
#define SELFTEST_H

#include <stdbool.h>

bool report(bool pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void report_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void report_prefix_push(const char *prefix);
void report_prefix_pop(void);
void report_reset(void);
/* Prints "SUMMARY: N tests, F failed"; returns F. */
unsigned report_summary(void);

struct selftest {
	const char *area;      /* first prefix of every line it reports */
	void (*run)(void);
};

#define SELFTEST(rank, area, fn) \
	static const struct selftest selftest_##rank \
	__attribute__((used, section(".selftests." #rank), aligned(sizeof(void *)))) = \
	{ area, fn }

/* The set, sorted by rank (the linker sorts the sections by name). */
extern const struct selftest __selftests_start[], __selftests_end[];

/* Run every self-test whose area name starts with filter ("" = all). */
unsigned selftest_run(const char *filter);

#endif
