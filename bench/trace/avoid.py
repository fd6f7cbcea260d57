"""Seed 003's interrupt-avoidance methods, measured on a guest.

The tracer's own traps are counted by the kernel (miss_account.h): TLB
misses and faults whose trapping PC is tracer code, and of the DTLB misses
those on the tracer's buffer. The workload `tlbwalk` walks more pages than
sun4u's 64-entry DTLB holds between two calls of tlbwalk_step, so whatever
the tracer touched at one firing is gone by the next, and prints the
counts of exactly its loop (the drain held off meanwhile) as one line:

    tlbwalk own_itlb=N own_dtlb=N own_buffer=N own_faults=N all_itlb=N
            all_dtlb=N step_cycles=N calls=N

run_config() switches the methods (CONFIGS; the guest's `trace bytes`,
`trace serve`, `trace physical`, `trace lock` and tlbwalk's xo=1), traces
tlbwalk_step with a probe on every control transfer
(`branch:tlbwalk_step`), runs the walk, and checks
the trace: the instructions of every call are rebuilt from the branch
records and the ELF (straight-line code between two transfers; a skipped
transfer means a lost record and is an error), the calls must be the
workload's own count, and nothing may be dropped. The cost per traced
instruction is the cycles spent in tlbwalk_step's calls, less those of the
same walk untraced in the same boot, over the instructions rebuilt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import BenchError
from ..wire import records
from .image import Function
from .session import Session

WINDOW_FIELDS = ("own_itlb", "own_dtlb", "own_buffer", "own_served", "own_faults",
                 "all_itlb", "all_dtlb", "step_cycles", "calls")
_WINDOW = re.compile(r"^tlbwalk " + " ".join(rf"{f}=(\d+)" for f in WINDOW_FIELDS) + "$")

FUNCTION = "tlbwalk_step"
SPEC = f"branch:{FUNCTION}"

# The configurations, each a method or two on (the rest off), all with
# the tracer reading each branch's delay-slot word (method 1's reader)
# but `address_only`, which records addresses alone (method 3).
#   xo     tlbwalk_step's page execute-only during the walk (method 1)
#   bytes  how the slot word is read: mapped, physical or off
#   serve  the miss handler serves the tracer's reads of execute-only pages
#   buffer_physical  the buffer written by physical address (method 2)
#   lock   the pages of the tracer's last misses locked in the DTLB (method
#          2's locked translations, applied to what the tracer touches):
#          walks before the measured one, unmeasured, print them (`tlbwalk
#          seen`), then `trace lock on ADDR...`, up to LOCK_ROUNDS times
@dataclass(frozen=True)
class Config:
    traced: bool = True
    xo: bool = False
    bytes: str = "mapped"
    serve: bool = False
    buffer_physical: bool = False
    lock: bool = False

    def commands(self) -> list[str]:
        return [f"trace bytes {self.bytes}", f"trace serve {'on' if self.serve else 'off'}",
                f"trace physical {'on' if self.buffer_physical else 'off'}",
                "trace lock off"]


LOCK_ROUNDS = 4

CONFIGS = {
    "untraced": Config(traced=False),
    "none": Config(),
    "address_only": Config(bytes="off"),
    "xo_fault": Config(xo=True),
    "xo_served": Config(xo=True, serve=True),
    "xo_physical": Config(xo=True, bytes="physical"),
    "buffer_physical": Config(buffer_physical=True),
    "lock": Config(lock=True),
    "all": Config(xo=True, bytes="physical", buffer_physical=True, lock=True),
}


class AvoidError(BenchError):
    """A run of the interrupt-avoidance experiment went wrong."""


@dataclass
class Window:
    own_itlb: int
    own_dtlb: int
    own_buffer: int
    own_served: int
    own_faults: int
    all_itlb: int
    all_dtlb: int
    step_cycles: int
    calls: int

    @property
    def own_total(self) -> int:
        return self.own_itlb + self.own_dtlb + self.own_faults


def parse_window(lines) -> Window:
    """The workload's `tlbwalk ...` line among its TEXT lines."""
    for line in lines:
        m = _WINDOW.match(line.strip())
        if m:
            return Window(*(int(x) for x in m.groups()))
    raise AvoidError("tlbwalk printed no counts line: " + " | ".join(lines[-5:]))


def parse_seen(lines) -> list[int]:
    """The distinct pages of the workload's `tlbwalk seen ...` line."""
    for line in lines:
        if line.startswith("tlbwalk seen"):
            return sorted({int(a, 16) for a in line.split()[2:]})
    raise AvoidError("tlbwalk printed no seen line: " + " | ".join(lines[-5:]))


