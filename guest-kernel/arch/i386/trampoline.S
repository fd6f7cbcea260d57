/*
 * trampoline.S — where a secondary CPU starts. The boot CPU copies this
 * code to TRAMPOLINE_BASE (below 1 MiB) and fills its data words; the SIPI
 * starts the CPU in real mode at CS = TRAMPOLINE_BASE >> 4, IP = 0.
 *
 * Real mode: load the kernel's own GDT (32-bit base, hence lgdtl), set PE,
 * far-jump into 32-bit code through the kernel code selector. Protected
 * mode: flat segments, the kernel's page directory, paging and WP on, the
 * stack the boot CPU allocated, then call the C entry. The code is copied,
 * so every address is formed as TRAMPOLINE_BASE + (label - start).
 */
#include "vectors.h"

#define ABS(label) (TRAMPOLINE_BASE + (label - trampoline_start))

	.section .rodata
	.global trampoline_start, trampoline_end
	.global tramp_gdtr, tramp_cr3, tramp_stack, tramp_entry
	.code16
trampoline_start:
	cli
	cld
	movw	%cs, %ax
	movw	%ax, %ds
	lgdtl	(tramp_gdtr - trampoline_start)
	movl	%cr0, %eax
	orl	$1, %eax
	movl	%eax, %cr0
	ljmpl	$SEL_KERNEL_CS, $ABS(protected)

	.code32
protected:
	movl	$SEL_KERNEL_DS, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	movl	ABS(tramp_cr3), %eax
	movl	%eax, %cr3
	movl	%cr0, %eax
	orl	$0x80010000, %eax         /* PG | WP */
	movl	%eax, %cr0
	movl	ABS(tramp_stack), %esp
	xorl	%ebp, %ebp
	call	*ABS(tramp_entry)
1:	cli
	hlt
	jmp	1b

	.align 8
tramp_gdtr:
	.word	0
	.long	0
tramp_cr3:
	.long	0
tramp_stack:
	.long	0
tramp_entry:
	.long	0
trampoline_end:
