"""The streaming verifier in bulk (bench/trace/stream.py's `fast`, Walker.walk)
against the same verifier a record at a time, and against verify(): a
10^5-record stream gives verify()'s Report exactly; streams spoilt at
random (records lost with and without DROPS, flipped, moved to another
thread, back in time, late past HOLD, unknown probes, context switches
that lie, arch_context_switch's entry on the outgoing stack, interrupts,
the end-of-stream loss) give the reference's every problem, nesting
break with its history, count and call line; the bulk walk takes the
records in the heap's order. Broken variants of the bulk path (a record
queued and never walked, a return paired without looking at the innermost
entry, a merge that walks ahead of the slowest CPU or one CPU after
another) are caught."""

import random

from bench.trace import callstacks
from bench.trace.callstacks import SWITCH_FUNCTION
from bench.trace.sites import Probe
from bench.trace.stream import StreamVerifier
from bench.trace.verify import verify
from bench.wire import frames as wf
from bench.wire.records import (DROPS, K_DROPS, K_ENTRY, K_IRQ, K_RETURN, K_SWITCH,
                                NO_PROBE, SWITCH, decode)
import test_stream
from test_stream import ORDER, PROBES, WB, frames_of, same, workload

ACS = [Probe(90, SWITCH_FUNCTION, "entry", 0x9000), Probe(91, SWITCH_FUNCTION, "return", 0x9001)]
ALL = PROBES + ACS


def streamed(fl, cpus, fast=True, cls=StreamVerifier, probes=PROBES, batch=5):
    return test_stream.streamed(fl, cpus, cls, batch, probes, fast=fast)


def identical(a, b, sa, sb) -> None:
    """Two verifiers' Reports and walks, to the last line."""
    same(a, b)
    assert [e.history for e in a.nesting_errors] == [e.history for e in b.nesting_errors]
    assert (a.left_open, a.interrupts, a.calls) == (b.left_open, b.interrupts, b.calls)
    assert (sa.walked, sa.peak_queued, sa.walked_to) == (sb.walked, sb.peak_queued,
                                                          sb.walked_to)


def test_a_100000_record_stream_is_verify_s_report_through_the_bulk_path():
    per_cpu, expect = workload(cpus=4, threads_per_cpu=2, calls=2100, seed=7)
    n = sum(len(r) for r in per_cpu.values())
    assert n >= 100_000
    fl = frames_of(per_cpu, expect)
    sv, rep = streamed(fl, 4, batch=32)
    assert sv.fast and sv.walked == n
    assert rep.ok and rep.entries == rep.returns == expect, rep.problems
    whole = verify(decode(fl, ORDER, WB), PROBES)
    same(rep, whole)
    assert rep.calls == whole.calls and rep.nesting_checked == sum(expect.values())
    slow, reference = streamed(fl, 4, fast=False, batch=32)
    identical(rep, reference, sv, slow)


def spoil(per_cpu: dict, rnd: random.Random) -> dict:
    """Some faults at random; returns the records each CPU's STATS counts lost."""
    dropped = {}
    cpus = sorted(per_cpu)
    for _ in range(rnd.randint(1, 4)):
        cpu = rnd.choice(cpus)
        recs = per_cpu[cpu]
        i = rnd.randrange(1, len(recs) - 4)
        k, t, p, c, w = recs[i]
        fault = rnd.randrange(10)
        if fault == 0:                          # lost, nothing says so
            del recs[i]
        elif fault == 1:                        # flipped with the next
            recs[i], recs[i + 1] = recs[i + 1], recs[i]
        elif fault == 2:                        # another thread's
            recs[i] = (k, t + 1, p, c, w)
        elif fault == 3 and k != K_DROPS:       # counted loss
            n = rnd.randint(1, 3)
            w = [0] * len(vars(DROPS))
            w[DROPS.COUNT], w[DROPS.FIRST] = n, recs[i][3]
            w[DROPS.THREADS] = rnd.choice([0xffffffff, 1 << recs[i][1]])
            recs[i:i + n] = [(K_DROPS, 0, NO_PROBE, recs[i + n][3] - 1, w)]
            dropped[cpu] = dropped.get(cpu, 0) + n
        elif fault == 4:                        # back in time
            recs[i] = (k, t, p, recs[max(0, i - rnd.randint(1, 30))][3], w)
        elif fault == 5:                        # a probe nobody added
            recs.insert(i, (K_ENTRY, t, 77, c, [0, 0, 0]))
        elif fault == 6:                        # lost at the end
            dropped[cpu] = dropped.get(cpu, 0) + rnd.randint(1, 5)
        elif fault == 7 and k == K_SWITCH:      # a SWITCH that lies
            w = list(w)
            w[SWITCH.FROM] += 1
            recs[i] = (k, t, p, c, w)
        elif fault == 8:                        # an interrupt around nothing
            recs[i:i] = [(K_IRQ, t, NO_PROBE, c, [32, 0]), (K_IRQ, t, NO_PROBE, c, [32, 1])]
        elif fault == 9:                        # a thread exits
            recs[i] = (k, t, p, c, w) if k != K_SWITCH else \
                (k, t, p, c, [w[0], w[1], 2, w[3]])
    return dropped


