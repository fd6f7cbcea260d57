"""Judging a capture: counts against the workload's ground truth, per-thread
nesting, losses and link errors, as a Report that tells a fault from what
the run itself explains.

Counts: each function's entry and return records against the calls the
workload counted itself (its EXPECT frames). A probe that runs a program
writes no record of its own: its count is its hits, which the guest sends
per probe (PROBES frames). A function the guest refused
a site of (the site's reason is in the refusal: ud2 does not fit, not an
emulated form, ...) cannot be counted for that kind, and its row says so
instead; after any loss no count is compared (the loss is the problem).

Nesting: per thread, an entry pushes the function and a return must match
the innermost entry; only functions with an entry and a return probe take
part. The stacks follow threads across CPUs, switches and interrupts as
the guest's SWITCH records tell (bench/trace/callstacks.py, which walks
them): a call still open when its thread exits or the run ends is open,
never a break, and each function's calls end as entries = returns + open
(Report.calls_lines). With a window (the cycles at which every probe was
armed and at which the first was disarmed), only records inside it are
judged; a return there whose call began before it, on a thread that
existed before it, pairs with nothing and is counted as such. What a run
explains is not a break:
  - an entry of a function with a refused return site may never see its
    return (it left through the refused site): a return further out pops
    it as unmatched;
  - a return of a function with a refused entry site may have no entry;
  - records lost (bench/wire/records.Loss: which CPU, when, whose): a
    thread that lost records restarts with an empty stack at the first
    loss, entries it pushed inside a loss window are uncertain, and a
    return that does not match because of either is not checked.
Everything else that does not match is `nesting broken`, reported with
the thread's last records: it can only mean the emulation corrupted the
call chain (or a record lied), and it is a problem of the run unless the
mechanism is a lossy baseline, whose missed firings break nesting by
design.

Losses (the guest's drop counters, placed by its DROPS records) and link
errors (lost or damaged frames) are problems of their own: a loss is never
silent. Accounting: every firing is recorded, dropped (counted) or missed
(a hit inside a firing, counted, kprobes' nmissed), per CPU and per probe;
a firing that is none of these is a problem. The lossy mechanisms and toggled probes measure counts and nesting
without holding them against the run (allow_missing).

check_windows() checks nesting inside windows of guest time in which every
probe was armed (the toggle stress).
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field

from ..wire.records import K_BRANCH, K_ENTRY, K_INSN, K_LOG, K_RETURN, Capture, Loss
from .callstacks import Calls, NestingError, Walk, Walker
from .sites import Probe


def _nesting(events, probes: list[Probe], key, outer_ok: bool, refused=(),
             losses=(), switches=(), window=None, restarts=()) -> Walk:
    """Walk events (and SWITCH records) against per-key call stacks
    (key(ev, thread) is the thread, or (window, thread); None skips the
    record); window (armed, disarmed) in cycles: only records inside it
    are judged (callstacks.py has the rules)."""
    since, until = window if window else (None, None)
    if until is not None:
        inner = key
        key = lambda ev, thread: None if ev.cycles > until else inner(ev, thread)  # noqa: E731
    return Walker(probes, key, outer_ok, refused, losses, since,
                  restarts).run(events, switches)


def _others(left_refused: Counter, discarded: Counter) -> str:
    a, b = sum(left_refused.values()), sum(discarded.values())
    return ((f" + {a} left by a refused return site" if a else "")
            + (f" + {b} dropped with lost records or at a break" if b else ""))


def _refusal_reason(text: str) -> str:
    """The guest's reason, without the probe and address it begins with."""
    return text.rsplit(": ", 1)[-1] if ": " in text else text


