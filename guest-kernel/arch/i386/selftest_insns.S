/*
 * selftest_insns.S — instructions the i386 self-tests trap on, each at a
 * global label so a test can check the exact EIP the CPU reported. They sit
 * in .text, so they are read-only like all code; st_patch_target is the
 * code the alias test rewrites and then runs.
 */
	.text
	.global st_divide, st_divide_insn
st_divide:
	xorl	%ecx, %ecx
	movl	$1, %eax
	xorl	%edx, %edx
st_divide_insn:
	divl	%ecx
	ret

	.global st_invalid_opcode
st_invalid_opcode:
	ud2
	ret

	.global st_breakpoint, st_breakpoint_next
st_breakpoint:
	int3
st_breakpoint_next:
	ret

	.global st_bad_selector, st_bad_selector_insn
st_bad_selector:
	movl	$0x100, %eax       /* index 32: past the 27-entry GDT */
st_bad_selector_insn:
	movl	%eax, %ds
	ret

	.global st_patch_target
	.align 16
st_patch_target:
	movl	$1, %eax           /* the imm32 at st_patch_target+1 gets patched */
	ret
