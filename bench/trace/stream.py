"""Verifying a run's records as they come, keeping none: memory bounded by
the records in flight, not by the run's length.

StreamVerifier takes the trace frames in arrival order (feed()), decodes
each EVENTS frame's records with the capture's own decoder (bench/wire/
records.py) and counts each one (verify.Tally) and queues it on its CPU.
A record is walked (callstacks.Walker.step) once every CPU of the run has
one queued, or at the end, smallest (cycles, cpu, index) first: the order
verify() walks a whole capture in, since a CPU's records come in its
stream's order and its cycle counter never goes back (a record that does
is a problem of its own). A DROPS record becomes a loss before any record
after its first cycle is walked (it comes before its CPU's next record,
which holds that CPU's queue back); each CPU's end-of-stream loss is known
from the STATS frames when report() walks the rest. What is kept: each
CPU's records ahead of the slowest CPU's, the walk's stacks and the last
records of each thread, counters. A CPU that writes nothing for a long
time (idle, its threads done: calltree's reference run is one thread)
would hold the others' records back until the end; past HOLD records
held, the oldest are walked anyway, and a record (or a loss) that comes
later with an earlier cycle than the walk has reached is a problem, named:
the order is kept or the verdict says it was not, never silently.
report() builds verify()'s Report from a Capture with everything but the
records, so the verdicts and their PROBLEM lines are verify()'s own.
That is the reference, a record at a time; by default (`fast`) the same
is done a frame and a merge at a time (_events_frame, _walk_merged,
Walker.walk), some 4.4 times faster (tests/stream_rate.py).
"""

from __future__ import annotations

import heapq
import struct
from bisect import bisect_right
from collections import deque
from operator import itemgetter

from ..wire import records
from ..wire.records import (DROPS, EVENT, EVENTS_HEAD, K_CHECK, K_DROPS, K_IRQ,
                             K_SWITCH, Capture, Event, Loss)
from .callstacks import Walker, by_thread
from .sites import Probe
from .verify import Report, Tally, verify


class _Decoder(records._Decoder):
    """records' decoder whose records go to the verifier, not to lists."""

    def __init__(self, order: str, word_bytes: int, sink):
        super().__init__(order, word_bytes)
        self.sink = sink

    def _record(self, fr, cpu: int, e: dict, words) -> None:
        marked = len(self.marked)
        index = self.ends.get(cpu, (0, 0))[0]
        if e["kind"] != K_DROPS:
            ev = Event(cpu, e["thread"], e["probe"], e["kind"], e["cycles"], words, index)
            self.ends[cpu] = (index + 1, e["cycles"])
            self.sink(ev)
            return
        super()._record(fr, cpu, e, words)
        if len(self.marked) > marked:
            self.sink(self.marked[-1])


_CYCLES = itemgetter(0)
# _events_frame() takes a record's header apart in wire.h's field order.
_HEADER = ("kind", "nwords", "thread", "probe", "cycles")
if tuple(f.name for f in EVENT.fields) != _HEADER:
    raise ImportError(f"struct wire_event is {[f.name for f in EVENT.fields]}, "
                      f"bench/trace/stream.py reads it as {list(_HEADER)}")
# Records whose words someone reads: the walk's, the checker's, a loss's.
_WORDY = frozenset((K_SWITCH, K_IRQ, K_DROPS, K_CHECK))


