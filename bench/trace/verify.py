"""Judging a capture: counts against the workload's ground truth, per-thread
nesting, drops and link errors, as a Report.

Counts: each function's entry and return records against the calls the
workload counted itself (its EXPECT frames). Nesting: per thread, an entry
pushes the function and a return must match the innermost entry; only
functions with both an entry and a return probe take part. Drops (the
guest's STATS) and link errors (lost or damaged frames) are problems of
their own: a loss is never silent. The lossy mechanisms and toggled probes
measure counts and nesting without holding them against the run
(allow_missing).

check_windows() checks nesting inside windows of guest time in which every
probe was armed (the toggle stress).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..wire.records import K_BRANCH, K_ENTRY, K_RETURN, Capture
from .sites import Probe


def _nesting(events, probes: list[Probe], key, outer_ok: bool) -> tuple[int, list[str]]:
    """Walk events against per-key call stacks (key(ev) is the thread, or
    (window, thread); None skips the event). An entry pushes; a return must
    match the innermost entry. With outer_ok, a return on an empty stack is
    a call that began before the window, not an error. After a mismatch the
    stack is unwound to the returning function if it is on it, so one lost
    record costs one error, not every one after it. Only functions with
    both an entry and a return probe take part. Returns (returns checked,
    errors)."""
    by_id = {p.id: p for p in probes}
    both = {p.function for p in probes if p.kind == "entry"} & \
        {p.function for p in probes if p.kind == "return"}
    stacks: dict = defaultdict(list)
    checked, errors = 0, []
    for ev in events:
        p = by_id.get(ev.probe)
        k = key(ev)
        if (p is None or k is None or p.function not in both
                or ev.kind not in (K_ENTRY, K_RETURN)):
            continue
        st = stacks[k]
        if ev.kind == K_ENTRY:
            st.append(p.function)
            continue
        checked += 1
        if st and st[-1] == p.function:
            st.pop()
        elif st or not outer_ok:
            errors.append(f"{k}: t{ev.thread} cpu{ev.cpu}: return from {p.function} "
                          f"while the innermost entry is {st[-1] if st else 'none'}")
            if p.function in st:
                del st[len(st) - 1 - st[::-1].index(p.function):]
    return checked, errors


@dataclass
class Report:
    entries: Counter
    returns: Counter
    expected: dict[str, int]
    nesting_errors: list[str]
    nesting_checked: int
    dropped: int
    fired: int
    recorded: int
    link_errors: list
    problems: list[str]
    entries_probed: set
    returns_probed: set
    branches: Counter = field(default_factory=Counter)   # per function

    def _per_kind(self):
        return (("entries", self.entries_probed, self.entries),
                ("returns", self.returns_probed, self.returns))

    @property
    def expected_firings(self) -> int:
        return sum(self.expected.get(f, 0) for _, probed, _ in self._per_kind()
                   for f in probed)

    @property
    def traced(self) -> int:
        """Entry and return records (what the ground truth counts)."""
        return sum(self.entries.values()) + sum(self.returns.values())

    @property
    def missed(self) -> int:
        """Firings the ground truth says happened and the trace lacks."""
        return sum(max(0, self.expected[f] - seen[f])
                   for _, probed, seen in self._per_kind()
                   for f in probed if f in self.expected)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(cap: Capture, probes: list[Probe], link_errors=(),
           allow_missing: bool = False) -> Report:
    """Counts, nesting, drops and link errors. allow_missing is for the
    lossy baselines and for toggled probes: nesting and counts are then
    measured but not held against the run."""
    by_id = {p.id: p for p in probes}
    entries, returns, branches = Counter(), Counter(), Counter()
    problems: list[str] = []
    for ev in cap.events:
        p = by_id.get(ev.probe)
        if p is None:
            problems.append(f"record for unknown probe {ev.probe}")
        elif ev.kind == K_ENTRY:
            entries[p.function] += 1
        elif ev.kind == K_RETURN:
            returns[p.function] += 1
        elif ev.kind == K_BRANCH:
            branches[p.function] += 1
    checked, nesting_errors = _nesting(cap.events, probes, lambda ev: ev.thread,
                                       outer_ok=False)
    stats = cap.stats.values()
    rep = Report(entries, returns, dict(cap.expects), nesting_errors, checked,
                 sum(s["dropped"] for s in stats), sum(s["fired"] for s in stats),
                 sum(s["recorded"] for s in stats), list(link_errors), problems,
                 {p.function for p in probes if p.kind == "entry"},
                 {p.function for p in probes if p.kind == "return"}, branches)
    if not cap.stats:
        problems.append("no STATS frames: the guest's counters never arrived")
    if link_errors:
        problems.append(f"{len(link_errors)} link errors (lost or damaged frames): "
                        + "; ".join(str(e) for e in link_errors[:3]))
    if rep.dropped:
        problems.append(f"{rep.dropped} records dropped (a trace buffer was full)")
    sent = sum(s["sent"] for s in stats)
    got = len(cap.events) + len(cap.checks)
    if cap.stats and sent != got:
        problems.append(f"the guest sent {sent} records, the host decoded {got}")
    if not allow_missing:
        if nesting_errors:
            problems.append(f"nesting broken: {nesting_errors[0]}")
        for what, probed, seen in rep._per_kind():
            for f in sorted(probed & rep.expected.keys()):
                if seen[f] != rep.expected[f]:
                    problems.append(f"{f}: {seen[f]} {what} traced, the workload "
                                    f"counted {rep.expected[f]} calls")
    return rep


def check_windows(cap: Capture, probes: list[Probe],
                  windows: list[tuple[int, int]]) -> tuple[int, list[str]]:
    """Nesting inside windows of guest time in which every probe was armed
    (start, end in cycles); a return may belong to a call that began before
    its window. Returns (returns checked, errors)."""
    starts = [w[0] for w in windows]

    def window_of(ev):
        i = bisect.bisect_right(starts, ev.cycles) - 1
        if i < 0 or ev.cycles > windows[i][1]:
            return None
        return (f"window {i}", ev.thread)
    return _nesting(cap.events, probes, window_of, outer_ok=True)
