"""The whole kernel probed: every function the fbt provider accepts.

During calltree on 4 threads every kernel entry is probed; per
repetition, in one boot, the firings are counted by count.rpn in the
guest (aggregation frames only) and then each is recorded (the default
action): firings/s, bytes on the wire per firing, and what was lost —
none when counted (the `lost_counted` target).
"""

from __future__ import annotations

from ...guest.qemu import Guest
from ...paths import PROGRAMS
from ...program import aggregate, asm
from ...trace.session import TraceError, open_session
from ...wire import frames
from .core import Bench, figure

KERNEL_SPEC = "fbt:kernel:*:entry"


def kernel(b: Bench, g: Guest) -> None:
    """Every function the fbt provider accepts, probed during calltree:
    counted by count.rpn (aggregation frames only), then recording
    every firing (the default action), per repetition, in one boot."""
    s = open_session(g)
    prog = asm.assemble((PROGRAMS / "count.rpn").read_text(), b.arch.name,
                        "count.rpn")
    s.setup(KERNEL_SPEC, b.arch.default_mechanism, strict=False, program=prog)
    s.enable(True)
    s.enable(False)
    ids = [str(p.id) for p in s.probes]
    cmd = f"run calltree threads=4 iters={b.sizes.kernel_iters}"
    rows: dict[str, list[dict]] = {"count": [], "record": []}
    for i in range(b.reps):
        for variant in rows:
            s.must("probe program all " + ("0" if variant == "count" else "none"))
            s.must("trace reset")
            mark = len(g.trace_frames)
            for k in range(0, len(ids), 12):
                s.must("probe enable " + " ".join(ids[k:k + 12]))
            r = s.cmd(cmd, timeout=600)
            s.must("probe disable all")
            s.must("trace flush", timeout=600)
            if not r.ok or not r.results:
                raise TraceError(f"{cmd} with every kernel function probed failed: "
                                 f"{r.message}")
            cap = g.capture(mark)
            fired = sum(st["fired"] for st in cap.stats.values())
            row = {
                "fired": fired,
                "per_s": fired / (r.results[-1]["cycles"] / b.hz),
                "wire": sum(frames.HEADER_SIZE + len(f.payload) + frames.CRC_SIZE
                            for f in g.trace_frames[mark:]
                            if f.type in (frames.T_EVENTS, frames.T_AGGS,
                                          frames.T_PROBES)),
                "dropped": sum(st["dropped"] for st in cap.stats.values()),
            }
            if variant == "count":
                counted = sum(aggregate.per_probe_counts(
                    aggregate.merge(cap.aggs), {0: prog}).values())
                row["lost"] = fired - counted + sum(cap.agg_dropped.values())
            else:
                row["lost"] = row["dropped"]
            rows[variant].append(row)
        c, d = rows["count"][-1], rows["record"][-1]
        b.say(f"  kernel {i + 1}/{b.reps}: count.rpn {c['per_s'] / 1e3:,.0f}k "
              f"firings/s, {c['wire']:,} B; record {d['per_s'] / 1e3:,.0f}k "
              f"firings/s, {d['wire']:,} B, {d['dropped']:,} of {d['fired']:,} "
              "dropped")
    for variant, vals in rows.items():
        col = lambda k: [row[k] for row in vals]
        what = ("counted by count.rpn" if variant == "count"
                else "every firing recorded")
        b.figures[f"kernel_{variant}"] = {
            "workload": cmd, "probes": len(ids), "smp": g.hello["ncpus"],
            "what": what, "repetitions": len(vals),
            "fired": figure(col("fired"), "firings"),
            "firings_per_s": figure(col("per_s"), "firings/s (guest time)"),
            "wire_bytes": figure(col("wire"), "bytes (EVENTS, AGGS, PROBES frames)"),
            "bytes_per_firing": figure([w / f for w, f in zip(col("wire"), col("fired"))],
                                        "bytes per firing"),
            "dropped": figure(col("dropped"), "records"),
            "lost": figure(col("lost"), "firings not counted or recorded",
                            **({"target": "lost_counted"} if variant == "count" else {})),
        }