def with_context_switches(per_cpu: dict, rnd: random.Random) -> None:
    """arch_context_switch as the kernel records it: its entry after each
    SWITCH (the outgoing thread's), its return as the incoming one resumes
    (at the same cycles: ties in a CPU's order)."""
    for cpu, recs in per_cpu.items():
        out = []
        for r in recs:
            out.append(r)
            if r[0] == K_SWITCH and rnd.random() < 0.7:
                to, c = r[4][SWITCH.TO], r[3]
                out.append((K_ENTRY, to, 90, c, [0, 0, 0]))
                if rnd.random() < 0.8:
                    out.append((K_RETURN, to, 91, c, [0]))
        per_cpu[cpu] = out


class _Holds200(StreamVerifier):
    HOLD = 200


def test_spoilt_streams_give_the_record_at_a_time_verdict_to_the_last_line():
    for seed in range(60):
        rnd = random.Random(seed)
        cpus = rnd.choice([1, 2, 3, 4])
        per_cpu, expect = workload(cpus=cpus, threads_per_cpu=rnd.choice([1, 2, 3]),
                                   calls=rnd.randint(20, 120), seed=seed)
        if seed % 2:
            with_context_switches(per_cpu, rnd)
        dropped = spoil(per_cpu, rnd) if seed % 5 else {}
        fl = frames_of(per_cpu, expect, dropped=dropped)
        if seed % 3 == 0 and cpus > 1:          # a CPU's frame comes late
            ev = [f for f in fl if f.type == wf.T_EVENTS]
            late = rnd.choice(ev[: len(ev) // 2])
            fl.remove(late)
            fl.insert(len(ev) - 1, late)
        cls = _Holds200 if seed % 4 == 0 else StreamVerifier
        sa, a = streamed(fl, cpus, True, cls, ALL, batch=rnd.randint(1, 9))
        sb, b = streamed(fl, cpus, False, cls, ALL, batch=rnd.randint(1, 9))
        assert sa.fast and not sb.fast
        identical(a, b, sa, sb)


class _DropsOneInBulk(StreamVerifier):
    """Broken: its 20th frame's last record is counted, never queued."""

    def _queue(self, cpu):
        self.frames = getattr(self, "frames", 0) + 1
        q = super()._queue(cpu)
        return q if self.frames != 20 else _Leaky(q)


class _Leaky(list):
    def __init__(self, q):
        super().__init__()
        self.q = q

    def extend(self, recs):
        self.q.extend(recs[:-1])


def test_a_bulk_walk_that_loses_a_record_is_caught():
    per_cpu, expect = workload(cpus=2, threads_per_cpu=2, calls=100)
    fl = frames_of(per_cpu, expect)
    _, good = streamed(fl, 2)
    assert good.ok
    sv, bad = streamed(fl, 2, cls=_DropsOneInBulk)
    assert sv.fast and sv.frames >= 20
    assert any("the stream walked" in p for p in bad.problems), bad.problems


def test_a_bulk_walk_that_pairs_any_return_is_caught(monkeypatch):
    """A flipped pair of records is a break through the bulk path; with a
    walk that pops whatever is innermost it would not be."""
    per_cpu, expect = workload(cpus=2, threads_per_cpu=1, calls=60)
    recs = per_cpu[1]
    i = next(i for i in range(len(recs) // 2, len(recs))
             if recs[i][0] == K_RETURN and recs[i + 1][0] == K_RETURN)
    (k, t, p, c, w), (k2, t2, p2, c2, w2) = recs[i], recs[i + 1]
    recs[i], recs[i + 1] = (k2, t2, p2, c, w2), (k, t, p, c2, w)   # in time still
    fl = frames_of(per_cpu, expect)
    _, rep = streamed(fl, 2)
    assert any(p.startswith("nesting broken") for p in rep.problems), rep.problems
    same(rep, verify(decode(fl, ORDER, WB), PROBES))

    class _AnyTop(callstacks._Frame):
        def __init__(self, frame):
            super().__init__(frame.function, frame.uncertain, frame.partial)

        def __getattribute__(self, name):   # every function matches it
            return _Any() if name == "function" else super().__getattribute__(name)

    class _Any(str):
        def __eq__(self, other):
            return True
        __hash__ = str.__hash__

    init = callstacks.Walker.__init__

    def broken(self, *a, **k):
        init(self, *a, **k)
        self.frame_of = {f: _AnyTop(fr) for f, fr in self.frame_of.items()}
    monkeypatch.setattr(callstacks.Walker, "__init__", broken)
    _, bad = streamed(fl, 2)
    assert not any(p.startswith("nesting broken") for p in bad.problems), bad.problems




class _WalksAhead(StreamVerifier):
    """Broken: walks every record queued, not waiting for the slowest CPU."""

    def _walk_merged(self, until_empty):
        super()._walk_merged(True)


class _SortsByCpu(StreamVerifier):
    """Broken: merges the CPUs' records one CPU after the other."""

    def _walk_merged(self, until_empty):
        walk = self.walker.walk
        self.walker.walk = lambda recs: walk(sorted(recs, key=lambda r: r[4]))
        try:
            super()._walk_merged(until_empty)
        finally:
            self.walker.walk = walk


def walk_order(fl, cpus, fast, cls=StreamVerifier):
    """(cycles, cpu) of every record in the order the walk took them."""
    sv = cls(PROBES, ORDER, WB, cpus, fast=fast)
    order = []
    if fast:
        walk = sv.walker.walk
        sv.walker.walk = lambda recs: (order.extend((r[0], r[4]) for r in recs), walk(recs))
    else:
        step = sv.walker.step
        sv.walker.step = lambda ev: (order.append((ev.cycles, ev.cpu)), step(ev))
    for i in range(0, len(fl), 5):
        sv.feed(fl[i:i + 5])
    sv.report()
    return order


def test_the_bulk_walk_takes_the_records_in_the_heap_s_order():
    per_cpu, expect = workload(cpus=4, threads_per_cpu=2, calls=100)
    with_context_switches(per_cpu, random.Random(3))     # ties in a CPU's order
    fl = frames_of(per_cpu, expect)
    heap = walk_order(fl, 4, fast=False)
    assert len(heap) == sum(len(r) for r in per_cpu.values())
    assert walk_order(fl, 4, fast=True) == heap
    assert walk_order(fl, 4, True, _SortsByCpu) != heap
    _, ahead = streamed(fl, 4, cls=_WalksAhead)
    assert any("came after the walk had passed" in p for p in ahead.problems)


def test_a_damaged_events_frame_is_decode_s_error_at_the_same_record():
    """Cut short, run over, left over, a short DROPS record: the bulk
    decoder raises records.py's ProtocolError, word for word."""
    import pytest
    from bench.errors import ProtocolError
    from test_stream import events_frame
    per_cpu, _ = workload(cpus=1, threads_per_cpu=2, calls=3)
    recs = per_cpu[0][:12]
    w = [0] * len(vars(DROPS))
    good = events_frame(0, recs, 0)
    damaged = [wf.Frame(wf.T_EVENTS, 1, good.payload[:cut], 0)
               for cut in (17, 30, 40, len(good.payload) - 1)]
    damaged.append(wf.Frame(wf.T_EVENTS, 2, good.payload + b"\0" * 8, 0))
    more = bytearray(good.payload)
    more[2] += 1                                        # count one record more
    damaged.append(wf.Frame(wf.T_EVENTS, 3, bytes(more), 0))
    damaged.append(events_frame(0, recs[:3] + [(K_DROPS, 0, NO_PROBE, 1, w[:2])], 4))
    damaged.append(events_frame(0, [(K_DROPS, 0, NO_PROBE, 1, w[:2])] + recs, 5))
    for fr in damaged:
        with pytest.raises(ProtocolError) as whole:
            decode([fr], ORDER, WB)
        with pytest.raises(ProtocolError) as bulk:
            StreamVerifier(PROBES, ORDER, WB, 1).feed([fr])
        assert str(bulk.value) == str(whole.value)
