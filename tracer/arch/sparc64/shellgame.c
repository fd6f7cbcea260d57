/*
 * shellgame.c — the lossy baseline of seed 001 (Btrace1), `probe
 * mechanism shellgame`: record, store the original word back and retry it
 * natively; the ILLTRAP goes back in when the next probe fires. Until then
 * every execution of the site, by this thread or any other, is lost.
 *
 * The game can also count one execution twice: an interrupt due while the
 * probe fired is taken at the retry, before the original runs; if another
 * thread fires meanwhile, the ILLTRAP is back when this one resumes. A
 * hook watching the interrupts tells us (sparc64_probe_interrupted), and
 * that second trap is not recorded, so the baseline's counts show its
 * losses alone. (A thread that ran the original natively and came back to
 * it with no probe in between is not told apart.)
 *
 * The fire path (fire.c) hands a shell-game firing here once it has the
 * registers (and a return's target); arming and disarming a probe forget
 * it as the pending one (fbt.c). This kernel runs on one CPU (sun4u), so
 * the pending probe is one variable and a store needs only a `flush` of
 * the site.
 */
#include "arch/arch_sparc64.h"
#include "arch/trapframe.h"
#include "emulate.h"
#include "fire.h"
#include "thread.h"
#include "trap.h"
#include "tracer.h"

/* The probe whose original is in the stream, or 0, and the thread whose
 * trap put it there. */
static struct probe *shell_pending;
static struct thread *shell_thread;
/* Per thread (thread.h's slots): the shell-game probe it was interrupted
 * in front of, id + 1. */
static unsigned shell_slot;

/* Record p's firing (unless it is the same execution, resumed), put the
 * pending probe's ILLTRAP back and p's original in: the retry runs it. */
void sparc64_shellgame_fire(struct probe *p, struct trapframe *tf,
			    const struct sparc_regs *r, struct sparc_outcome *o)
{
	struct thread *me = thread_current();
	bool again = thread_slot(me, shell_slot) == p->id + 1;
	thread_slot_set(me, shell_slot, 0);
	if (p->site.what == SPARC_SITE_CTI) {
		struct sparc_regs after = *r;   /* the outcome, for the record */
		uint64_t fault;
		(void)sparc_emulate(&p->site.cti, &after, o, &fault);
	}
	if (!again)                     /* else: the same execution, resumed */
		sparc64_record_fire(p, tf, r, o);
	struct probe *q = shell_pending;
	if (q && q != p && q->state == PROBE_ENABLED)
		sparc64_store_word(q, ILLTRAP(q->id));
	sparc64_store_word(p, p->site.insn);
	shell_pending = p;
	shell_thread = me;
}

/* p is armed or disarmed: its word is stored anew, and no longer the
 * pending original. */
void sparc64_shellgame_forget(const struct probe *p)
{
	if (shell_pending == p)
		shell_pending = 0;
}

/* The hook on the tick and UART interrupts, which only observes: an
 * interrupt taken at the retry of a shell-game probe's original, before
 * it ran, marks the thread, so the firing the ILLTRAP (put back by then)
 * causes when the thread resumes is not recorded twice. */
static int sparc64_probe_interrupted(struct trapframe *tf)
{
	struct probe *p = shell_pending;
	if (p && tf->tpc == p->addr && thread_current() == shell_thread)
		thread_slot_set(shell_thread, shell_slot, p->id + 1);
	return TRAP_DECLINED;
}

void sparc64_shellgame_init(void)
{
	shell_slot = thread_slot_claim();
	trap_hook_add(TT_INTERRUPT_LEVEL_14, sparc64_probe_interrupted);
	trap_hook_add(TT_INTERRUPT_VECTOR, sparc64_probe_interrupted);
}
