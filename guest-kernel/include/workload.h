/*
 * workload.h — code the bench drives with `run <name> key=value ...`.
 *
 * A workload declares its parameters (name, default, bounds) so the command
 * loop can refuse a bad key or value before anything runs. It computes an
 * answer and checks it against its own ground truth; the result goes to the
 * host in a RESULT frame (wire.h). WORKLOAD() places the descriptor in the
 * .workloads section, so a user's C file linked into the image adds itself.
 * The built-in ones are the kernel's (guest-kernel/workloads: the ground a
 * user traces) and the tracer's (tracer/workloads: what measures the tracer
 * itself); the image builds and lists them alike (guest-kernel/image.mk).
 */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

/* Parameters a workload declares at most (`run` refuses one with more). */
#define WORKLOAD_MAX_PARAMS 12

struct workload_param {
	const char *name;
	uint64_t    def, min, max;
	const char *help;
};

struct workload_result {
	uint64_t value;     /* the answer, sent to the host */
	bool     ok;        /* the workload's own check of the answer */
};

struct workload {
	const char *name;
	const char *help;
	const struct workload_param *params;   /* terminated by name == NULL */
	void (*run)(const uint64_t *values, struct workload_result *res);
};

#define WORKLOAD(ident) \
	static const struct workload workload_##ident \
	__attribute__((used, section(".workloads"), aligned(sizeof(void *))))

extern const struct workload __workloads_start[], __workloads_end[];

/* Ground truth for tracing: the workload's own count of how often a
 * function ran in this run (an EXPECT frame; the host compares it with
 * the traced entries and returns). */
void workload_expect(const char *function, uint64_t calls);

#endif
