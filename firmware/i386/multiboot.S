/*
 * multiboot.S — what runs before the kernel on i386.
 *
 * QEMU's -kernel loader finds the multiboot v1 header in the first 8 KiB of
 * the ELF, loads the segments at their physical addresses (we link at
 * 1 MiB) and jumps to _start in 32-bit protected mode with paging off, a
 * GDT of its own and no stack. We take a stack, clear BSS (the stack lives
 * there but holds nothing yet), and call kernel_main, which installs our
 * own GDT before anything can trap. The multiboot information pointer (EBX)
 * is kept in multiboot_info for the memory map.
 */
#define MB_MAGIC 0x1badb002
#define MB_FLAGS 0x00000003   /* page-align modules, provide memory info */

	.section .multiboot, "a"
	.align 4
	.long MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS)

	.section .text.entry, "ax"
	.global _start
_start:
	cli
	cld
	movl	%ebx, %esi          /* the multiboot information, past BSS clearing */
	movl	$__bss_start, %edi
	movl	$__bss_end, %ecx
	subl	%edi, %ecx
	xorl	%eax, %eax
	rep stosb
	movl	%esi, multiboot_info
	movl	$boot_stack_top, %esp
	xorl	%ebp, %ebp          /* terminates frame-pointer walks */
	call	kernel_main
1:	cli
	hlt
	jmp	1b

	.section .bss
	.align 4
	.global multiboot_info
multiboot_info:
	.space 4
	.align 16
	.global boot_stack, boot_stack_top
boot_stack:
	.space 16384
boot_stack_top:
