"""Function-boundary tracing: fib and calltree untraced and under every
mechanism, and the same workloads built with -finstrument-functions.

Each (workload, mechanism) is run `reps` times with its probes enabled
(or the compiler's hooks on) and the trace verified: guest time, records
per second, what was missed and dropped, bytes on the wire, QEMU's own
CPU time for the run (its vCPU threads': bench/guest/cputime.py).
Emulating mechanisms and the hooks must miss nothing (the
`missed_emulated` target); the per-CPU buffers are large enough that no
drop is the drain's fault. The 4-CPU variants run calltree on 8 threads.
"""

from __future__ import annotations

import time

from ...guest.qemu import Guest
from ...trace.session import TraceError, open_session
from ...trace.stress import LOSSLESS_FUNCS
from ...trace.verify import verify
from ...wire import frames
from .core import Bench, Sizes, figure

FBT_BUFFER = 8 << 20       # bytes per CPU
HOOKS = ["hooks_off", "finstrument"]


def workloads(sz: Sizes, threads: int = 1):
    """(name, probe spec, command): fib and calltree, or calltree alone
    on `threads` threads."""
    fib = ("fib", "fbt:fib:entry,fbt:fib:return", f"run fib n={sz.fib_n}")
    ct = (f"calltree{threads}" if threads > 1 else "calltree", LOSSLESS_FUNCS,
          f"run calltree threads={threads} iters={sz.ct_iters}")
    return [fib, ct] if threads == 1 else [ct]


def probed(b: Bench, g: Guest) -> None:
    """fib and calltree, one thread, untraced and under every mechanism."""
    fbt(b, g, workloads(b.sizes), ["untraced", *b.arch.mechanisms])


def hooked(b: Bench, g: Guest) -> None:
    """The instrumented image's fib and calltree, hooks off and on (each
    mechanism against the hooks: paired.py, both images up at once)."""
    fbt(b, g, workloads(b.sizes), HOOKS, hooks=True)


def probed_smp(b: Bench, g: Guest) -> None:
    """calltree on 8 threads, 4 CPUs, untraced and under every mechanism."""
    fbt(b, g, workloads(b.sizes, b.sizes.ct_threads_smp),
        ["untraced", *b.arch.mechanisms], tag="_smp4")


def hooked_smp(b: Bench, g: Guest) -> None:
    """The instrumented calltree on 8 threads, 4 CPUs, hooks off and on."""
    fbt(b, g, workloads(b.sizes, b.sizes.ct_threads_smp), HOOKS, hooks=True,
        tag="_smp4")


def fbt(b: Bench, g: Guest, workloads, mechanisms, hooks: bool = False,
        tag: str = "") -> None:
    """Figures fbt_WORKLOAD_MECHANISM[TAG], one per pair."""
    s = session(g)
    for wl, spec, cmd in workloads:
        for mechanism in mechanisms:
            vprobes = prepare(b, g, s, wl, spec, mechanism, hooks)
            rows = [start(g, s, cmd, mechanism, hooks, vprobes)()
                    for _ in range(b.reps)]
            key = f"fbt_{wl}_{mechanism}{tag}"
            b.figures[key] = _figure(rows, cmd, mechanism, g.hello["ncpus"])
            med = b.figures[key]
            b.say(f"  {wl}{tag} {mechanism}: {med['guest_seconds']['median'] * 1e3:,.1f} ms, "
                  f"{med['events']['median']:,.0f} records"
                  + (f", missed {med['missed']['median']}" if vprobes is not None else ""))


def session(g: Guest):
    """g's trace session, its probes cleared and its buffers sized."""
    s = open_session(g)
    # Room for every record of a run, however far the drain falls behind
    # (a drop would show as missed): the largest run is ~90,000 records.
    g.command("probe clear")
    s.must(f"trace buffer {FBT_BUFFER}", timeout=60)
    return s


