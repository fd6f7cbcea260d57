"""One call stack per thread, across switches, CPUs and interrupts.

A kernel's records are not one call chain per CPU: a thread's calls are
cut by context switches and carried on to other CPUs, an interrupt's
handler runs on the stack of whatever thread it interrupted (and may
preempt it at its end), arch_context_switch is entered on one thread's
stack and returns on another's, a new thread starts in a trampoline with
nothing to return to, and an exiting thread leaves its calls open for
ever. The walker keeps one stack per thread (the key: the thread, or a
(window, thread) pair) and models each of those, told by the guest's
SWITCH records (bench/wire/records.py):
  - after SWITCH(from -> to) on a CPU, every record of that CPU is to's
    until its next SWITCH, except the entry of SWITCH_FUNCTION that comes
    first: the only call left on from's stack, it is pushed there, and
    its return pairs with it when from runs again (wherever);
  - a SWITCH whose `first` is set starts `to` with an empty stack, and
    the return of SWITCH_FUNCTION at its bottom is its trampoline's start;
  - an interrupt's calls nest on the interrupted thread's stack inside a
    frame of their own (IRQ records: enter pushes IRQ_FRAME, exit pops
    it, and finds every call made inside it returned); the preemption at
    its end is a SWITCH like any other, the exit comes when the thread
    runs again;
  - a thread that exited (SWITCH why=exited) keeps its stack as calls
    open at its exit; every stack's rest at the end is open at the end.
A record of another thread on a CPU than its last SWITCH named is a break
(the SWITCH lied, or a record did), as is every return that does not
match its thread's innermost entry, but for what the run explains (the
rules at the top of verify.py: refused sites, losses, calls begun before
the probes were armed). Per function it counts entries, the returns that
paired with them, the calls left open (by thread) and the returns that
had no entry to pair with, by reason.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field

from ..wire.records import (IRQ, K_ENTRY, K_IRQ, K_RETURN, K_SWITCH, SWITCH,
                            SWITCH_WHYS, Event, Loss)

# The kernel's one function that returns on another stack than it was
# entered on (guest-kernel/include/arch.h; both arches name it so).
SWITCH_FUNCTION = "arch_context_switch"
# An interrupt's frame on a stack (IRQ records), between its calls and
# the calls it interrupted.
IRQ_FRAME = "<interrupt>"
HISTORY = 6          # records of a thread shown with a break
INF = float("inf")

# Why a return was not checked (Report.unchecked's keys).
LOST = "records were lost"
NO_ENTRY = "its function's entry site was refused"
# Why a return had no entry to pair with, and that is no break.
FIRST_RUN = "a thread's first run (its trampoline)"
BEFORE = "its call began before the probes were armed"
EXITED = "exited"
_EXITS = frozenset(v for v, why in SWITCH_WHYS.items() if why == EXITED)


@dataclass
class NestingError:
    """A real break: the message, and the thread's last records up to it."""
    message: str
    history: list[str]

    def __str__(self) -> str:
        return self.message


@dataclass
class _Frame:
    function: str
    uncertain: bool      # pushed inside a window in which the thread lost records
    partial: bool        # its function has a refused return site
    start: int = 0       # cycles of its entry
    cpu: int = -1        # where its entry was recorded


@dataclass
class _Thread:
    seen: int = 0                    # losses already weighed for this thread
    stamp: int = 0                   # of them, those that touched it
    window_end: float = -1.0         # its records up to here may be incomplete
    born: bool = False               # its first run is in the walk: no call before
    first_run: bool = False          # its next bottom return is its trampoline's
    exited: bool = False


@dataclass
class Calls:
    """Per function: what the walk saw and how each call ended."""
    entries: Counter = field(default_factory=Counter)
    returns: Counter = field(default_factory=Counter)        # paired with an entry
    unpaired: dict = field(default_factory=lambda: defaultdict(Counter))  # reason
    open_at: dict = field(default_factory=lambda: defaultdict(Counter))   # function: thread
    open_exited: Counter = field(default_factory=Counter)   # function: at thread exit
    left_refused: Counter = field(default_factory=Counter)  # by a refused return site
    discarded: Counter = field(default_factory=Counter)     # dropped by a loss or break

    def open(self, f: str) -> int:
        return sum(self.open_at[f].values())

    def balanced(self, f: str) -> bool:
        return self.entries[f] == (self.returns[f] + self.open(f) + self.left_refused[f]
                                   + self.discarded[f])


