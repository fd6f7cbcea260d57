"""Trace records, host side: EVENTS, STATS and EXPECT frames into a Capture.

An EVENTS frame holds records of one CPU (struct wire_events, then each
record: struct wire_event and `nwords` words of the guest's word size and
byte order, from HELLO). What the words mean is wire.h's per-kind tables
(WIRE_ENTRY_WORDS, WIRE_RETURN_WORDS, WIRE_BRANCH_WORDS, WIRE_BRANCH_BITS),
read here through cdefs into ENTRY, RETURN, BRANCH and BRANCH_BITS, so no
slot number is typed on the host. CHECK records go to the arch's checker
(bench/check/) as they are.

Events of all CPUs are merged by cycle counter: QEMU gives every vCPU the
same TSC, so a thread that migrates keeps its order. A frame whose records
do not add up to its length is a ProtocolError naming its seq.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from types import SimpleNamespace

from ..errors import ProtocolError
from . import frames
from .frames import WIRE

EVENT = WIRE.structs["wire_event"]
EVENTS_HEAD = WIRE.structs["wire_events"]
STATS = WIRE.structs["wire_stats"]
EXPECT = WIRE.structs["wire_expect"]

KINDS = WIRE.by_name("WIRE_EVENT_KINDS")
KIND_NAMES = {e.value: e.name for e in KINDS.values()}
K_PAD = KINDS["PAD"].value
K_ENTRY = KINDS["ENTRY"].value
K_RETURN = KINDS["RETURN"].value
K_CHECK = KINDS["CHECK"].value
K_BRANCH = KINDS["BRANCH"].value

# The kinds a probe is added as, by their command word ("entry", ...).
PROBE_KINDS = {e.meaning: e.value for e in WIRE.table("WIRE_PROBE_KINDS")}


def _slots(table: str) -> SimpleNamespace:
    return SimpleNamespace(**{e.name: e.value for e in WIRE.table(table)})


ENTRY = _slots("WIRE_ENTRY_WORDS")          # ENTRY.PC, ENTRY.SP, ENTRY.ARG0
RETURN = _slots("WIRE_RETURN_WORDS")        # RETURN.VALUE ...
BRANCH = _slots("WIRE_BRANCH_WORDS")        # BRANCH.TARGET, BRANCH.FLAGS
BRANCH_BITS = _slots("WIRE_BRANCH_BITS")    # BRANCH_BITS.TAKEN, .ANNULLED


@dataclass
class Event:
    cpu: int
    thread: int
    probe: int
    kind: int
    cycles: int
    words: tuple


@dataclass
class Capture:
    events: list[Event]
    checks: list[Event]
    stats: dict[int, dict]
    expects: dict[str, int]
    frames: int
    bytes: int           # EVENTS payload bytes


def decode(frame_list, order: str, word_bytes: int) -> Capture:
    events: list[Event] = []
    checks: list[Event] = []
    stats: dict[int, dict] = {}
    expects: dict[str, int] = {}
    wfmt = {4: "I", 8: "Q"}[word_bytes]
    nbytes = nframes = 0
    for fr in frame_list:
        p = fr.payload
        if fr.type == frames.T_STATS:
            s = STATS.unpack(p, order)
            stats[s["cpu"]] = s
        elif fr.type == frames.T_EXPECT:
            e = EXPECT.unpack(p, order)
            name = p[EXPECT.size:].decode("utf-8", "replace")
            expects[name] = expects.get(name, 0) + e["calls"]
        elif fr.type == frames.T_EVENTS:
            nframes += 1
            nbytes += len(p)
            head = EVENTS_HEAD.unpack(p, order)
            off = EVENTS_HEAD.size
            for _ in range(head["count"]):
                if off + EVENT.size > len(p):
                    raise ProtocolError(f"EVENTS frame seq {fr.seq}: its records "
                                        f"run past its {len(p)} bytes")
                e = EVENT.unpack(p[off:off + EVENT.size], order)
                off += EVENT.size
                n = e["nwords"]
                if off + n * word_bytes > len(p):
                    raise ProtocolError(f"EVENTS frame seq {fr.seq}: its records "
                                        f"run past its {len(p)} bytes")
                words = struct.unpack_from(f"{order}{n}{wfmt}", p, off)
                off += n * word_bytes
                ev = Event(head["cpu"], e["thread"], e["probe"], e["kind"],
                           e["cycles"], words)
                (checks if e["kind"] == K_CHECK else events).append(ev)
            if off != len(p):
                raise ProtocolError(f"EVENTS frame seq {fr.seq}: {len(p) - off} "
                                    "bytes left over after its records")
    events.sort(key=lambda e: e.cycles)
    return Capture(events, checks, stats, expects, nframes, nbytes)
