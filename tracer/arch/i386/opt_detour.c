/*
 * opt_detour.c — writing an opt probe's detour slot: the code a site's
 * jmp goes to, in one of opt_detour.S's two layouts, for the slot's probe
 * and the bytes its jmp displaces (planned by opt.c; the slot is written
 * by opt_stage.c while no thread can be inside it).
 *
 * The detour (opt_detour.S) builds a struct trapframe of a trap at the
 * site, records with interrupts masked through the fire path's own
 * record (record.h, from i386_opt_fire), restores every register and
 * EFLAGS, runs the copy of the displaced instructions and jumps back to
 * site + len. A plain slot of an entry whose return rides on it also
 * holds a copy of opt_ride_template at OPT_RIDE_OFFSET, with the entry's
 * and its return probe's addresses and its jumps patched in (write_ride),
 * where a null firing trampolines the call without going to C.
 *
 * Check mode picks the detour when the slot is written: with `probe check
 * on`, a slot gets check mode's variant (opt_detour.S: a second call after
 * the copies, opt_check.c), and a slot written in the other mode is
 * rewritten at its next arming from the site's own bytes, through the same
 * stages and scan as a slot given to another probe (a re-arm that finds
 * the jmp or its rel32 still there keeps the detour it has). With check
 * mode off the detour and the site's cost are those of a build without
 * check mode.
 */
#include "cpu.h"
#include "console.h"
#include "opt.h"
#include "opt_fast.h"
#include "opt_slots.h"
#include "stamp.h"
#include "tracer.h"

_Static_assert(offsetof(struct probe, id) == OPT_PROBE_ID &&
	       offsetof(struct probe, action) == OPT_PROBE_ACTION &&
	       offsetof(struct probe, gated) == OPT_PROBE_GATED &&
	       sizeof ((struct probe *)0)->id == 4 &&
	       TRACER_ACTION_NULL == OPT_ACTION_NULL &&
	       sizeof tracer_hits[0] == OPT_HITS_ROW &&
	       sizeof tracer_hits[0][0] == 4 &&
	       sizeof(struct tracer_fired) == 1u << OPT_FIRED_SHIFT &&
	       offsetof(struct cpu, self) == 0 &&
	       offsetof(struct cpu, id) == OPT_CPU_ID,
	       "opt.h: the counting path's offsets are the C structures'");

_Static_assert(OPT_COPY_OFFSET_CHECKED + OPT_MAX_COPY + OPT_AFTER_BYTES + 5 <= OPT_DETOUR_BYTES,
	       "opt.h: check mode's detour (head, copy, second call, jmp) fits a slot");
_Static_assert(OPT_COPY_OFFSET + OPT_MAX_COPY + 5 <= OPT_SLOW_OFFSET &&
	       OPT_SLOW_OFFSET + OPT_FAST_STUB_BYTES == OPT_C_OFFSET &&
	       OPT_C_OFFSET + 37 <= OPT_RIDE_OFFSET,
	       "opt.h: a plain detour (counting path, copy, jmp, way into C) fits a slot");

/* Bytes at d, in order; the number written. */
static unsigned put(uintptr_t d, const uint8_t *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		store(d + i, b[i]);
	return n;
}

/* opcode [modrm] disp32 [imm8]: an instruction with an absolute or
 * base-plus-disp32 operand; the number of bytes written. */
static unsigned put_disp(uintptr_t d, const uint8_t *op, unsigned n, uint32_t disp,
			 int imm8)
{
	unsigned k = put(d, op, n);
	store32(d + k, disp);
	k += 4;
	if (imm8 >= 0)
		store(d + k++, (uint8_t)imm8);
	return k;
}

/* A template's rel32 or imm32 ending at label `end`, in the copy at d. */
static void patch32(uintptr_t d, const char *end, uint32_t v)
{
	store32(d + (uintptr_t)(end - opt_ride_template) - 4, v);
}

/* A riding entry's counting path (opt_detour.S's opt_ride_template) at
 * OPT_RIDE_OFFSET: e and its return probe patched in, its jumps to the
 * slot's copy and way into C. */
static void write_ride(uintptr_t d, const struct probe *e)
{
	size_t n = (size_t)(opt_ride_template_end - opt_ride_template);
	uintptr_t t = d + OPT_RIDE_OFFSET;
	if (n > OPT_DETOUR_BYTES - OPT_RIDE_OFFSET)
		panic("opt: the riding entry's counting path is %u bytes, a slot "
		      "has room for %u (opt.h)", (unsigned)n,
		      OPT_DETOUR_BYTES - OPT_RIDE_OFFSET);
	put(t, (const uint8_t *)opt_ride_template, (unsigned)n);
	patch32(t, opt_ride_entry, (uint32_t)(uintptr_t)e);
	patch32(t, opt_ride_return,
		(uint32_t)(uintptr_t)&tracer_probes[e->site.ride - 1]);
	uintptr_t copy_end = t + (uintptr_t)(opt_ride_to_copy - opt_ride_template);
	patch32(t, opt_ride_to_copy, (uint32_t)(d + OPT_COPY_OFFSET - copy_end));
	uintptr_t slow_end = t + (uintptr_t)(opt_ride_to_slow - opt_ride_template);
	patch32(t, opt_ride_to_slow, (uint32_t)(d + OPT_C_OFFSET - slow_end));
}

