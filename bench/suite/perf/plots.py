"""The bench's plots: PNGs beside results.json.

Bar charts of the DProbes experiments (ns per loop iteration), the
function-boundary runs (guest time), the scaling by vCPUs and the serial
channel's raw rate against its drained payload, each bar its median and
each whisker the spread of the repetitions. Without matplotlib (make
deps installs it) there are no plots and a note says why.
"""

from __future__ import annotations

from .core import Bench


def plots(b: Bench, out) -> list[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        b.notes.append("no plots: python3-matplotlib is not installed (make deps)")
        return []
    F, made = b.figures, []

    def bars(fname, title, ylabel, names, meds, errs, log=False):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        ax.bar(range(len(names)), meds, yerr=errs, capsize=4, color="#4477aa")
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{b.arch.name}: {title}", fontsize=10)
        if log:
            ax.set_yscale("log")
        fig.tight_layout()
        fig.savefig(out / fname, dpi=100)
        plt.close(fig)
        made.append(fname)

    def err(f):
        return [f["median"] - f["spread"][0], f["spread"][1] - f["median"]]

    # Each plot's figures, where its experiments ran (`bench --only`).
    dp = sorted(k for k in F if k.startswith("dp"))
    e = list(zip(*[err(F[k]["ns"]) for k in dp]))
    if dp:
        bars("dprobes.png", f"DProbes experiments, ns per loop iteration "
             f"(median, min-max of {b.reps})", "ns / iteration (log)",
             dp, [F[k]["ns"]["median"] for k in dp], e, log=True)
    fbt = [k for k in F if k.startswith("fbt_")]
    e = list(zip(*[err(F[k]["guest_seconds"]) for k in fbt]))
    if fbt:
        bars("fbt.png", "function-boundary tracing: guest time per run", "ms (log)",
             [k[4:] for k in fbt], [F[k]["guest_seconds"]["median"] * 1e3 for k in fbt],
             [[x * 1e3 for x in side] for side in e], log=True)
    sc = [k for k in ("scaling_1_vcpu", "scaling_2_vcpu", "scaling_4_vcpu") if k in F]
    if sc:
        e = list(zip(*[err(F[k]) for k in sc]))
        bars("scaling.png", "aggregate firings/s by vCPUs (null action)", "firings/s",
             [k.split("_")[1] + " vCPU" for k in sc], [F[k]["median"] for k in sc], e)
    sr = ["serial_raw", "serial_payload"]
    if not all(k in F for k in sr):
        return made
    e = list(zip(*[err(F[k]) for k in sr]))
    bars("serial.png", "serial channel: raw vs drained payload", "bytes/s",
         ["raw channel", "drain payload"], [F[k]["median"] for k in sr], e)
    return made
