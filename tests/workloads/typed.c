/*
 * typed.c — a user workload whose probed functions take every kind of
 * parameter the host prints by type (bench/trace/types.py): a pointer to a
 * struct, signed and unsigned integers of several widths, an enum, a
 * const char *, _Bool, and 64-bit values (two stack words on i386, and a
 * 64-bit return in edx:eax), with a seventh parameter that no record
 * carries (i386: past the six words recorded; sparc64: passed on the
 * stack). Each function calls another, so it has a frame (sparc64 entry
 * probes sit on `save`). The values are fixed, so tests can read them
 * back: ty_all(box, -193, 4000000000, TY_BLUE, "typed", -7, 200).
 */
#include "workload.h"

enum ty_color { TY_RED, TY_GREEN = 5, TY_BLUE = -2 };

struct ty_box {
	int w, h;
};

static volatile long ty_seen;
static struct ty_box the_box = { 3, 4 };

__attribute__((noinline)) void ty_sink(long v);
__attribute__((noinline)) void ty_sink(long v)
{
	ty_seen += v;
}

__attribute__((noinline)) int ty_all(struct ty_box *box, int s, unsigned u,
				     enum ty_color color, const char *name, short h,
				     unsigned char b);
__attribute__((noinline)) int ty_all(struct ty_box *box, int s, unsigned u,
				     enum ty_color color, const char *name, short h,
				     unsigned char b)
{
	ty_sink(box->w + s + (long)u + color + name[0] + h + b);
	return s + h;
}

__attribute__((noinline)) long long ty_wide(long long v, unsigned long long w, _Bool neg);
__attribute__((noinline)) long long ty_wide(long long v, unsigned long long w, _Bool neg)
{
	ty_sink((long)v);
	return neg ? -(long long)w + v : (long long)w + v;
}

static void run_typed(const uint64_t *params, struct workload_result *res)
{
	(void)params;
	ty_seen = 0;
	int a = ty_all(&the_box, -193, 4000000000u, TY_BLUE, "typed", -7, 200);
	long long w = ty_wide(-1, 5000000001ull, 1);
	res->value = (uint64_t)(int64_t)(a + w);
	res->ok = a == -200 && w == -5000000002ll;
	workload_expect("ty_all", 1);
	workload_expect("ty_wide", 1);
}

static const struct workload_param typed_params[] = {
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(typed) = { "typed", "one call of each typed function; value = their sum",
		    typed_params, run_typed };
