/*
 * selftest_probes.S — code for the differential self-test of the probe
 * emulator (selftest_probes.c).
 *
 * dt_call(in, entry) saves the C caller's callee-saved registers and ESP,
 * loads EFLAGS and all eight GPRs (ESP too: it points into the test's
 * scratch stack) from *in and jumps to entry, where one of the dt_* snippets
 * below runs the instruction under test at its exported dt_site_* label and
 * then reaches dt_capture (by jmp, or as the return address a ret pops).
 * dt_capture stores every GPR and EFLAGS into dt_out exactly as the
 * instruction left them, then restores the C state and returns.
 *
 * The register loads are movs and the jump is memory-indirect, so nothing
 * between popfl and the site changes a flag. The one pushfl in dt_capture
 * writes the word just below the final ESP, which the test does not
 * compare. Each site starts on a 16-byte boundary, so a ud2 never straddles
 * a page; a ret site is followed by a nop that ud2 may cover.
 *
 * Struct layout (struct dt_regs): eax ecx edx ebx esp ebp esi edi eflags.
 */
	.text

	.global dt_call
dt_call:
	pushl	%ebp
	movl	%esp, %ebp
	pushl	%ebx
	pushl	%esi
	pushl	%edi
	movl	%esp, dt_saved_esp
	movl	12(%ebp), %eax
	movl	%eax, dt_entry
	movl	8(%ebp), %eax           /* in */
	pushl	32(%eax)
	popfl
	movl	4(%eax), %ecx
	movl	8(%eax), %edx
	movl	12(%eax), %ebx
	movl	16(%eax), %esp
	movl	20(%eax), %ebp
	movl	24(%eax), %esi
	movl	28(%eax), %edi
	movl	0(%eax), %eax
	jmp	*dt_entry

	.global dt_capture
	.align 16
dt_capture:
	movl	%eax, dt_out + 0
	movl	%ecx, dt_out + 4
	movl	%edx, dt_out + 8
	movl	%ebx, dt_out + 12
	movl	%esp, dt_out + 16
	movl	%ebp, dt_out + 20
	movl	%esi, dt_out + 24
	movl	%edi, dt_out + 28
	pushfl
	popl	dt_out + 32
	cld
	movl	dt_saved_esp, %esp
	popl	%edi
	popl	%esi
	popl	%ebx
	popl	%ebp
	ret

/* The snippets: each site at an exported label, 16-byte aligned. */
	.macro SITE name
	.global dt_site_\name
	.align 16
dt_site_\name:
	.endm

	SITE push_ebp
	pushl	%ebp                    /* 55, not followed by a mov */
	jmp	dt_capture

	SITE push_ebp_mov
	pushl	%ebp                    /* 55 89 e5 */
	.byte	0x89, 0xe5
	jmp	dt_capture

	SITE push_ebp_mov_8b
	.byte	0x55, 0x8b, 0xec        /* push %ebp; mov %esp,%ebp (8b ec) */
	jmp	dt_capture

	SITE pop_ebp
	popl	%ebp                    /* 5d */
	jmp	dt_capture

	SITE leave
	leave                           /* c9 */
	jmp	dt_capture

	SITE ret
	ret                             /* c3, [esp] = dt_capture */
	nop                             /* padding that ud2 may cover */

	SITE ret_imm
	ret	$0x10                   /* c2 10 00 */
	nop

	SITE ret_imm_big
	ret	$0x1f4                  /* c2 f4 01: the high byte too */
	nop

	SITE enter
	enter	$0x1c, $0               /* c8 1c 00 00 */
	jmp	dt_capture

	SITE enter_0
	enter	$0, $0                  /* c8 00 00 00 */
	jmp	dt_capture

	SITE nop
	nop                             /* 90 */
	jmp	dt_capture

/* Instructions run out of line (ool.c: a copy and a jmp back in the
 * probe's slot), and the EIP-relative ones emulated instead. */
	SITE ool_add
	.byte	0x01, 0xc8              /* add %ecx,%eax: flags from the copy */
	jmp	dt_capture

	SITE ool_push
	pushl	%ebx                    /* 53: ESP moves, natively */
	jmp	dt_capture

	SITE ool_load
	.byte	0x8b, 0x44, 0x24, 0x08  /* mov 0x8(%esp),%eax (SIB) */
	jmp	dt_capture

	SITE ool_imul
	.byte	0x69, 0xd1              /* imul $0x1234567,%ecx,%edx */
	.long	0x01234567
	jmp	dt_capture

	SITE jcc
	.byte	0x75, 0x05              /* jne +5: taken as ZF says */
	movl	$0x1234, %eax           /* b8 imm32: five bytes, skipped if taken */
	jmp	dt_capture

	SITE jmp32
	.byte	0xe9                    /* jmp rel32 over the mov */
	.long	5
	movl	$0x1234, %eax
	jmp	dt_capture

	SITE call32
	call	1f                      /* e8: pushes site + 5 */
1:	jmp	dt_capture

/* Prologues of five bytes or more that `opt` displaces with its jmp
 * (opt.c); int3 and ud emulate their first instruction(s). */
	SITE opt_sub
	.byte	0x55, 0x89, 0xe5        /* push %ebp; mov %esp,%ebp */
	.byte	0x83, 0xec, 0x18        /* sub $0x18,%esp */
	jmp	dt_capture

	SITE opt_pushes
	.byte	0x55, 0x89, 0xe5        /* push %ebp; mov %esp,%ebp */
	.byte	0x57, 0x56, 0x53        /* push %edi; push %esi; push %ebx */
	jmp	dt_capture

	SITE opt_load
	.byte	0x55, 0x89, 0xe5        /* push %ebp; mov %esp,%ebp */
	.byte	0x8b, 0x45, 0x08        /* mov 0x8(%ebp),%eax */
	.byte	0x8b, 0x4c, 0x24, 0x10  /* mov 0x10(%esp),%ecx (SIB) */
	jmp	dt_capture

	SITE opt_flags
	.byte	0x55                    /* push %ebp */
	.byte	0x31, 0xd2              /* xor %edx,%edx */
	.byte	0x01, 0xc8              /* add %ecx,%eax: the flags the copy sets */
	.byte	0x83, 0xe9, 0x07        /* sub $7,%ecx: after the displaced five */
	jmp	dt_capture

	.bss
	.align 4
	.global dt_out
dt_out:
	.space	36
dt_saved_esp:
	.space	4
dt_entry:
	.space	4
