/*
 * selftest_program_aggs.c — aggregations: each kind fed known values, the
 * entries read back as an AGGS frame would carry them.
 *
 * A program declares one aggregation of each kind; a test runs small
 * programs that push a value and the keys and feed one aggregation, all on
 * one CPU with interrupts masked (an entry lives in the table of the CPU
 * that fed it), then reads that CPU's entry (agg_read). Checked: count,
 * sum, least and greatest; quantize's power-of-two buckets for zero,
 * positive and negative values up to the word's extremes; two keys, the
 * first popped being key[0]; four keys; a sum of unsigned words past 2^32,
 * exact; lquantize's given buckets, clamped; a full table, whose extra entries are
 * dropped and counted; an entry's bucket limit, WIRE_AGG_MAX_BUCKETS; and
 * clearing one slot's entries (program clear) leaving another's whole.
 */
#include "aggregate.h"
#include "cpu.h"
#include "selftest.h"
#include "selftest_programs.h"

#define SLOT   (WIRE_PROGRAMS - 2)
#define OTHER  (WIRE_PROGRAMS - 3)

/* Aggregation i is of kind kinds[i]. */
static const uint8_t kinds[] = {
	WIRE_AGG_COUNT, WIRE_AGG_SUM, WIRE_AGG_MIN, WIRE_AGG_MAX, WIRE_AGG_AVG,
	WIRE_AGG_QUANTIZE, WIRE_AGG_COUNT, WIRE_AGG_LQUANTIZE,
};
enum { A_COUNT, A_SUM, A_MIN, A_MAX, A_AVG, A_QUANTIZE, A_COUNT2, A_LQUANTIZE };

static struct program prog;
static struct program_log log;

static void push_word(struct wire_rpn_insn *insn, prog_word v)
{
	insn[0] = INSN(PUSH, 0, 0, (int32_t)(uint32_t)(v >> 32));
	insn[1] = INSN(PUSHHI, 0, 0, (int32_t)(uint32_t)v);
}

/* Feed value under nkeys keys to aggregation agg of slot; interrupts
 * masked by the caller. False if the program was refused or did not end
 * by its abort. */
static int32_t feed_flags;      /* the aggregation instruction's imm */

static bool feed(unsigned slot, unsigned agg, prog_word value, unsigned nkeys,
		 prog_word k0, prog_word k1)
{
	static const uint8_t ops[] = {
		[WIRE_AGG_COUNT] = WIRE_RPN_COUNT, [WIRE_AGG_SUM] = WIRE_RPN_SUM,
		[WIRE_AGG_MIN] = WIRE_RPN_MIN, [WIRE_AGG_MAX] = WIRE_RPN_MAX,
		[WIRE_AGG_AVG] = WIRE_RPN_AVG, [WIRE_AGG_QUANTIZE] = WIRE_RPN_QUANTIZE,
		[WIRE_AGG_LQUANTIZE] = WIRE_RPN_LQUANTIZE,
	};
	struct wire_rpn_insn insn[8];
	unsigned n = 0;
	if (kinds[agg] != WIRE_AGG_COUNT) {
		push_word(insn + n, value);
		n += 2;
	}
	if (nkeys == 2) {
		push_word(insn + n, k1);
		n += 2;
	}
	if (nkeys) {
		push_word(insn + n, k0);          /* the top: key[0] */
		n += 2;
	}
	insn[n++] = (struct wire_rpn_insn){ ops[kinds[agg]], (uint8_t)nkeys, (uint16_t)agg,
					    feed_flags };
	insn[n++] = INSN(ABORT, 0, 0, 0);
	return tp_program(&prog, slot, insn, n, sizeof kinds, kinds) &&
	       tp_run(&prog, &log) == PROGRAM_ABORT;
}

static struct wire_agg entry;
static struct wire_agg_bucket buckets[WIRE_AGG_MAX_BUCKETS];

static bool read_entry(unsigned slot, unsigned agg, unsigned nkeys,
		       prog_word k0, prog_word k1)
{
	const prog_word keys[2] = { k0, k1 };
	return agg_read(this_cpu()->id, slot, agg, keys, nkeys, &entry, buckets,
			WIRE_AGG_MAX_BUCKETS);
}

/* The count of bucket index in the entry read, 0 if it has none. */
static uint64_t bucket_count(unsigned index)
{
	for (unsigned b = 0; b < entry.nbuckets; b++)
		if (buckets[b].index == index)
			return buckets[b].count;
	return 0;
}