/* The plain detour (opt_detour.S): the counting path, the copy, the jmp
 * back, the stub into the recording path if fast (opt_fast.S), and the
 * way into C. */
static void write_plain(uintptr_t d, const struct opt_slot *s, const struct probe *p,
			uint8_t fast)
{
	static const uint8_t cmpb[] = { 0x80, 0x3d }, cmpl[] = { 0x83, 0x3d };
	static const uint8_t cpu_id[] = { 0x64, 0xa1, OPT_CPU_ID, 0, 0, 0 };  /* movl %fs:id,%eax */
	static const uint8_t imul[] = { 0x69, 0xc0 }, incl[] = { 0xff, 0x80 };
	static const uint8_t shl[] = { 0xc1, 0xe0, OPT_FIRED_SHIFT };
	static const uint8_t add[] = { 0x83, 0x80 }, adc[] = { 0x83, 0x90 };
	uintptr_t c = d, probe = (uintptr_t)p;
	uintptr_t hits = (uintptr_t)&tracer_hits[0][p->id];
	uintptr_t fired = (uintptr_t)&tracer_fired[0].n;
	/* Where the counting path's tests go: stamps asked and a gate (a
	 * program, a pass, a maximum) straight into C, which the recording
	 * path would send them to; a record to its stub, if it has one. */
	uintptr_t to_c = d + OPT_C_OFFSET;
	uintptr_t slow = fast ? d + OPT_SLOW_OFFSET : to_c;

	c += put(c, (const uint8_t[]){ 0x9c, 0xfa }, 2);              /* pushfl; cli */
	c += put_disp(c, cmpl, 2, (uint32_t)(uintptr_t)&tracer_stamp_cpu, 0);
	c += put(c, (const uint8_t[]){ 0x75, (uint8_t)(to_c - (c + 2)) }, 2);
	c += put_disp(c, cmpb, 2, probe + OPT_PROBE_GATED, 0);          /* cmpb $0,gated */
	c += put(c, (const uint8_t[]){ 0x75, (uint8_t)(to_c - (c + 2)) }, 2);
	c += put_disp(c, cmpb, 2, probe + OPT_PROBE_ACTION, OPT_ACTION_NULL);
	c += put(c, (const uint8_t[]){ 0x75, (uint8_t)(slow - (c + 2)) }, 2);
	/* A probe whose return rides on it counts in its own counting path,
	 * which trampolines the call (jmp ride, over this one's first two
	 * bytes, below); a record goes to slow, as any. */
	uintptr_t count = c;
	c += put(c, (const uint8_t[]){ 0x50 }, 1);                   /* pushl %eax */
	c += put(c, cpu_id, sizeof cpu_id);
	c += put_disp(c, imul, 2, OPT_HITS_ROW, -1);                  /* imull $row,%eax,%eax */
	c += put_disp(c, incl, 2, (uint32_t)hits, -1);                /* incl hits(%eax) */
	c += put(c, cpu_id, sizeof cpu_id);
	c += put(c, shl, sizeof shl);                                 /* shll $6,%eax */
	c += put_disp(c, add, 2, (uint32_t)fired, 1);                 /* addl $1,fired(%eax) */
	c += put_disp(c, adc, 2, (uint32_t)fired + 4, 0);             /* adcl $0,fired+4(%eax) */
	c += put(c, (const uint8_t[]){ 0x58, 0x9d }, 2);              /* popl %eax; popfl */
	if (c != d + OPT_COPY_OFFSET)
		panic("opt: the counting path is %u bytes, opt.h says %u",
		      (unsigned)(c - d), OPT_COPY_OFFSET);
	if (p->site.ride)
		put(count, (const uint8_t[]){ 0xeb,
			    (uint8_t)(d + OPT_RIDE_OFFSET - (count + 2)) }, 2);
	c += put(c, s->bytes, s->len);                                /* the copy */
	store(c, 0xe9);                                               /* jmp site + len */
	store32(c + 1, (uint32_t)(p->addr + s->len - (c + 5)));

	/* The way into C, the frame built here rather than in a shared
	 * routine: under TCG a call's return is a block lookup, and a firing
	 * that goes to C (a record, a riding return) pays one return less. */
	static const uint8_t frame[] = {
		0x6a, 0x00,                                   /* pushl $0: vector */
		0x60, 0x1e, 0x06, 0x0f, 0xa0, 0x0f, 0xa8,     /* pushal; ds es fs gs */
		0x54,                                         /* pushl %esp */
	};
	static const uint8_t unframe[] = {
		0x83, 0xc4, 0x14, 0x61,                       /* addl $20,%esp; popal */
		0x8d, 0x64, 0x24, 0x10, 0x9d,                 /* leal 16(%esp),%esp; popfl */
	};
	if (fast) {
		/* pushl $probe; call opt_fast_entry; leal 4(%esp),%esp;
		 * jne C (ZF clear: not recorded); popfl; jmp copy */
		c = d + OPT_SLOW_OFFSET;
		store(c, 0x68);
		store32(c + 1, (uint32_t)probe);
		store(c + 5, 0xe8);
		store32(c + 6, (uint32_t)((uintptr_t)opt_fast_entry - (c + 10)));
		c += 10;
		c += put(c, (const uint8_t[]){ 0x8d, 0x64, 0x24, 0x04, 0x75, 0x03, 0x9d,
					       0xeb }, 8);
		store(c, (uint8_t)(d + OPT_COPY_OFFSET - (c + 1)));
		if (c + 1 != d + OPT_C_OFFSET)
			panic("opt: the recording path's stub is %u bytes, opt.h says %u",
			      (unsigned)(c + 1 - d - OPT_SLOW_OFFSET), OPT_FAST_STUB_BYTES);
	}
	c = d + OPT_C_OFFSET;
	store(c, 0x0e);                                               /* pushl %cs */
	store(c + 1, 0x68);                                           /* pushl $site */
	store32(c + 2, (uint32_t)p->addr);
	store(c + 6, 0x68);                                           /* pushl $probe */
	store32(c + 7, (uint32_t)probe);
	c += 11;
	c += put(c, frame, sizeof frame);
	store(c, 0xe8);                                               /* call i386_opt_fire */
	store32(c + 1, (uint32_t)((uintptr_t)i386_opt_fire - (c + 5)));
	c += 5;
	c += put(c, unframe, sizeof unframe);
	store(c, 0xeb);                                               /* jmp copy */
	store(c + 1, (uint8_t)(d + OPT_COPY_OFFSET - (c + 2)));
	if (c + 2 > d + OPT_RIDE_OFFSET)
		panic("opt: a plain detour's way into C overruns its slot");
	if (p->site.ride)
		write_ride(d, p);
}

