"""The streaming verifier (bench/trace/stream.py) on synthetic record
streams, no guest: frames encoded as the guest sends them (EVENTS of one
CPU each, STATS, EXPECT), fed in the order a consumer reading every ring in
turn would get them. Its Report must be verify()'s on the same frames
decoded whole, with exact counts; what it holds back stays bounded while
the run grows. Then the faults: a record lost in the middle with no
DROPS (reported missed exactly, as verify() does), a counted loss, a
CPU's stream going back in time, and a broken verifier that walks one
record fewer than it counts (caught by its own check)."""

import random

from bench.trace.sites import Probe
from bench.trace.stream import StreamVerifier
from bench.trace.verify import verify
from bench.wire import frames as wf
from bench.wire.records import (DROPS, EVENT, EVENTS_HEAD, EXPECT, K_DROPS, K_ENTRY,
                                K_RETURN, K_SWITCH, NO_PROBE, STATS, SWITCH, decode)

FUNCS = ("ct_a", "ct_b", "ct_c", "ct_d")
PROBES = [Probe(2 * i + k, f, kind, 0x1000 * (i + 1) + k)
          for i, f in enumerate(FUNCS) for k, kind in enumerate(("entry", "return"))]
ID = {(p.function, p.kind): p.id for p in PROBES}
ORDER, WB = "<", 4
PER_FRAME = 50


def workload(cpus: int, threads_per_cpu: int, calls: int, seed: int = 1):
    """Per CPU its records (kind, thread, probe, cycles, words) in order, and
    the calls of each function: each thread runs `calls` top-level calls of
    random depth on its CPU; a CPU switches thread between them."""
    rnd = random.Random(seed)
    out, expect = {c: [] for c in range(cpus)}, {f: 0 for f in FUNCS}
    for cpu in range(cpus):
        cyc = 1000 + cpu                # the CPUs interleave in time
        threads = [1 + cpu * threads_per_cpu + i for i in range(threads_per_cpu)]
        running = None
        for n in range(calls * threads_per_cpu):
            t = threads[n % threads_per_cpu]
            if t != running:
                w = [0] * 4
                w[SWITCH.FROM], w[SWITCH.TO] = running or 0, t
                cyc += cpus
                out[cpu].append((K_SWITCH, t, NO_PROBE, cyc, w))
                running = t
            depth = rnd.randint(1, len(FUNCS))
            for f in FUNCS[:depth]:
                cyc += cpus
                out[cpu].append((K_ENTRY, t, ID[(f, "entry")], cyc, [0, 0, 0]))
                expect[f] += 1
            for f in reversed(FUNCS[:depth]):
                cyc += cpus
                out[cpu].append((K_RETURN, t, ID[(f, "return")], cyc, [0]))
    return out, expect


def events_frame(cpu: int, recs, seq: int) -> wf.Frame:
    body = b"".join(EVENT.pack(ORDER, kind=k, nwords=len(w), thread=t, probe=p, cycles=c)
                    + b"".join(x.to_bytes(WB, "little") for x in w)
                    for k, t, p, c, w in recs)
    head = EVENTS_HEAD.pack(ORDER, cpu=cpu, count=len(recs))
    return wf.Frame(wf.T_EVENTS, seq, head + body, 0)


def frames_of(per_cpu: dict, expect: dict, dropped=None) -> list:
    """EVENTS frames of PER_FRAME records in the order they fill (a
    consumer's polls), then each CPU's STATS and the EXPECT frames."""
    dropped = dropped or {}
    out, seq = [], 0
    chunks = {c: [r[i:i + PER_FRAME] for i in range(0, len(r), PER_FRAME)]
              for c, r in per_cpu.items()}
    # Each frame as the consumer would find it: once its last record is in.
    done = sorted((ch[-1][3], cpu, i, ch) for cpu, chs in chunks.items()
                  for i, ch in enumerate(chs))
    for _, cpu, _, ch in done:
        out.append(events_frame(cpu, ch, seq))
        seq += 1
    for cpu, recs in per_cpu.items():
        real = [r for r in recs if r[0] != K_DROPS]
        sw = sum(r[0] == K_SWITCH for r in real)
        fired = len(real) - sw + dropped.get(cpu, 0)
        out.append(wf.Frame(wf.T_STATS, seq, STATS.pack(
            ORDER, cpu=cpu, fired=fired, recorded=len(real), dropped=dropped.get(cpu, 0),
            sent=len(recs), buffer_bytes=1 << 18, missed=0, switches=sw), 0))
        seq += 1
    for f, n in expect.items():
        out.append(wf.Frame(wf.T_EXPECT, seq, EXPECT.pack(ORDER, calls=n) + f.encode(), 0))
        seq += 1
    return out


