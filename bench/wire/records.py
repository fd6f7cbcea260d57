"""Trace records, host side: EVENTS, STATS and EXPECT frames into a Capture.

AGGS frames (a program's aggregations, one CPU's entries each) and PROBES
frames (each probe's hits, program runs, faults) are kept decoded:
Capture.aggs and Capture.agg_dropped from the latest snapshot of the
tables (an earlier sending is replaced whole), Capture.probe_counts the
latest per probe; bench/program/aggregate.py merges the CPUs. STACKS
frames (each CPU's table of the call stacks `stack` keys name) become
Capture.stacks, id: the PCs innermost first, and Capture.stack_dropped.

An EVENTS frame holds records of one CPU (struct wire_events, then each
record: struct wire_event and `nwords` words of the guest's word size and
byte order, from HELLO). What the words mean is wire.h's per-kind tables
(WIRE_ENTRY_WORDS, WIRE_RETURN_WORDS, WIRE_BRANCH_WORDS, WIRE_BRANCH_BITS,
WIRE_DROPS_WORDS), read here through cdefs into ENTRY, RETURN, BRANCH,
BRANCH_BITS and DROPS, so no slot number is typed on the host. CHECK
records go to the arch's checker (bench/check/) as they are; SWITCH and
IRQ records (the scheduler's, no probe's) to Capture.switches.

Losses: a CPU whose buffer was full puts a DROPS record in front of the
next record it could write, so every loss but those at the very end of a
CPU's stream has a place, a time window and the threads whose records it
holds (Loss); the end-of-stream rest is the STATS frame's `dropped` less
the marked counts (Capture.losses() returns both).

Events of all CPUs are merged by cycle counter: QEMU gives every vCPU the
same TSC, so a thread that migrates keeps its order. A frame whose records
do not add up to its length is a ProtocolError naming its seq.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from types import SimpleNamespace

from ..errors import ProtocolError
from . import cdefs, frames
from .frames import WIRE

EVENT = WIRE.structs["wire_event"]
EVENTS_HEAD = WIRE.structs["wire_events"]
STATS = WIRE.structs["wire_stats"]
EXPECT = WIRE.structs["wire_expect"]
AGGS_HEAD = WIRE.structs["wire_aggs"]
AGG = WIRE.structs["wire_agg"]
AGG_BUCKET = WIRE.structs["wire_agg_bucket"]
PROBE_COUNTS = WIRE.structs["wire_probe_counts"]
STACKS_HEAD = WIRE.structs["wire_stacks"]
STACK = WIRE.structs["wire_stack"]

KINDS = WIRE.by_name("WIRE_EVENT_KINDS")
KIND_NAMES = {e.value: e.name for e in KINDS.values()}
K_PAD = KINDS["PAD"].value
K_ENTRY = KINDS["ENTRY"].value
K_RETURN = KINDS["RETURN"].value
K_CHECK = KINDS["CHECK"].value
K_BRANCH = KINDS["BRANCH"].value
K_DROPS = KINDS["DROPS"].value
K_LOG = KINDS["LOG"].value
K_INSN = KINDS["INSN"].value
K_SWITCH = KINDS["SWITCH"].value
K_IRQ = KINDS["IRQ"].value
NO_PROBE = WIRE.const("WIRE_NO_PROBE")

# The kinds a probe is added as, by their command word ("entry", ...).
PROBE_KINDS = {e.meaning: e.value for e in WIRE.table("WIRE_PROBE_KINDS")}


def _slots(table: str) -> SimpleNamespace:
    return SimpleNamespace(**{e.name: e.value for e in WIRE.table(table)})


ENTRY = _slots("WIRE_ENTRY_WORDS")          # ENTRY.PC, ENTRY.SP, ENTRY.ARG0
RETURN = _slots("WIRE_RETURN_WORDS")        # RETURN.VALUE ...
BRANCH = _slots("WIRE_BRANCH_WORDS")        # BRANCH.TARGET, BRANCH.FLAGS
INSN = _slots("WIRE_INSN_WORDS")            # INSN.PC, INSN.SP
BRANCH_BITS = _slots("WIRE_BRANCH_BITS")    # BRANCH_BITS.TAKEN, .ANNULLED
DROPS = _slots("WIRE_DROPS_WORDS")          # DROPS.COUNT, .FIRST, .THREADS
LOG = _slots("WIRE_LOG_WORDS")              # LOG.MAJOR, .MINOR, .BYTES, .DATA
SWITCH = _slots("WIRE_SWITCH_WORDS")        # SWITCH.FROM, .TO, .WHY, .FIRST
IRQ = _slots("WIRE_IRQ_WORDS")              # IRQ.VECTOR, IRQ.EXIT
SWITCH_WHYS = {e.value: e.meaning for e in WIRE.table("WIRE_SWITCH_WHYS")}


@dataclass
class Event:
    cpu: int
    thread: int
    probe: int
    kind: int
    cycles: int
    words: tuple
    index: int = -1        # its place in its CPU's stream (0 first), if known


@dataclass(frozen=True)
class Loss:
    """Records one CPU could not write. A marked loss happened in the
    cycle window [first, at], after `index` records of that CPU's stream;
    `mask` has bit (id mod `bits`) set for each thread that lost one, so it
    may name more threads than lost records, never fewer. A loss at the
    end of the stream has at=None and no mask (its threads are unknown): it
    came after the CPU's last record, at cycle `first`."""
    cpu: int
    count: int
    first: int
    at: int | None
    index: int
    mask: int | None
    bits: int = 32

    def affects(self, thread: int) -> bool:
        return self.mask is None or bool(self.mask >> (thread % self.bits) & 1)

    def describe(self) -> str:
        where = (f"between cycles {self.first} and {self.at}, after its record "
                 f"{self.index}" if self.at is not None else
                 f"at the end of its stream (after its record {self.index}, cycle "
                 f"{self.first})")
        if self.mask is None:
            whose = "threads unknown"
        else:
            ids = [b for b in range(self.bits) if self.mask >> b & 1]
            whose = "threads " + " ".join(f"t{b}" for b in ids) + \
                f" (ids modulo {self.bits})"
        return f"cpu{self.cpu}: {self.count} records lost {where}; {whose}"


