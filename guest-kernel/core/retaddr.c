/*
 * retaddr.c — return addresses as they really are (retaddr.h): the value
 * read from a frame, through the tracer's filter when one is set (a
 * trampoline's address becomes the real return address the tracer keeps
 * for that frame).
 */
#include "notrace.h"
#include "retaddr.h"

static return_address_filter_fn *filter;

void return_address_set_filter(return_address_filter_fn *fn)
{
	filter = fn;
}

NOTRACE uintptr_t return_address_real(const struct thread *t, const void *frame,
			      uintptr_t value)
{
	return filter ? filter(t, frame, value) : value;
}
