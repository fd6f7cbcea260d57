/*
 * selftest.c — report(), running the registered self-tests (selftest.h),
 * and the arch-neutral ones of the core (formatting, the serial loopback,
 * the timer, trap_try's nesting).
 *
 * Lines read "PASS: area: sub: what" / "FAIL: ...". The prefix stack is a
 * fixed array of pointers (no allocation), the counters are plain, and the
 * summary line is the contract with the host: it checks that the number of
 * PASS and FAIL lines it received equals what the summary claims, so a lost
 * line cannot turn a failure into a pass.
 */
#include "selftest.h"
#include "arch.h"
#include "console.h"
#include "kstring.h"
#include "mm.h"
#include "serial.h"
#include "timer.h"
#include "trap.h"

#define MAX_PREFIXES 8

static const char *prefixes[MAX_PREFIXES];
static unsigned nprefixes, ntests, nfailed;

void report_prefix_push(const char *prefix)
{
	if (nprefixes == MAX_PREFIXES)
		panic("report_prefix_push: more than %d prefixes", MAX_PREFIXES);
	prefixes[nprefixes++] = prefix;
}

void report_prefix_pop(void)
{
	if (!nprefixes)
		panic("report_prefix_pop: empty prefix stack");
	nprefixes--;
}

static void vreport_line(const char *tag, const char *fmt, va_list ap)
{
	char what[160];
	kvsnprintf(what, sizeof what, fmt, ap);
	kprintf("%s: ", tag);
	for (unsigned i = 0; i < nprefixes; i++)
		kprintf("%s: ", prefixes[i]);
	kprintf("%s\n", what);
}

bool report(bool pass, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport_line(pass ? "PASS" : "FAIL", fmt, ap);
	va_end(ap);
	ntests++;
	if (!pass)
		nfailed++;
	return pass;
}

void report_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport_line("INFO", fmt, ap);
	va_end(ap);
}

void report_reset(void)
{
	nprefixes = ntests = nfailed = 0;
}

unsigned report_summary(void)
{
	kprintf("SUMMARY: %u tests, %u failed\n", ntests, nfailed);
	return nfailed;
}

/* ---- arch-neutral tests ---- */

static void test_format(void)
{
	char buf[64];
	uint64_t v = 0;

	ksnprintf(buf, sizeof buf, "%d|%5u|%-4x|%08X|%s|%c|%lld", -42, 7u, 0xabu,
		  0xbeefu, "hi", 'z', -1234567890123ll);
	report(strcmp(buf, "-42|    7|ab  |0000BEEF|hi|z|-1234567890123") == 0,
	       "ksnprintf formats: got \"%s\"", buf);
	report(ksnprintf(buf, 4, "%s", "truncate") == 8 && strcmp(buf, "tru") == 0,
	       "ksnprintf truncates and returns the full length");
	report(parse_u64("0x10", &v) && v == 16 && parse_u64("18446744073709551615", &v) &&
	       v == UINT64_MAX, "parse_u64 reads hex and the largest value");
	report(!parse_u64("18446744073709551616", &v) && !parse_u64("12a", &v) &&
	       !parse_u64("", &v) && !parse_u64("0x", &v),
	       "parse_u64 refuses overflow and junk");
}

static void test_serial(void)
{
	report(serial_loopback_test(256), "256 bytes round-trip through 16550 loopback");
}

static void test_timer(void)
{
	uint64_t c0 = arch_cycles(), t0 = timer_ticks();
	timer_wait_ticks(5);
	uint64_t t1 = timer_ticks(), c1 = arch_cycles();

	report(t1 >= t0 + 5, "ticks advance (%llu -> %llu at %u Hz)",
	       (unsigned long long)t0, (unsigned long long)t1, timer_hz());
	report(c1 > c0, "cycle counter advances across ticks (+%llu)",
	       (unsigned long long)(c1 - c0));

	unsigned old = timer_hz();
	report(!timer_set_hz(0) && timer_hz() == old, "rate 0 Hz is refused");
	if (timer_set_hz(1000)) {
		t0 = timer_ticks();
		timer_wait_ticks(20);
		report(timer_ticks() >= t0 + 20, "ticks advance at 1000 Hz");
		timer_set_hz(old);
	} else {
		report(false, "rate 1000 Hz accepted");
	}
}

/* trap_try nests: a try inside a try catches its own trap, and the outer
 * one catches again once the inner has returned (a probe program reads
 * memory with a try of its own inside a self-test's). */
struct nesting {
	bool      inner_caught, inner_clean, reached_end;
	uintptr_t inner_addr;
};

static void read_word_at(void *addr)
{
	(void)*(volatile unsigned long *)addr;
}

static void nothing(void *arg)
{
	(void)arg;
}

static void try_inside_try(void *arg)
{
	volatile struct nesting *n = arg;    /* stored before the fault below */
	struct caught_trap c = { 0 };
	void *hole = (void *)mm_unmapped_probe_addr;

	n->inner_caught = trap_try(read_word_at, hole, &c);
	n->inner_addr = c.fault_addr;
	n->inner_clean = !trap_try(nothing, 0, &c);
	read_word_at(hole);                  /* the outer try's to catch */
	n->reached_end = true;
}

static void test_trap_nesting(void)
{
	struct nesting n = { 0 };
	struct caught_trap c = { 0 };
	uintptr_t hole = mm_unmapped_probe_addr;

	bool outer = trap_try(try_inside_try, &n, &c);
	report(n.inner_caught && n.inner_addr == hole, "an inner try catches its "
	       "own fault (at 0x%lx, want 0x%lx)", (unsigned long)n.inner_addr,
	       (unsigned long)hole);
	report(n.inner_clean, "an inner try that does not trap returns false");
	report(outer && !n.reached_end && c.fault_addr == hole, "the outer try "
	       "catches the next fault once the inner ones returned (at 0x%lx)",
	       (unsigned long)c.fault_addr);
}

SELFTEST(100, "core", test_format);
SELFTEST(110, "serial", test_serial);
SELFTEST(120, "timer", test_timer);
SELFTEST(130, "trap_try", test_trap_nesting);

/* One self-test under its area's prefix. Not inlined, so the tests run as
 * deep in the stack as they always have: sparc64's window tests count the
 * frames and spills above them in their PASS lines. */
static __attribute__((noinline)) void run_one(const struct selftest *t)
{
	report_prefix_push(t->area);
	t->run();
	report_prefix_pop();
}

unsigned selftest_run(const char *filter)
{
	unsigned ran = 0;
	report_reset();
	for (const struct selftest *t = __selftests_start; t < __selftests_end; t++) {
		if (strncmp(t->area, filter, strlen(filter)) != 0)
			continue;
		run_one(t);
		ran++;
	}
	if (!ran)
		report(false, "no self-test area matches \"%s\"", filter);
	return report_summary();
}
