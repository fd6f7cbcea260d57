"""The bench's table: figures beside the targets that judge them.

A row is (name, measured value, target verdict); `SECTIONS` lists the
functions that make the rows of each experiment, in the table's order,
each returning nothing when its experiment did not run on this arch.
A target is judged on a figure's median (`met` or `MISSED`); the
function-boundary rows judge the worst repetition, since one missed
firing is already a loss. `missed_targets` names every figure whose
target was missed, for results.json.
"""

from __future__ import annotations

from .core import TARGETS, Bench
from .profile import rows as profile_rows
from .shm import CHANNELS as SHM_COST_CHANNELS
from .stackwalk import rows as stackwalk_rows
from .wholekernel import rows as wholekernel_rows


def judge(fig: dict) -> str:
    t = fig.get("target")
    if not t or fig.get("median") is None:
        return ""
    text, ok = TARGETS[t]
    return f"{text} {'met' if ok(fig['median']) else 'MISSED'}"


def spread(f: dict, fmt: str) -> str:
    if f["median"] is None:     # every repetition unresolved (figure())
        return f"no value ({f.get('unresolved', 0)} unresolved)"
    lo, hi = f["spread"]
    return f"{format(f['median'], fmt)} [{format(lo, fmt)}..{format(hi, fmt)}]"


def dprobes_rows(b: Bench) -> list:
    F = b.figures
    rows = [("DProbes experiments (cycles/iter, ns/iter, +overhead/firing)", "", "")]
    for name in sorted(k for k in F if k.startswith("dp")):
        f = F[name]
        over = f.get("overhead")
        rows.append((f"  {name}", f"{f['median']:,.1f} cyc, {f['ns']['median']:,.1f} ns"
                     + (f", +{over['median']:,.0f}" if over else ""), ""))
    rows.append(("  bare trap round trip", f"{F['bare_trap']['median']:,.0f} cyc, "
                 f"{F['bare_trap']['ns']['median']:,.0f} ns", ""))
    for name in sorted(k for k in F if k.startswith("ratio_")):
        rows.append((f"  {F[name]['what']}", spread(F[name], ".2f"), judge(F[name])))
    return rows


def stage_rows(b: Bench) -> list:
    F = b.figures
    stages = [k for k in F if k.startswith("stages_") and "total" in F[k]]
    if not stages:
        return []
    cols = ["entry", "lookup", "fire", "emulate", "ride", "ride_fire", "exit", "total",
            "plain"]
    rows = [(f"fire path by stage (guest cycles, median; call "
             f"{F['stages_call']['median']:,.0f} is in entry and exit; "
             "plain: the whole firing with no stamps taken)", " | ".join(cols), "")]
    for k in stages:
        rows.append((f"  {k[7:]}", " | ".join(f"{F[k][c]['median']:,.0f}"
                                              if c in F[k] else "-" for c in cols), ""))
    return rows


def rpn_and_watch_rows(b: Bench) -> list:
    F = b.figures
    rows = [(f"  {F[name]['what']}", spread(F[name], ",.1f") + " cyc/insn", "")
            for name in sorted(k for k in F if k.startswith("rpn_"))]
    if "watch_w_null" in F:
        f = F["watch_w_null"]
        rows.append((f"  {f['what']}", f"+{f['median']:,.0f} cyc, "
                     f"{f['ns']['median']:,.0f} ns", ""))
    return rows


def lang_rows(b: Bench) -> list:
    """The D compiler's cost: compiled against hand-written, self->."""
    F = b.figures
    if "lang_compiled_over_hand" not in F:
        return []
    rows = [("D compiled vs RPN by hand (cycles/firing over the loop)", "", "")]
    for name in ("lang_hand", "lang_compiled", "lang_self", "lang_global"):
        rows.append((f"  {F[name]['what']}", spread(F[name], ",.0f"), ""))
    f = F["lang_compiled_over_hand"]
    rows.append((f"  {f['what']}", spread(f, ".3f"), judge(f)))
    f = F["lang_self_storage"]
    rows.append((f"  {f['what']}", spread(f, ",.0f") + " cyc", ""))
    return rows