static void test_kinds(void)
{
	static const long values[] = { 1, -2, 10 };
	irqflags_t f = arch_irq_save();
	bool fed = true;
	for (unsigned i = 0; i < 3; i++)
		fed &= feed(SLOT, A_COUNT, 0, 1, 5, 0);
	fed &= feed(SLOT, A_COUNT, 0, 1, 6, 0);
	for (unsigned agg = A_SUM; agg <= A_AVG; agg++)
		for (unsigned i = 0; i < 3; i++)
			fed &= feed(SLOT, agg, (prog_word)values[i], 1, 1, 0);
	bool five = read_entry(SLOT, A_COUNT, 1, 5, 0);
	struct wire_agg count5 = entry;
	bool six = read_entry(SLOT, A_COUNT, 1, 6, 0);
	struct wire_agg count6 = entry, got[A_AVG + 1];
	bool all = true;
	for (unsigned agg = A_SUM; agg <= A_AVG; agg++) {
		all &= read_entry(SLOT, agg, 1, 1, 0);
		got[agg] = entry;
	}
	arch_irq_restore(f);

	report(fed && five && six && count5.count == 3 && count6.count == 1 &&
	       count5.kind == WIRE_AGG_COUNT && count5.nkeys == 1 && count5.key[0] == 5,
	       "count: key 5 counted 3 times, key 6 once, separate entries");
	report(fed && all && got[A_SUM].count == 3 && got[A_SUM].sum == 9 &&
	       got[A_SUM].kind == WIRE_AGG_SUM, "sum of 1, -2, 10: %lld over %llu values",
	       (long long)got[A_SUM].sum, (unsigned long long)got[A_SUM].count);
	report(fed && all && got[A_MIN].min == -2 && got[A_MIN].kind == WIRE_AGG_MIN,
	       "min of 1, -2, 10: %lld (signed)", (long long)got[A_MIN].min);
	report(fed && all && got[A_MAX].max == 10 && got[A_MAX].kind == WIRE_AGG_MAX,
	       "max of 1, -2, 10: %lld", (long long)got[A_MAX].max);
	report(fed && all && got[A_AVG].sum == 9 && got[A_AVG].count == 3 &&
	       got[A_AVG].kind == WIRE_AGG_AVG, "avg of 1, -2, 10: sum %lld, count %llu",
	       (long long)got[A_AVG].sum, (unsigned long long)got[A_AVG].count);
}

static void test_quantize(void)
{
	const prog_sword most = (prog_sword)(~(prog_word)0 >> 1), least = -most - 1;
	const unsigned bits = 8 * WORD;
	const struct { prog_sword v; unsigned bucket; } cases[] = {
		{ 0, 0 }, { 1, 1 }, { 2, 2 }, { 3, 2 }, { 4, 3 }, { 7, 3 }, { 8, 4 },
		{ -1, 65 }, { -2, 66 }, { -3, 66 }, { -4, 67 }, { -5, 67 },
		{ most, bits - 1 }, { least, 64 + bits },
	};
	const unsigned n = sizeof cases / sizeof cases[0];
	irqflags_t f = arch_irq_save();
	bool fed = true;
	for (unsigned i = 0; i < n; i++)
		fed &= feed(SLOT, A_QUANTIZE, (prog_word)cases[i].v, 1, 9, 0);
	bool found = read_entry(SLOT, A_QUANTIZE, 1, 9, 0);
	arch_irq_restore(f);

	unsigned right = 0, distinct = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned same = 0;
		for (unsigned j = 0; j < n; j++)
			same += cases[j].bucket == cases[i].bucket;
		if (bucket_count(cases[i].bucket) == same)
			right++;
		else
			report_info("value %lld: bucket %u counts %llu, want %u", (long long)cases[i].v,
				    cases[i].bucket,
				    (unsigned long long)bucket_count(cases[i].bucket), same);
	}
	for (unsigned i = 0; i < n; i++) {
		bool first = true;
		for (unsigned j = 0; j < i; j++)
			first &= cases[j].bucket != cases[i].bucket;
		distinct += first;
	}
	report(fed && found && right == n && entry.nbuckets == distinct &&
	       entry.count == n && entry.kind == WIRE_AGG_QUANTIZE,
	       "quantize of 0, 1..8, -1..-5 and the word's extremes: %u values in "
	       "%u buckets (0; 1 + k for 2^k <= v; 65 + k for v <= -2^k)", n, distinct);
}

