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
part. What a run explains is not a break:
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
silent. The lossy mechanisms and toggled probes measure counts and nesting
without holding them against the run (allow_missing).

check_windows() checks nesting inside windows of guest time in which every
probe was armed (the toggle stress).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field

from ..wire.records import K_BRANCH, K_ENTRY, K_INSN, K_RETURN, Capture, Loss
from .sites import Probe

HISTORY = 6          # records of a thread shown with a break

# Why a return was not checked (Report.unchecked's keys).
LOST = "records were lost"
NO_ENTRY = "its function's entry site was refused"


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


@dataclass
class _Thread:
    seen: int = 0                    # losses already weighed for this thread
    stamp: int = 0                   # of them, those that touched it
    window_end: float = -1.0         # its records up to here may be incomplete


def _nesting(events, probes: list[Probe], key, outer_ok: bool,
             refused=(), losses=()):
    """Walk events against per-key call stacks (key(ev) is the thread, or
    (window, thread); None skips the event); see the top for the rules.
    Returns (returns judged, errors, unchecked returns by reason, entries
    left open by a refused return site)."""
    by_id = {p.id: p for p in probes}
    both = {p.function for p in probes if p.kind == "entry"} & \
        {p.function for p in probes if p.kind == "return"}
    no_return = {p.function for p in refused if p.kind == "return"}
    no_entry = {p.function for p in refused if p.kind == "entry"}
    losses = sorted(losses, key=lambda l: l.first)
    begun = 0                        # losses[:begun] have begun by now
    threads: dict[int, _Thread] = defaultdict(_Thread)
    stacks: dict = defaultdict(list)
    stamps: dict = defaultdict(int)
    history: dict = defaultdict(lambda: deque(maxlen=HISTORY))
    checked, errors, unchecked, left_open = 0, [], Counter(), 0

    for ev in events:
        while begun < len(losses) and losses[begun].first <= ev.cycles:
            begun += 1
        p = by_id.get(ev.probe)
        k = key(ev)
        if (p is None or k is None or p.function not in both
                or ev.kind not in (K_ENTRY, K_RETURN)):
            continue
        t = threads[ev.thread]
        while t.seen < begun:                # losses that began meanwhile
            loss = losses[t.seen]
            t.seen += 1
            if loss.affects(ev.thread):
                t.stamp += 1
                t.window_end = max(t.window_end, float("inf") if loss.at is None
                                   else loss.at)
        st = stacks[k]
        if stamps[k] != t.stamp:             # it lost records: start afresh
            stamps[k] = t.stamp
            st.clear()
        arrow = "->" if ev.kind == K_ENTRY else "<-"
        history[k].append(f"cycle {ev.cycles} cpu{ev.cpu} t{ev.thread} "
                          f"{arrow} {p.function}")
        f = p.function
        if ev.kind == K_ENTRY:
            st.append(_Frame(f, ev.cycles <= t.window_end, f in no_return))
            continue
        # Entries whose return left through a refused site stay open.
        while st and st[-1].function != f and st[-1].partial:
            st.pop()
            left_open += 1
        if st and st[-1].function == f:
            st.pop()
            checked += 1
            continue
        where = [i for i, fr in enumerate(st) if fr.function == f]
        if where:
            above = st[where[-1] + 1:]
            del st[where[-1]:]
            if any(fr.uncertain for fr in above):
                unchecked[LOST] += 1
                continue
            what = f"while the innermost entry is {above[-1].function}"
        elif f in no_entry:
            unchecked[NO_ENTRY] += 1
            continue
        elif not st:
            if outer_ok:
                checked += 1
                continue
            if t.stamp:
                unchecked[LOST] += 1
                continue
            what = "with no entry open"
        elif any(fr.uncertain for fr in st):
            unchecked[LOST] += 1
            continue
        else:
            what = f"while the innermost entry is {st[-1].function}"
        checked += 1
        errors.append(NestingError(f"{k}: t{ev.thread} cpu{ev.cpu}: return from {f} "
                                   f"{what}", list(history[k])))
    return checked, errors, unchecked, left_open


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

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(cap: Capture, probes: list[Probe], link_errors=(),
           allow_missing: bool = False, refused: list[Probe] = ()) -> Report:
    """Counts, nesting, losses and link errors; `refused` are the probes
    the guest refused (Probe.refused holds its words). allow_missing is for
    the lossy baselines and for toggled probes: nesting and counts are then
    measured but not held against the run."""
    by_id = {p.id: p for p in probes}
    entries, returns, branches, insns = Counter(), Counter(), Counter(), Counter()
    problems: list[str] = []
    for ev in cap.events:
        p = by_id.get(ev.probe)
        if p is None:
            problems.append(f"record for unknown probe {ev.probe}")
        elif p.program:
            continue                    # counted by its hits below
        elif ev.kind == K_ENTRY:
            entries[p.function] += 1
        elif ev.kind == K_RETURN:
            returns[p.function] += 1
        elif ev.kind == K_BRANCH:
            branches[p.function] += 1
        elif ev.kind == K_INSN:
            insns[p.id] += 1
    losses = cap.losses()
    checked, nesting_errors, unchecked, left_open = _nesting(
        cap.events, probes, lambda ev: ev.thread, False, refused, losses)
    counted = {"entry": entries, "return": returns, "branch": branches}
    program_counts = {}
    for p in probes:
        if p.program and p.id in cap.probe_counts:
            c = cap.probe_counts[p.id]
            if p.kind == "insn":
                insns[p.id] += c["hits"]
            else:
                counted[p.kind][p.function] += c["hits"]
            program_counts[p.id] = c
    if any(p.program for p in probes) and not cap.probe_counts:
        problems.append("no PROBES frames: the per-probe counts of the probes that "
                        "run a program never arrived")
    dropped_aggs = sum(cap.agg_dropped.values())
    if dropped_aggs:
        problems.append(f"{dropped_aggs} aggregation entries found no room (a "
                        "per-CPU aggregation table was full)")
    stats = cap.stats.values()
    rep = Report(entries, returns, dict(cap.expects), nesting_errors, checked,
                 sum(s["dropped"] for s in stats), sum(s["fired"] for s in stats),
                 sum(s["recorded"] for s in stats), list(link_errors), problems,
                 {p.function for p in probes if p.kind == "entry"},
                 {p.function for p in probes if p.kind == "return"}, branches,
                 losses=losses, unchecked=unchecked, left_open=left_open,
                 program_counts=program_counts, insns=insns,
                 insn_probes=sum(p.kind == "insn" for p in probes))
    total = Counter((p.function, p.kind) for p in (*probes, *refused))
    for p in refused:
        n, _, reasons = rep.refused.get((p.function, p.kind), (0, 0, []))
        rep.refused[(p.function, p.kind)] = (n + 1, total[(p.function, p.kind)],
                                             reasons + [_refusal_reason(p.refused)])
    for key, (n, t, reasons) in rep.refused.items():
        rep.refused[key] = (n, t, "; ".join(dict.fromkeys(reasons)))
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
    sent = sum(s["sent"] for s in stats)
    got = len(cap.events) + len(cap.checks) + len(cap.marked)
    if cap.stats and sent != got:
        problems.append(f"the guest sent {sent} records, the host decoded {got}")
    if not allow_missing:
        if nesting_errors:
            problems.append(f"nesting broken: {nesting_errors[0]}")
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
    return rep


def check_windows(cap: Capture, probes: list[Probe], windows: list[tuple[int, int]],
                  refused: list[Probe] = ()) -> tuple[int, list[NestingError]]:
    """Nesting inside windows of guest time in which every probe was armed
    (start, end in cycles); a return may belong to a call that began before
    its window. Returns (returns checked, errors)."""
    starts = [w[0] for w in windows]

    def window_of(ev):
        i = bisect.bisect_right(starts, ev.cycles) - 1
        if i < 0 or ev.cycles > windows[i][1]:
            return None
        return (f"window {i}", ev.thread)
    checked, errors, _, _ = _nesting(cap.events, probes, window_of, True, refused,
                                     cap.losses())
    return checked, errors
