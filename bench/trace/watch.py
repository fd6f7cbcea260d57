"""Watchpoint probes from the host: `run --watch SPEC`.

SPEC is a comma list of KIND:TARGET[+OFF][/LEN] (`w:watchctr_counter`,
`rw:0x1f5cc0/4`, `x:fib`, `io:0x3f8/1`): KIND a word of wire.h's
WIRE_WATCH_TYPES the arch watches (bench/arches.py), TARGET a symbol of
the ELF or a number, LEN by default the symbol's size. plan() refuses what
the host can see before booting; arm() adds them with `watch add`, and a
refusal of the guest removes those added, so nothing stays armed. The
run ends with `watch: fired=N expected=N values_ok=yes|no|unchecked`,
each watch held to the ground truth it has (verdict()): watchctr's own
counts and values, the serial line's bytes for the console's port, or
else the guest's hits. With --program a watch's firings are its hits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import UsageError
from ..wire import records
from ..wire.frames import WIRE

TYPES = {e.meaning: e.value for e in WIRE.table("WIRE_WATCH_TYPES")}
WORDS = records._slots("WIRE_WATCH_WORDS")       # WORDS.PC, .ADDR, .VALUE ...
K_WATCH = records.KINDS["WATCH"].value
DATA_KINDS = ("w", "r", "rw")

_ITEM = re.compile(r"^(?P<kind>[a-z]+):(?P<target>[A-Za-z_][\w.]*|0[xX][0-9a-fA-F]+|\d+)"
                   r"(?:\+(?P<off>0[xX][0-9a-fA-F]+|\d+))?(?:/(?P<len>\d+))?$")


@dataclass
class Watch:
    id: int
    kind: str
    addr: int
    length: int
    name: str                       # what the spec said, for the output
    symbol: str | None = None
    null: bool = False              # counted only (the console's port)
    tx_rx: tuple[int, int] = (0, 0)
    hits: int = 0
    bytes_moved: int | None = None
    stopped: str | None = None       # the arch stopped it: why
    values: list[int] = field(default_factory=list)
    records: list = field(default_factory=list)


def _number(s: str) -> int:
    return int(s, 0)


def plan(spec: str, image, arch, first_id: int = 0) -> list[Watch]:
    """The watches of spec, resolved and checked; UsageError otherwise."""
    if not arch.watch_types:
        raise UsageError(f"--watch: {arch.name} has no watchpoints")
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items:
        raise UsageError("--watch: an empty spec")
    out: list[Watch] = []
    for n, item in enumerate(items):
        m = _ITEM.match(item)
        if not m:
            raise UsageError(f"--watch {item!r}: expected KIND:SYMBOL[+OFF][/LEN] or "
                             "KIND:ADDR/LEN")
        kind, target = m.group("kind"), m.group("target")
        if kind not in TYPES:
            raise UsageError(f"--watch {item!r}: kind {kind!r}; the kinds are "
                             f"{', '.join(TYPES)}")
        if kind not in arch.watch_types:
            raise UsageError(f"--watch {item!r}: {arch.name} watches "
                             f"{', '.join(arch.watch_types)}, not {kind}")
        off = _number(m.group("off")) if m.group("off") else 0
        symbol = None
        if target[0].isdigit():
            addr = _number(target)
            size = None
        elif kind == "io":
            raise UsageError(f"--watch {item!r}: an I/O watch takes a port number")
        elif kind == "x":
            f = image.functions.get(target)
            if f is None:
                raise UsageError(f"--watch {item!r}: no function {target!r} in "
                                 f"{image.path.name}")
            addr, size, symbol = f.addr, 1, target
        else:
            o = image.objects.get(target)
            if o is None:
                raise UsageError(f"--watch {item!r}: no data symbol {target!r} in "
                                 f"{image.path.name}")
            (addr, size), symbol = o, target
        addr += off
        length = int(m.group("len")) if m.group("len") else \
            (1 if kind == "x" else size)
        if length is None:
            raise UsageError(f"--watch {item!r}: give the length (/LEN) of a "
                             "numeric address")
        if length not in arch.watch_lengths:
            raise UsageError(f"--watch {item!r}: length {length}; {arch.name} "
                             f"watches {', '.join(map(str, arch.watch_lengths))} bytes"
                             + (" (give /LEN for part of a larger object)"
                                if m.group("len") is None else ""))
        if kind == "x" and length != 1:
            raise UsageError(f"--watch {item!r}: an execute watch has length 1")
        if addr % length:
            raise UsageError(f"--watch {item!r}: {addr:#x} is not aligned to its "
                             f"length {length}")
        w = Watch(first_id + n, kind, addr, length, item, symbol)
        for o in out:
            if (o.kind == "io") == (kind == "io") and \
                    addr < o.addr + o.length and o.addr < addr + length:
                raise UsageError(f"--watch {item!r}: overlaps {o.name!r}")
        w.null = kind == "io" and arch.console_port is not None and \
            addr <= arch.console_port < addr + length
        out.append(w)
    if len(out) > arch.watch_slots:
        raise UsageError(f"--watch: {len(out)} watches; {arch.name} holds "
                         f"{arch.watch_slots} at once")
    return out


_COUNTS = re.compile(r"tx=(\d+) rx=(\d+)")


def arm(guest, watches: list[Watch]) -> None:
    """`watch add` each; on a refusal remove those added and raise
    UsageError with the guest's reason."""
    added: list[Watch] = []
    for w in watches:
        r = guest.command(f"watch add {w.id} {w.kind} {w.addr:#x} {w.length}"
                          + (" null" if w.null else ""))
        if not r.ok:
            for a in added:
                guest.command(f"watch remove {a.id}")
            raise UsageError(f"--watch {w.name!r}: the guest refused: {r.message}")
        added.append(w)
        m = _COUNTS.search(r.message)
        w.tx_rx = (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def disarm(guest, watches: list[Watch]) -> None:
    for w in watches:
        r = _must(guest, f"watch remove {w.id}")
        m = re.search(r"hits=(\d+)", r.message)
        w.hits = int(m.group(1)) if m else 0
        st = re.search(r", (stopped at .*)$", r.message)
        w.stopped = st.group(1) if st else None
        c = _COUNTS.search(r.message)
        if c:
            w.bytes_moved = (int(c.group(1)) - w.tx_rx[0]) + (int(c.group(2)) - w.tx_rx[1])


def _must(guest, line: str):
    r = guest.command(line)
    if not r.ok:
        from ..errors import BenchError
        raise BenchError(f"guest refused {line!r}: {r.message}")
    return r


def workload_params(line: str) -> tuple[str, dict[str, int]]:
    words = line.split()
    params = {}
    for w in words[1:]:
        if "=" in w:
            k, v = w.split("=", 1)
            params[k] = int(v, 0)
    return (words[0] if words else ""), params


@dataclass
class Verdict:
    fired: int
    expected: int
    values_ok: str                  # yes, no, unchecked
    lines: list[str]
    stopped: list[str] = field(default_factory=list)   # watches the arch stopped

    @property
    def ok(self) -> bool:
        return self.fired == self.expected and self.values_ok != "no" and \
            not self.stopped


# The ground truths (verdict):
#  - watchctr's counter: w fires threads*writes times, rw
#    threads*(writes+reads), r threads*reads. Every write stores the next
#    value in a spinlock, so a trap-after watch reads back the value
#    written: under w the values are base+1..base+threads*writes, once each
#    (base: where the last run left the counter); under rw each of them
#    appears, none lies outside [base, base+threads*writes], no thread's go
#    down, and they sum to the workload's value (the sum of all it wrote
#    and read).
#  - an I/O watch on the console's data port counts the bytes the serial
#    line moved while it was armed (the guest's tx and rx counts at add and
#    remove); it runs with the null action: recording would send a record
#    for every byte, whose bytes fire it again.
#  - any other watch: the records that came equal the guest's hits.
def verdict(cap, watches: list[Watch], image, workload: str,
            result_value: int | None, program: bool = False) -> Verdict:
    """Match the records with each watch's ground truth (top of the file).
    With a program the firings are the guest's hits (a program writes no
    WATCH record) and no value is checked."""
    by_id = {w.id: w for w in watches}
    for ev in cap.events:
        w = by_id.get(ev.probe)
        if w is not None and ev.kind == K_WATCH:
            w.records.append(ev)
    name, params = workload_params(workload)
    counter = image.objects.get("watchctr_counter", (None, 0))[0]
    threads, writes, reads = (params.get("threads", 8), params.get("writes", 1000),
                              params.get("reads", 1000))
    fired = expected = 0
    checked = bad = False
    stopped: list[str] = []
    lines = []
    for w in watches:
        counted = w.null or program
        got = w.hits if counted else len(w.records)
        values = [ev.words[WORDS.VALUE] for ev in w.records]
        why = []
        if w.null:
            want, source = w.bytes_moved or 0, "bytes the serial line moved"
        elif name == "watchctr" and w.kind in DATA_KINDS and counter is not None \
                and w.addr <= counter < w.addr + w.length:
            want = threads * {"w": writes, "rw": writes + reads, "r": reads}[w.kind]
            source = f"{threads} threads x " + \
                {"w": "writes", "rw": "(writes+reads)", "r": "reads"}[w.kind]
            if not program:
                checked |= w.kind != "r"  # reads alone: no value to hold them to
                ok, why = _counter_values(w, values, threads * writes, result_value)
                bad |= not ok
            if w.records:
                switches = sum(a.thread != b.thread
                               for a, b in zip(w.records, w.records[1:]))
                source += f"; the threads' records interleave {switches} times"
        else:
            want, source = w.hits, "the guest's hits"
        if w.stopped:
            stopped.append(f"watch {w.id} {w.name} was refused while armed: {w.stopped}")
        if w.hits != got and not counted:
            why.append(f"the guest counted {w.hits} hits, {got} records came")
            bad = True
        fired += got
        expected += want
        lines.append(f"watch {w.id} {w.name} at {w.addr:#x}/{w.length}: fired={got} "
                     f"expected={want} ({source})" + ("; " + "; ".join(why) if why else ""))
    values_ok = "no" if bad else "yes" if checked else "unchecked"
    return Verdict(fired, expected, values_ok, lines, stopped)


def _counter_values(w: Watch, values: list[int], written: int,
                    result_value: int | None) -> tuple[bool, list[str]]:
    """watchctr's values are a valid interleaving (top of the file). The
    last write is the largest value, so base = max - written."""
    why: list[str] = []
    if w.kind == "r" or not values:
        return True, why
    base = max(values) - written
    want = list(range(base + 1, base + written + 1))
    if w.kind == "w":
        if sorted(values) != want:
            missing = len(set(want) - set(values))
            why.append(f"written values not {base + 1}..{base + written} once each "
                       f"({missing} missing, {len(values) - len(set(values))} "
                       "repeated)")
        return not why, why
    missing = set(want) - set(values)
    if missing:
        why.append(f"{len(missing)} written values never recorded "
                   f"(e.g. {min(missing)})")
    stray = [v for v in values if not base <= v <= base + written]
    if stray:
        why.append(f"{len(stray)} values outside {base}..{base + written} "
                   f"(e.g. {stray[0]})")
    last: dict[int, int] = {}
    for ev, v in zip(w.records, values):
        if v < last.get(ev.thread, v):
            why.append(f"thread {ev.thread} saw {v} after {last[ev.thread]}")
            break
        last[ev.thread] = v
    if result_value is not None and sum(values) != result_value:
        why.append(f"the values sum to {sum(values)}, the workload's to {result_value}")
    return not why, why


def trace_lines(watches: list[Watch], image, limit: int | None):
    """One line per WATCH record, in time order: cpu, thread, the watch, the
    pc named, the value."""
    evs = sorted((ev for w in watches for ev in w.records), key=lambda e: e.cycles)
    by_id = {w.id: w for w in watches}
    for n, ev in enumerate(evs):
        if limit is not None and n >= limit:
            yield f"... {len(evs) - limit} more watch records"
            return
        w = by_id[ev.probe]
        pc = ev.words[WORDS.PC]
        f = image.function_at(pc)
        where = f"{f.name}+{pc - f.addr:#x}" if f else f"{pc:#x}"
        yield (f"cpu{ev.cpu} t{ev.thread} watch {w.id} {w.kind} {w.symbol or hex(w.addr)} "
               f"pc={where} value={ev.words[WORDS.VALUE]:#x} size={ev.words[WORDS.SIZE]}")