@dataclass
class Capture:
    events: list[Event]
    checks: list[Event]
    stats: dict[int, dict]
    expects: dict[str, int]
    frames: int
    bytes: int           # EVENTS payload bytes
    marked: list[Loss] = field(default_factory=list)    # from DROPS records
    ends: dict[int, tuple[int, int]] = field(default_factory=dict)  # cpu: (records, last cycles)
    aggs: list[dict] = field(default_factory=list)      # wire_agg + cpu, buckets
    agg_dropped: dict[int, int] = field(default_factory=dict)     # cpu: entries
    probe_counts: dict[int, dict] = field(default_factory=dict)   # probe: counts
    # SWITCH (and IRQ) records, by cycles like events: the scheduler's, no probe's.
    switches: list[Event] = field(default_factory=list)
    tls_dropped: int = 0     # thread-local stores that found no room (AGGS)
    stacks: dict[int, tuple] = field(default_factory=dict)        # id: PCs
    stack_dropped: dict[int, int] = field(default_factory=dict)   # cpu: stacks

    def losses(self) -> list[Loss]:
        """Every loss: the marked ones by time, then each CPU's rest at the
        end of its stream (STATS `dropped` less what its markers counted)."""
        out = sorted(self.marked, key=lambda l: l.first)
        counted: dict[int, int] = {}
        for m in self.marked:
            counted[m.cpu] = counted.get(m.cpu, 0) + m.count
        for cpu, s in sorted(self.stats.items()):
            rest = s["dropped"] - counted.get(cpu, 0)
            if rest > 0:
                n, cycles = self.ends.get(cpu, (0, 0))
                out.append(Loss(cpu, rest, cycles, None, n, None))
        return out


def log_data(ev: Event, order: str, word_bytes: int) -> tuple[int, int, bytes]:
    """A LOG record's (major, minor, bytes): its words from DATA on, packed
    back in the guest's byte order, cut to BYTES."""
    w = ev.words
    raw = b"".join(x.to_bytes(word_bytes, "little" if order == "<" else "big")
                   for x in w[LOG.DATA:])
    return w[LOG.MAJOR], w[LOG.MINOR], raw[:w[LOG.BYTES]]


