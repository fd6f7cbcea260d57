"""`make bench`: the figures measured so far, with the targets beside them.

Today this is the probe cost of each mechanism against the bare trap round
trip (the probecost workload, repeated within one boot, so ratios come from
one machine state) and the lossless counts of a calltree run per mechanism.
The rest of the bench — DProbes' five experiments, -finstrument-functions,
vCPU scaling, serial drain, plots — is not built yet, and the table says so
instead of showing a number. Results go to build/bench/<arch>/results.json
with repetitions, median and spread.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time

from . import arches, build, runs
from .cdefs import REPO
from .machine import Guest

NOT_YET = ("DProbes experiments 1-5", "-finstrument-functions baseline",
           "firings/s at 1, 2, 4 vCPUs", "serial payload / raw", "plots")


def probe_costs(arch: arches.Arch, reps: int, on_line=print) -> dict[str, list[int]]:
    """cycles per firing per mechanism, `reps` runs of probecost in one boot."""
    costs: dict[str, list[int]] = {}
    with Guest(arch, label="bench-cost") as g:
        for i in range(reps):
            r = g.command("run probecost")
            for line in r.text:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "cost" and parts[2].isdigit():
                    costs.setdefault(parts[1], []).append(int(parts[2]))
                elif parts[:1] == ["cost"]:
                    on_line(f"  {line}")
            on_line(f"  probecost run {i + 1}/{reps}")
        hz = g.hello["cycles_hz"]
        g.exit(0)
    return {"cycles_hz": hz, **costs}


def _figure(values, unit):
    return {"unit": unit, "repetitions": len(values), "values": values,
            "median": statistics.median(values),
            "spread": [min(values), max(values)]}


def run(arch_name: str, reps: int = 5, on_line=print) -> int:
    arch = arches.get(arch_name)
    build.ensure_image(arch)
    t0 = time.monotonic()
    on_line(f"bench {arch.name}: probe cost, {reps} repetitions in one boot")
    costs = probe_costs(arch, reps, on_line)
    hz = costs.pop("cycles_hz")
    results = {"figures": {}, "not_yet_measured": list(NOT_YET)}
    for name, vals in costs.items():
        results["figures"][f"cost_{name}"] = _figure(vals, "guest cycles per firing")
    rows = []
    med = {k: v["median"] for k, v in
           ((k[5:], f) for k, f in results["figures"].items())}
    for name in sorted(med):
        rows.append((f"cycles per firing: {name}", f"{med[name]:,.0f} "
                     f"({med[name] / hz * 1e9:,.0f} ns)", ""))
    failed = False
    emulating = [m for m in arch.modes if m not in runs.LOSSY_MODES and m in med]
    if "bare_trap" in med and med["bare_trap"] and emulating:
        for m in emulating:
            ratio = med[m] / med["bare_trap"]
            results["figures"][f"ratio_{m}_over_bare"] = {"unit": "ratio", "median": ratio}
            rows.append((f"{m} emulated / bare trap", f"{ratio:.2f}",
                         "≤ 1.15 " + ("met" if ratio <= 1.15 else "MISSED")))
        base = next((m for m in arch.modes if m in runs.LOSSY_MODES and m in med), None)
        if base:
            ratio = med[base] / med[emulating[0]]
            results["figures"][f"ratio_{base}_over_{emulating[0]}"] = {
                "unit": "ratio", "median": ratio}
            rows.append((f"{base} / {emulating[0]}", f"{ratio:.1f}",
                         "≥ 3 " + ("met" if ratio >= 3 else "MISSED")))
    else:
        on_line(f"  {arch.name}: no emulating probe could be measured")
        failed = True
    for mode in [m for m in arch.modes if m in med]:
        on_line(f"bench {arch.name}: lossless calltree, mode {mode}")
        res = runs.lossless(arch, mode, smp=min(4, arch.max_smp), threads=8,
                            iters=500, on_line=lambda l: on_line(f"  {l.strip()}"))
        rep = res.report
        results["figures"][f"lossless_{mode}"] = {
            "unit": "firings", "expected": res.firings_expected,
            "traced": rep.traced, "missed": res.missed, "dropped": rep.dropped}
        pct = 100.0 * res.missed / res.firings_expected if res.firings_expected else 0
        target = ("" if mode in runs.LOSSY_MODES
                  else "missed = 0 " + ("met" if not res.missed else "MISSED"))
        rows.append((f"missed, {mode}", f"{res.missed} of {res.firings_expected} "
                     f"({pct:.1f}%)", target))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    qemu = subprocess.run([arch.qemu, "--version"], capture_output=True,
                          text=True).stdout.splitlines()[:1]
    results["config"] = {"arch": arch.name, "accel": "tcg", "qemu": qemu,
                         "git_commit": commit, "cycles_hz": hz,
                         "seconds": round(time.monotonic() - t0, 1)}
    out = REPO / "build" / "bench" / arch.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    width = max(len(r[0]) for r in rows) if rows else 10
    print(f"\n{'figure':{width}}  {'measured':>28}  target")
    for name, value, target in rows:
        print(f"{name:{width}}  {value:>28}  {target}")
    for what in NOT_YET:
        print(f"{what:{width}}  {'not built yet':>28}")
    print(f"results: {out / 'results.json'}")
    return 1 if failed else 0