def rebuild(events, fn: Function, sites: set[int]) -> tuple[int, int]:
    """(calls, instructions) of fn from its BRANCH records in order: from
    the function's start (or a transfer's target) the code runs straight
    to the next record's transfer, then its delay slot unless annulled.
    A probed transfer passed over on the way means a record is missing."""
    lo, hi = fn.addr, fn.addr + fn.size
    pos = None
    calls = insns = 0
    for ev in events:
        pc = ev.words[records.BRANCH.PC]
        target = ev.words[records.BRANCH.TARGET]
        flags = ev.words[records.BRANCH.FLAGS]
        if pos is None:
            pos = lo
            calls += 1
        if not pos <= pc < hi:
            raise AvoidError(f"record of {pc:#x} cannot follow {pos:#x} in {fn.name}")
        skipped = [a for a in sites if pos <= a < pc]
        if skipped:
            raise AvoidError(f"{fn.name}: from {pos:#x} to the transfer at {pc:#x} "
                             f"the probed transfer at {min(skipped):#x} left no record")
        insns += (pc - pos) // 4 + 1
        if not flags & records.BRANCH_BITS.ANNULLED:
            insns += 1
        nxt = target if flags & records.BRANCH_BITS.TAKEN else pc + 8
        pos = nxt if lo <= nxt < hi else None
    if pos is not None:
        raise AvoidError(f"{fn.name}: the last call's records stop at {pos:#x}")
    return calls, insns


def slot_errors(events, image) -> int:
    """Branch records whose delay-slot word (when they carry one) is not
    the ELF's word after the transfer."""
    bad = 0
    for ev in events:
        if len(ev.words) > records.BRANCH.SLOT:
            pc = ev.words[records.BRANCH.PC]
            if ev.words[records.BRANCH.SLOT] != int.from_bytes(image.code(pc + 4, 4), "big"):
                bad += 1
    return bad


def _walk(s: Session, cfg: Config, pages: int, iters: int):
    g = s.guest
    s.must("trace reset")
    mark = len(g.trace_frames)
    if cfg.traced:
        s.must("probe enable " + " ".join(str(p.id) for p in s.probes))
    r = s.cmd(f"run tlbwalk pages={pages} iters={iters} xo={int(cfg.xo)}", timeout=600)
    if cfg.traced:
        s.must("probe disable all")
    s.must("trace flush", timeout=600)
    if not r.ok:
        raise AvoidError(f"tlbwalk failed: {r.message}: {r.text[-3:]}")
    return r, g.capture(mark)


def run_config(s: Session, name: str, pages: int, iters: int) -> dict:
    """One run of the walk under configuration `name` (CONFIGS); a row of
    figures. The probes (SPEC) must have been set up on s already."""
    cfg = CONFIGS[name]
    for line in cfg.commands():
        s.must(line)
    locked = 0
    # Learning walks, unmeasured: lock the pages the tracer missed on, and
    # again those it still misses on, a few rounds at most.
    for _ in range(LOCK_ROUNDS if cfg.lock else 0):
        r, _ = _walk(s, cfg, pages, iters)
        seen = parse_seen(r.text)
        if not parse_window(r.text).own_dtlb or not seen:
            break
        locked = int(s.must("trace lock on " + " ".join(f"{a:#x}" for a in seen))
                     .message.split()[0])
    r, cap = _walk(s, cfg, pages, iters)
    w = parse_window(r.text)
    for line in Config().commands():         # back to the defaults
        s.must(line)
    row = {"config": name, "window": w, "records": len(cap.events),
           "bytes": cap.bytes, "calls": 0, "instructions": 0, "locked": locked,
           "slot_errors": 0,
           "dropped": sum(st["dropped"] for st in cap.stats.values()),
           "fired": sum(st["fired"] for st in cap.stats.values()),
           "physical": any(st.get("physical") for st in cap.stats.values())}
    if not cfg.traced:
        return row
    fn = s.image.functions[FUNCTION]
    ids = {p.id for p in s.probes}
    branches = [e for e in cap.events if e.kind == records.K_BRANCH and e.probe in ids]
    calls, insns = rebuild(branches, fn, {p.addr for p in s.probes})
    want = cap.expects.get(FUNCTION)
    if row["dropped"] or len(cap.events) != row["fired"]:
        raise AvoidError(f"{name}: {row['fired']} firings, {len(cap.events)} records, "
                         f"{row['dropped']} dropped")
    if calls != want or calls != w.calls:
        raise AvoidError(f"{name}: {calls} calls rebuilt from the trace, the workload "
                         f"made {want}")
    row.update(calls=calls, instructions=insns, slot_errors=slot_errors(branches, s.image))
    return row
