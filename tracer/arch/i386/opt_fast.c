/*
 * opt_fast.c — which opt probes take the recording path (opt_fast.h:
 * the detour's opt_fast_entry, opt_fast.S, and the return trampoline's,
 * opt_return.S), and the numbers those read, asserted against the C
 * structures. Decided at arming: an entry's detour holds the stub into
 * opt_fast_entry or not (opt_detour.c), a riding return probe's
 * site.fast says whether its trampoline records in assembly
 * (tarch_probe_ride); check mode's detours and every other kind of
 * probe record in C as before. The per-firing tests (action, gate,
 * state, stamps, the ring's form and room) are the paths' own.
 */
#include "../../core/buffer_cpu.h"  /* the ring the recording path writes */
#include "cpu.h"
#include "opt_fast.h"
#include "thread.h"
#include "tracer.h"
#include "wire.h"

/* Tests (through the GDB stub): every record into C (the records the
 * recording path must equal), or a return recorded with edx, the value's
 * high half, as its value. Read at arming. */
volatile unsigned opt_fast_off, opt_fast_broken;
unsigned long opt_fast_recorded[KERNEL_MAX_CPUS];

uint8_t opt_fast_kind(const struct probe *p, bool checked)
{
	if (checked || opt_fast_off)
		return 0;
	if (p->kind == WIRE_EVENT_ENTRY)
		return OPT_FAST_ENTRY;
	if (p->kind == WIRE_EVENT_RETURN)
		return opt_fast_broken ? OPT_FAST_RETURN_BROKEN : OPT_FAST_RETURN;
	return 0;
}

_Static_assert(offsetof(struct probe, nargs) == OPT_PROBE_NARGS &&
	       offsetof(struct probe, nargmap) == OPT_PROBE_NARGMAP &&
	       offsetof(struct probe, site.fast) == OPT_PROBE_FAST &&
	       sizeof ((struct probe *)0)->site.fast == 1 &&
	       sizeof(struct probe) == OPT_PROBE_BYTES &&
	       offsetof(struct thread, id) == OPT_THREAD_ID &&
	       offsetof(struct tracer_fired, in_fire) == OPT_FIRED_IN_FIRE &&
	       WIRE_EVENT_ENTRY == OPT_EVENT_ENTRY &&
	       TRACER_ACTION_RECORD == 0 &&
	       sizeof(unsigned long) == 4 && sizeof(uintptr_t) == 4,
	       "opt_fast.h: the probe's, thread's and firing's numbers");
_Static_assert(sizeof(struct wire_event) == 16 &&
	       offsetof(struct wire_event, kind) == 0 &&
	       offsetof(struct wire_event, nwords) == 1 &&
	       offsetof(struct wire_event, thread) == 2 &&
	       offsetof(struct wire_event, probe) == 4 &&
	       offsetof(struct wire_event, cycles) == 8 &&
	       WIRE_ENTRY_PC == 0 && WIRE_ENTRY_SP == 1 && WIRE_ENTRY_ARG0 == 2 &&
	       WIRE_RETURN_PC == 0 && WIRE_RETURN_SP == 1 &&
	       WIRE_RETURN_VALUE == 2 && WIRE_RETURN_VALUE_HIGH == 3,
	       "the record the recording path writes is put()'s");
_Static_assert(sizeof(struct tracer_cpu) == OPT_T_BYTES, "OPT_T_BYTES");
TRACER_CPU_OFFSETS(OPT);
_Static_assert(sizeof ((struct tracer_cpu *)0)->lost == 4 &&
	       sizeof ((struct tracer_cpu *)0)->phys == 4 &&
	       sizeof ((struct tracer_cpu *)0)->sb.count == 4,
	       "opt_fast.h: the words the reservation ORs");
