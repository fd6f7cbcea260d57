"""Per-CPU call timelines, drawn from the same decode as the text trace.

    python3 -m bench run ... --plot DIR     (make run ... PLOT=1: build/timeline/)

One PNG per CPU (timeline-cpuN.png). Time runs left to right in µs of guest
time from the first record. Each thread that entered a function on that CPU
has a band of its own; within it, a call is a bar from its entry to its
return at the height of its depth, deeper calls stacked above their caller
as in a flame graph, coloured by function (the legend names them). A call
belongs to the CPU its entry was recorded on, even if its thread returned
elsewhere. Calls whose return never arrived (a refused return site, a lost
record, the end of the run) end at the thread's last record, hatched.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..trace.sites import Probe
from ..wire.records import K_ENTRY, K_RETURN, Capture


@dataclass
class Call:
    thread: int
    cpu: int
    function: str
    start: int           # cycles
    end: int
    depth: int
    closed: bool


def calls(cap: Capture, probes: list[Probe]) -> list[Call]:
    """Entries matched with their returns, per thread (innermost first)."""
    by_id = {p.id: p for p in probes}
    stacks: dict[int, list] = defaultdict(list)
    last: dict[int, int] = {}
    out: list[Call] = []
    for ev in cap.events:
        p = by_id.get(ev.probe)
        last[ev.thread] = ev.cycles
        if p is None or ev.kind not in (K_ENTRY, K_RETURN):
            continue
        st = stacks[ev.thread]
        if ev.kind == K_ENTRY:
            st.append((p.function, ev.cycles, ev.cpu))
            continue
        names = [f for f, _, _ in st]
        if p.function not in names:
            continue                       # its entry was before the trace
        while st:
            f, start, cpu = st.pop()
            out.append(Call(ev.thread, cpu, f, start, ev.cycles, len(st),
                            f == p.function))
            if f == p.function:
                break
    for t, st in stacks.items():
        for depth, (f, start, cpu) in enumerate(st):
            out.append(Call(t, cpu, f, start, last[t], depth, False))
    return out


def draw(cap: Capture, probes: list[Probe], out_dir, hz: float, title: str = "") \
        -> list[Path]:
    """timeline-cpuN.png per CPU with calls in out_dir; the files written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    all_calls = calls(cap, probes)
    if not all_calls:
        return []
    t0 = min(c.start for c in all_calls)
    us = 1e6 / hz
    functions = sorted({c.function for c in all_calls})
    cmap = plt.get_cmap("tab20")
    colour = {f: cmap(i % 20) for i, f in enumerate(functions)}
    made = []
    for cpu in sorted({c.cpu for c in all_calls}):
        mine = [c for c in all_calls if c.cpu == cpu]
        threads = sorted({c.thread for c in mine})
        height = max(c.depth for c in mine) + 2           # a band per thread
        fig, ax = plt.subplots(figsize=(12, 1.2 + 0.35 * height * len(threads)))
        bars = defaultdict(list)
        for c in mine:
            band = threads.index(c.thread) * height
            bars[(c.function, band + c.depth, c.closed)].append(
                ((c.start - t0) * us, max((c.end - c.start) * us, 1e-3)))
        for (f, y, closed), spans in bars.items():
            ax.broken_barh(spans, (y, 0.9), facecolors=colour[f], edgecolor="none",
                           hatch=None if closed else "//")
        ax.set_yticks([threads.index(t) * height + height / 2 - 1 for t in threads],
                      [f"t{t}" for t in threads])
        for i in range(1, len(threads)):
            ax.axhline(i * height - 0.55, color="#999999", linewidth=0.5)
        ax.set_ylim(-0.2, len(threads) * height - 0.9)
        ax.set_xlabel("µs of guest time from the first record")
        ax.set_title(f"{title}cpu{cpu}: calls by thread, callees above callers "
                     f"({len(mine)} calls)", fontsize=10)
        used = sorted({c.function for c in mine})
        ax.legend(handles=[Patch(color=colour[f], label=f) for f in used],
                  loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        fig.tight_layout()
        path = out_dir / f"timeline-cpu{cpu}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        made.append(path)
    return made
