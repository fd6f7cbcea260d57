/*
 * opt_fast.h — opt's recording path (i386): a plain probe's ENTRY (the
 * detour, opt_fast.S) or riding RETURN (the trampoline, opt_return.S)
 * written into this CPU's ring in assembly, as put() (buffer.c) and
 * subbuf_put() (ring.h) write it, with no trap frame and no call into C.
 * What never changes while the probe is armed is decided at arming
 * (opt_fast.c: site.fast, the slot's stub); the rest is tested at each
 * firing, and a test that fails sends the firing into C before anything
 * is stored. The numbers below are the C structures' (asserted in
 * opt_fast.c); the macros are the reservation and the commit both paths
 * share.
 */
#ifndef I386_OPT_FAST_H
#define I386_OPT_FAST_H

#include "opt.h"

/* site.fast: what the recording path does for the probe (0: nothing,
 * every record into C). */
#define OPT_FAST_ENTRY     1
#define OPT_FAST_RETURN    2
#define OPT_FAST_RETURN_BROKEN 3   /* tests: the value word from edx */

/* A plain slot's stub into opt_fast_entry, at OPT_SLOW_OFFSET before the
 * way into C (opt_detour.c). */
#define OPT_FAST_STUB_BYTES 19

#define OPT_PROBE_NARGS    9       /* offsetof(struct probe, nargs) */
#define OPT_PROBE_NARGMAP  74      /* offsetof(struct probe, nargmap) */
#define OPT_PROBE_FAST     0x43    /* offsetof(struct probe, site.fast) */
#define OPT_PROBE_BYTES    76      /* sizeof(struct probe) */
#define OPT_THREAD_ID      4       /* offsetof(struct thread, id) */
#define OPT_FIRED_IN_FIRE  24      /* offsetof(struct tracer_fired, in_fire) */
#define OPT_EVENT_ENTRY    1       /* WIRE_EVENT_ENTRY */

/* One CPU's buffer (core/buffer_cpu.h), as the recording path reads it. */
#define OPT_T_BYTES        192     /* sizeof(struct tracer_cpu) */
#define OPT_T_DATA         0
#define OPT_T_PHYS         4
#define OPT_T_SIZE         8
#define OPT_T_HEAD         12
#define OPT_T_TAIL         16
#define OPT_T_RECORDED     20
#define OPT_T_KICKED       76
#define OPT_T_LOST         80
#define OPT_T_SB_ON        96
#define OPT_T_SB_OPEN      97
#define OPT_T_SB_SUBBUF    100
#define OPT_T_SB_OFF       108
#define OPT_T_SB_COUNT     112
#define OPT_T_SB_LAST_OFF  116
#define OPT_T_SB_FIRST     124
#define OPT_T_SB_LAST      140
#define OPT_T_SB_CUR       156

#ifdef __ASSEMBLY__
/* Where a record of \nwords words (a register, spent) goes in this CPU's
 * ring, into %edi, and this CPU's struct tracer_cpu into %ebx, both for
 * the commit; %eax, %ecx, %edx are spent. It fails to
 * \fail with nothing stored unless the C writer would do no more than
 * write it there: no stage stamps, not inside a firing (in_fire), no
 * reentry test, the ring written by virtual address, no DROPS record
 * owed; a byte ring with data, the record before its end (else C pads),
 * room for it, and no kick of the drain owed after it (put()); or the
 * open sub-buffer with room (else C commits it and opens the next). */
.macro OPT_FAST_RESERVE nwords, fail
	leal	16(,\nwords,4), %edx        /* len: the header's 16 bytes on */
	movl	%fs:OPT_CPU_ID, %eax
	movl	%eax, %ecx
	shll	$OPT_FIRED_SHIFT, %ecx
	movzbl	tracer_fired+OPT_FIRED_IN_FIRE(%ecx), %ecx
	orl	tracer_stamp_cpu, %ecx
	orl	reentry_test, %ecx
	imull	$OPT_T_BYTES, %eax, %ebx
	addl	$tcpu, %ebx                 /* t: tcpu[cpu] */
	orl	OPT_T_PHYS(%ebx), %ecx
	orl	OPT_T_LOST(%ebx), %ecx
	jnz	\fail
	cmpb	$0, OPT_T_SB_ON(%ebx)
	jne	.Lsb\@
	movl	OPT_T_DATA(%ebx), %edi      /* a byte ring */
	testl	%edi, %edi
	jz	\fail
	movl	OPT_T_SIZE(%ebx), %ecx
	decl	%ecx
	andl	OPT_T_HEAD(%ebx), %ecx      /* off */
	addl	%ecx, %edi                  /* the record's address */
	addl	%edx, %ecx
	cmpl	OPT_T_SIZE(%ebx), %ecx
	ja	\fail                       /* past the end: C pads */
	movl	OPT_T_HEAD(%ebx), %eax
	subl	OPT_T_TAIL(%ebx), %eax
	addl	%edx, %eax                  /* used, with the record */
	cmpl	OPT_T_SIZE(%ebx), %eax
	ja	\fail                       /* no room: C counts the loss */
	movl	OPT_T_SIZE(%ebx), %ecx
	shrl	$1, %ecx
	cmpl	%ecx, %eax
	jbe	.Lok\@                      /* at most half full */
	cmpb	$0, OPT_T_KICKED(%ebx)
	je	\fail                       /* C kicks the drain */
	jmp	.Lok\@
