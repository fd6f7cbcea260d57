/*
 * stack.c — the i386 stack walk (stack.h's tarch_stack_walk): the saved
 * %ebp / return-address chain, as illumos' dtrace_getpcstack walks it.
 *
 * The kernel is built with frame pointers: past its prologue a function's
 * %ebp points at its caller's saved %ebp, with the return address above.
 * Where that frame does not exist yet — or no longer — the first return
 * address is found from the instruction about to run: at a function's
 * first instruction (an entry probe, whatever its mechanism: trap, opt
 * detour, out-of-line slot; a `push %ebp`, `enter`) it is [esp]; between
 * `push %ebp` and `mov %esp,%ebp` [esp+4]; at `pop %ebp` [esp+4], the
 * caller's %ebp at [esp]; at `ret` [esp]. Every frame pointer must lie in
 * the thread's stack, above the last: a chain that leaves it ends the
 * walk. A frame that returns into entry.S's trap path (trap_dispatch_
 * returned) holds the trap frame: the walk hops to the interrupted code,
 * its PC first, and goes on from its registers (interrupts run on the
 * thread's stack). Each return address goes through tracer_real_return,
 * which undoes a return trampoline. The walk starts from the trapped
 * state, so the tracer's own frames are never in it.
 */
#include "arch/trapframe.h"
#include "context.h"
#include "cpu.h"
#include "stack.h"
#include "stack_walk.h"
#include "thread.h"
#include "tracer.h"

extern const char trap_dispatch_returned[];

static bool add(struct stack_walk *w, uintptr_t pc)
{
	if (w->n >= w->max)
		return false;
	w->pcs[w->n++] = pc;
	return true;
}

/* Where the frame of the code about to run `code` stands: the offset from
 * esp of its return address, and whether its caller's %ebp is at [esp];
 * false if its frame is the %ebp chain's. */
static bool frameless(const uint8_t *code, unsigned *ret_at, bool *ebp_at_esp)
{
	*ebp_at_esp = false;
	if (code[0] == 0x55 || code[0] == 0xc8 || code[0] == 0xc3 || code[0] == 0xc2) {
		*ret_at = 0;                            /* push %ebp, enter, ret */
		return true;
	}
	if ((code[0] == 0x89 && code[1] == 0xe5) || (code[0] == 0x8b && code[1] == 0xec)) {
		*ret_at = 4;                            /* mov %esp,%ebp */
		return true;
	}
	if (code[0] == 0x5d) {                          /* pop %ebp */
		*ret_at = 4;
		*ebp_at_esp = true;
		return true;
	}
	return false;
}

/* The bytes p's site had before its trap went in, as frameless() reads. */
static void site_code(const struct probe *p, uint8_t code[2])
{
	const struct i386_site *s = &p->site.insn;
	if (s->kind == I386_OOL) {
		code[0] = p->site.copy[0];
		code[1] = p->site.copy[1];
		return;
	}
	code[0] = s->len ? s->orig[0] : 0;
	code[1] = s->len > 1 ? s->orig[1] : p->site.next;
	if (s->kind == I386_PUSH_EBP_MOV)
		code[0] = 0x55;
}

/* From the state (sp, ebp) about to run `code`: the return addresses. */
static void walk_from(struct stack_walk *w, const uint8_t code[2], uintptr_t sp,
		      uintptr_t ebp, bool at_entry)
{
	unsigned ret_at;
	bool ebp_at_esp;
	uintptr_t ret, fp = ebp, last = 0;

	if (at_entry || frameless(code, &ret_at, &ebp_at_esp)) {
		if (at_entry)
			ret_at = 0, ebp_at_esp = false;
		if (!stack_word(w, sp + ret_at, &ret))
			return;
		if (ebp_at_esp && !stack_word(w, sp, &fp))
			return;
		if (!add(w, tracer_real_return(w->thread, sp + ret_at - 4, ret)))
			return;
		last = sp;
	}
	uintptr_t next;
	while (fp > last && stack_word(w, fp, &next) && stack_word(w, fp + 4, &ret)) {
		ret = tracer_real_return(w->thread, fp, ret);
		if (ret == (uintptr_t)trap_dispatch_returned) {
			uintptr_t frame;
			if (!stack_word(w, fp + 8, &frame))
				return;
			const struct trapframe *tf = (const struct trapframe *)frame;
			if (frame < fp || (w->hi > w->lo && frame + sizeof *tf > w->hi) ||
			    !add(w, tf->eip))
				return;
			uint8_t c[2];
			unsigned long v;
			if (!tracer_read(tf->eip, 2, &v))
				return;
			c[0] = (uint8_t)v, c[1] = (uint8_t)(v >> 8);   /* little-endian */
			walk_from(w, c, trapframe_sp(tf), tf->ebp, false);
			return;
		}
		if (!ret || !add(w, ret))
			return;
		last = fp;
		fp = next;
	}
}

unsigned tarch_stack_walk(const struct tarch_context *ctx, const struct probe *p,
			  uintptr_t *pcs, unsigned max)
{
	const struct thread *t = thread_current();
	struct stack_walk w = { .thread = t, .pcs = pcs, .max = max };
	if (t && t->stack) {
		w.lo = (uintptr_t)t->stack;
		w.hi = w.lo + t->stack_size;
	} else {                                        /* a CPU's idle loop */
		w.lo = this_cpu()->boot_stack_lo;
		w.hi = this_cpu()->boot_stack_hi;
	}
	uint8_t code[2];
	if (p->kind == WIRE_EVENT_SAMPLE) {        /* the interrupted PC first */
		unsigned long v;
		if (!add(&w, ctx->tf->eip) || !tracer_read(ctx->tf->eip, 2, &v))
			return w.n;
		code[0] = (uint8_t)v, code[1] = (uint8_t)(v >> 8);
	} else {
		site_code(p, code);
	}
	walk_from(&w, code, trapframe_sp(ctx->tf), ctx->tf->ebp,
		  p->kind == WIRE_EVENT_ENTRY);
	return w.n;
}