@dataclass
class Report:
    entries: Counter
    returns: Counter
    expected: dict[str, int]
    nesting_errors: list[NestingError]
    nesting_checked: int
    dropped: int
    fired: int
    recorded: int
    link_errors: list
    problems: list[str]
    entries_probed: set
    returns_probed: set
    branches: Counter = field(default_factory=Counter)   # per function
    # (function, "entry"|"return") -> (sites refused, sites in all, reason)
    refused: dict = field(default_factory=dict)
    losses: list[Loss] = field(default_factory=list)
    unchecked: Counter = field(default_factory=Counter)  # returns, by reason
    left_open: int = 0          # entries whose return left by a refused site
    # Probes running a program: their hits, runs, faults, over (PROBES).
    program_counts: dict = field(default_factory=dict)
    insns: Counter = field(default_factory=Counter)      # per insn probe id
    insn_probes: int = 0
    calls: Calls = field(default_factory=Calls)          # per function, how calls ended
    switches: int = 0           # SWITCH records the nesting walk saw
    interrupts: int = 0         # interrupt frames it closed (IRQ records)
    accounting: list = field(default_factory=list)   # firings not accounted for
    nmissed: int = 0            # firings inside a firing (kprobes' nmissed), STATS

    def _per_kind(self):
        return (("entries", "entry", self.entries_probed, self.entries),
                ("returns", "return", self.returns_probed, self.returns))

    def countable(self, function: str, kind: str) -> bool:
        """Whether the function's records of a kind can be held against
        the workload's count: every site probed, nothing lost."""
        return (function, kind) not in self.refused and not self.dropped

    @property
    def expected_firings(self) -> int:
        return sum(self.expected.get(f, 0) for _, kind, probed, _ in self._per_kind()
                   for f in probed if (f, kind) not in self.refused)

    @property
    def traced(self) -> int:
        """Entry and return records (what the ground truth counts)."""
        return sum(self.entries.values()) + sum(self.returns.values())

    @property
    def missed(self) -> int:
        """Firings the ground truth says happened and the trace lacks, over
        the functions whose every site of the kind is probed."""
        return sum(max(0, self.expected[f] - seen[f])
                   for _, kind, probed, seen in self._per_kind()
                   for f in probed if f in self.expected
                   and (f, kind) not in self.refused)

    def not_checked(self, function: str, kind: str) -> str:
        """Why the function's count of a kind is not checked, or ''."""
        if (function, kind) in self.refused:
            n, total, reason = self.refused[(function, kind)]
            return f"not checked, {n} of {total} {kind} sites refused ({reason})"
        if self.dropped and function in self.expected:
            return "not checked, records were lost"
        return ""

    def nesting_line(self) -> str:
        """What nesting checked, and what it could not and why."""
        parts = [f"nesting: {self.nesting_checked} returns checked"]
        if self.unchecked:
            why = "; ".join(f"{n} because {reason}" for reason, n in
                            sorted(self.unchecked.items()))
            parts.append(f"{sum(self.unchecked.values())} not checked ({why})")
        if self.left_open:
            parts.append(f"{self.left_open} entries left by a refused return site")
        parts.append(f"{len(self.nesting_errors)} broken")
        return ", ".join(parts)

    def calls_lines(self, functions=(), shown: int = 6) -> list[str]:
        """How every call of the nesting walk ended: per function (those
        not all returned, and `functions`), entries = returns + open, the
        open ones named by thread, and the returns that had no entry."""
        c = self.calls
        names = sorted(f for f in c.entries.keys() | c.unpaired.keys()
                       if f in functions or c.open(f) or c.unpaired[f]
                       or c.left_refused[f] or c.discarded[f])
        total = sum(c.entries.values())
        opened = sum(c.open(f) for f in c.entries)
        lines = [f"  calls: {total} entries = {sum(c.returns.values())} returns + "
                 f"{opened} open ({sum(c.open_exited.values())} at a thread's exit)"
                 + _others(c.left_refused, c.discarded)
                 + f"; {self.switches} SWITCH records, {self.interrupts} "
                 "interrupt frames"]
        for f in names:
            who = sorted(c.open_at[f].items(), key=lambda kv: -kv[1])
            named = ", ".join(f"{t} {n}" for t, n in who[:shown]) + \
                (f", ... {len(who) - shown} more threads" if len(who) > shown else "")
            why = "; ".join(f"{n} returns without an entry: {r}"
                            for r, n in sorted(c.unpaired[f].items()))
            lines.append(f"    {f:24s} {c.entries[f]} entries = {c.returns[f]} returns"
                         f" + {c.open(f)} open" + (f" ({named})" if named else "")
                         + _others(Counter({f: c.left_refused[f]}),
                                   Counter({f: c.discarded[f]}))
                         + ("" if c.balanced(f) else "  UNBALANCED")
                         + (f"; {why}" if why else ""))
        return lines

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(cap: Capture, probes: list[Probe], link_errors=(),
           allow_missing: bool = False, refused: list[Probe] = (),
           window: tuple[int, int] | None = None,
           accounting: bool | None = None, tally: Tally | None = None,
           walk: Walk | None = None) -> Report:
    """Counts, nesting, accounting, losses and link errors; `refused` are
    the probes the guest refused (Probe.refused holds its words).
    allow_missing is for the lossy baselines and for toggled probes:
    nesting and counts are then measured but not held against the run.
    window: (armed, disarmed) cycles, the time every probe was live (the
    replies of `probe enable all` / `probe disable all`): nesting judges
    only records inside it. accounting (default: not allow_missing): hold
    each CPU's and probe's fired = recorded + dropped + missed against it.
    tally and walk: a stream's (bench/trace/stream.py), which has kept no
    records in cap: what the records counted, and its nesting walk."""
    if tally is None:
        tally = Tally.of(cap, probes)
    problems: list[str] = list(tally.problems)
    counts = tally.counts
    losses = cap.losses()
    if walk is None:
        walk = _nesting(cap.events, probes, lambda ev, thread: thread, False, refused,
                        losses, cap.switches, window)
    stats = cap.stats.values()
    rep = Report(counts["entry"], counts["return"], dict(cap.expects), walk.errors,
                 walk.checked, sum(s["dropped"] for s in stats),
                 sum(s["fired"] for s in stats), sum(s["recorded"] for s in stats),
                 list(link_errors), problems,
                 {p.function for p in probes if p.kind == "entry"},
                 {p.function for p in probes if p.kind == "return"}, counts["branch"],
                 losses=losses, unchecked=walk.unchecked, left_open=walk.left_open,
                 insns=counts["insn"], insn_probes=sum(p.kind == "insn" for p in probes),
                 calls=walk.calls, switches=walk.switches, interrupts=walk.interrupts,
                 nmissed=sum(s.get("missed", 0) for s in stats))
    _program_counts(rep, cap, probes)
    _refusals(rep, probes, refused)
    _stream_problems(rep, cap, link_errors, tally)
    if accounting if accounting is not None else not allow_missing:
        rep.accounting = accounting_problems(cap, probes, tally)
        problems += rep.accounting
    if not allow_missing:
        _count_problems(rep, probes)
    return rep


