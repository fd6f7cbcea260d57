/*
 * retaddr.c — code that reads its own return addresses, for the test that
 * a return trampoline is invisible (tests/test_opt_return.py): ra_top
 * calls ra_mid calls ra_leaf, recursing `depth` times through ra_mid, and
 * ra_leaf reads __builtin_return_address(0..3) and walks its frame chain
 * (__builtin_frame_address(0..3)) as a stack walker would, each address
 * through retaddr.h's return_address_real. value is a hash of those real
 * addresses, which must be the same probed and unprobed; raw=1 hashes the
 * words as read instead (under opt with returns riding they are the
 * trampoline's: a reader that does not map them differs, which the test
 * shows). ok: the sums are right and, three levels up from ra_leaf,
 * every real address lies in ra_mid, ra_top or their caller run_retaddr.
 * exiters=N runs N threads in turn that exit inside ra_gone, calls open.
 */
#include "retaddr.h"
#include "thread.h"
#include "workload.h"

/* Reading frames above our own is what this file is for. */
#pragma GCC diagnostic ignored "-Wframe-address"

static uint64_t ra_calls[3];
static uintptr_t hash;
static bool raw, inside;

__attribute__((noinline)) unsigned ra_top(unsigned depth);
__attribute__((noinline)) unsigned ra_mid(unsigned depth);
__attribute__((noinline)) unsigned ra_leaf(unsigned depth);

static void run_retaddr(const uint64_t *v, struct workload_result *res);

static void take(unsigned level, const void *frame, void *value)
{
	uintptr_t v = (uintptr_t)value;
	uintptr_t real = return_address_real(thread_current(), frame, v);
	uintptr_t seen = raw ? v : real;
	hash = hash * 1000003u ^ seen;
	/* Three levels up from ra_leaf the callers are ra_mid, ra_top or
	 * run_retaddr, each a few hundred bytes long at most. */
	if (level < 3 && !(real - (uintptr_t)ra_top < 0x200 ||
			   real - (uintptr_t)ra_mid < 0x200 ||
			   real - (uintptr_t)run_retaddr < 0x200))
		inside = false;
}

#define TAKE(n) take(n, __builtin_frame_address(n), __builtin_return_address(n))

unsigned ra_leaf(unsigned depth)
{
	ra_calls[2]++;
	TAKE(0);
	TAKE(1);
	TAKE(2);
	TAKE(3);
	return depth + 1;
}

unsigned ra_mid(unsigned depth)
{
	ra_calls[1]++;
	unsigned r = depth ? ra_mid(depth - 1) : ra_leaf(depth);
	return r + 1;
}

unsigned ra_top(unsigned depth)
{
	ra_calls[0]++;
	return ra_mid(depth) + ra_mid(0);
}

/* A thread that exits with `depth` + 1 calls open (their returns never
 * come): its shadow stack must be taken back for the threads after it. */
__attribute__((noinline)) void ra_gone(unsigned depth);
static volatile bool stay;     /* never set: keeps gcc from calling it endless */

void ra_gone(unsigned depth)
{
	if (depth)
		ra_gone(depth - 1);
	else if (!stay)
		thread_exit();
}

static void gone(void *arg)
{
	ra_gone((unsigned)(uintptr_t)arg);
}

static unsigned run_exiters(unsigned n, unsigned depth)
{
	unsigned done = 0;
	for (unsigned i = 0; i < n; i++) {
		struct thread *t = thread_create("ra-gone", gone, (void *)(uintptr_t)depth,
						 THREAD_ANY_CPU);
		if (!t)
			break;
		thread_join(t);
		done++;
	}
	return done;
}

static void run_retaddr(const uint64_t *v, struct workload_result *res)
{
	if (v[2]) {
		res->value = run_exiters((unsigned)v[2], (unsigned)v[0]);
		res->ok = res->value == v[2];
		return;
	}
	ra_calls[0] = ra_calls[1] = ra_calls[2] = 0;
	hash = 0;
	inside = true;
	raw = v[1] != 0;
	unsigned depth = (unsigned)v[0], r = 0;
	for (unsigned i = 0; i < 3; i++)
		r += ra_top(depth + i);
	res->value = hash;
	res->ok = inside && r == 3 * depth + 15;    /* ra_top(d) = d + 4 */
	workload_expect("ra_top", ra_calls[0]);
	workload_expect("ra_mid", ra_calls[1]);
	workload_expect("ra_leaf", ra_calls[2]);
}

static const struct workload_param retaddr_params[] = {
	{ "depth", 2, 0, 200, "extra ra_mid frames under ra_top" },
	{ "raw", 0, 0, 1, "hash the words as read, not the real addresses" },
	{ "exiters", 0, 0, 1000, "instead: this many threads, one after another, "
	  "exit inside depth + 1 calls of ra_gone" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(retaddr) = { "retaddr", "reads its own return addresses; value = their hash",
		      retaddr_params, run_retaddr };