/* Check mode's detour (opt_detour.S): no counting path; a second call
 * after the copy. */
static void write_checked(uintptr_t d, const struct opt_slot *s, const struct probe *p)
{
	static const uint8_t head[] = { 0x9c, 0xfa, 0x0e };    /* pushfl; cli; push %cs */
	static const uint8_t tail[] = { 0x8d, 0x64, 0x24, 0x0c, 0x9d };  /* leal 12(%esp),%esp; popfl */
	put(d, head, sizeof head);
	store(d + 3, 0x68);                                    /* push $site */
	store32(d + 4, (uint32_t)p->addr);
	store(d + 8, 0x68);                                    /* push $probe */
	store32(d + 9, (uint32_t)(uintptr_t)p);
	store(d + 13, 0xe8);                                   /* call opt_common_checked */
	store32(d + 14, (uint32_t)((uintptr_t)opt_common_checked - (d + 18)));
	put(d + 18, tail, sizeof tail);
	uintptr_t c = d + OPT_COPY_OFFSET_CHECKED;
	c += put(c, s->bytes, s->len);
	store(c, 0x9c);                                        /* pushfl */
	store(c + 1, 0x0e);                                    /* push %cs */
	store(c + 2, 0x68);                                    /* push $site + len */
	store32(c + 3, (uint32_t)(p->addr + s->len));
	store(c + 7, 0x68);                                    /* push $probe */
	store32(c + 8, (uint32_t)(uintptr_t)p);
	store(c + 12, 0xe8);                                   /* call opt_common_after */
	store32(c + 13, (uint32_t)((uintptr_t)opt_common_after - (c + 17)));
	put(c + 17, tail, sizeof tail);                        /* leal; popfl */
	c += OPT_AFTER_BYTES;
	store(c, 0xe9);                                        /* jmp site + len */
	store32(c + 1, (uint32_t)(p->addr + s->len - (c + 5)));
}

void opt_write_slot(unsigned i, const struct probe *p)
{
	struct opt_slot *s = &opt_slots[i];
	bool checked = tracer_check_mode;
	uintptr_t d = (uintptr_t)slot_code_at(i);
	uint8_t fast = opt_fast_kind(p, checked);
	if (checked)
		write_checked(d, s, p);
	else
		write_plain(d, s, p, fast);
	s->checked = checked;
	s->fast = fast;
	s->ride = p->site.ride;
}