def prepare(b: Bench, g: Guest, s, wl: str, spec: str, mechanism: str,
            hooks: bool) -> list | None:
    """The probes of one (workload, mechanism), planted and left disabled;
    what a run under it is verified against (None: untraced, hooks off)."""
    traced = mechanism not in ("untraced", "hooks_off")
    g.command("probe clear")
    s.setup(spec, b.arch.default_mechanism if hooks or not traced
            else mechanism, buffer_bytes=None, strict=False)
    # The hooks write RETURN records under the entry probe's id,
    # which verify counts by function, as a trap's.
    if traced and not hooks:
        s.enable(True)
        s.enable(False)
        for n in s.notes:
            note = f"{wl} {mechanism}: {n}"
            if note not in b.notes:     # planted before (paired.py)
                b.notes.append(note)
    return list(s.probes) if traced else None


def start(g: Guest, s, cmd: str, mechanism: str, hooks: bool,
          vprobes: list | None):
    """One repetition (vprobes: what to verify against; None: untraced,
    hooks off), in two halves. This is the first: enable, run (its guest
    time and QEMU's vCPU time), disable; it returns the second, which
    drains, verifies and gives the row. Split so that two guests' runs
    can follow each other within milliseconds, their checks after both
    (paired.py)."""
    traced = vprobes is not None
    ids = [str(p.id) for p in s.probes]
    s.must("trace reset")
    mark = len(g.trace_frames)
    if hooks and traced:
        s.must("probe hooks on")
    elif traced:
        for k in range(0, len(ids), 12):
            s.must("probe enable " + " ".join(ids[k:k + 12]))
    cpu0 = g.vcpu_ns()
    t0 = time.monotonic()
    r = s.cmd(cmd, timeout=600)
    wall = time.monotonic() - t0
    cpu1 = g.vcpu_ns()
    if hooks:
        s.must("probe hooks off")
    elif traced:
        s.must("probe disable all")

    def finish() -> dict:
        s.must("trace flush", timeout=600)
        if not r.ok or not r.results:
            raise TraceError(f"{cmd} under {mechanism} failed: {r.message}")
        cap = g.capture(mark)
        rep = verify(cap, vprobes or [], (), allow_missing=True)
        cycles = r.results[-1]["cycles"]
        secs = cycles / g.hello["cycles_hz"]
        ev = len(cap.events)
        return {
            "wall": wall, "cycles": cycles, "seconds": secs, "events": ev,
            "events_per_s": ev / secs,
            "cpu": (cpu1 - cpu0) / 1e9 if None not in (cpu0, cpu1) else None,
            "missed": rep.missed if traced else None,
            "dropped": rep.dropped if traced else None,
            "wire_bytes": sum(frames.HEADER_SIZE + len(f.payload) + frames.CRC_SIZE
                              for f in g.trace_frames[mark:]
                              if f.type == frames.T_EVENTS),
            "expected": rep.expected_firings if traced else None}
    return finish


def _figure(rows: list[dict], cmd: str, mechanism: str, ncpus: int) -> dict:
    def col(k):
        return [row[k] for row in rows]
    return {
        "workload": cmd, "mechanism": mechanism, "smp": ncpus,
        "repetitions": len(rows),
        "wall": figure(col("wall"), "s"),
        "guest_cycles": figure(col("cycles"), "guest cycles"),
        "guest_seconds": figure(col("seconds"), "s"),
        # QEMU's vCPU threads' CPU time around the run (bench/guest/
        # cputime.py): unlike guest time, no wait for the host's other
        # work is in it (the hypervisor's steal of this VM's CPU still is).
        "qemu_cpu_seconds": figure(col("cpu"), "s (QEMU vCPU threads)"),
        "events": figure(col("events"), "records"),
        "events_per_s": figure(col("events_per_s"), "records/s (guest time)"),
        "missed": figure(col("missed"), "firings"),
        "dropped": figure(col("dropped"), "records"),
        "wire_bytes": figure(col("wire_bytes"), "bytes (EVENTS frames)"),
        "expected": figure(col("expected"), "firings"),
    }
