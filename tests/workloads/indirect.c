/*
 * indirect.c — indirect calls and jumps, for `insn:FUNC+*` over every
 * instruction of a function (tests/test_indirect.py): ind_dispatch calls
 * through a table (`call *table(,%eax,4)`) and through a register, and
 * ind_switch is a switch gcc compiles to a jump table (`jmp
 * *table(,%eax,4)`); ind_esp (assembly) calls through a word on the stack
 * (`call *(%esp)`), whose target must be read before the call's own push
 * covers the word below it (the emulation computes the operand from the
 * ESP before). value: a sum every path adds to, checked against the same
 * sum computed without them.
 *
 * indfault: ind_fault_call calls through a table that is not there (page
 * 0 is never mapped), under trap_try. Natively the #PF names the call as
 * its PC and the table slot as its address; probed, the emulation's load
 * of the target faults and must hand the same trap to the same try (the
 * fire path's operand_fault). value: the PC the try saw (the same every
 * time, inside ind_fault_call), for the test to compare with the call's
 * address; ok: every call faulted at the table slot it read. try=0 makes
 * the call with no trap_try: the kernel stops on the #PF, probed or not.
 */
#include "trap.h"
#include "workload.h"

__attribute__((noinline)) unsigned ind_add(unsigned x);
__attribute__((noinline)) unsigned ind_mul(unsigned x);
__attribute__((noinline)) unsigned ind_neg(unsigned x);
unsigned ind_add(unsigned x) { return x + 3; }
unsigned ind_mul(unsigned x) { return x * 5; }
unsigned ind_neg(unsigned x) { return 0u - x; }

static unsigned (*const ind_table[3])(unsigned) = { ind_add, ind_mul, ind_neg };
static unsigned (*volatile ind_reg)(unsigned) = ind_mul;

__attribute__((noinline)) unsigned ind_dispatch(unsigned i, unsigned x);
unsigned ind_dispatch(unsigned i, unsigned x)
{
	unsigned r = ind_table[i % 3](x);       /* call *ind_table(,%eax,4) */
	return r + ind_reg(x);                  /* call *%edx (a register) */
}

__attribute__((noinline)) unsigned ind_switch(unsigned i, unsigned x);
unsigned ind_switch(unsigned i, unsigned x)
{
	switch (i % 7) {                        /* jmp *table(,%eax,4) */
	case 0: return x + 11;
	case 1: return x * 13;
	case 2: return x ^ 0x55;
	case 3: return x - 17;
	case 4: return x << 2;
	case 5: return x >> 1;
	default: return ~x;
	}
}

unsigned ind_esp(void);
unsigned ind_target(void);
unsigned ind_target(void) { return 42; }
__asm__(".text\n"
	".global ind_esp\n"
	".type ind_esp, @function\n"
	"ind_esp:\n"
	"	pushl %ebp\n"
	"	movl %esp, %ebp\n"
	"	pushl $ind_target\n"
	"	call *(%esp)\n"
	"	addl $4, %esp\n"
	"	popl %ebp\n"
	"	ret\n"
	".size ind_esp, . - ind_esp\n");

/* The same answers with no indirect transfer. */
static unsigned plain_table(unsigned i, unsigned x)
{
	return (i % 3 == 0 ? x + 3 : i % 3 == 1 ? x * 5 : 0u - x) + x * 5;
}

static unsigned plain_switch(unsigned i, unsigned x)
{
	unsigned k = i % 7;
	return k == 0 ? x + 11 : k == 1 ? x * 13 : k == 2 ? (x ^ 0x55) : k == 3 ? x - 17 :
	       k == 4 ? x << 2 : k == 5 ? x >> 1 : ~x;
}

static void run_indirect(const uint64_t *v, struct workload_result *res)
{
	unsigned n = (unsigned)v[0], sum = 0, want = 0;
	for (unsigned i = 0; i < n; i++) {
		sum += ind_dispatch(i, i * 7 + 1) + ind_switch(i, i + 2) + ind_esp();
		want += plain_table(i, i * 7 + 1) + plain_switch(i, i + 2) + 42;
	}
	res->value = sum;
	res->ok = sum == want;
	workload_expect("ind_dispatch", n);
	workload_expect("ind_switch", n);
	workload_expect("ind_esp", n);
}

static unsigned (*const *volatile ind_nowhere)(unsigned) =
	(unsigned (*const *)(unsigned))0x10;

__attribute__((noinline)) unsigned ind_fault_call(unsigned x);
unsigned ind_fault_call(unsigned x)
{
	return ind_nowhere[x & 1](x) + 1;       /* call *(%eax,%edx,4): page 0 */
}

struct fault_try {
	unsigned x, value;
};

static void fault_try(void *arg)
{
	struct fault_try *t = arg;
	t->value = ind_fault_call(t->x);
}

static void run_indfault(const uint64_t *v, struct workload_result *res)
{
	unsigned n = (unsigned)v[0], caught = 0;
	if (!v[1])
		ind_fault_call(0);              /* no try: the kernel stops here */
	uintptr_t pc = 0, lo = (uintptr_t)ind_fault_call;
	bool ok = true;
	for (unsigned i = 0; i < n; i++) {
		struct fault_try t = { i, 0 };
		struct caught_trap c;
		if (!trap_try(fault_try, &t, &c)) {
			ok = false;             /* the call went somewhere */
			continue;
		}
		caught++;
		if (!pc)
			pc = c.pc;
		ok = ok && c.vector == 14 && c.fault_addr == 0x10 + 4 * (i & 1) &&
		     c.pc == pc && lo <= c.pc && c.pc < lo + 64;
	}
	res->value = pc;
	res->ok = ok && caught == n;
}

static const struct workload_param indfault_params[] = {
	{ "n", 20, 1, 100000, "calls through the missing table" },
	{ "try", 1, 0, 1, "0: one call with no trap_try, which stops the kernel" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(indfault) = { "indfault", "a call through an unmapped table, under "
		       "trap_try; value = the #PF's PC", indfault_params, run_indfault };

static const struct workload_param indirect_params[] = {
	{ "n", 50, 1, 100000, "rounds of every path" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(indirect) = { "indirect", "indirect calls and jumps; value = their sum",
		       indirect_params, run_indirect };