static void test_two_keys(void)
{
	irqflags_t f = arch_irq_save();
	bool fed = feed(SLOT, A_COUNT2, 0, 2, 1, 2) && feed(SLOT, A_COUNT2, 0, 2, 1, 2) &&
		   feed(SLOT, A_COUNT2, 0, 2, 2, 1);
	bool a = read_entry(SLOT, A_COUNT2, 2, 1, 2);
	struct wire_agg one_two = entry;
	bool b = read_entry(SLOT, A_COUNT2, 2, 2, 1);
	arch_irq_restore(f);
	report(fed && a && b && one_two.count == 2 && entry.count == 1 &&
	       one_two.nkeys == 2 && one_two.key[0] == 1 && one_two.key[1] == 2,
	       "two keys: (1, 2) twice and (2, 1) once are two entries; key[0] is "
	       "the key popped first");
}

/* Four keys, each of them part of the entry's identity. */
static void test_four_keys(void)
{
	static const struct wire_rpn_insn insn[] = {
		INSN(PUSH, 0, 0, 4), INSN(PUSH, 0, 0, 3), INSN(PUSH, 0, 0, 2),
		INSN(PUSH, 0, 0, 1), INSN(COUNT, 4, A_COUNT, 0),
		INSN(PUSH, 0, 0, 5), INSN(PUSH, 0, 0, 3), INSN(PUSH, 0, 0, 2),
		INSN(PUSH, 0, 0, 1), INSN(COUNT, 4, A_COUNT, 0), INSN(ABORT, 0, 0, 0),
	};
	const prog_word k1234[4] = { 1, 2, 3, 4 }, k1235[4] = { 1, 2, 3, 5 };
	bool ran = tp_program(&prog, SLOT, insn, NINSNS(insn), sizeof kinds, kinds) &&
		   tp_run(&prog, &log) == PROGRAM_ABORT && tp_run(&prog, &log) == PROGRAM_ABORT;
	irqflags_t f = arch_irq_save();
	bool a = agg_read(this_cpu()->id, SLOT, A_COUNT, k1234, 4, &entry, buckets, 0);
	struct wire_agg first = entry;
	bool b = agg_read(this_cpu()->id, SLOT, A_COUNT, k1235, 4, &entry, buckets, 0);
	arch_irq_restore(f);
	report(ran && a && b && first.count == 2 && entry.count == 2 && first.nkeys == 4 &&
	       first.key[0] == 1 && first.key[3] == 4 && entry.key[3] == 5,
	       "four keys: (1,2,3,4) and (1,2,3,5) are two entries, twice each");
}

/* 0xffffffff summed three times: past 2^32, exact (the flag that once
 * zero-extended a 32-bit arch's word changes nothing now); the word -1
 * three times: -3. */
static void test_unsigned_sum(void)
{
	irqflags_t f = arch_irq_save();
	feed_flags = WIRE_RPN_AGG_UNSIGNED;
	bool fed = true;
	for (unsigned i = 0; i < 3; i++)
		fed &= feed(SLOT, A_SUM, 0xfffffffful, 1, 40, 0);
	feed_flags = 0;
	for (unsigned i = 0; i < 3; i++)
		fed &= feed(SLOT, A_SUM, ~(prog_word)0, 1, 41, 0);
	bool u = read_entry(SLOT, A_SUM, 1, 40, 0);
	int64_t usum = entry.sum;
	bool s = read_entry(SLOT, A_SUM, 1, 41, 0);
	arch_irq_restore(f);
	report(fed && u && s && usum == 3 * 0xffffffffll && entry.sum == -3,
	       "sum of 0xffffffff x3 unsigned: %lld (exact past 2^32); of the word -1 "
	       "x3: %lld", (long long)usum, (long long)entry.sum);
}

/* lquantize counts in the bucket the program gives, clamped to the last. */
static void test_lquantize(void)
{
	irqflags_t f = arch_irq_save();
	bool fed = feed(SLOT, A_LQUANTIZE, 0, 1, 50, 0) &&
		   feed(SLOT, A_LQUANTIZE, 3, 1, 50, 0) &&
		   feed(SLOT, A_LQUANTIZE, 3, 1, 50, 0) &&
		   feed(SLOT, A_LQUANTIZE, 100000, 1, 50, 0);
	bool found = read_entry(SLOT, A_LQUANTIZE, 1, 50, 0);
	arch_irq_restore(f);
	report(fed && found && entry.kind == WIRE_AGG_LQUANTIZE && entry.count == 4 &&
	       bucket_count(0) == 1 && bucket_count(3) == 2 &&
	       bucket_count(WIRE_LQUANTIZE_MAX) == 1 && entry.nbuckets == 3,
	       "lquantize: buckets 0, 3, 3 and one past the last (clamped to %u)",
	       WIRE_LQUANTIZE_MAX);
}

