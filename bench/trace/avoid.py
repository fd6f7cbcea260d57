"""Seed 003's interrupt-avoidance methods, measured on a guest.

The tracer's own traps are counted by the kernel (miss_account.h): TLB
misses and faults whose trapping PC is tracer code, and of the DTLB misses
those on the tracer's buffer. The workload `tlbwalk` walks more pages than
sun4u's 64-entry DTLB holds between two calls of tlbwalk_step, so whatever
the tracer touched at one firing is gone by the next, and prints the
counts of exactly its loop (the drain held off meanwhile) as one line:

    tlbwalk own_itlb=N own_dtlb=N own_buffer=N own_served=N own_faults=N
            own_window=N all_itlb=N all_dtlb=N step_cycles=N calls=N
    tlbwalk seen 0x... (the pages of the tracer's last misses)

run_config() switches the methods (CONFIGS; the guest's `trace bytes`,
`trace serve`, `trace physical`, `trace lock` and tlbwalk's xo=1), traces
tlbwalk_step with a probe on every control transfer
(`branch:tlbwalk_step`), runs the walk, and checks the trace: the instructions of every call are rebuilt from the branch
records and the ELF (straight-line code between two transfers; a skipped
transfer means a lost record and is an error), the calls must be the
workload's own count, and nothing may be dropped. The cost per traced
instruction is the cycles spent in tlbwalk_step's calls, less those of the
same walk untraced in the same boot, over the instructions rebuilt.
measure() runs every configuration `reps` times in one boot; figures(),
problems() and table_lines() make `bench avoid`'s and `make bench`'s table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import BenchError
from ..wire import records
from .image import Function
from .session import Session, open_session

WINDOW_FIELDS = ("own_itlb", "own_dtlb", "own_buffer", "own_served", "own_faults",
                 "own_window", "all_itlb", "all_dtlb", "step_cycles", "calls")
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
#          walks before the measured one, unmeasured (the first with no
#          probe enabled), print them (`tlbwalk seen`), then `trace lock on
#          ADDR...`, up to LOCK_ROUNDS times
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


LOCK_ROUNDS = 8

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
    own_window: int
    all_itlb: int
    all_dtlb: int
    step_cycles: int
    calls: int

    @property
    def own_total(self) -> int:
        """TLB misses and faults (the target of `all`); window traps apart."""
        return self.own_itlb + self.own_dtlb + self.own_faults


def own_traps_line(cap: records.Capture) -> str | None:
    """The tracer's own traps of a run, from its STATS frames (every CPU,
    since the run's `trace reset`), for `bench run`; None without them."""
    st = list(cap.stats.values())
    if not st or "own_dtlb" not in st[0]:
        return None
    n = {k: sum(x[k] for x in st) for k in ("own_itlb", "own_dtlb", "own_dtlb_buffer",
                                            "own_faults", "own_window", "all_itlb",
                                            "all_dtlb")}
    return (f"tracer's own traps: ITLB misses {n['own_itlb']}, DTLB misses "
            f"{n['own_dtlb']} ({n['own_dtlb_buffer']} on its buffer), faults "
            f"{n['own_faults']}, window spills/fills {n['own_window']}; all misses: "
            f"ITLB {n['all_itlb']}, DTLB {n['all_dtlb']}"
            + ("" if n["all_itlb"] or n["all_dtlb"] else
               " (none seen: the arch may refill its TLB in hardware)"))


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


def record_bytes(events, word_bytes: int) -> int:
    """The bytes the firings' records take in the ring and on the wire,
    header and words: not the frames' headers, nor the scheduler's SWITCH
    and IRQ records (Capture.switches), which come with the ticks and the
    wake-ups of a run, so two runs of the same walk differ in them; the
    firings' records are what the methods must leave as they were."""
    return sum(records.EVENT.size + len(e.words) * word_bytes for e in events)


def reset(s: Session) -> None:
    """Every method off again (the guest's defaults)."""
    for line in Config().commands():
        s.must(line)


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
    figures. The probes (SPEC) must have been set up on s already; the
    configuration stays set (reset() undoes it)."""
    cfg = CONFIGS[name]
    for line in cfg.commands():
        s.must(line)
    locked = 0
    # Learning walks, unmeasured: lock the pages the tracer missed on, and
    # again those it still misses on, until two traced walks in a row are
    # clean, a few rounds at most.
    # The first walk has no probe enabled: what the tracer touches on ticks
    # alone (its drain and reaper waking), rarer than the fire path's.
    clean = 0
    # And, before them, the top page of the boot CPU's stack: a tick that
    # interrupts the boot thread (the command loop) runs the tracer's
    # drain there, rarely enough that the learning walks can miss it (one
    # full-size measured walk in eight missed on it once).
    top = s.image.symbols.get("boot_stack_top")
    if cfg.lock and top:
        locked = int(s.must(f"trace lock on {top - 8:#x}").message.split()[0])
    for rnd in range(LOCK_ROUNDS if cfg.lock else 0):
        r, _ = _walk(s, Config(traced=False, xo=cfg.xo) if rnd == 0 else cfg, pages, iters)
        seen = parse_seen(r.text)
        clean = clean + 1 if rnd and not parse_window(r.text).own_dtlb else 0
        if clean == 2:
            break
        if seen:
            locked = int(s.must("trace lock on " + " ".join(f"{a:#x}" for a in seen))
                         .message.split()[0])
    r, cap = _walk(s, cfg, pages, iters)
    w = parse_window(r.text)
    row = {"config": name, "window": w, "records": len(cap.events),
           "bytes": record_bytes(cap.events, s.image.word_bytes), "calls": 0, "instructions": 0, "locked": locked,
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


# ---- the table: every configuration, `reps` times, in one boot ----

ORDER = tuple(CONFIGS)
# What each configuration's row stands for, for the table.
WHAT = {
    "untraced": "no probes",
    "none": "no method (slot bytes read through the mapping)",
    "address_only": "3: addresses only, no bytes",
    "xo_fault": "1 off: execute-only code, reads fault",
    "xo_served": "1 via the miss handler (Fig. 2)",
    "xo_physical": "1 via page table + ASI 0x14",
    "buffer_physical": "2: buffer by physical address",
    "lock": "2': tracer's pages locked in the DTLB",
    "all": "all: 1 (physical read) + 2 + 2'",
}


def tlb_visible(g) -> bool:
    """Whether the guest's TLB misses are software traps it counts."""
    return "not visible" not in g.command("trace misses").message