def kernel_rows(b: Bench) -> list:
    """Every kernel_* figure, under a heading from the first."""
    rows = []
    for key in [k for k in b.figures if k.startswith("kernel_")]:
        f = b.figures[key]
        if not rows:
            rows.append((f"whole kernel: {f['probes']} fbt entry probes, {f['workload']}, "
                         f"{f['smp']} CPU(s)", "firings/s | wire B | B/firing | lost", ""))
        lost = f["lost"]
        rows.append((f"  {f['what']}",
                     f"{f['firings_per_s']['median']:,.0f} | {f['wire_bytes']['median']:,.0f} | "
                     f"{f['bytes_per_firing']['median']:,.2f} | {lost['median']:,.0f} of "
                     f"{f['fired']['median']:,.0f}",
                     f"lost {judge(lost)}" if lost.get("target") else ""))
    return rows


def fbt_rows(b: Bench) -> list:
    F = b.figures
    fbt = [k for k in F if k.startswith("fbt_")]
    rows = [("function-boundary tracing (median of reps)", "ms guest | ms QEMU CPU | "
             "rec/s | missed | dropped | wire B", "")] if fbt else []
    for key in fbt:
        f = F[key]
        lossless = f["mechanism"] not in b.arch.lossy and f["mechanism"] not in (
            "untraced", "hooks_off")
        missed = f["missed"]["median"]
        target = ""
        if lossless:
            text, ok = TARGETS["missed_emulated"]
            worst = f["missed"]["spread"][1]
            target = f"missed {text} {'met' if ok(worst) else 'MISSED'}"
        dropped = f["dropped"]["median"]
        cpu = f["qemu_cpu_seconds"]["median"]
        rows.append((f"  {key[4:]}",
                     f"{f['guest_seconds']['median'] * 1e3:,.1f} | "
                     f"{'-' if cpu is None else f'{cpu * 1e3:,.1f}'} | "
                     f"{f['events_per_s']['median']:,.0f} | "
                     f"{'-' if missed is None else int(missed)} | "
                     f"{'-' if dropped is None else int(dropped)} | "
                     f"{f['wire_bytes']['median']:,.0f}", target))
    return rows


def scaling_rows(b: Bench) -> list:
    F = b.figures
    rows = []
    for name in ("scaling_1_vcpu", "scaling_2_vcpu", "scaling_4_vcpu"):
        if name in F:
            rows.append((f"firings/s, {name.split('_')[1]} vCPU (null action)",
                         f"{F[name]['median']:,.0f}", ""))
    for name in ("scaling_2_over_1", "scaling_4_over_1"):
        if name in F:
            rows.append((f"firings/s {name[8]} vCPUs / 1 vCPU", spread(F[name], ".2f"),
                         judge(F[name])))
    if "scaling_opt_2_over_1" in F:
        rows.append(("opt firings/s 2 vCPUs / 1 vCPU (entries, no trap)",
                     spread(F["scaling_opt_2_over_1"], ".2f"), judge(F["scaling_opt_2_over_1"])))
        rows.append(("calltree unprobed, calls/s 2 vCPUs / 1 vCPU",
                     spread(F["scaling_untraced_2_over_1"], ".2f"), ""))
        rows.append(("  opt 2/1 ÷ unprobed 2/1", spread(F["scaling_opt_2_over_untraced"], ".2f"),
                     ""))
    for n in (2, 4):
        if f"scaling_bare_{n}_over_1" in F:
            rows.append((f"bare traps/s {n} vCPUs / 1 vCPU (QEMU's exception lock)",
                         spread(F[f"scaling_bare_{n}_over_1"], ".2f"), ""))
            f = F[f"scaling_{n}_over_bare"]
            rows.append((f"  {f['what']}", spread(f, ".2f"), judge(f)))
    return rows


def channel_rows(b: Bench) -> list:
    F = b.figures
    rows = []
    for ch in ("serial", "virtio"):
        if f"{ch}_raw" not in F:
            continue
        rows.append((f"{ch} raw channel", f"{F[f'{ch}_raw']['median'] / 1e3:,.0f} kB/s",
                     judge(F[f"{ch}_raw"])))
        rows.append((f"{ch} drain payload", f"{F[f'{ch}_payload']['median'] / 1e3:,.0f} kB/s",
                     ""))
        rows.append((f"{ch} payload / raw", spread(F[f"{ch}_payload_over_raw"], ".2f"),
                     judge(F[f"{ch}_payload_over_raw"])))
    if "virtio_raw_over_serial" in F:
        rows.append(("virtio raw / serial raw (same boot)",
                     spread(F["virtio_raw_over_serial"], ",.0f"),
                     judge(F["virtio_raw_over_serial"])))
    return rows


