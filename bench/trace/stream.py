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
"""

from __future__ import annotations

import heapq
from collections import deque

from ..wire import records
from ..wire.records import K_CHECK, K_DROPS, K_IRQ, K_SWITCH, Capture, Event, Loss
from .callstacks import Walker
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


class StreamVerifier:
    """feed() the frames as they arrive, then report(). cpus: how many
    CPUs the run has (each one's records hold the walk back until it has
    one queued, or HOLD are held)."""

    # Some 300 MB of decoded records; a ring of 256 KiB a CPU holds about
    # 6,500 i386 records, so no CPU's next record is that far behind.
    HOLD = 1_000_000

    def __init__(self, probes: list[Probe], order: str, word_bytes: int, cpus: int,
                 refused: list[Probe] = ()):
        self.probes, self.refused, self.cpus = probes, list(refused), cpus
        self.tally = Tally(probes)
        self.walker = Walker(probes, lambda ev, thread: thread, False, refused)
        self.decoder = _Decoder(order, word_bytes, self._take)
        self.queues: dict[int, deque] = {}
        self.last: dict[int, int] = {}          # cpu: cycles of its last record
        self.order_problems: list[str] = []
        self.checks: list[Event] = []
        self.walked = 0
        self.queued = 0
        self.walked_to = -1                     # cycles of the last record walked
        self.peak_queued = 0                    # most records held back at once

    def feed(self, frame_list) -> None:
        """Frames in arrival order (any, as decode() takes them)."""
        steps = self.decoder.FRAMES
        for fr in frame_list:
            step = steps.get(fr.type)
            if step is not None:
                try:
                    step(self.decoder, fr, fr.payload)
                except records.cdefs.CdefsError as e:
                    raise records.ProtocolError(
                        f"{records.frames.FRAME_NAMES[fr.type]} frame seq "
                        f"{fr.seq}: {e}") from None
                self._walk_ready()      # a frame at a time: little held back

    def _take(self, item) -> None:
        if isinstance(item, Loss):
            if item.first < self.walked_to:
                self.order_problems.append(
                    f"cpu{item.cpu}: its loss from cycle {item.first} came after the "
                    f"walk had passed cycle {self.walked_to} (more than {self.HOLD} "
                    "records were held)")
            self.walker.add_loss(item)
            return
        if item.kind == K_CHECK:
            self.checks.append(item)        # the checker's, kept as decode() does
            self.tally.checks += 1
            self.tally.decoded += 1
            return
        before = self.last.get(item.cpu)
        if before is not None and item.cycles < before:
            self.order_problems.append(
                f"cpu{item.cpu}: its record {item.index} at cycle {item.cycles} "
                f"comes after one at cycle {before}: its stream goes back in time")
        self.last[item.cpu] = item.cycles
        if item.cycles < self.walked_to:
            self.order_problems.append(
                f"cpu{item.cpu}: its record {item.index} at cycle {item.cycles} came "
                f"after the walk had passed cycle {self.walked_to} (more than "
                f"{self.HOLD} records were held)")
        self.queued += 1
        if item.kind in (K_SWITCH, K_IRQ):
            self.tally.switch(item)
        else:
            self.tally.event(item)
        self.queues.setdefault(item.cpu, deque()).append(item)

    def _walk_ready(self, until_empty: bool = False) -> None:
        """Walk records while every CPU has one queued (all, at the end)."""
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
        self.tally.problems[:0] = self.order_problems
        return verify(cap, self.probes, link_errors, allow_missing, self.refused,
                      accounting=accounting, tally=self.tally, walk=walk)
