/*
 * selftest_program_sites.S — code whose registers a probe program reads
 * (the self-test of tarch_context_*, tracer/core/
 * selftest_program_context.c; the rows are selftest_program_sites.c).
 *
 * tarch_context_call(x) loads ebx, esi, edi, ecx and edx with known
 * values and calls pc_fn(x), whose first instruction, the fused push
 * %ebp; mov %esp,%ebp, is the entry site, and whose ret (pc_ret, followed
 * by padding, so ud2 may cover it too) is the return site; pc_fn returns
 * x + 1 and leaves a known edx. The call's return address is
 * tarch_context_back. Callee-saved registers are saved around it all.
 */
	.text
	.global tarch_context_call, tarch_context_back, pc_fn, pc_ret

	.align 16
tarch_context_call:
	pushl	%ebp
	movl	%esp, %ebp
	pushl	%ebx
	pushl	%esi
	pushl	%edi
	movl	$0x1111, %ebx
	movl	$0x2222, %esi
	movl	$0x3333, %edi
	movl	$0x4444, %ecx
	movl	$0x5555, %edx
	pushl	8(%ebp)
	call	pc_fn
tarch_context_back:
	addl	$4, %esp
	popl	%edi
	popl	%esi
	popl	%ebx
	popl	%ebp
	ret

	.align 16
pc_fn:
	pushl	%ebp                    /* the entry site */
	movl	%esp, %ebp
	movl	8(%ebp), %eax
	addl	$1, %eax
	movl	$0x6666, %edx
	popl	%ebp
pc_ret:
	ret                             /* the return site */
	nop