class Tally:
    """What verify() counts of the records, one record at a time (so that
    a stream can count them as they come: bench/trace/stream.py): records
    per function (entry, return, branch) and per insn probe, per CPU
    (LOG records aside) and per probe for the accounting, SWITCH records
    per CPU, and every record decoded."""

    KINDS = {K_ENTRY: "entry", K_RETURN: "return", K_BRANCH: "branch"}

    def __init__(self, probes: list[Probe]):
        self.by_id = {p.id: p for p in probes}
        self.counts = {"entry": Counter(), "return": Counter(), "branch": Counter(),
                       "insn": Counter()}
        self.per_cpu: Counter = Counter()
        self.per_probe: Counter = Counter()
        self.sched: Counter = Counter()
        self.decoded = 0
        self.checks = 0
        self.problems: list[str] = []
        # bulk()'s records, probe << 8 | kind: n, counted as event() does
        # by settle(). Only kinds counted alike and probes with no program:
        # what event() would find odd (an unknown probe is a problem, in
        # its place among the records) is the caller's to give it.
        self.plain = {p.id << 8 | k for p in probes if not p.program
                      for k in (*self.KINDS, K_INSN)}
        self.hits: Counter = Counter()

    @classmethod
    def of(cls, cap: Capture, probes: list[Probe]) -> Tally:
        """A whole capture's."""
        t = cls(probes)
        for ev in cap.events:
            t.event(ev)
        for sw in cap.switches:
            t.switch(sw)
        t.checks += len(cap.checks)
        t.decoded += len(cap.checks) + len(cap.marked)
        return t

    def event(self, ev) -> None:
        self.decoded += 1
        self.per_probe[ev.probe] += 1
        if ev.kind != K_LOG:
            self.per_cpu[ev.cpu] += 1
        p = self.by_id.get(ev.probe)
        if p is None:
            self.problems.append(f"record for unknown probe {ev.probe}")
        elif p.program:
            return                      # counted by its hits (_program_counts)
        elif ev.kind in self.KINDS:
            self.counts[self.KINDS[ev.kind]][p.function] += 1
        elif ev.kind == K_INSN:
            self.counts["insn"][p.id] += 1

    def switch(self, sw) -> None:
        self.decoded += 1
        self.sched[sw.cpu] += 1

    def bulk(self, cpu: int, keys: list, switches: int) -> None:
        """One CPU's records at once: `keys` (probe << 8 | kind, each in
        self.plain) and `switches` SWITCH or IRQ records."""
        self.decoded += len(keys) + switches
        if keys:
            self.per_cpu[cpu] += len(keys)
            self.hits.update(keys)
        if switches:
            self.sched[cpu] += switches

    def settle(self) -> None:
        """bulk()'s records counted per probe and function."""
        for key, n in self.hits.items():
            p, kind = self.by_id[key >> 8], key & 0xff
            self.per_probe[p.id] += n
            if kind in self.KINDS:
                self.counts[self.KINDS[kind]][p.function] += n
            else:
                self.counts["insn"][p.id] += n
        self.hits.clear()


