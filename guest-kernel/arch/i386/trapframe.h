/*
 * trapframe.h — the i386 trap frame as entry.S builds it, lowest address
 * first. The CPU pushed eflags, cs, eip; the stub pushed error and vector;
 * pushal pushed eax..edi; then the segment registers. A ring-0 trap pushes
 * no ESP: the interrupted ESP is the address just past eflags
 * (trapframe_sp()).
 *
 * A trap hook (trap.h) may change any register here, and may move the
 * stack pointer. popal ignores pushal's own esp slot, so it carries
 * resume_esp: trap_dispatch sets it to trapframe_sp() before the hooks
 * run, and a hook that emulates an instruction moving ESP sets it to the
 * ESP the interrupted code resumes with, leaving at most one deferred
 * stack store in the vector slot (its address, 0 for none) and the error
 * slot (its value) — the store lies inside the old frame, so it waits for
 * the move. trap_dispatch then returns the new ESP (0 while resume_esp is
 * unchanged), and entry.S moves the whole frame to end there, makes the
 * store, and returns with iret. (trap_dispatch reads the vector before
 * any hook runs.)
 *
 * The TF_* offsets are for assembly; the struct is checked against them.
 */
#ifndef I386_TRAPFRAME_H
#define I386_TRAPFRAME_H

#define TF_GS          0
#define TF_FS          4
#define TF_ES          8
#define TF_DS          12
#define TF_EDI         16
#define TF_ESI         20
#define TF_EBP         24
#define TF_RESUME_ESP  28     /* pushal's esp slot (above) */
#define TF_EBX         32
#define TF_EDX         36
#define TF_ECX         40
#define TF_EAX         44
#define TF_VECTOR      48     /* after a move: the deferred store's address */
#define TF_ERROR       52     /* after a move: the deferred store's value */
#define TF_EIP         56
#define TF_CS          60
#define TF_EFLAGS      64
#define TF_SIZE        68

#ifndef __ASSEMBLY__
#include <stddef.h>
#include <stdint.h>

struct trapframe {
	uint32_t gs, fs, es, ds;
	uint32_t edi, esi, ebp, resume_esp, ebx, edx, ecx, eax;
	uint32_t vector, error;
	uint32_t eip, cs, eflags;
};

_Static_assert(offsetof(struct trapframe, gs) == TF_GS, "TF_GS");
_Static_assert(offsetof(struct trapframe, fs) == TF_FS, "TF_FS");
_Static_assert(offsetof(struct trapframe, es) == TF_ES, "TF_ES");
_Static_assert(offsetof(struct trapframe, ds) == TF_DS, "TF_DS");
_Static_assert(offsetof(struct trapframe, edi) == TF_EDI, "TF_EDI");
_Static_assert(offsetof(struct trapframe, esi) == TF_ESI, "TF_ESI");
_Static_assert(offsetof(struct trapframe, ebp) == TF_EBP, "TF_EBP");
_Static_assert(offsetof(struct trapframe, resume_esp) == TF_RESUME_ESP, "TF_RESUME_ESP");
_Static_assert(offsetof(struct trapframe, ebx) == TF_EBX, "TF_EBX");
_Static_assert(offsetof(struct trapframe, edx) == TF_EDX, "TF_EDX");
_Static_assert(offsetof(struct trapframe, ecx) == TF_ECX, "TF_ECX");
_Static_assert(offsetof(struct trapframe, eax) == TF_EAX, "TF_EAX");
_Static_assert(offsetof(struct trapframe, vector) == TF_VECTOR, "TF_VECTOR");
_Static_assert(offsetof(struct trapframe, error) == TF_ERROR, "TF_ERROR");
_Static_assert(offsetof(struct trapframe, eip) == TF_EIP, "TF_EIP");
_Static_assert(offsetof(struct trapframe, cs) == TF_CS, "TF_CS");
_Static_assert(offsetof(struct trapframe, eflags) == TF_EFLAGS, "TF_EFLAGS");
_Static_assert(sizeof(struct trapframe) == TF_SIZE, "TF_SIZE");

static inline uint32_t trapframe_sp(const struct trapframe *tf)
{
	return (uint32_t)(uintptr_t)(&tf->eflags + 1);
}
#endif

#endif