def _loss(cpu: int, index: int, cycles: int, words, bits: int) -> Loss:
    """The Loss a DROPS record stands for; FIRST is the low word of the
    cycle counter, extended from the record's own 64-bit cycles."""
    first = (cycles & ~((1 << bits) - 1)) | words[DROPS.FIRST]
    if first > cycles:                    # the low word wrapped in between
        first -= 1 << bits
    return Loss(cpu, words[DROPS.COUNT], first, cycles, index,
                words[DROPS.THREADS], bits)


# What is wrong with an EVENTS frame (a stream's decoder says it alike).
def past_end(fr, p) -> ProtocolError:
    return ProtocolError(f"EVENTS frame seq {fr.seq}: its records run past its "
                         f"{len(p)} bytes")


def left_over(fr, p, off: int) -> ProtocolError:
    return ProtocolError(f"EVENTS frame seq {fr.seq}: {len(p) - off} bytes left "
                         "over after its records")


def short_drops(fr, nwords: int) -> ProtocolError:
    return ProtocolError(f"EVENTS frame seq {fr.seq}: a DROPS record of {nwords} words")


def decode(frame_list, order: str, word_bytes: int) -> Capture:
    d = _Decoder(order, word_bytes)
    for fr in frame_list:
        step = d.FRAMES.get(fr.type)
        if step is not None:
            try:
                step(d, fr, fr.payload)
            except cdefs.CdefsError as e:    # a payload shorter than its struct
                raise ProtocolError(f"{frames.FRAME_NAMES[fr.type]} frame seq "
                                    f"{fr.seq}: {e}") from None
    d.events.sort(key=lambda e: e.cycles)
    d.switches.sort(key=lambda e: e.cycles)
    return Capture(d.events, d.checks, d.stats, d.expects, d.nframes, d.nbytes,
                   d.marked, d.ends, d.aggs, d.agg_dropped, d.probe_counts,
                   d.switches, d.tls_dropped, d.stacks, d.stack_dropped)


