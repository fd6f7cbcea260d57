/*
 * printers.c — console stress: N threads on all CPUs print M numbered
 * lines at once. The host checks that every line arrives exactly once and
 * whole and that the link saw no damaged or lost frame, which holds only
 * if the console and the link serialise writers across CPUs.
 */
#include "console.h"
#include "thread.h"
#include "workload.h"

struct printer {
	unsigned id;
	uint64_t lines;
};

static void printer_thread(void *arg)
{
	const struct printer *p = arg;
	for (uint64_t i = 0; i < p->lines; i++)
		kprintf("printer %u line %llu of %llu: the quick brown fox\n", p->id,
			(unsigned long long)i, (unsigned long long)p->lines);
}

static void run_printers(const uint64_t *v, struct workload_result *res)
{
	static struct printer printers[16];
	unsigned n = (unsigned)v[0];

	for (unsigned i = 0; i < n; i++)
		printers[i] = (struct printer){ i, v[1] };
	unsigned ran = thread_run_all("printer", n, printer_thread, printers,
				      sizeof printers[0], THREAD_ANY_CPU);
	res->ok = ran == n;
	res->value = ran * v[1];
}

static const struct workload_param printers_params[] = {
	{ "threads", 4, 1, 16, "printing threads" },
	{ "lines", 50, 1, 10000, "lines per thread" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(printers) = {
	"printers", "threads print numbered lines at once; value = lines printed",
	printers_params, run_printers,
};
