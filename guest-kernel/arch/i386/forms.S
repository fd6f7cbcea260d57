/*
 * forms.S — i386 functions whose prologues and epilogues are the forms the
 * probe emulator handles that gcc does not emit for our C: enter/leave, a
 * nop before the prologue (a patchable entry), ret $imm16 (callee pops,
 * stdcall), and a frameless ret. The `forms` workload (workloads/forms.c
 * calls them through arch_forms_run) and check mode use them, so that a
 * traced run exercises every emulated form.
 */
	.text
	/* unsigned fm_enter(unsigned a, unsigned b): enter $8,$0 ... leave; ret */
	.global fm_enter
	.type fm_enter, @function
fm_enter:
	enter	$8, $0
	movl	8(%ebp), %eax
	movl	%eax, -4(%ebp)
	addl	12(%ebp), %eax
	leave
	ret
	.size fm_enter, . - fm_enter

	/* unsigned fm_nop(unsigned a): nop; push %ebp; mov %esp,%ebp ... */
	.global fm_nop
	.type fm_nop, @function
fm_nop:
	nop
	pushl	%ebp
	movl	%esp, %ebp
	movl	8(%ebp), %eax
	incl	%eax
	popl	%ebp
	ret
	.size fm_nop, . - fm_nop

	/* unsigned __stdcall fm_stdcall(unsigned a, unsigned b): frameless, ret $8 */
	.global fm_stdcall
	.type fm_stdcall, @function
fm_stdcall:
	movl	4(%esp), %eax
	addl	8(%esp), %eax
	ret	$8
	.size fm_stdcall, . - fm_stdcall

	/* unsigned fm_leaf(unsigned a): frameless, plain ret */
	.global fm_leaf
	.type fm_leaf, @function
fm_leaf:
	movl	4(%esp), %eax
	shll	$1, %eax
	ret
	.size fm_leaf, . - fm_leaf