.Lsb\@:	cmpb	$0, OPT_T_SB_OPEN(%ebx)    /* sub-buffers */
	je	\fail                       /* none open: C opens one */
	movl	OPT_T_SB_OFF(%ebx), %ecx
	addl	%edx, %ecx
	cmpl	OPT_T_SB_SUBBUF(%ebx), %ecx
	ja	\fail                       /* full: C commits it */
	movl	OPT_T_SB_CUR(%ebx), %edi
	addl	OPT_T_SB_OFF(%ebx), %edi    /* the record's address */
.Lok\@:
.endm

/* The header of a \kind record of %ecx words (spent) for
 * the probe at %esi, at %edi (its words written already) in the ring of
 * the tracer_cpu at %ebx (both as the reservation left them), and its
 * publication as put() or subbuf_put() publishes it: a byte ring's head
 * after the record (x86 keeps stores in order, as the C's compiler
 * barrier does); a sub-buffer's count, first, last, last_off and off,
 * which its commit (C, with the release store) hands over whole. Then
 * the firing counted as tracer_fire counts it (recorded, fired, hits),
 * and in opt_fast_recorded.
 * %eax, %ebx, %ecx, %edx are spent. */
.macro OPT_FAST_COMMIT kind
	movb	$\kind, (%edi)
	movb	%cl, 1(%edi)                /* nwords */
	leal	16(,%ecx,4), %ecx          /* len */
	movl	%fs:OPT_CPU_CURRENT, %eax
	movl	OPT_THREAD_ID(%eax), %eax
	movw	%ax, 2(%edi)                /* thread */
	movl	OPT_PROBE_ID(%esi), %eax
	movl	%eax, 4(%edi)               /* probe */
	rdtsc                               /* cycles: arch_cycles */
	movl	%eax, 8(%edi)
	movl	%edx, 12(%edi)
	cmpb	$0, OPT_T_SB_ON(%ebx)
	jne	.Lsb\@
	addl	%ecx, OPT_T_HEAD(%ebx)      /* published */
	jmp	.Ldone\@
.Lsb\@:	cmpl	$0, OPT_T_SB_COUNT(%ebx)
	jne	.Lnext\@
	movl	%eax, OPT_T_SB_FIRST(%ebx)  /* its first record */
	movl	%edx, OPT_T_SB_FIRST+4(%ebx)
.Lnext\@:
	incl	OPT_T_SB_COUNT(%ebx)
	movl	%eax, OPT_T_SB_LAST(%ebx)
	movl	%edx, OPT_T_SB_LAST+4(%ebx)
	movl	OPT_T_SB_OFF(%ebx), %eax
	movl	%eax, OPT_T_SB_LAST_OFF(%ebx)
	addl	%ecx, OPT_T_SB_OFF(%ebx)
.Ldone\@:
	addl	$1, OPT_T_RECORDED(%ebx)
	adcl	$0, OPT_T_RECORDED+4(%ebx)
	movl	%fs:OPT_CPU_ID, %ecx
	incl	opt_fast_recorded(,%ecx,4)
	OPT_COUNT_FIRING %esi, %ecx, %eax
.endm
#endif

#ifndef __ASSEMBLY__
#include <stdbool.h>
#include <stdint.h>
struct probe;
/* What p's recording path does, armed now (OPT_FAST_*; 0: C); checked:
 * check mode's detour. Reads the switches below. */
uint8_t opt_fast_kind(const struct probe *p, bool checked);
/* Tests (through the GDB stub): every record into C, or a return's
 * recorded with a wrong value. Read at arming. */
extern volatile unsigned opt_fast_off, opt_fast_broken;
/* Records the recording paths wrote, per CPU (tests read them). */
extern unsigned long opt_fast_recorded[];
/* The detour's stub calls it (opt_fast.S): ZF set if it recorded. */
void opt_fast_entry(void);
#endif

#endif