def measure(g, pages: int, iters: int, reps: int, names=ORDER,
            on_line=print) -> dict[str, list[dict]]:
    """Every configuration in `names` (untraced first), `reps` times over,
    on the booted guest g: rows by configuration."""
    if not tlb_visible(g):
        raise AvoidError("this guest's TLB is refilled by hardware: the misses "
                         "the tracer causes cannot be counted")
    s = open_session(g)
    s.must("probe clear")
    # A buffer that holds every record of a walk: nothing drops while the
    # drain is held off.
    s.setup(SPEC, g.arch.default_mechanism, buffer_bytes=1 << 22)
    names = ["untraced", *(n for n in names if n != "untraced")]
    rows: dict[str, list[dict]] = {n: [] for n in names}
    for rep in range(reps):
        for n in names:
            rows[n].append(run_config(s, n, pages, iters))
        w = rows["all"][-1]["window"] if "all" in rows else None
        on_line(f"  avoid {rep + 1}/{reps}" + (f": all methods on, {w.own_total} "
                                               "misses and faults of the tracer's"
                                               if w else ""))
    reset(s)
    s.must("probe clear")
    return rows


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def figures(rows: dict[str, list[dict]]) -> dict[str, dict]:
    """Per configuration: the tracer's own traps by kind, the cost per
    traced instruction (guest cycles, less the untraced walk of the same
    repetition), bytes per record; medians over the repetitions, and the
    per-repetition values."""
    out = {}
    base = [r["window"].step_cycles for r in rows["untraced"]]
    for name, rs in rows.items():
        ws = [r["window"] for r in rs]
        f = {"what": WHAT.get(name, name)}
        for k in ("own_itlb", "own_dtlb", "own_buffer", "own_served", "own_faults",
                  "own_window", "all_dtlb"):
            f[k] = [getattr(w, k) for w in ws]
        f["own_total"] = [w.own_total for w in ws]
        f["locked"] = [r["locked"] for r in rs]
        if name != "untraced":
            f["cycles_per_insn"] = [(r["window"].step_cycles - b) / r["instructions"]
                                    for r, b in zip(rs, base) if r["instructions"]]
            f["bytes_per_record"] = [r["bytes"] / r["records"] for r in rs]
            f["instructions"] = [r["instructions"] for r in rs]
            f["slot_errors"] = [r["slot_errors"] for r in rs]
        f["median"] = {k: _median(v) for k, v in f.items() if isinstance(v, list) and v}
        out[name] = f
    return out


def problems(figs: dict[str, dict]) -> list[str]:
    """What the methods promise and a run did not keep."""
    bad = []
    for name, f in figs.items():
        cfg = CONFIGS.get(name)
        if cfg is None:
            continue
        if cfg.buffer_physical and max(f["own_buffer"]) != 0:
            bad.append(f"{name}: {max(f['own_buffer'])} misses on the buffer with "
                       "physical stores")
        if cfg.xo and (cfg.serve or cfg.bytes == "physical") and max(f["own_faults"]):
            bad.append(f"{name}: {max(f['own_faults'])} faults reading execute-only code")
        if cfg.xo and cfg.bytes == "physical" and max(f["own_served"]):
            bad.append(f"{name}: {max(f['own_served'])} served misses reading by "
                       "physical address")
        if cfg.traced and cfg.bytes != "off" and (cfg.serve or not cfg.xo) and \
                max(f["slot_errors"]):
            bad.append(f"{name}: {max(f['slot_errors'])} delay-slot words read wrong")
        if name == "all" and max(f["own_total"]):
            bad.append(f"all: {max(f['own_total'])} misses and faults of the tracer's "
                       "own with every method on (target 0)")
    return bad


def table_lines(figs: dict[str, dict]) -> list[str]:
    head = (f"{'method (config)':<52} {'ITLB':>6} {'DTLB':>7} {'(buf)':>6} "
            f"{'served':>6} {'faults':>6} {'window':>6} {'locked':>6} {'cyc/insn':>9} "
            f"{'B/rec':>6}")
    lines = [head]
    for name, f in figs.items():
        m = f["median"]
        cpi = f"{m['cycles_per_insn']:9.1f}" if "cycles_per_insn" in m else f"{'-':>9}"
        bpr = f"{m['bytes_per_record']:6.1f}" if "bytes_per_record" in m else f"{'-':>6}"
        lines.append(f"{f['what'] + ' (' + name + ')':<52} {m['own_itlb']:>6.0f} "
                     f"{m['own_dtlb']:>7.0f} {m['own_buffer']:>6.0f} {m['own_served']:>6.0f} "
                     f"{m['own_faults']:>6.0f} {m['own_window']:>6.0f} {m['locked']:>6.0f} "
                     f"{cpi} {bpr}")
    return lines