@dataclass
class Walk:
    """Returns judged, breaks, unchecked returns by reason, entries left
    open by a refused return site, SWITCH records seen, and the Calls."""
    checked: int = 0
    interrupts: int = 0              # interrupt frames closed
    errors: list = field(default_factory=list)
    unchecked: Counter = field(default_factory=Counter)
    left_open: int = 0
    switches: int = 0
    calls: Calls = field(default_factory=Calls)


def by_thread(ev, thread):
    """The key of one stack per thread, no windows (walk() is fast for it)."""
    return thread


class Walker:
    """on_call(thread, function, cpu, start, end, depth), if given, sees
    every call whose return paired with its entry (the exports draw them:
    bench/export/chrome.py)."""

    def __init__(self, probes, key, outer_ok: bool, refused=(), losses=(),
                 since: int | None = None, restarts=(), on_call=None):
        self.on_call = on_call
        self.by_id = {p.id: p for p in probes}
        self.both = {p.function for p in probes if p.kind == "entry"} & \
            {p.function for p in probes if p.kind == "return"}
        self.no_return = {p.function for p in refused if p.kind == "return"}
        self.no_entry = {p.function for p in refused if p.kind == "entry"}
        self.losses = sorted(losses, key=lambda l: l.first)
        self.begun = 0
        self.key, self.outer_ok, self.since = key, outer_ok, since
        self.threads: dict[int, _Thread] = defaultdict(_Thread)
        self.stacks: dict = defaultdict(list)
        self.stamps: dict = defaultdict(int)
        self.history: dict = defaultdict(lambda: deque(maxlen=HISTORY))
        self.cpu_history: dict = defaultdict(lambda: deque(maxlen=HISTORY))
        self.on_cpu: dict[int, int] = {}        # cpu: the thread its last SWITCH named
        self.pending: dict[int, tuple] = {}     # cpu: (from, to) until its next record
        self.lost_cpus: set = set()
        # Cycles from which SWITCH records start again after a time with
        # no probe armed (toggled windows), when none were written; the
        # window's own start is one (bench run arms, disarms and arms
        # again: a SWITCH of the first armed time is stale by then).
        starts = list(restarts) + ([since] if since is not None else [])
        self.restarts, self.restart = sorted(starts), 0
        self.out = Walk()
        # walk()'s: the functions a record of a probe pushes or pops (those
        # with both sites probed), one shared frame each (no on_call: a
        # frame's start and cpu are read by nobody), the threads whose
        # stack step() has made (thread: its state, stack and history),
        # and the calls it counted, added to out.calls at close().
        self.fast = (key is by_thread and since is None and not self.restarts
                     and on_call is None)
        self.function_of = {p.id: p.function for p in probes if p.function in self.both}
        self.frame_of = {f: _Frame(f, False, f in self.no_return) for f in self.both}
        self.known: dict = {}
        self.entered = dict.fromkeys(self.both, 0)
        self.paired = dict.fromkeys(self.both, 0)

    # ---- the steps ----

    def run(self, events, switches=()) -> Walk:
        for ev in _merged(events, switches):
            self.step(ev)
        return self.close()

    def step(self, ev: Event) -> None:
        """One record, in the merged order (run()'s, or a stream's that
        keeps it: bench/trace/stream.py)."""
        self._losses_until(ev.cycles)
        while self.restart < len(self.restarts) and \
                self.restarts[self.restart] <= ev.cycles:
            self.restart += 1
            self.on_cpu.clear()
            self.pending.clear()
        if ev.kind == K_SWITCH:
            self._switch(ev)
        elif ev.kind == K_IRQ:
            self._irq(ev)
        elif ev.kind in (K_ENTRY, K_RETURN):
            self._record(ev)

    def walk(self, recs) -> None:
        """Records (cycles, thread, probe, kind, cpu, words) in the merged
        order, each as step() would take it (bench/trace/stream.py's).
        Inline, the common case: an entry, or a return that matches its
        thread's innermost entry, of a thread step() has given a stack,
        before the next loss begins, on a CPU that runs it and has no
        SWITCH waiting for its next record; branch and insn records (no
        part of the walk). Anything else goes through step()."""
        if not self.fast:
            for r in recs:
                self.step(Event(r[4], r[1], r[2], r[3], r[0], r[5]))
            return
        function_of, frame_of, known = self.function_of, self.frame_of, self.known
        on_cpu, pending, lost_cpus = self.on_cpu, self.pending, self.lost_cpus
        cpu_history, entered, paired = self.cpu_history, self.entered, self.paired
        losses, begun = self.losses, self.begun
        next_loss = losses[begun].first if begun < len(losses) else INF
        histories, threads = self.history, self.threads
        checked = switches = 0
        for rec in recs:
            cycles, thread, probe, kind, cpu, words = rec
            if cycles < next_loss:
                if kind == K_ENTRY or kind == K_RETURN:
                    f = function_of.get(probe)
                    mine = known.get(thread)
                    switched = pending.get(cpu)     # _owner()'s
                    if f is not None and mine is not None and \
                            (switched is None or kind != K_ENTRY or f != SWITCH_FUNCTION
                             or thread != switched[1]) and \
                            (on_cpu.get(cpu, thread) == thread or cpu in lost_cpus):
                        t, st, history = mine
                        if t.seen == begun:         # no loss to weigh
                            if kind == K_ENTRY:
                                if cycles > t.window_end:
                                    if switched is not None:
                                        del pending[cpu]
                                    history.append(rec)
                                    cpu_history[cpu].append(rec)
                                    entered[f] += 1
                                    st.append(frame_of[f])
                                    t.first_run = False
                                    continue
                            elif st and st[-1].function == f:
                                if switched is not None:
                                    del pending[cpu]
                                history.append(rec)
                                cpu_history[cpu].append(rec)
                                st.pop()
                                checked += 1
                                paired[f] += 1
                                continue
                elif kind == K_SWITCH:
                    frm, to, why, first = (words[SWITCH.FROM], words[SWITCH.TO],
                                           words[SWITCH.WHY], words[SWITCH.FIRST])
                    was = on_cpu.get(cpu)
                    if was is None or was == frm or cpu in lost_cpus:   # no break
                        switches += 1
                        on_cpu[cpu] = to
                        pending[cpu] = (frm, to)
                        line = (cycles, cpu, frm, (frm, to, why, first))
                        histories[frm].append(line)
                        cpu_history[cpu].append(line)
                        histories[to].append(line)
                        if why in _EXITS:
                            threads[frm].exited = True
                        if first:
                            t = threads[to]
                            t.born = t.first_run = True
                        continue
                elif kind != K_IRQ:
                    continue                        # not the walk's
            self.step(Event(cpu, thread, probe, kind, cycles, words))
            if self.begun != begun:
                begun = self.begun
                next_loss = losses[begun].first if begun < len(losses) else INF
            if thread not in known and thread in self.stacks:
                known[thread] = (self.threads[thread], self.stacks[thread],
                                 self.history[thread])
        self.out.checked += checked
        self.out.switches += switches

    def close(self) -> Walk:
        calls = self.out.calls
        for f, n in self.entered.items():
            if n:
                calls.entries[f] += n
        for f, n in self.paired.items():
            if n:
                calls.returns[f] += n
        self.entered, self.paired = dict.fromkeys(self.both, 0), dict.fromkeys(self.both, 0)
        self._close()
        return self.out

    def add_loss(self, loss: Loss) -> None:
        """A loss learnt while walking (a stream's DROPS record, or its
        CPU's end): placed among those not yet begun, by first cycle. The
        stream holds back every record at or after it, so none is late."""
        bisect.insort(self.losses, loss, lo=self.begun, key=lambda l: l.first)

    def _losses_until(self, cycles: int) -> None:
        while self.begun < len(self.losses) and self.losses[self.begun].first <= cycles:
            loss = self.losses[self.begun]
            self.begun += 1
            # Its SWITCH records may be among those lost: the CPU's thread
            # is unknown until its next SWITCH.
            self.on_cpu.pop(loss.cpu, None)
            self.pending.pop(loss.cpu, None)
            self.lost_cpus.add(loss.cpu)

    def _switch(self, sw: Event) -> None:
        frm, to, why, first = (sw.words[SWITCH.FROM], sw.words[SWITCH.TO],
                               sw.words[SWITCH.WHY], sw.words[SWITCH.FIRST])
        self.out.switches += 1
        was = self.on_cpu.get(sw.cpu)
        judged = self.key(sw, frm) is not None and (self.since is None
                                                    or sw.cycles >= self.since)
        if was is not None and was != frm and sw.cpu not in self.lost_cpus and judged:
            self._break(sw, frm, f"SWITCH from t{frm} on cpu{sw.cpu}, whose last "
                                 f"SWITCH ran t{was}")
        self.on_cpu[sw.cpu] = to
        self.pending[sw.cpu] = (frm, to)
        self._note(frm, sw, (frm, to, why, first))
        self.history[to].append(self.history[frm][-1])

        if SWITCH_WHYS.get(why) == EXITED:
            self.threads[frm].exited = True
        if first and (self.since is None or sw.cycles >= self.since):
            t = self.threads[to]
            t.born = t.first_run = True

    def _owner(self, ev: Event, f: str) -> int:
        """The thread whose stack the record is on."""
        pend = self.pending.pop(ev.cpu, None)
        if pend and ev.kind == K_ENTRY and f == SWITCH_FUNCTION and ev.thread == pend[1]:
            return pend[0]
        return ev.thread

    def _check_cpu(self, ev: Event, thread: int, what: str) -> None:
        """A judged record's thread must be the one its CPU's last SWITCH
        named (or that SWITCH's outgoing one, for the switch's own entry)."""
        runs = self.on_cpu.get(ev.cpu)
        # A CPU that lost records may have lost SWITCH records with them
        # (a full ring): what it runs is no longer checked.
        if runs is None or ev.thread == runs or thread != ev.thread or \
                ev.cpu in self.lost_cpus:
            return
        self.cpu_history[ev.cpu].append((ev.cycles, ev.cpu, ev.thread, what))
        self.out.errors.append(NestingError(
            f"cpu{ev.cpu}: a record of t{ev.thread} on cpu{ev.cpu}, where the last "
            f"SWITCH ran t{runs}", self._lines(self.cpu_history[ev.cpu])))
        self.on_cpu[ev.cpu] = ev.thread        # one break, not one a record

    def _record(self, ev: Event) -> None:
        p = self.by_id.get(ev.probe)
        if p is None or p.function not in self.both:
            self.pending.pop(ev.cpu, None)
            return
        thread = self._owner(ev, p.function)
        if self.since is not None and ev.cycles < self.since:
            return
        k = self.key(ev, thread)
        if k is None:
            return
        arrow = "->" if ev.kind == K_ENTRY else "<-"
        self._check_cpu(ev, thread, f"{arrow} {p.function}")
        t, st = self._stack(k, thread)
        self._note(thread, ev, f"{arrow} {p.function}")
        if ev.kind == K_ENTRY:
            self.out.calls.entries[p.function] += 1
            st.append(_Frame(p.function, ev.cycles <= t.window_end,
                             p.function in self.no_return, ev.cycles, ev.cpu))
            t.first_run = False
        else:
            self._return(ev, k, thread, t, st, p.function)

    def _stack(self, k, thread: int):
        """The thread's state and the key's stack, emptied if it lost records."""
        t = self._weigh_losses(thread)
        st = self.stacks[k]
        if self.stamps[k] != t.stamp:           # it lost records: start afresh
            self.stamps[k] = t.stamp
            self.out.calls.discarded.update(fr.function for fr in st
                                            if fr.function != IRQ_FRAME)
            st.clear()
        return t, st

    def _irq(self, ev: Event) -> None:
        thread = self._owner(ev, IRQ_FRAME)
        if self.since is not None and ev.cycles < self.since:
            return
        k = self.key(ev, thread)
        if k is None:
            return
        leaving = bool(ev.words[IRQ.EXIT])
        self._check_cpu(ev, thread, "<- irq" if leaving else "-> irq")
        t, st = self._stack(k, thread)
        self._note(thread, ev, f"{'<- irq' if leaving else '-> irq'} {ev.words[IRQ.VECTOR]}")
        if not leaving:
            st.append(_Frame(IRQ_FRAME, ev.cycles <= t.window_end, False))
            return
        where = [i for i, fr in enumerate(st) if fr.function == IRQ_FRAME]
        if not where:
            if self.outer_ok or t.stamp or not t.born:
                return                   # it began before the walk, or was lost
            self._break(ev, k, f"t{thread} cpu{ev.cpu}: an interrupt ends with none "
                               "begun", thread)
            return
        above = st[where[-1] + 1:]
        del st[where[-1]:]
        self.out.interrupts += 1
        for fr in above:
            if fr.partial:
                self.out.calls.left_refused[fr.function] += 1
            else:
                self.out.calls.discarded[fr.function] += 1
        still = [fr.function for fr in above if not fr.partial]
        if still and not any(fr.uncertain for fr in above):
            self._break(ev, k, f"t{thread} cpu{ev.cpu}: an interrupt ends while "
                               f"{still[-1]} it called is open", thread)

    def _weigh_losses(self, thread: int) -> _Thread:
        t = self.threads[thread]
        while t.seen < self.begun:                # losses that began meanwhile
            loss = self.losses[t.seen]
            t.seen += 1
            if loss.affects(thread):
                t.stamp += 1
                t.window_end = max(t.window_end, float("inf") if loss.at is None
                                   else loss.at)
        return t

    def _return(self, ev, k, thread, t, st, f) -> None:
        calls = self.out.calls
        while st and st[-1].function != f and st[-1].partial:
            calls.left_refused[st.pop().function] += 1   # by a refused return site
            self.out.left_open += 1
        if st and st[-1].function == f:
            fr = st.pop()
            self.out.checked += 1
            calls.returns[f] += 1
            if self.on_call:
                depth = sum(1 for x in st if x.function != IRQ_FRAME)
                self.on_call(thread, f, fr.cpu, fr.start, ev.cycles, depth)
            return
        if not st and t.first_run and f == SWITCH_FUNCTION:
            t.first_run = False
            calls.unpaired[f][FIRST_RUN] += 1
            return
        why = self._excuse(ev, t, st, f)
        if why is None:
            return
        self.out.checked += 1
        self._break(ev, k, f"t{thread} cpu{ev.cpu}: return from {f} {why}", thread)

    def _excuse(self, ev, t, st, f) -> str | None:
        """None if the return is explained (counted why), else the break."""
        calls, unchecked = self.out.calls, self.out.unchecked
        where = [i for i, fr in enumerate(st) if fr.function == f]
        if where:
            above = st[where[-1] + 1:]
            del st[where[-1]:]
            calls.returns[f] += 1
            calls.discarded.update(fr.function for fr in above
                                   if fr.function != IRQ_FRAME)
            if any(fr.uncertain for fr in above):
                unchecked[LOST] += 1
                return None
            return f"while the innermost entry is {above[-1].function}"
        if f in self.no_entry:
            unchecked[NO_ENTRY] += 1
            return None
        if not st:
            if self.outer_ok or (self.since is not None and not t.born):
                calls.unpaired[f][BEFORE] += 1
                if self.outer_ok:
                    self.out.checked += 1
                return None
            if t.stamp:
                unchecked[LOST] += 1
                return None
            return "with no entry open"
        if any(fr.uncertain for fr in st):
            unchecked[LOST] += 1
            return None
        return f"while the innermost entry is {st[-1].function}"

    def _close(self) -> None:
        """Every call still on a stack is open: at its thread's exit or at
        the end, named by thread."""
        for k, st in self.stacks.items():
            thread = k[1] if isinstance(k, tuple) else k
            exited = self.threads[thread].exited
            for fr in st:
                if fr.function == IRQ_FRAME:
                    continue
                self.out.calls.open_at[fr.function][f"t{thread}"] += 1
                if exited:
                    self.out.calls.open_exited[fr.function] += 1

    # ---- what a break shows ----

    # A history holds (cycles, cpu, thread, what: a line's end, or a
    # SWITCH's (from, to, why, first)) or a walk()'s record
    # (cycles, thread, probe, kind, cpu, words), both made lines only for
    # a break: formatting every record's line cost more than walking it.
    def _note(self, thread: int, ev: Event, what: str) -> None:
        line = (ev.cycles, ev.cpu, thread, what)
        self.history[thread].append(line)
        self.cpu_history[ev.cpu].append(line)

    def _lines(self, shown) -> list[str]:
        out = []
        for item in shown:
            if len(item) == 4:
                cycles, cpu, thread, what = item
                if isinstance(what, tuple):      # a SWITCH's (from, to, why, first)
                    frm, to, why, first = what
                    what = (f"SWITCH t{frm} -> t{to} ({SWITCH_WHYS.get(why, why)}"
                            f"{', first run' if first else ''})")
            else:
                cycles, thread, probe, kind, cpu, _ = item
                what = f"{'->' if kind == K_ENTRY else '<-'} {self.by_id[probe].function}"
            out.append(f"cycle {cycles} cpu{cpu} t{thread} {what}")
        return out

    def _break(self, ev: Event, k, message: str, thread=None) -> None:
        shown = self.history[k if thread is None else thread]
        self.out.errors.append(NestingError(f"{k}: {message}", self._lines(shown)))


def _merged(events, switches):
    """Records and SWITCH records in one order: by cycles, a CPU's own in
    its stream's order (a SWITCH is written before the entry it explains)."""
    if not switches:
        return events
    return sorted([*events, *switches], key=lambda e: (e.cycles, e.cpu, e.index))