/* Feed every bucket the word has to one entry. */
static void test_bucket_limit(void)
{
	unsigned n = 0;
	irqflags_t f = arch_irq_save();
	uint32_t dropped = agg_dropped(this_cpu()->id);
	bool fed = feed(SLOT, A_QUANTIZE, 0, 1, 77, 0);
	n++;
	for (unsigned k = 0; k + 1 < 8 * WORD; k++, n++)
		fed &= feed(SLOT, A_QUANTIZE, (prog_word)1 << k, 1, 77, 0);
	for (unsigned k = 0; k < 8 * WORD; k++, n++)
		fed &= feed(SLOT, A_QUANTIZE, 0 - ((prog_word)1 << k), 1, 77, 0);
	dropped = agg_dropped(this_cpu()->id) - dropped;
	bool found = read_entry(SLOT, A_QUANTIZE, 1, 77, 0);
	arch_irq_restore(f);
	unsigned kept = n < WIRE_AGG_MAX_BUCKETS ? n : WIRE_AGG_MAX_BUCKETS;
	report(fed && found && entry.nbuckets == kept && dropped == n - kept &&
	       entry.count == kept, "an entry keeps at most %u buckets: of the %u a "
	       "word has, %u kept, %u values dropped and counted",
	       WIRE_AGG_MAX_BUCKETS, n, entry.nbuckets, (unsigned)dropped);
}

/* The room left in this CPU's table, then ten more entries that find none
 * (this slot's entries are gone: test_clear ran before; what the tracer's
 * own programs keep in other slots stays and is counted out). */
static void test_full_table(void)
{
	irqflags_t f = arch_irq_save();
	unsigned cpu = this_cpu()->id, room = AGG_CAPACITY - agg_entries(cpu);
	uint32_t dropped = agg_dropped(cpu);
	bool fed = true;
	for (unsigned k = 0; k < room + 10; k++)
		fed &= feed(SLOT, A_COUNT, 0, 1, 1000 + k, 0);
	dropped = agg_dropped(cpu) - dropped;
	bool first_in = !room || read_entry(SLOT, A_COUNT, 1, 1000 + 0, 0);
	bool extra_out = !read_entry(SLOT, A_COUNT, 1, 1000 + room + 9, 0);
	bool full = agg_entries(cpu) == AGG_CAPACITY;
	arch_irq_restore(f);
	report(fed && first_in && extra_out && full && dropped == 10, "a full table "
	       "(%u entries, %u of them free) drops the 10 updates that find no "
	       "room, and counts them (%u)", AGG_CAPACITY, room, (unsigned)dropped);
}

/* Clearing one slot's entries (program clear) leaves another's whole. */
static void test_clear(void)
{
	char why[WIRE_MAX_REASON];
	bool cleared = program_clear(SLOT, why, sizeof why) == 0;
	irqflags_t f = arch_irq_save();
	bool gone = !read_entry(SLOT, A_COUNT, 1, 5, 0);
	bool fed = true;
	for (unsigned k = 0; k < 60; k++) {
		fed &= feed(SLOT, A_COUNT, 0, 1, k, 0);
		fed &= feed(OTHER, A_COUNT, 0, 1, k, 0);
		fed &= feed(OTHER, A_COUNT, 0, 1, k, 0);
	}
	arch_irq_restore(f);
	bool cleared_again = program_clear(SLOT, why, sizeof why) == 0;
	unsigned kept = 0, left = 0;
	f = arch_irq_save();
	for (unsigned k = 0; k < 60; k++) {
		kept += read_entry(OTHER, A_COUNT, 1, k, 0) && entry.count == 2;
		left += read_entry(SLOT, A_COUNT, 1, k, 0);
	}
	arch_irq_restore(f);
	report(cleared && gone, "program clear removes its slot's entries");
	report(fed && cleared_again && kept == 60 && !left, "removing 60 entries "
	       "of one slot leaves the 60 of another, interleaved with them, each "
	       "found with its count (%u found, %u left)", kept, left);
	agg_clear(OTHER);
}

static void selftest_program_aggs(void)
{
	char why[WIRE_MAX_REASON];
	report_prefix_push("aggregations");
	program_clear(SLOT, why, sizeof why);
	agg_clear(OTHER);
	test_kinds();
	test_quantize();
	test_two_keys();
	test_four_keys();
	test_unsigned_sum();
	test_lquantize();
	test_bucket_limit();
	test_clear();
	test_full_table();
	program_clear(SLOT, why, sizeof why);
	report_prefix_pop();
}

SELFTEST(430, "programs", selftest_program_aggs);
