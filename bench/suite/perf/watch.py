"""The cost of a watch firing (the watchcost experiment).

watchctr on one thread writes its counter n times, unwatched and then
under a `w` watch with the null action; the difference over the writes
is a watch firing's cost, set against experiment 3's null probe of the
same boot, per repetition.
"""

from __future__ import annotations

from ...guest.qemu import Guest
from ...trace.image import load_image
from ...trace.session import TraceError
from .core import Bench, figure


def watchcost(b: Bench, g: Guest) -> None:
    """Guest cycles per watch firing: watchctr (1 thread, writes only)
    with its counter watched (`w`, null action) less the same run
    unwatched, over the writes; and that / experiment 3's null probe."""
    if not b.arch.watch_types:
        b.notes.append(f"no watch cost: {b.arch.name} has no watchpoints")
        return
    img = load_image(b.arch.elf())
    addr, size = img.objects["watchctr_counter"]
    n = b.sizes.dp_n * 5
    run = f"run watchctr threads=1 writes={n} reads=0"
    per = []
    for i in range(b.reps):
        r0 = g.command(run)
        w = g.command(f"watch add 4000 w {addr:#x} {size} null")
        r1 = g.command(run)
        rm = g.command("watch remove 4000")
        if not (r0.ok and w.ok and r1.ok and rm.ok) or f"hits={n} " not in rm.message:
            raise TraceError(f"watch cost: {r0.message} / {w.message} / "
                             f"{r1.message} / {rm.message}")
        c0, c1 = r0.results[0]["cycles"], r1.results[0]["cycles"]
        per.append((c1 - c0) / n)
        b.say(f"  watch {i + 1}/{b.reps}: {per[-1]:,.0f} cycles per firing")
    ns = 1e9 / b.hz
    b.put("watch_w_null", per, "guest cycles per watch firing",
          ns=figure([v * ns for v in per], "ns per firing"),
          what=f"a w watch firing, null action (watchctr threads=1 writes={n})")
    if b.null_probe:
        m, probe = b.null_probe
        b.put("ratio_watch_over_probe", [w / p if p else None
                                         for w, p in zip(per, probe)],
              "ratio", what=f"watch firing / {m} null-probe firing "
              "(overhead per firing, same boot)")
