"""The cost of a call stack in probe context (`stack`, docs/stacks.md).

calltree at recursion depth 16 with one probe, ct_add's entry, whose
stacks run 4 to 20 frames deep, under the arch's default mechanism; each
repetition runs it twice in the same boot: with a program that counts by
probe (`probe`, `count`, `abort`) and with one that counts by stack
(`stack 32`, `count`, `abort`). The difference in guest cycles, over the
frames the stacks held (each stack's depth times its count, from the
STACKS frames), is the walk and its interning per frame: i386 follows
%ebp through the thread's stack, sparc64 flushes its windows first.
"""

from __future__ import annotations

from ...guest.qemu import Guest
from ...program import aggregate, asm
from ...trace.session import TraceError, open_session
from .core import Bench, figure

BY_PROBE = "probe\ncount @n, 1\nabort\n"
BY_STACK = "stack 32\ncount @n, 1\nabort\n"


def _run(b: Bench, g: Guest, text: str) -> tuple[int, int, int]:
    """(guest cycles, ct_add firings, frames walked) of one run."""
    prog = asm.assemble(text, b.arch.name, "stackwalk")
    s = open_session(g)
    g.command("probe clear")
    s.setup("fbt:ct_add:entry", b.arch.default_mechanism, buffer_bytes=None,
            strict=False, program=prog)
    s.must("trace reset")
    mark = len(g.trace_frames)
    s.enable(True)
    r = s.cmd(f"run calltree threads=1 iters={b.sizes.stack_iters} "
              f"depth={b.sizes.stack_depth} ref=0", timeout=600)
    s.enable(False)
    s.must("trace flush", timeout=600)
    if not r.ok or not r.results:
        raise TraceError(f"stackwalk: calltree failed: {r.message}")
    cap = g.capture(mark)
    entries = aggregate.resolve(cap.aggs, s.programs, cap.stacks)
    rows = [row for t in aggregate.merge(entries).values() for row in t.rows.values()]
    fired = sum(row.count for row in rows)
    frames = sum(row.count * len(row.keys[0]) for row in rows
                 if isinstance(row.keys[0], tuple))
    return r.results[-1]["cycles"], fired, frames


def stackwalk(b: Bench, g: Guest) -> None:
    """stack_walk_frame: guest cycles per frame; stack_walk_depth: frames
    per stack."""
    per_frame, depth = [], []
    for i in range(b.reps):
        base, fired0, _ = _run(b, g, BY_PROBE)
        walked, fired, frames = _run(b, g, BY_STACK)
        if not frames or fired != fired0:
            raise TraceError(f"stackwalk: {fired0} and {fired} firings, {frames} frames")
        per_frame.append((walked - base) / frames)
        depth.append(frames / fired)
        b.say(f"  stackwalk {i + 1}/{b.reps}: {per_frame[-1]:,.0f} cycles per frame, "
              f"{depth[-1]:.1f} frames per stack")
    ns = 1e9 / b.hz
    b.put("stack_walk_frame", per_frame, "guest cycles per frame",
          ns=figure([v * ns for v in per_frame], "ns per frame"),
          what=f"(calltree by stack - by probe) / frames walked, ct_add's entry, "
               f"{b.arch.default_mechanism}")
    b.put("stack_walk_depth", depth, "frames per stack")


def rows(b: Bench) -> list[tuple[str, str, str]]:
    """The table's row for stackwalk()'s figures (none if it did not run)."""
    f, d = b.figures.get("stack_walk_frame"), b.figures.get("stack_walk_depth")
    if not f:
        return []
    lo, hi = f["spread"]
    return [(f"stack walk per frame ({f['what']})",
             f"{f['median']:,.0f} [{lo:,.0f}..{hi:,.0f}] cyc, {f['ns']['median']:,.0f} ns;"
             f" {d['median']:.1f} frames/stack", "")]
