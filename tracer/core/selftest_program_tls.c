/*
 * selftest_program_tls.c — thread-local words (`tget`/`tset`) and the ns
 * clock (`timens`), run directly as a fire path would.
 *
 * A word never stored reads 0; a store is read back by a later run on the
 * same thread, by another program too (the words are the thread's, not a
 * program's); a thread created for the test reads 0 where this one stored
 * (the words are per thread); `program clear` of every slot empties them;
 * 160 threads storing find 128 blocks, and the 32 stores that find none
 * are counted exactly and read back 0.
 * `timens` readings 1 ms of cycles apart differ by that many ns at the
 * clock's rate, within 1%.
 */
#include "selftest.h"
#include "selftest_programs.h"
#include "thread.h"

#define SLOT (WIRE_PROGRAMS - 8)
#define G_A  50
#define G_B  51

static struct program prog;
static struct program_log log;

static bool run(const struct wire_rpn_insn *insn, unsigned n)
{
	return tp_program(&prog, SLOT, insn, n, 0, 0) && tp_run(&prog, &log) == PROGRAM_ABORT;
}

static const struct wire_rpn_insn get3[] = {
	INSN(TGET, 0, 3, 0), INSN(GSET, 0, G_A, 0), INSN(ABORT, 0, 0, 0),
};

static void other_thread(void *arg)
{
	*(bool *)arg = run(get3, NINSNS(get3));
}

static void test_tls(void)
{
	static const struct wire_rpn_insn set3[] = {
		INSN(PUSH, 0, 0, 77), INSN(TSET, 0, 3, 0), INSN(ABORT, 0, 0, 0),
	};
	static const struct wire_rpn_insn add3[] = {
		INSN(TGET, 0, 3, 0), INSN(PUSH, 0, 0, 1), INSN(ADD, 0, 0, 0),
		INSN(TSET, 0, 3, 0), INSN(TGET, 0, 4, 0), INSN(GSET, 0, G_B, 0),
		INSN(ABORT, 0, 0, 0),
	};
	char why[128];
	program_clear(-1, why, sizeof why);
	program_globals[G_A] = 99;
	bool unset = run(get3, NINSNS(get3)) && program_globals[G_A] == 0;
	bool set = run(set3, NINSNS(set3)) && run(add3, NINSNS(add3)) &&
		   run(get3, NINSNS(get3)) && program_globals[G_A] == 78 &&
		   program_globals[G_B] == 0;
	report(unset, "a thread-local word never stored reads 0");
	report(set, "stored by one program, read and changed by another on the same "
	       "thread: %lu (77 + 1)", (unsigned long)program_globals[G_A]);

	program_globals[G_A] = 99;
	bool ran = false;
	unsigned started = thread_run_all("tlstest", 1, other_thread, &ran, sizeof ran,
					  THREAD_ANY_CPU);
	report(started == 1 && ran && program_globals[G_A] == 0,
	       "another thread reads 0 where this one stored 78: the words are per thread");
	report(program_tls_dropped() == 0 && program_tls_threads() >= 1,
	       "%u thread(s) hold words, %u stores found no room",
	       program_tls_threads(), (unsigned)program_tls_dropped());

	program_clear(-1, why, sizeof why);
	program_globals[G_A] = 99;
	bool cleared = run(get3, NINSNS(get3)) && program_globals[G_A] == 0 &&
		       program_tls_threads() == 0;
	report(cleared, "program clear empties every thread's words");
}

/* Each of 32 threads stores a word, 5 rounds of new threads: the first
 * WIRE_PROGRAM_TLS_THREADS get a block, every later first store is
 * counted and not made — and reads back 0. */
#define ROUNDS 5
static struct program pool_prog;       /* validated once; runs only read it */

static void pool_thread(void *arg)
{
	struct program_log l;
	*(bool *)arg = tp_run(&pool_prog, &l) == PROGRAM_ABORT;
}

static void test_pool(void)
{
	static const struct wire_rpn_insn set_get[] = {
		INSN(PUSH, 0, 0, 5), INSN(TSET, 0, 1, 0), INSN(TGET, 0, 1, 0),
		INSN(GADD, 0, G_B, 0), INSN(ABORT, 0, 0, 0),
	};
	static bool ran_in[THREAD_RUN_MAX];
	char why[128];
	program_clear(-1, why, sizeof why);
	bool ok = tp_program(&pool_prog, SLOT, set_get, NINSNS(set_get), 0, 0);
	unsigned started = 0, ran = 0;
	for (unsigned r = 0; ok && r < ROUNDS; r++) {
		memset(ran_in, 0, sizeof ran_in);
		started += thread_run_all("tlspool", THREAD_RUN_MAX, pool_thread, ran_in,
					  sizeof ran_in[0], THREAD_ANY_CPU);
		for (unsigned i = 0; i < THREAD_RUN_MAX; i++)
			ran += ran_in[i];
	}
	unsigned held = program_tls_threads(), lost = program_tls_dropped();
	unsigned long sum = program_globals[G_B];
	unsigned want_lost = started > WIRE_PROGRAM_TLS_THREADS ?
			     started - WIRE_PROGRAM_TLS_THREADS : 0;
	report(ok && ran == started && held == WIRE_PROGRAM_TLS_THREADS &&
	       lost == want_lost && sum == 5ul * held, "%u threads store a thread-local "
	       "word: %u hold one, %u stores counted and not made (want %u), those "
	       "read 0 (sum %lu)", started, held, lost, want_lost, sum);
	program_clear(-1, why, sizeof why);
}

static uint64_t cycles_ns(uint64_t cycles)
{
	return cycles * 1000000ull / (arch_cycles_hz() / 1000);
}

/* Two readings of `timens` 1 ms of cycles apart, interrupts masked: the ns
 * between them lie between the cycles between the two runs' ends and
 * those between their starts (1% slack for the rate's rounding). */
static void test_timens(void)
{
	static const struct wire_rpn_insn now[] = {
		INSN(TIMENS, 0, 0, 0), INSN(GSET, 0, G_A, 0), INSN(ABORT, 0, 0, 0),
	};
	static struct program p;
	bool ok = tp_program(&p, SLOT, now, NINSNS(now), 0, 0);
	irqflags_t f = arch_irq_save();
	uint64_t c0 = arch_cycles();
	ok &= program_run(&p, &(struct probe){ .id = TP_PROBE_ID }, 0, &log) == PROGRAM_ABORT;
	uint64_t c1 = arch_cycles();
	unsigned long t0 = program_globals[G_A];
	while (arch_cycles() - c1 < arch_cycles_hz() / 1000)
		;
	uint64_t c2 = arch_cycles();
	ok &= program_run(&p, &(struct probe){ .id = TP_PROBE_ID }, 0, &log) == PROGRAM_ABORT;
	uint64_t c3 = arch_cycles();
	arch_irq_restore(f);
	unsigned long d = program_globals[G_A] - t0;      /* modulo the word */
	uint64_t lo = cycles_ns(c2 - c1), hi = cycles_ns(c3 - c0);
	report(ok && d >= lo - lo / 100 && d <= hi + hi / 100,
	       "timens: %lu ns between two readings %llu to %llu ns of cycles apart",
	       d, (unsigned long long)lo, (unsigned long long)hi);
}

static void selftest_program_tls(void)
{
	report_prefix_push("thread-locals");
	test_tls();
	test_pool();
	test_timens();
	report_prefix_pop();
}

SELFTEST(435, "programs", selftest_program_tls);