class StreamVerifier:
    """feed() the frames as they arrive, then report(). cpus: how many
    CPUs the run has (each one's records hold the walk back until it has
    one queued, or HOLD are held)."""

    # Some 300 MB of decoded records; a ring of 256 KiB a CPU holds about
    # 6,500 i386 records, so no CPU's next record is that far behind.
    HOLD = 1_000_000

    def __init__(self, probes: list[Probe], order: str, word_bytes: int, cpus: int,
                 refused: list[Probe] = (), fast: bool | None = None):
        self.probes, self.refused, self.cpus = probes, list(refused), cpus
        self.tally = Tally(probes)
        self.walker = Walker(probes, by_thread, False, refused)
        self.decoder = _Decoder(order, word_bytes, self._take)
        # A subclass that hooks _take() (a test's broken variant) sees each
        # record only a record at a time.
        self.fast = type(self)._take is StreamVerifier._take if fast is None else fast
        self.runs: dict[int, list] = {}         # cpu: its records, walked up to heads
        self.heads: dict[int, int] = {}
        self.disordered: set = set()            # CPUs whose queue goes back in time
        self.word_structs: dict[int, object] = {}
        self.queues: dict[int, deque] = {}
        self.last: dict[int, int] = {}          # cpu: cycles of its last record
        self.order_problems: list[str] = []
        self.checks: list[Event] = []
        self.walked = 0
        self.queued = 0
        self.walked_to = -1                     # cycles of the last record walked
        self.peak_queued = 0                    # most records held back at once

    def frame_key(self, fr):
        """bench/trace/spool.py's key: an EVENTS frame's CPU and the cycle
        of its first record (None: it has none), so a spool can hand the
        frames back merged by CPU; None for any other frame, or one too
        damaged to say, which feed() then meets in its arrival order."""
        if fr.type != records.frames.T_EVENTS:
            return None
        p = fr.payload
        try:
            head = EVENTS_HEAD.unpack(p, self.decoder.order)
        except records.cdefs.CdefsError:
            return None
        if not head["count"] or len(p) < EVENTS_HEAD.size + EVENT.size:
            return head["cpu"], None
        return head["cpu"], self.decoder.event_struct.unpack_from(p, EVENTS_HEAD.size)[4]

    def feed(self, frame_list) -> None:
        """Frames in arrival order (any, as decode() takes them)."""
        steps = self.decoder.FRAMES
        fast = self.fast
        for fr in frame_list:
            step = steps.get(fr.type)
            if step is not None:
                try:
                    if fast and fr.type == records.frames.T_EVENTS:
                        self._events_frame(fr, fr.payload)
                    else:
                        step(self.decoder, fr, fr.payload)
                except records.cdefs.CdefsError as e:
                    raise records.ProtocolError(
                        f"{records.frames.FRAME_NAMES[fr.type]} frame seq "
                        f"{fr.seq}: {e}") from None
                self._walk_ready()      # a frame at a time: little held back

    def _take(self, item) -> None:
        if isinstance(item, Loss):
            self._take_loss(item)
            return
        if item.kind == K_CHECK:
            self._take_check(item)
            return
        self._in_order(item)
        self.queued += 1
        if item.kind in (K_SWITCH, K_IRQ):
            self.tally.switch(item)
        else:
            self.tally.event(item)
        self.queues.setdefault(item.cpu, deque()).append(item)

    def _take_loss(self, loss: Loss) -> None:
        if loss.first < self.walked_to:
            self.order_problems.append(
                f"cpu{loss.cpu}: its loss from cycle {loss.first} came after the "
                f"walk had passed cycle {self.walked_to} (more than {self.HOLD} "
                "records were held)")
        self.walker.add_loss(loss)

    def _take_check(self, ev: Event) -> None:
        self.checks.append(ev)              # the checker's, kept as decode() does
        self.tally.checks += 1
        self.tally.decoded += 1

    def _in_order(self, ev: Event) -> bool:
        """Whether the record is in order: after its CPU's last, not behind
        the walk (each a problem, named)."""
        ok = True
        before = self.last.get(ev.cpu)
        if before is not None and ev.cycles < before:
            ok = False
            self.order_problems.append(
                f"cpu{ev.cpu}: its record {ev.index} at cycle {ev.cycles} "
                f"comes after one at cycle {before}: its stream goes back in time")
        self.last[ev.cpu] = ev.cycles
        if ev.cycles < self.walked_to:
            ok = False
            self.order_problems.append(
                f"cpu{ev.cpu}: its record {ev.index} at cycle {ev.cycles} came "
                f"after the walk had passed cycle {self.walked_to} (more than "
                f"{self.HOLD} records were held)")
        return ok

    # ---- in bulk (fast) ----

    def _events_frame(self, fr, p) -> None:
        """An EVENTS frame's records as tuples (cycles, thread, probe, kind,
        cpu, words: words only where someone reads them), its errors
        records._Decoder's, counted and queued at once, unless one is odd
        (a loss, a CHECK or LOG record, an unknown probe or one with a
        program, one back in time or behind the walk): that frame goes a
        record at a time, as _take() would take it."""
        d = self.decoder
        d.nframes += 1
        d.nbytes += len(p)
        head = EVENTS_HEAD.unpack(p, d.order)
        cpu = head["cpu"]
        plen, off, hsize, word_bytes = len(p), EVENTS_HEAD.size, EVENT.size, d.word_bytes
        unpack, word_structs = d.event_struct.unpack_from, self.word_structs
        recs, keys, switches, odd = [], [], 0, False
        before = self.last.get(cpu, -1)
        lowest = max(before, self.walked_to)    # any record below is a problem
        # A record past the end is found by the next read that fails (a
        # header or words: struct.error) or by where the last one ends:
        # the same error, at the same record, as a check before each read.
        try:
            for _ in range(head["count"]):
                kind, nwords, thread, probe, cycles = unpack(p, off)
                off += hsize
                if kind in _WORDY:
                    words = word_structs.get(nwords)
                    if words is None:
                        words = word_structs[nwords] = struct.Struct(
                            f"{d.order}{nwords}{d.wfmt}").unpack_from
                    words = words(p, off)
                    if kind == K_SWITCH or kind == K_IRQ:
                        switches += 1
                    else:
                        odd = True
                        if kind == K_DROPS and nwords < len(vars(DROPS)):
                            raise records.short_drops(fr, nwords)
                else:
                    words = None
                    keys.append(probe << 8 | kind)
                if cycles < lowest:
                    odd = True
                lowest = cycles
                off += nwords * word_bytes
                recs.append((cycles, thread, probe, kind, cpu, words))
        except struct.error:
            raise records.past_end(fr, p) from None
        if off > plen:
            raise records.past_end(fr, p)
        if off != plen:
            raise records.left_over(fr, p, off)
        if odd or not self.tally.plain.issuperset(keys):
            self._take_each(recs, cpu)
            return
        if not recs:
            return
        index = d.ends.get(cpu, (0, 0))[0]
        d.ends[cpu] = (index + len(recs), recs[-1][0])
        self.last[cpu] = recs[-1][0]
        self.tally.bulk(cpu, keys, switches)
        self._queue(cpu).extend(recs)
        self.queued += len(recs)

    def _queue(self, cpu: int) -> list:
        q = self.runs.get(cpu)
        if q is None:
            q = self.runs[cpu] = []
            self.heads[cpu] = 0
        return q

    def _take_each(self, recs: list, cpu: int) -> None:
        """A frame's records a record at a time, as _take() takes them."""
        d = self.decoder
        index = d.ends.get(cpu, (0, 0))[0]
        q = self._queue(cpu)
        for rec in recs:
            cycles, thread, probe, kind, _, words = rec
            if kind == K_DROPS:
                loss = records._loss(cpu, index, cycles, words, 8 * d.word_bytes)
                d.marked.append(loss)
                self._take_loss(loss)
                continue
            d.ends[cpu] = (index + 1, cycles)
            ev = Event(cpu, thread, probe, kind, cycles, words, index)
            index += 1
            if kind == K_CHECK:
                self._take_check(ev)
                continue
            if not self._in_order(ev):
                self.disordered.add(cpu)
            self.queued += 1
            if kind in (K_SWITCH, K_IRQ):
                self.tally.switch(ev)
            else:
                self.tally.event(ev)
            q.append(rec)

    def _walk_merged(self, until_empty: bool) -> None:
        """Every record _walk_ready()'s heap would pop, at once: while each
        CPU's queue is in cycle order the heap pops them in (cycles, cpu,
        index) order up to the last record of the first queue to empty
        (with every CPU queued) or the oldest beyond HOLD, whichever is
        further; that is, per CPU its records up to that (cycles, cpu),
        merged by one stable sort on cycles (ties keep the CPU's order and
        then its own). A CPU that went back in time has the heap walk them
        (_walk_heap)."""
        runs, heads = self.runs, self.heads
        self.peak_queued = max(self.peak_queued, self.queued)
        live = [cpu for cpu in sorted(runs) if len(runs[cpu]) > heads[cpu]]
        if not live:
            return
        if self.disordered:
            self._walk_heap(until_empty)
            return
        bound = None                    # (cycles, cpu) of the last record walked
        if not until_empty:
            if len(live) >= self.cpus:   # up to the first queue to empty
                bound = min((runs[cpu][-1][0], cpu) for cpu in live)
            over = self.queued - self.HOLD
            if over > 0:                 # the `over` oldest
                firsts = []
                for cpu in live:
                    firsts += runs[cpu][heads[cpu]:heads[cpu] + over]
                firsts.sort(key=_CYCLES)
                rec = firsts[over - 1]
                bound = max(bound or (rec[0], rec[4]), (rec[0], rec[4]))
            if bound is None:
                return
        merged, pieces = [], 0
        for cpu in live:
            q, h = runs[cpu], heads[cpu]
            stop = len(q) if bound is None else bisect_right(
                q, bound[0] if cpu <= bound[1] else bound[0] - 1, lo=h, key=_CYCLES)
            if stop > h:
                merged += q[h:stop]
                pieces += 1
                heads[cpu] = stop
        if pieces > 1:
            merged.sort(key=_CYCLES)    # stable: ties by cpu, then by index
        self.walker.walk(merged)
        self._walked(merged)

    def _walk_heap(self, until_empty: bool) -> None:
        """_walk_ready()'s heap, on the queued tuples (a CPU went back in
        time: its queue is not in cycle order)."""
        runs, heads = self.runs, self.heads
        top = [(runs[c][heads[c]][0], c, heads[c]) for c in runs if len(runs[c]) > heads[c]]
        heapq.heapify(top)
        walked = []
        while top and (until_empty or len(top) >= self.cpus
                       or self.queued - len(walked) > self.HOLD):
            _, cpu, i = heapq.heappop(top)
            self.walker.walk([runs[cpu][i]])
            walked.append(runs[cpu][i])
            heads[cpu] = i + 1
            if i + 1 < len(runs[cpu]):
                heapq.heappush(top, (runs[cpu][i + 1][0], cpu, i + 1))
        self._walked(walked)

    def _walked(self, recs: list) -> None:
        if not recs:
            return
        self.walked += len(recs)
        self.queued -= len(recs)
        self.walked_to = recs[-1][0]
        for cpu, q in self.runs.items():
            h = self.heads[cpu]
            if h == len(q):
                q.clear()
                self.heads[cpu] = 0
                self.disordered.discard(cpu)
            elif h > 4096 and 2 * h > len(q):
                del q[:h]
                self.heads[cpu] = 0

    def _walk_ready(self, until_empty: bool = False) -> None:
        """Walk records while every CPU has one queued (all, at the end)."""
        if self.fast:
            self._walk_merged(until_empty)
            return
        qs = self.queues
        self.peak_queued = max(self.peak_queued, sum(len(q) for q in qs.values()))
        heads = [(q[0].cycles, cpu, q[0].index) for cpu, q in qs.items() if q]
        heapq.heapify(heads)
        step = self.walker.step
        while heads and (until_empty or len(heads) >= self.cpus
                         or self.queued > self.HOLD):
            cycles, cpu, _ = heapq.heappop(heads)
            q = qs[cpu]
            step(q.popleft())
            self.walked += 1
            self.queued -= 1
            self.walked_to = cycles
            if q:
                heapq.heappush(heads, (q[0].cycles, cpu, q[0].index))

    def capture(self) -> Capture:
        """What decode() would return, less the events and SWITCH records."""
        d = self.decoder
        d.switches.sort(key=lambda e: e.cycles)
        return Capture([], self.checks, d.stats, d.expects, d.nframes, d.nbytes,
                       d.marked, d.ends, d.aggs, d.agg_dropped, d.probe_counts,
                       [], d.tls_dropped, d.stacks, d.stack_dropped)

    def report(self, link_errors=(), allow_missing: bool = False,
               accounting: bool | None = None) -> Report:
        """After the last frame: the rest walked, each CPU's end-of-stream
        loss placed first, and verify()'s Report."""
        cap = self.capture()
        for loss in cap.losses():
            if loss.at is None:
                self.walker.add_loss(loss)
        self._walk_ready(until_empty=True)
        walk = self.walker.close()
        # Every record counted must have been walked: a record counted and
        # never walked is a nesting check skipped, silently.
        counted = self.tally.decoded - self.tally.checks
        if counted != self.walked:
            self.order_problems.append(f"the stream walked {self.walked} of the "
                                       f"{counted} records it counted")
        self.tally.decoded += len(cap.marked)
        self.tally.settle()
        self.tally.problems[:0] = self.order_problems
        return verify(cap, self.probes, link_errors, allow_missing, self.refused,
                      accounting=accounting, tally=self.tally, walk=walk)