def streamed(frame_list, cpus: int, cls=StreamVerifier, batch: int = 7, probes=PROBES,
             **kw):
    """The frames fed batch at a time to a cls(probes, ..., **kw); it and its Report."""
    sv = cls(probes, ORDER, WB, cpus, **kw)
    for i in range(0, len(frame_list), batch):
        sv.feed(frame_list[i:i + batch])
    return sv, sv.report()


def same(a, b) -> None:
    """Two Reports with the same verdict, counts and nesting walk."""
    assert a.problems == b.problems
    assert (a.entries, a.returns, a.missed, a.dropped, a.fired, a.recorded) == \
        (b.entries, b.returns, b.missed, b.dropped, b.fired, b.recorded)
    assert (a.nesting_checked, a.unchecked, a.switches) == \
        (b.nesting_checked, b.unchecked, b.switches)
    assert [str(e) for e in a.nesting_errors] == [str(e) for e in b.nesting_errors]
    assert [l.describe() for l in a.losses] == [l.describe() for l in b.losses]
    assert a.calls_lines() == b.calls_lines()


def test_a_clean_run_is_verify_s_verdict_with_exact_counts():
    per_cpu, expect = workload(cpus=4, threads_per_cpu=2, calls=300)
    fl = frames_of(per_cpu, expect)
    sv, rep = streamed(fl, 4)
    assert rep.ok, rep.problems
    same(rep, verify(decode(fl, ORDER, WB), PROBES))
    assert rep.entries == rep.returns == expect and rep.missed == 0
    n = sum(len(r) for r in per_cpu.values())
    assert sv.walked == n and rep.nesting_checked == sum(expect.values())
    assert sv.capture().events == []            # nothing kept


class _Holds300(StreamVerifier):
    HOLD = 300


def test_what_it_holds_back_does_not_grow_with_the_run():
    """The CPUs end at different times (their calls differ in depth): past
    HOLD records held, the oldest are walked, the verdict the same."""
    peaks = []
    for calls in (100, 1000):
        per_cpu, expect = workload(cpus=4, threads_per_cpu=2, calls=calls)
        fl = frames_of(per_cpu, expect)
        sv, rep = streamed(fl, 4, cls=_Holds300)
        assert rep.ok and rep.entries == expect, rep.problems
        same(rep, verify(decode(fl, ORDER, WB), PROBES))
        peaks.append(sv.peak_queued)
    assert max(peaks) <= 300 + PER_FRAME


def test_a_record_behind_what_was_walked_past_hold_is_a_problem():
    """A CPU whose records come after more than HOLD of the others': its
    record earlier than the walk's place is named, not walked out of
    order silently."""
    per_cpu, expect = workload(cpus=2, threads_per_cpu=1, calls=300)
    fl = frames_of(per_cpu, expect)
    ev = [f for f in fl if f.type == wf.T_EVENTS]
    late = next(f for f in ev if f.payload[0] == 1)         # cpu1's first frame
    fl = [f for f in fl if f is not late]
    fl.insert(fl.index(next(f for f in fl if f.type != wf.T_EVENTS)), late)
    _, rep = streamed(fl, 2, cls=_Holds300)
    assert any("came after the walk had passed" in p for p in rep.problems), rep.problems


