/*
 * shapes.c — code shapes real code has and our other workloads do not,
 * so the tracer meets them here first.
 *
 * shape_empty is one instruction (i386: `ret`; sparc64: `retl` and its
 * delay slot), built without a frame so gcc emits nothing else, as a
 * library built with its own flags does: its entry and return probes
 * share the one site. shape_calls_first calls before it has a frame, so
 * the bytes an i386 opt jmp would displace hold a call (a refusal with a
 * long reason). shape_load is static, so at -O2 gcc passes its argument
 * in a register on i386 and its first instruction loads through it (`mov
 * 0x1c(%eax),%reg`): memory an opt detour's check record does not hold.
 * Each counts its calls: the ground truth for tracing.
 */
#include "workload.h"

#define NO_FRAME __attribute__((noinline, optimize("omit-frame-pointer")))

NO_FRAME void shape_empty(void);
NO_FRAME void shape_calls_first(void);

static uint64_t calls_first;

struct shape_rec {
	uint32_t pad[7];
	uint32_t field;         /* at 0x1c */
	uint32_t more;
};

static struct shape_rec shape_recs[4];

NO_FRAME void shape_empty(void)
{
	/* One instruction: a counter here would be a second. */
	__asm__ volatile("" ::: "memory");
}

NO_FRAME void shape_calls_first(void)
{
	shape_empty();
	calls_first++;
}

static __attribute__((noinline, noclone)) uint32_t shape_load(const struct shape_rec *r)
{
	return r->field * 3 + r->more;
}

static void run_shapes(const uint64_t *v, struct workload_result *res)
{
	uint64_t sum = 0, want = 0;
	calls_first = 0;
	for (unsigned i = 0; i < 4; i++)
		shape_recs[i] = (struct shape_rec){ .field = i + 1, .more = 10 * i };
	for (uint64_t i = 0; i < v[0]; i++) {
		shape_calls_first();
		sum += shape_load(&shape_recs[i % 4]);
		want += 3 * (i % 4 + 1) + 10 * (i % 4);
	}
	res->value = sum;
	res->ok = calls_first == v[0] && sum == want;
	workload_expect("shape_load", v[0]);
	workload_expect("shape_calls_first", calls_first);
	workload_expect("shape_empty", calls_first);
}

static const struct workload_param shapes_params[] = {
	{ "n", 100, 0, 1000000, "calls of shape_calls_first (each calls shape_empty)" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(shapes) = { "shapes", "one-instruction and call-first functions, counted",
		     shapes_params, run_shapes };
