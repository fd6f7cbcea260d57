/*
 * selftest.h — kvm-unit-tests style reporting.
 *
 * report(cond, "what") prints "PASS: <prefixes>: what" or "FAIL: ...";
 * prefixes nest with report_prefix_push/pop so lines read
 * "PASS: i386: traps: #PF: CR2 is the faulting address". report_info adds a
 * line without counting it; report_summary prints the totals that the host
 * cross-checks against the lines it received.
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

/* Run every self-test whose area name starts with filter ("" = all). */
unsigned selftest_run(const char *filter);

#endif
