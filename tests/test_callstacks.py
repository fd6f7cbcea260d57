"""The verdict on a kernel's control flow (bench/trace/callstacks.py), on
synthetic record streams: a context switch whose arch_context_switch
returns on the other thread's stack, an interrupt that nests on the stack
it interrupted and preempts it at its end, a new thread's first run, a
thread that exits with calls open, calls begun before the probes were
armed — none of them a break, each call ending as entries = returns +
open. Then the faults they must not hide: a SWITCH naming the wrong
incoming thread, an uncounted drop in the middle of a thread's stream, a
flipped record kind, a firing neither recorded nor counted."""

from bench.trace.callstacks import BEFORE, FIRST_RUN
from bench.trace.sites import Probe
from bench.trace.verify import accounting_problems, verify
from bench.wire.records import (IRQ, K_ENTRY, K_IRQ, K_RETURN, K_SWITCH, SWITCH, Capture,
                                Event)

FUNCS = ("schedule", "arch_context_switch", "sched_irq_exit", "work", "tick")
PROBES = [Probe(2 * i + k, f, kind, 0x1000 * (i + 1) + k)
          for i, f in enumerate(FUNCS) for k, kind in enumerate(("entry", "return"))]
ID = {(p.function, p.kind): p.id for p in PROBES}
WHY = {"preempted": 0, "blocked": 1, "exited": 2}


class Stream:
    """One CPU's records, written as the guest would: `t1 work>`, `t1 <work`,
    `switch 1 2 blocked [first]`, `t1 irq`, `t1 /irq`."""

    def __init__(self):
        self.events, self.switches, self.cycles = [], [], 100
        self.index = {}

    def add(self, script: str, cpu: int = 0):
        for line in script.strip().splitlines():
            words = line.split()
            self.cycles += 10
            i = self.index.get(cpu, 0)
            self.index[cpu] = i + 1
            if words[0] == "switch":
                frm, to, why = int(words[1]), int(words[2]), WHY[words[3]]
                w = [0] * 4
                w[SWITCH.FROM], w[SWITCH.TO], w[SWITCH.WHY] = frm, to, why
                w[SWITCH.FIRST] = int(len(words) > 4)
                self.switches.append(Event(cpu, to, 0xffffffff, K_SWITCH, self.cycles,
                                           tuple(w), i))
                continue
            thread, tok = int(words[0][1:]), words[1]
            if tok.strip("/") == "irq":
                w = [0, 0]
                w[IRQ.VECTOR], w[IRQ.EXIT] = 32, int(tok.startswith("/"))
                self.switches.append(Event(cpu, thread, 0xffffffff, K_IRQ, self.cycles,
                                           tuple(w), i))
                continue
            kind = "entry" if tok.endswith(">") else "return"
            self.events.append(Event(cpu, thread, ID[(tok.strip("<>"), kind)],
                                     K_ENTRY if kind == "entry" else K_RETURN,
                                     self.cycles, (0, 0, 0), i))
        return self

    def capture(self, fired_extra=0, missed=0) -> Capture:
        stats = {}
        for cpu in self.index:
            n = sum(e.cpu == cpu for e in self.events)
            s = sum(e.cpu == cpu for e in self.switches)
            stats[cpu] = {"cpu": cpu, "fired": n + fired_extra + missed, "recorded": n + s,
                          "dropped": 0, "sent": n + s, "buffer_bytes": 4096,
                          "missed": missed, "switches": s}
        return Capture(sorted(self.events, key=lambda e: e.cycles), [], stats, {}, 1, 0,
                       [], {}, switches=list(self.switches))


# t1 blocks in schedule and t2 runs; t2 blocks and t1 runs again: each
# arch_context_switch entry (written after the SWITCH, while the CPU's
# current thread is already the incoming one) is on the outgoing stack.
SWITCH_BACK = """
t1 work>
t1 schedule>
switch 1 2 blocked
t2 arch_context_switch>
t2 <arch_context_switch
t2 <schedule
t2 schedule>
switch 2 1 blocked
t1 arch_context_switch>
t1 <arch_context_switch
t1 <schedule
t1 <work
"""


def test_a_switch_pairs_arch_context_switch_on_the_thread_that_runs_again():
    # t2 was switched out before the trace began, inside schedule.
    cap = Stream().add(SWITCH_BACK).capture()
    rep = verify(cap, PROBES, window=(0, 10 ** 9))
    assert rep.ok and not rep.nesting_errors, rep.problems
    c = rep.calls
    assert (c.entries["arch_context_switch"], c.returns["arch_context_switch"]) == (2, 1)
    assert dict(c.open_at["arch_context_switch"]) == {"t2": 1}      # t2 is off the CPU
    assert dict(c.unpaired["arch_context_switch"]) == {BEFORE: 1}
    assert all(c.balanced(f) for f in FUNCS) and rep.switches == 2
    # Without the window, a call begun before the trace is a break, as before.
    assert verify(cap, PROBES).nesting_errors