def test_a_record_lost_in_the_middle_is_missed_exactly():
    per_cpu, expect = workload(cpus=4, threads_per_cpu=2, calls=300)
    recs = per_cpu[2]
    mid = next(i for i in range(len(recs) // 2, len(recs)) if recs[i][0] == K_RETURN)
    fl = frames_of(per_cpu, expect)
    del recs[mid]                               # the guest sent it; the host lacks it
    fl = [f for f in frames_of(per_cpu, expect) if f.type == wf.T_EVENTS] + \
        [f for f in fl if f.type != wf.T_EVENTS]
    sv, rep = streamed(fl, 4)
    same(rep, verify(decode(fl, ORDER, WB), PROBES))
    assert rep.missed == 1
    n = sum(len(r) for r in per_cpu.values())
    assert f"the guest sent {n + 1} records, the host decoded {n}" in rep.problems
    assert any(p.startswith("nesting broken") for p in rep.problems)


def test_a_counted_loss_is_placed_and_reported_as_verify_does():
    per_cpu, expect = workload(cpus=2, threads_per_cpu=2, calls=200)
    recs = per_cpu[1]
    mid = len(recs) // 2
    lost, _ = recs[mid:mid + 3], None
    w = [0] * len(vars(DROPS))
    w[DROPS.COUNT], w[DROPS.FIRST], w[DROPS.THREADS] = 3, lost[0][3], 0xffffffff
    recs[mid:mid + 3] = [(K_DROPS, 0, NO_PROBE, recs[mid + 3][3] - 1, w)]
    fl = frames_of(per_cpu, expect, dropped={1: 3})
    sv, rep = streamed(fl, 2)
    same(rep, verify(decode(fl, ORDER, WB), PROBES))
    assert rep.dropped == 3 and len(rep.losses) == 1
    assert any("3 records lost" in p for p in rep.problems)


def test_a_stream_going_back_in_time_is_a_problem():
    per_cpu, expect = workload(cpus=2, threads_per_cpu=1, calls=50)
    k, t, p, c, w = per_cpu[0][40]
    per_cpu[0][40] = (k, t, p, per_cpu[0][10][3], w)
    _, rep = streamed(frames_of(per_cpu, expect), 2)
    assert any("goes back in time" in p for p in rep.problems)


class _SkipsOne(StreamVerifier):
    """Broken: counts every record but never walks the 100th."""

    def _take(self, item):
        self.seen = getattr(self, "seen", 0) + 1
        if self.seen == 100:
            self.tally.event(item)
            return
        super()._take(item)


def test_a_verifier_that_skips_a_record_s_nesting_check_is_caught():
    per_cpu, expect = workload(cpus=2, threads_per_cpu=2, calls=100)
    fl = frames_of(per_cpu, expect)
    _, good = streamed(fl, 2)
    assert good.ok
    _, bad = streamed(fl, 2, cls=_SkipsOne)
    assert any("walked" in p for p in bad.problems), bad.problems


def test_the_spool_gives_back_every_frame_in_order_a_few_at_a_time():
    """bench/trace/spool.py, between the guest's list and the verifier:
    frames put in bursts and taken FEED_FRAMES-sized come back the same,
    and the verdict through it is the same."""
    from bench.trace.spool import Spool
    per_cpu, expect = workload(cpus=4, threads_per_cpu=2, calls=200)
    fl = frames_of(per_cpu, expect)
    sp, back = Spool(), []
    for i in range(0, len(fl), 11):
        sp.put(fl[i:i + 11])
        got = sp.get(4)
        assert len(got) <= 4
        back += got
    while len(sp):
        back += sp.get(4)
    assert sp.get(4) == [] and sp.peak > 0
    sp.close()
    assert [(f.type, f.seq, bytes(f.payload)) for f in back] == \
        [(f.type, f.seq, bytes(f.payload)) for f in fl]
    _, rep = streamed(back, 4)
    assert rep.ok and rep.entries == expect


def test_the_spool_merged_by_cpu_feeds_a_late_cpu_in_its_place():
    """A CPU whose sub-buffers fill late (its frames arrive after millions
    of the others' records, at the end of a run) holds the verifier back
    past HOLD when fed in arrival order (the test above: a problem). The
    spool keyed by StreamVerifier.frame_key hands it back in its place:
    the verdict is verify()'s, nothing held past a few frames; a frame of
    no CPU (STATS, EXPECT) still comes after the CPU frames that came
    before it."""
    from bench.trace.spool import Spool
    per_cpu, expect = workload(cpus=2, threads_per_cpu=1, calls=300)
    fl = frames_of(per_cpu, expect)
    ev = [f for f in fl if f.type == wf.T_EVENTS]
    # cpu1's frames all come after cpu0's, in their own order: a ring the
    # consumer finds complete only late.
    fl = [f for f in ev if f.payload[0] == 0] + [f for f in ev if f.payload[0] == 1] + \
        [f for f in fl if f.type != wf.T_EVENTS]
    sv = _Holds300(PROBES, ORDER, WB, 2)
    sp, back = Spool(key=sv.frame_key), []
    for i in range(0, len(fl), 13):
        sp.put(fl[i:i + 13])
    while len(sp):
        got = sp.get(5)
        back += got
        sv.feed(got)
    sp.close()
    rep = sv.report()
    assert rep.ok and rep.entries == expect, rep.problems
    same(rep, verify(decode(fl, ORDER, WB), PROBES))
    assert sv.peak_queued <= 2 * PER_FRAME
    assert sorted(f.seq for f in back) == sorted(f.seq for f in fl)
    first_other = next(i for i, f in enumerate(back) if f.type != wf.T_EVENTS)
    assert all(f.type != wf.T_EVENTS for f in back[first_other:])
    # Without the key, the same frames come back as they came: the late
    # frame is a problem (what the key is for).
    plain = Spool()
    plain.put(fl)
    _, bad = streamed(plain.get(len(fl)), 2, cls=_Holds300)
    plain.close()
    assert any("came after the walk had passed" in p for p in bad.problems)
