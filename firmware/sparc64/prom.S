/*
 * prom.S — our own sun4u PROM: what runs before the kernel on sparc64.
 *
 * QEMU (-bios prom.bin, no OpenBIOS) maps the raw image at physical
 * 0x1fff0000000 and starts the CPU at +0x20, the power-on-reset vector, in
 * RED state: PSTATE = RED|PEF|PRIV|AG, TL = MAXTL, MMU off (addresses are
 * physical), caches off. We leave RED state, drop TL to 0, describe an
 * empty register-window file (CWP 0, every window but two free, all of
 * them clean so that no clean_window trap comes before the kernel has a
 * trap table), switch the tick-compare interrupt off, copy the kernel
 * image that follows us in the PROM to its link address in RAM, clear its
 * BSS and call kernel_main on the boot stack. The RAM size QEMU leaves in
 * %g2 of the reset globals goes to prom_ram_bytes, so that the kernel
 * maps no memory that is not there. The kernel is linked
 * identity-mapped (VA == PA), so it keeps running when it turns the MMU
 * on. Both the PROM and the kernel are one link (kernel.ld), which is how
 * this code knows where the image is and how long.
 *
 * The other RED-state vectors (watchdog, externally and software
 * initiated reset, RED-state trap) mean the kernel lost control; they stop
 * QEMU with the double-fault status through COM2's testdev (exit.c).
 */
#include "arch/sparc64.h"

#define EXIT_DOUBLE_FAULT_CHAR '4'      /* exit.h EXIT_DOUBLE_FAULT */

	.register %g2, #scratch
	.register %g3, #scratch
	.register %g7, #scratch

	.section .prom, "ax"
	.global	prom_base
prom_base:
	.org	prom_base + 0x20
por_vector:				/* power-on reset */
	ba,a,pt	%xcc, prom_start
	.org	prom_base + 0x40
	ba,a,pt	%xcc, prom_fatal	/* watchdog reset */
	.org	prom_base + 0x60
	ba,a,pt	%xcc, prom_fatal	/* externally initiated reset */
	.org	prom_base + 0x80
	ba,a,pt	%xcc, prom_fatal	/* software initiated reset */
	.org	prom_base + 0xa0
	ba,a,pt	%xcc, prom_fatal	/* trap in RED state */

	.org	prom_base + 0x100
FUNC(prom_start)
	wrpr	%g0, 0, %cwp
	mov	%g2, %l0			/* QEMU's reset puts the RAM size in %g2 */
	wrpr	%g0, PSTATE_PRIV, %pstate	/* leave RED state; normal globals */
	wrpr	%g0, 0, %tl
	wrpr	%g0, 0, %pil
	wr	%g0, 0, %fprs
	rdpr	%ver, %g1
	and	%g1, 0x1f, %g1			/* VER.MAXWIN = NWINDOWS - 1 */
	sub	%g1, 1, %g2
	wrpr	%g2, 0, %cansave		/* NWINDOWS - 2 */
	wrpr	%g0, 0, %canrestore
	wrpr	%g0, 0, %otherwin
	wrpr	%g1, 0, %cleanwin
	wrpr	%g0, 0, %wstate
	sethi	%hi(0x80000000), %g1		/* TICK_CMPR.INT_DIS */
	sllx	%g1, 32, %g1
	wr	%g1, 0, %asr23
	mov	-1, %g1
	wr	%g1, 0, %asr21			/* clear every SOFTINT bit */

	/* Copy [__text_start, __data_end) from the PROM image to RAM. The
	 * I-cache is off until the kernel turns it on, so nothing stale can
	 * be fetched from the copied range. */
	setx	__kernel_lma, %g7, %g1
	setx	__text_start, %g7, %g2
	setx	__data_end, %g7, %g3
1:	ldxa	[%g1] ASI_PHYS_USE_EC, %g4
	stxa	%g4, [%g2] ASI_PHYS_USE_EC
	add	%g1, 8, %g1
	add	%g2, 8, %g2
	cmp	%g2, %g3
	blu,pt	%xcc, 1b
	 nop

	setx	__bss_start, %g7, %g2
	setx	__bss_end, %g7, %g3
	ba,pt	%xcc, 3f
	 nop
2:	stxa	%g0, [%g2] ASI_PHYS_USE_EC
	add	%g2, 8, %g2
3:	cmp	%g2, %g3
	blu,pt	%xcc, 2b
	 nop

	/* The first window needs a frame too: when it is spilled, its 16
	 * registers go to [%sp + BIAS], which must be stack, not whatever
	 * BSS follows the stack. */
	setx	prom_ram_bytes, %g7, %g1
	stx	%l0, [%g1]

	setx	boot_stack_top - STACK_FRAME - STACK_BIAS, %g7, %sp
	clr	%fp				/* ends frame-pointer walks */
	setx	kernel_main, %g7, %g1
	jmpl	%g1, %o7			/* a call cannot reach 2 TiB down */
	 nop
	ba,a,pt	%xcc, prom_fatal
	END(prom_start)

/* Stop QEMU: "4q" to the testdev behind COM2 exits with (4 << 1) | 1. */
FUNC(prom_fatal)
	wrpr	%g0, PSTATE_PRIV, %pstate
	setx	SUN4U_COM2, %g7, %g1
	mov	EXIT_DOUBLE_FAULT_CHAR, %g2
	stba	%g2, [%g1] ASI_PHYS_BYPASS_EC_E
	mov	'q', %g2
	stba	%g2, [%g1] ASI_PHYS_BYPASS_EC_E
4:	ba,a,pt	%xcc, 4b
	END(prom_fatal)

	.section .bss
	.balign	8
	.global	prom_ram_bytes
prom_ram_bytes:
	.skip	8

/* The boot stack, with an 8 KiB guard page below it that mmu.c leaves
 * unmapped: running off the stack faults instead of overwriting BSS. */
	.section .bss.stack, "aw", @nobits
	.balign	8192
	.global	boot_stack_guard, boot_stack, boot_stack_top
boot_stack_guard:
	.skip	8192
boot_stack:
	.skip	256 * 1024
boot_stack_top:
