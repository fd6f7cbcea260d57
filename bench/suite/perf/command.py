"""`make bench`'s command: measure, then write results.json, plots, the table.

results.json holds every figure with the configuration it was measured
in (QEMU version, accel, smp per boot, git commit, sizes, repetitions)
and the host wall time of each boot and experiment; stdout gets the
table (targets beside the figures they judge), the notes, and the same
timings, so that where the minutes went is seen every run.
"""

from __future__ import annotations

import json
import subprocess
import time

from ... import arches
from ...guest import build
from ...paths import BUILD, REPO
from .core import TARGETS, Sizes
from .plan import check_only, measure
from .plots import plots
from .table import figure_rows, missed_targets, table


def run(arch_name: str, reps: int = 5, small: bool = False, on_line=print,
        out=None, only=()) -> int:
    arch = arches.get(arch_name)
    check_only(only)
    t_image = time.monotonic()
    build.ensure_image(arch)
    t0 = time.monotonic()
    sizes = Sizes.small() if small else Sizes()
    on_line(f"bench {arch.name}: {reps} repetitions of every figure"
            + (" (small sizes)" if small else "")
            + (f", only {', '.join(only)}" if only else ""))
    b = measure(arch, reps, sizes, on_line, only=only)
    b.timings.insert(0, {"boot": "", "experiment": "image",
                         "seconds": round(t0 - t_image, 1)})
    # A partial run (--only) never overwrites the whole bench's results.
    out = out or BUILD / "bench" / arch.name / ("only" if only else "")
    out.mkdir(parents=True, exist_ok=True)
    made = plots(b, out) if not only else []     # a partial run: no plots
    # A partial run: the sections it measured whole, then every figure it
    # took, one row each (a section that lacks a figure is left out).
    rows = table(b) + (figure_rows(b) if only else [])
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    qemu = subprocess.run([arch.qemu, "--version"], capture_output=True,
                          text=True).stdout.splitlines()[:1]
    results = {
        "figures": b.figures,
        "targets": {k: v[0] for k, v in TARGETS.items()},
        "missed_targets": missed_targets(b),
        "notes": b.notes,
        "plots": made,
        "timings": b.timings,
        "config": {"arch": arch.name, "accel": "tcg", "qemu": qemu[0] if qemu else "",
                   "git_commit": commit, "boots": b.boots, "repetitions": reps,
                   "sizes": sizes.__dict__, "small": small,
                   "only": list(only),
                   "seconds": round(time.monotonic() - t0, 1)},
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))
    width = max(len(r[0]) for r in rows)
    print(f"\n{'figure':{width}}  {'measured (median [min..max])':>40}  target")
    for name, value, target in rows:
        print(f"{name:{width}}  {value:>40}  {target}")
    for n in b.notes:
        print(f"note: {n}")
    print(f"results: {out / 'results.json'}"
          + (f"; plots: {', '.join(made)}" if made else ""))
    print("host wall time per boot and experiment (s):")
    for t in b.timings:
        print(f"  {t['boot']:2} {t['experiment']:24} {t['seconds']:7.1f}")
    print(f"bench {arch.name}: {results['config']['seconds']} s")
    return 0
