/*
 * opt_fast.S — an opt entry probe's recording path (opt_fast.h). The
 * detour's stub (opt_detour.S: pushl $probe; call opt_fast_entry) calls
 * it with eflags pushed and interrupts masked. For a plain probe
 * (recording, not gated, enabled, no argument map) on its thread's own
 * stack (or the boot stack) with its argument words inside it, it writes
 * the ENTRY record (pc, sp, nargs words from sp + 4, as record.h's) into
 * this CPU's ring, trampolines the call of an entry whose return rides on
 * it as opt_return_enter would (the riding template's frame push), counts
 * the firing and returns with ZF set. Anything else (a return probe not
 * riding, no shadow stack yet or a full one, a ring C must pad, kick,
 * commit or open) returns ZF clear with nothing stored: the stub goes
 * into C, which does it all. Every register but eflags comes back.
 */
#include "opt_fast.h"

#define SAVED   24                  /* the six registers below */
#define PROBE   (SAVED + 4)(%esp)   /* the stub's push */
#define SITE_SP (SAVED + 12)        /* past the return and eflags */

	.section OPT_HOT_SECTION, "ax"
	.global	opt_fast_entry
opt_fast_entry:
	pushl	%eax
	pushl	%ebx
	pushl	%ecx
	pushl	%edx
	pushl	%esi
	pushl	%edi
	movl	PROBE, %esi
	/* Recording, not gated, the convention's argument words: one word
	 * of zeros (action, gated) and a byte; enabled (else late: C's). */
	movzbl	OPT_PROBE_NARGMAP(%esi), %eax
	orw	OPT_PROBE_ACTION(%esi), %ax     /* TRACER_ACTION_RECORD: 0 */
	jnz	.Lno
	cmpb	$OPT_PROBE_ENABLED, OPT_PROBE_STATE(%esi)
	jne	.Lno
	/* On the thread's own stack (its pages, or the boot thread's boot
	 * stack, as the riding template asks), nargs words above sp inside
	 * it (so mapped: the words record.h's copy reads). */
	movl	%fs:OPT_CPU_CURRENT, %ecx
	movl	OPT_THREAD_STACK(%ecx), %edx
	movl	OPT_THREAD_STACK_SIZE(%ecx), %ebx
	testl	%edx, %edx
	jnz	3f
	movl	$boot_stack, %edx   /* the boot thread: the only one with none */
	movl	$boot_stack_top, %ebx
	subl	%edx, %ebx
3:	leal	SITE_SP(%esp), %eax
	subl	%edx, %eax
	movzbl	OPT_PROBE_NARGS(%esi), %edi
	leal	4(%eax,%edi,4), %eax
	cmpl	%ebx, %eax
	ja	.Lno
	/* A riding return: opt_return_enter's tests, the fallback's and a
	 * first call's claim left to C. */
	movzwl	OPT_PROBE_RIDE(%esi), %edi
	testl	%edi, %edi
	jz	.Lrecord
	imull	$OPT_PROBE_BYTES, %edi, %edi
	leal	tracer_probes - OPT_PROBE_BYTES(%edi), %edi   /* its return probe */
	OPT_RIDING %edi, %eax, .Lno
	movl	ret_slot, %eax
	movl	OPT_THREAD_SLOT(%ecx,%eax,4), %eax  /* shadow stack index + 1 */
	testl	%eax, %eax
	jz	.Lno
	imull	$OPT_RET_STACK, %eax, %eax
	cmpl	$OPT_RET_DEPTH_MAX, ret_stacks - OPT_RET_STACK + OPT_RET_DEPTH(%eax)
	jae	.Lno
.Lrecord:
	movzbl	OPT_PROBE_NARGS(%esi), %ecx
	addl	$2, %ecx                        /* pc, sp, the arguments */
	OPT_FAST_RESERVE %ecx, .Lno
	movl	(%esi), %eax
	movl	%eax, 16(%edi)                  /* pc: the probe's address */
	leal	SITE_SP(%esp), %eax
	movl	%eax, 20(%edi)                  /* sp */
	movzbl	OPT_PROBE_NARGS(%esi), %ecx
	testl	%ecx, %ecx
	jz	2f
1:	movl	SITE_SP(%esp,%ecx,4), %eax      /* argument ecx - 1 at sp + 4 ecx */
	movl	%eax, 20(%edi,%ecx,4)
	decl	%ecx
	jnz	1b
2:	movzbl	OPT_PROBE_NARGS(%esi), %ecx
	addl	$2, %ecx
	OPT_FAST_COMMIT OPT_EVENT_ENTRY
	/* The call trampolined, as the riding template does. */
	movzwl	OPT_PROBE_RIDE(%esi), %edi
	testl	%edi, %edi
	jz	.Lyes
	imull	$OPT_PROBE_BYTES, %edi, %edi
	leal	tracer_probes - OPT_PROBE_BYTES(%edi), %edi   /* r */
	movl	%fs:OPT_CPU_CURRENT, %ecx
	movl	ret_slot, %eax
	movl	OPT_THREAD_SLOT(%ecx,%eax,4), %eax
	imull	$OPT_RET_STACK, %eax, %eax
	leal	ret_stacks - OPT_RET_STACK(%eax), %ebx        /* its ret_stack */
	movl	OPT_RET_DEPTH(%ebx), %ecx
	OPT_RIDE_PUSH %edi, %ebx, %ecx, %eax, SITE_SP(%esp)
.Lyes:	cmpl	%eax, %eax              /* ZF: recorded */
	jmp	.Lout
.Lno:	testl	%esp, %esp              /* ZF clear: into C */
.Lout:	popl	%edi
	popl	%esi
	popl	%edx
	popl	%ecx
	popl	%ebx
	popl	%eax
	ret