def shm_rows(b: Bench) -> list:
    F = b.figures
    rows = []
    if "shm_raw" in F:
        rows.append(("shm raw channel (the consumer copies out of guest RAM)",
                     f"{F['shm_raw']['median'] / 1e6:,.0f} MB/s", ""))
    if "shm_raw_handed_on" in F:
        rows.append(("shm raw, as far as the harness (asked, copied, written, read back)",
                     f"{F['shm_raw_handed_on']['median'] / 1e6:,.0f} MB/s", ""))
    if "shm_raw_over_virtio" in F:
        rows.append(("shm raw / virtio raw (same boot)",
                     spread(F["shm_raw_over_virtio"], ",.1f"),
                     judge(F["shm_raw_over_virtio"])))
    costs = [ch for ch in SHM_COST_CHANNELS if f"record_cost_{ch}" in F]
    if costs:
        rows.append(("a record's guest cost, firing to committed (cycles): "
                     + " | ".join(costs),
                     " | ".join(f"{F[f'record_cost_{ch}']['median']:,.0f}" for ch in costs),
                     ""))
    for tag, ch in (("", "shm"), ("_virtio", "virtio")):
        hooks = F.get(f"fbt_calltree_finstrument{tag}")
        if not hooks:
            continue
        mechs = [m for m in b.arch.mechanisms if f"fbt_calltree_{m}{tag}" in F]
        base = hooks["guest_seconds"]["median"]
        rows.append((f"calltree traced, guest time / -finstrument-functions, over {ch}",
                     ", ".join(f"{m} {F[f'fbt_calltree_{m}{tag}']['guest_seconds']['median'] / base:.2f}"
                               for m in mechs), ""))
    return rows


def avoid_rows(b: Bench) -> list:
    F = b.figures
    avoid = [k for k in F if k.startswith("avoid_")]
    rows = [("interrupts the tracer caused (tlbwalk)",
             "ITLB | DTLB (buffer) | served | faults | window | locked | "
             "cyc/insn | B/rec", "")] if avoid else []
    for key in avoid:
        f = F[key]

        def med(k):
            return f[k]["median"] if k in f and f[k]["median"] is not None else None
        cpi, bpr = med("cycles_per_insn"), med("bytes_per_record")
        rows.append((f"  {f['what']} ({key[6:]})",
                     f"{med('own_itlb'):.0f} | {med('own_dtlb'):.0f} "
                     f"({med('own_buffer'):.0f}) | {med('own_served'):.0f} | "
                     f"{med('own_faults'):.0f} | {med('own_window'):.0f} | "
                     f"{med('locked'):.0f} | "
                     f"{'-' if cpi is None else f'{cpi:.1f}'} | "
                     f"{'-' if bpr is None else f'{bpr:.1f}'}",
                     f"own {judge(f['own_total'])}" if key == "avoid_all" else ""))
    return rows


def sustained_rows(b: Bench) -> list:
    rows = []
    for ch in ("shm", "virtio", "virtio_ticks", "serial"):
        f = b.figures.get(f"sustained_{ch}")
        if f:
            rows.append((f"sustained: {f['what']}",
                         f"{f['records']['median']:,.0f} records, "
                         f"{f['lost']['median']:,.0f} dropped, "
                         f"{f['guest_seconds']['median']:.2f} s",
                         f"lost {judge(f['lost'])}" if f["lost"].get("target") else ""))
    return rows


# The table's sections, in order: a new experiment's rows go here.
SECTIONS = (dprobes_rows, stage_rows, rpn_and_watch_rows, lang_rows, stackwalk_rows,
            profile_rows, kernel_rows, wholekernel_rows, fbt_rows, scaling_rows,
            channel_rows, shm_rows, avoid_rows, sustained_rows)


def table(b: Bench) -> list[tuple[str, str, str]]:
    """Every section's rows; in a partial run (`--only`) a section whose
    figures were not measured is left out, in a whole one it is a bug."""
    rows = []
    for section in SECTIONS:
        try:
            rows += section(b)
        except KeyError:
            if not getattr(b, "only", ()):
                raise
    return rows


def figure_rows(b: Bench) -> list[tuple[str, str, str]]:
    """Every figure as it stands, one row each: the table of a partial run
    (`bench --only`), whose sections would miss the figures they join."""
    return [(name, f"{spread(f, ',.4g')} {f.get('unit', '')}", judge(f))
            for name, f in b.figures.items()
            if isinstance(f, dict) and f.get("median") is not None]


def missed_targets(b: Bench) -> list[str]:
    return [f"{name}.{k}" if k else name for name, fig in b.figures.items()
            for k, f in [("", fig), *fig.items()]
            if isinstance(f, dict) and "MISSED" in judge(f)]