def _program_counts(rep: Report, cap: Capture, probes: list[Probe]) -> None:
    """A probe that runs a program writes no record: its count is its hits."""
    counted = {"entry": rep.entries, "return": rep.returns, "branch": rep.branches}
    for p in probes:
        if p.program and p.id in cap.probe_counts:
            c = cap.probe_counts[p.id]
            if p.kind == "insn":
                rep.insns[p.id] += c["hits"]
            else:
                counted[p.kind][p.function] += c["hits"]
            rep.program_counts[p.id] = c
    if any(p.program for p in probes) and not cap.probe_counts:
        rep.problems.append("no PROBES frames: the per-probe counts of the probes "
                            "that run a program never arrived")
    dropped_aggs = sum(cap.agg_dropped.values())
    if dropped_aggs:
        rep.problems.append(f"{dropped_aggs} aggregation entries found no room (a "
                            "per-CPU aggregation table was full)")


def _refusals(rep: Report, probes: list[Probe], refused: list[Probe]) -> None:
    """rep.refused: (function, kind) -> (sites refused, sites, reasons)."""
    total = Counter((p.function, p.kind) for p in (*probes, *refused))
    for p in refused:
        n, _, reasons = rep.refused.get((p.function, p.kind), (0, 0, []))
        rep.refused[(p.function, p.kind)] = (n + 1, total[(p.function, p.kind)],
                                             reasons + [_refusal_reason(p.refused)])
    for key, (n, t, reasons) in rep.refused.items():
        rep.refused[key] = (n, t, "; ".join(dict.fromkeys(reasons)))


def _stream_problems(rep: Report, cap: Capture, link_errors, tally: Tally) -> None:
    """Missing counters, link errors, losses, and records sent but not decoded."""
    problems, losses = rep.problems, rep.losses
    if not cap.stats:
        problems.append("no STATS frames: the guest's counters never arrived")
    if link_errors:
        problems.append(f"{len(link_errors)} link errors (lost or damaged frames): "
                        + "; ".join(str(e) for e in link_errors[:3]))
    if rep.dropped:
        cpus = sorted({l.cpu for l in losses})
        problems.append(f"{rep.dropped} records lost: a trace buffer was full on "
                        + ", ".join(f"cpu{c}" for c in cpus)
                        + f" ({len(losses)} losses; counts not checked)")
    for cpu, s in sorted(cap.stats.items()):
        marked = sum(l.count for l in cap.marked if l.cpu == cpu)
        if marked > s["dropped"]:
            problems.append(f"cpu{cpu}: its DROPS records count {marked} records "
                            f"lost, its STATS frame {s['dropped']}")
    sent = sum(s["sent"] for s in cap.stats.values())
    got = tally.decoded
    if cap.stats and sent != got:
        problems.append(f"the guest sent {sent} records, the host decoded {got}")


