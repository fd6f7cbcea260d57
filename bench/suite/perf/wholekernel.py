"""make bench's whole-kernel row: every function of the kernel, entries and
returns, each firing recorded, during calltree (docs/whole-kernel.md).

In a booted guest, per repetition: the probes armed all at once
(Session.arm_window), calltree run, disarmed, the capture judged by the
same verdict as `bench run` (bench/trace/verify.py). The figures: firings
per second of guest time, EVENTS bytes on the wire per firing, and lost
firings (dropped + missed + those no counter accounts for), whose target
is 0, with the verdict's breaks beside them. plan.PLAN runs wholekernel()
in boot E; table.SECTIONS prints rows().
"""

from __future__ import annotations

import statistics

from ...guest.qemu import Guest
from ...trace.session import open_session
from ...trace.verify import verify
from ...wire import frames
from ...wire.records import K_ENTRY, K_RETURN
from .core import Bench

SPEC = "fbt:kernel:*:entry,fbt:kernel:*:return"
BUFFER = 4 << 20            # room for a whole run: a loss is the channel's fault


def _figure(values, unit: str) -> dict:
    return {"unit": unit, "repetitions": len(values), "values": values,
            "median": statistics.median(values), "spread": [min(values), max(values)]}


def _one(s, g: Guest, cmd: str, before: int) -> dict:
    """One run; `before`: the guest's firings counted before it (STATS
    counters run on across repetitions)."""
    mark = len(g.trace_frames)
    armed = s.arm_window()
    r = s.cmd(cmd, timeout=600)
    window = (armed, s.disarm_window())
    s.must("trace flush", timeout=600)
    cap = g.capture(mark)
    rep = verify(cap, s.probes, g.link_errors, refused=s.refused, window=window,
                 accounting=False)   # the counters span the boot, this capture not
    total = sum(st["fired"] for st in cap.stats.values())
    fired = total - before
    recorded = sum(ev.kind in (K_ENTRY, K_RETURN) for ev in cap.events)
    wire = sum(frames.HEADER_SIZE + len(f.payload) + frames.CRC_SIZE
               for f in g.trace_frames[mark:] if f.type == frames.T_EVENTS)
    seconds = r.results[-1]["cycles"] / g.hello["cycles_hz"] if r.results else 0
    # Lost: every firing not recorded, whatever the counters call it.
    return {"fired": fired, "per_s": recorded / seconds if seconds else 0,
            "bytes": wire / recorded if recorded else 0, "lost": fired - recorded,
            "broken": len(rep.nesting_errors), "ok": r.ok, "total": total}


def measure(g: Guest, arch, reps: int, iters: int, say=print) -> dict:
    """The row's figures, from reps runs of calltree in this boot."""
    s = open_session(g)
    s.must("probe clear")
    s.setup(SPEC, arch.default_mechanism, buffer_bytes=BUFFER, strict=False)
    s.enable(True)                  # learns what the mechanism refuses
    s.enable(False)
    s.must("trace flush", timeout=600)
    before = sum(st["fired"] for st in g.capture().stats.values())
    cmd = f"run calltree threads=4 iters={iters}"
    runs = []
    for i in range(reps):
        runs.append(_one(s, g, cmd, before))
        before = runs[-1]["total"]
        say(f"  kernel calls {i + 1}/{reps}: {runs[-1]['per_s'] / 1e3:,.0f}k firings/s, "
            f"{runs[-1]['bytes']:.1f} B/firing, {runs[-1]['lost']} lost, "
            f"{runs[-1]['broken']} broken")
    col = lambda k: [r[k] for r in runs]     # noqa: E731
    return {"whole_kernel": {
        "what": "every firing recorded", "workload": cmd, "probes": len(s.probes),
        "smp": g.hello["ncpus"], "mechanism": arch.default_mechanism,
        "firings_per_s": _figure(col("per_s"), "firings/s (guest time)"),
        "bytes_per_firing": _figure(col("bytes"), "EVENTS bytes per firing"),
        "lost": _figure(col("lost"), "firings lost (target 0)"),
        "broken": _figure(col("broken"), "nesting breaks"),
        "workload_ok": all(col("ok")),
    }}


def wholekernel(b: Bench, g: Guest) -> None:
    """The experiment: measure()'s figures into the bench's."""
    b.figures.update(measure(g, b.arch, b.reps, b.sizes.kernel_iters, b.say))


def rows(b: Bench) -> list[tuple[str, str, str]]:
    """The table's rows for measure()'s figures (none if it did not run)."""
    f = b.figures.get("whole_kernel")
    if not f:
        return []
    lost, broken = f["lost"]["median"], f["broken"]["median"]
    return [(f"whole kernel: {f['probes']} fbt entry and return probes, {f['workload']}, "
             f"{f['smp']} CPU(s), {f['mechanism']}", "firings/s | B/firing | lost", ""),
            (f"  {f['what']}",
             f"{f['firings_per_s']['median']:,.0f} | {f['bytes_per_firing']['median']:.2f}"
             f" | {lost:,.0f}",
             f"lost 0 {'met' if lost == 0 and broken == 0 else 'MISSED'}"
             + (f" ({broken:,.0f} broken)" if broken else ""))]