def test_a_switch_naming_the_wrong_incoming_thread_is_a_break():
    bad = SWITCH_BACK.replace("switch 1 2 blocked", "switch 1 3 blocked")
    rep = verify(Stream().add(bad).capture(), PROBES, window=(0, 10 ** 9))
    assert rep.nesting_errors and any("nesting broken" in p for p in rep.problems)
    err = rep.nesting_errors[0]
    assert "a record of t2 on cpu0, where the last SWITCH ran t3" in err.message, err
    assert err.history[-1].endswith("t2 -> arch_context_switch"), err.history
    assert "SWITCH t1 -> t3 (blocked)" in err.history[-2], err.history


def test_an_interrupt_nests_on_the_stack_it_interrupted_and_preempts_it():
    cap = Stream().add("""
t1 work>
t1 irq
t1 tick>
t1 <tick
t1 sched_irq_exit>
t1 schedule>
switch 1 2 preempted first
t2 arch_context_switch>
t2 <arch_context_switch
t2 work>
t2 <work
t2 schedule>
switch 2 1 exited
t1 arch_context_switch>
t1 <arch_context_switch
t1 <schedule
t1 <sched_irq_exit
t1 /irq
t1 <work
""").capture()
    rep = verify(cap, PROBES, window=(0, 10 ** 9))
    assert rep.ok and not rep.nesting_errors, [str(e) for e in rep.nesting_errors]
    c = rep.calls
    assert rep.interrupts == 1
    # t2's first run returns from the trampoline's arch_context_switch.
    assert dict(c.unpaired["arch_context_switch"]) == {FIRST_RUN: 1}
    # t2 exited inside schedule: open at its exit, not a break.
    assert dict(c.open_at["schedule"]) == {"t2": 1} and c.open_exited["schedule"] == 1
    assert all(c.balanced(f) for f in FUNCS)
    assert any("schedule" in ln and "1 open (t2 1)" in ln for ln in rep.calls_lines())


def test_a_call_left_open_inside_an_interrupt_is_a_break():
    cap = Stream().add("""
t1 work>
t1 irq
t1 tick>
t1 /irq
t1 <work
""").capture()
    errs = verify(cap, PROBES, window=(0, 10 ** 9)).nesting_errors
    assert errs and "an interrupt ends while tick it called is open" in errs[0].message


def test_an_uncounted_drop_in_the_middle_of_a_stream_is_a_break():
    # A thread born in the trace: its first run starts from an empty stack,
    # so a return without its entry has nothing before the trace to blame.
    ok = """
switch 1 2 preempted first
t2 <arch_context_switch
t2 work>
t2 schedule>
t2 sched_irq_exit>
t2 <sched_irq_exit
t2 <schedule
t2 <work
"""
    assert verify(Stream().add(ok).capture(), PROBES, window=(0, 10 ** 9)).ok
    dropped = ok.replace("t2 schedule>\n", "")
    rep = verify(Stream().add(dropped).capture(), PROBES, window=(0, 10 ** 9))
    assert rep.nesting_errors, rep.problems
    assert "return from schedule while the innermost entry is work" in \
        rep.nesting_errors[0].message


def test_a_flipped_record_kind_is_a_break():
    flipped = SWITCH_BACK.replace("t1 <work", "t1 work>", 1).rstrip() + "\nt1 <schedule\n"
    rep = verify(Stream().add(flipped).capture(), PROBES, window=(0, 10 ** 9))
    assert rep.nesting_errors and "return from schedule while the innermost entry is " \
        "work" in rep.nesting_errors[0].message


def test_every_firing_is_recorded_dropped_or_missed():
    s = Stream().add(SWITCH_BACK)
    assert accounting_problems(s.capture(missed=3), PROBES) == []
    # A firing swallowed: counted as fired, neither recorded nor missed.
    probs = accounting_problems(s.capture(fired_extra=1), PROBES)
    assert probs == ["cpu0: 11 firings, but 10 recorded + 0 dropped + 0 missed: "
                     "1 unaccounted"], probs
    rep = verify(s.capture(fired_extra=1), PROBES, window=(0, 10 ** 9))
    assert not rep.ok and "1 unaccounted" in rep.problems[0]


def test_a_switch_before_the_window_is_forgotten_at_its_start():
    # `bench run` arms, disarms and arms again (arm_window): a SWITCH of
    # the first armed time names a thread that may since have been
    # switched away with no probe armed (nothing recorded). Records of the
    # thread that really runs, once the window opens, are no break; one
    # inside the window that contradicts a SWITCH inside it still is.
    s = Stream().add("""
t2 work>
t2 <work
switch 2 4 preempted
t4 work>
t4 <work
""", cpu=1)
    s.cycles += 1000                # disarmed: t4 -> t2 unrecorded; then armed
    start = s.cycles + 5
    s.add("""
t2 irq
t2 work>
t2 <work
t2 /irq
""", cpu=1)
    rep = verify(s.capture(), PROBES, window=(start, 10 ** 9))
    assert not rep.nesting_errors, [e.message for e in rep.nesting_errors]
    s.add("""
switch 2 4 preempted
t2 work>
t2 <work
""", cpu=1)
    errs = verify(s.capture(), PROBES, window=(start, 10 ** 9)).nesting_errors
    assert [e.message for e in errs] == \
        ["cpu1: a record of t2 on cpu1, where the last SWITCH ran t4"], errs