def accounting_problems(cap: Capture, probes: list[Probe],
                        tally: Tally | None = None) -> list[str]:
    """Every firing accounted for: per CPU, fired = recorded + dropped +
    missed (the firings' records: SWITCH records, which are no firing, are
    told apart by the STATS frame's `switches`); per probe, when nothing
    was lost, its hits (PROBES) = its records + its missed. Only for runs
    in which a firing writes one record: no program, no check mode, no
    null action (the caller knows)."""
    if tally is None:
        tally = Tally.of(cap, probes)
    if not cap.stats or any(p.program for p in probes) or tally.checks or \
            any("missed" not in s for s in cap.stats.values()):
        return []
    out = []
    per_cpu, sched = tally.per_cpu, tally.sched
    for cpu, s in sorted(cap.stats.items()):
        dropped = s["dropped"] - (s["switches"] - sched[cpu])
        if s["fired"] != per_cpu[cpu] + dropped + s["missed"]:
            out.append(f"cpu{cpu}: {s['fired']} firings, but {per_cpu[cpu]} recorded + "
                       f"{dropped} dropped + {s['missed']} missed: "
                       f"{s['fired'] - per_cpu[cpu] - dropped - s['missed']} unaccounted")
    if any(s["dropped"] for s in cap.stats.values()):
        return out
    per_probe = tally.per_probe
    for p in probes:
        c = cap.probe_counts.get(p.id)
        if c is not None and c["hits"] != per_probe[p.id] + c["missed"]:
            out.append(f"{p.spec}: {c['hits']} hits, but {per_probe[p.id]} recorded + "
                       f"{c['missed']} missed")
    return out


def _count_problems(rep: Report, probes: list[Probe]) -> None:
    """Nesting breaks, and counts against the workload's own."""
    problems = rep.problems
    if rep.nesting_errors:
        problems.append(f"nesting broken: {rep.nesting_errors[0]}")
    for what, kind, probed, seen in rep._per_kind():
        for f in sorted(probed & rep.expected.keys()):
            if rep.countable(f, kind) and seen[f] != rep.expected[f]:
                problems.append(f"{f}: {seen[f]} {what} traced, the workload "
                                f"counted {rep.expected[f]} calls")
    # An insn probe on a function's first byte fires once per call.
    for p in probes:
        if (p.kind == "insn" and p.offset == 0 and p.function in rep.expected
                and not rep.dropped and rep.insns[p.id] != rep.expected[p.function]):
            problems.append(f"{p.spec}: {rep.insns[p.id]} firings traced, the "
                            f"workload counted {rep.expected[p.function]} calls")


def check_windows(cap: Capture, probes: list[Probe], windows: list[tuple[int, int]],
                  refused: list[Probe] = ()) -> tuple[int, list[NestingError]]:
    """Nesting inside windows of guest time in which every probe was armed
    (start, end in cycles); a return may belong to a call that began before
    its window. Returns (returns checked, errors)."""
    starts = [w[0] for w in windows]

    def window_of(ev, thread):
        i = bisect.bisect_right(starts, ev.cycles) - 1
        if i < 0 or ev.cycles > windows[i][1]:
            return None
        return (f"window {i}", thread)
    # Between windows no probe is armed and no SWITCH written: what each
    # CPU runs is known again from each window's first SWITCH on it.
    walk = _nesting(cap.events, probes, window_of, True, refused, cap.losses(),
                    cap.switches, restarts=starts)
    return walk.checked, walk.errors