class _Decoder:
    """decode()'s state, and a method per trace frame type (FRAMES); any
    other frame is not the trace's and is passed over."""

    def __init__(self, order: str, word_bytes: int):
        self.order, self.word_bytes = order, word_bytes
        self.wfmt = {4: "I", 8: "Q"}[word_bytes]
        # A record's header, the struct compiled once: EVENT.unpack builds
        # its format anew each time, and a run has 10^8 records.
        self.event_struct = struct.Struct(EVENT.format(order))
        self.event_names = tuple(f.name for f in EVENT.fields)
        self.events: list[Event] = []
        self.checks: list[Event] = []
        self.switches: list[Event] = []
        self.marked: list[Loss] = []
        self.stats: dict[int, dict] = {}
        self.expects: dict[str, int] = {}
        self.ends: dict[int, tuple[int, int]] = {}
        self.aggs: list[dict] = []
        self.agg_dropped: dict[int, int] = {}
        self.snapshot = -1
        self.tls_dropped = 0
        self.probe_counts: dict[int, dict] = {}
        self.stacks: dict[int, tuple] = {}
        self.stack_dropped: dict[int, int] = {}
        self.stack_snapshot = -1
        self.nbytes = self.nframes = 0

    def stats_frame(self, fr, p) -> None:
        s = STATS.unpack(p, self.order)
        self.stats[s["cpu"]] = s

    def expect_frame(self, fr, p) -> None:
        e = EXPECT.unpack(p, self.order)
        name = p[EXPECT.size:].decode("utf-8", "replace")
        self.expects[name] = self.expects.get(name, 0) + e["calls"]

    def aggs_frame(self, fr, p) -> None:
        order = self.order
        head = AGGS_HEAD.unpack(p, order)
        if head["snapshot"] > self.snapshot:        # a newer sending replaces all
            self.snapshot, self.aggs, self.agg_dropped = head["snapshot"], [], {}
        elif head["snapshot"] < self.snapshot:
            return
        self.agg_dropped[head["cpu"]] = head["dropped"]
        self.tls_dropped = head["tls_dropped"]
        off = AGGS_HEAD.size
        for _ in range(head["count"]):
            if off + AGG.size > len(p):
                raise ProtocolError(f"AGGS frame seq {fr.seq}: its entries run "
                                    f"past its {len(p)} bytes")
            a = AGG.unpack(p[off:off + AGG.size], order)
            off += AGG.size
            a["cpu"] = head["cpu"]
            a["buckets"] = {}
            for _ in range(a["nbuckets"]):
                if off + AGG_BUCKET.size > len(p):
                    raise ProtocolError(f"AGGS frame seq {fr.seq}: a bucket runs "
                                        "past the frame")
                b = AGG_BUCKET.unpack(p[off:off + AGG_BUCKET.size], order)
                a["buckets"][b["index"]] = b["count"]
                off += AGG_BUCKET.size
            self.aggs.append(a)
        if off != len(p):
            raise ProtocolError(f"AGGS frame seq {fr.seq}: {len(p) - off} bytes "
                                "left over after its entries")

    def stacks_frame(self, fr, p) -> None:
        head = STACKS_HEAD.unpack(p, self.order)
        if head["snapshot"] > self.stack_snapshot:    # a newer sending replaces all
            self.stack_snapshot, self.stacks, self.stack_dropped = head["snapshot"], {}, {}
        elif head["snapshot"] < self.stack_snapshot:
            return
        self.stack_dropped[head["cpu"]] = head["dropped"]
        off = STACKS_HEAD.size
        for _ in range(head["count"]):
            if off + STACK.size > len(p):
                raise ProtocolError(f"STACKS frame seq {fr.seq}: its stacks run "
                                    f"past its {len(p)} bytes")
            st = STACK.unpack(p[off:off + STACK.size], self.order)
            off += STACK.size
            end = off + 8 * st["depth"]
            if end > len(p):
                raise ProtocolError(f"STACKS frame seq {fr.seq}: a stack runs past "
                                    "the frame")
            self.stacks[st["id"]] = struct.unpack_from(f"{self.order}{st['depth']}Q", p, off)
            off = end
        if off != len(p):
            raise ProtocolError(f"STACKS frame seq {fr.seq}: {len(p) - off} bytes "
                                "left over after its stacks")

    def probes_frame(self, fr, p) -> None:
        if len(p) % PROBE_COUNTS.size:
            raise ProtocolError(f"PROBES frame seq {fr.seq}: {len(p)} bytes is not "
                                f"a whole number of {PROBE_COUNTS.size}-byte entries")
        for off in range(0, len(p), PROBE_COUNTS.size):
            c = PROBE_COUNTS.unpack(p[off:off + PROBE_COUNTS.size], self.order)
            self.probe_counts[c["probe"]] = c

    def events_frame(self, fr, p) -> None:
        order, word_bytes = self.order, self.word_bytes
        self.nframes += 1
        self.nbytes += len(p)
        head = EVENTS_HEAD.unpack(p, order)
        cpu = head["cpu"]
        off = EVENTS_HEAD.size
        unpack, names = self.event_struct.unpack_from, self.event_names
        for _ in range(head["count"]):
            if off + EVENT.size > len(p):
                raise past_end(fr, p)
            e = dict(zip(names, unpack(p, off)))
            off += EVENT.size
            n = e["nwords"]
            if off + n * word_bytes > len(p):
                raise past_end(fr, p)
            words = struct.unpack_from(f"{order}{n}{self.wfmt}", p, off)
            off += n * word_bytes
            self._record(fr, cpu, e, words)
        if off != len(p):
            raise left_over(fr, p, off)

    def _record(self, fr, cpu: int, e: dict, words) -> None:
        """One record of an EVENTS frame: a marked loss (DROPS), a CHECK
        record or an event, numbered in its CPU's order."""
        index = self.ends.get(cpu, (0, 0))[0]
        if e["kind"] == K_DROPS:
            if len(words) < len(vars(DROPS)):
                raise short_drops(fr, len(words))
            self.marked.append(_loss(cpu, index, e["cycles"], words,
                                     8 * self.word_bytes))
            return
        self.ends[cpu] = (index + 1, e["cycles"])
        ev = Event(cpu, e["thread"], e["probe"], e["kind"], e["cycles"], words, index)
        (self.checks if e["kind"] == K_CHECK else
         self.switches if e["kind"] in (K_SWITCH, K_IRQ) else self.events).append(ev)

    FRAMES = {frames.T_STATS: stats_frame, frames.T_EXPECT: expect_frame,
              frames.T_AGGS: aggs_frame, frames.T_PROBES: probes_frame,
              frames.T_STACKS: stacks_frame,
              frames.T_EVENTS: events_frame}
