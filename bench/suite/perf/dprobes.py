"""DProbes' five experiments (the dprobes workload) and probecost.

One boot of the image runs the base loop, null probes under the lossy
baselines (experiment 2, the two-site loop), and under each emulating
mechanism the fire path with no program, then DProbes' handlers as probe
programs — `abort`, `push` a register, `log` and `exit` drained — and
programs of 8 and 32 instructions, whence the cost of one RPN
instruction; with the bare trap round trip beside them. A figure per
line of the workload's output, its overhead per firing taken against the
same repetition's base loop; ratios per repetition, never across boots.
`dprobes_log` runs experiment 5 alone over one channel.
"""

from __future__ import annotations

import statistics

from ...guest.qemu import Guest
from ...paths import PROGRAMS
from ...program import asm, load
from ...trace.session import TraceError
from .core import Bench, figure

# The programs of the dprobes workload, by its parameter: DProbes'
# handlers (bench/programs/dp_*.rpn) and two of 8 and 32 instructions.
DP_PROGRAMS = ("abort", "push", "ops8", "ops32", "log")
# Figure names of the dprobes workload's lines, by suffix: experiment, tail.
DP_NAMES = {"pair": (2, "null_pair"), "null": (3, "null"), "abort": (3, "abort"),
            "ops8": (3, "ops8"), "ops32": (3, "ops32"), "push": (4, "push"),
            "log": (5, "log")}


def ops_program(n: int, arch: str) -> asm.Program:
    """A program of n instructions (n even): `probe`, (n - 2) / 2 pairs of
    `push 3` and `add`, `abort` — what it costs beyond `abort` alone is the
    interpreter's dispatch of n - 1 instructions."""
    body = ["probe"] + ["push 3", "add"] * ((n - 2) // 2) + ["abort"]
    prog = asm.assemble("".join(f"    {op}\n" for op in body), arch, f"ops{n}")
    assert len(prog.insns) == n
    return prog


def dp_programs(arch: str) -> dict[str, asm.Program]:
    files = {"abort": "dp_null.rpn", "push": f"dp_push.{arch}.rpn", "log": "dp_log.rpn"}
    progs = {k: asm.assemble((PROGRAMS / f).read_text(), arch, f)
             for k, f in files.items()}
    progs["ops8"], progs["ops32"] = ops_program(8, arch), ops_program(32, arch)
    return {k: progs[k] for k in DP_PROGRAMS}


def mechanism_mask(b: Bench) -> int:
    """The workload's `mechanisms` bits: every mechanism but the
    trap-free ones, which take the loop's branch sites with the arch's
    emulation (their rows would repeat the emulating mechanism's)."""
    return sum(1 << i for i, m in enumerate(b.arch.mechanisms)
               if m not in b.arch.trap_free)


def dprobes(b: Bench, g: Guest) -> None:
    """Experiments 1-5 in one workload run per repetition: the figures
    dpN_*, the bare trap, and the ratios between them."""
    progs = dp_programs(b.arch.name)
    per, fired = _runs(b, g, progs)
    over = _loop_figures(b, per, fired, progs)
    _ratios(b, per, over)


def _runs(b: Bench, g: Guest, progs: dict) -> tuple[dict, dict]:
    """Cycles per iteration of each loop by key (`base`, `M.what`, ...),
    and the firings of each probed loop, per repetition."""
    per: dict[str, list[float]] = {}
    fired: dict[str, list[int]] = {}
    slots = []
    for slot, (param, prog) in enumerate(progs.items(), start=1):
        load.load(g, prog, slot)
        slots.append(f"{param}={slot}")
    for i in range(b.reps):
        r = g.command(f"run dprobes n={b.sizes.dp_n} base={b.sizes.dp_base} "
                      f"mechanisms={mechanism_mask(b)} " + " ".join(slots))
        got = {}
        for line in r.text:
            w = line.split()
            if w[:1] != ["dp"] or len(w) < 3:
                continue
            if w[2] == "refused:":
                if i == 0:
                    b.notes.append(f"experiment under {w[1]}: {' '.join(w[2:])}")
                continue
            if len(w) == 5:
                got[w[1]] = int(w[2]) / int(w[3])
                if "." in w[1]:
                    fired.setdefault(w[1], []).append(int(w[4]))
        if not r.ok or "base" not in got:
            raise TraceError(f"dprobes failed: {r.message}: {r.text[-5:]}")
        got["bare"] = got.pop("bare_trap") - got.pop("bare_none")
        for k, v in got.items():
            per.setdefault(k, []).append(v)
        b.say(f"  dprobes {i + 1}/{b.reps}: base {got['base']:.1f} cycles/iter, "
              + ", ".join(f"{k} {v:,.0f}" for k, v in got.items()
                          if k not in ("base", "base2")))
    return per, fired


def _loop_figures(b: Bench, per: dict, fired: dict, progs: dict) -> dict:
    """dp1_base, dp1_base2, bare_trap and dpN_M_TAIL; returns the
    overhead per firing of each probed loop, per repetition."""
    ns = 1e9 / b.hz
    base, base2 = per["base"], per["base2"]
    b.put("dp1_base", base, "guest cycles per iteration",
          ns=figure([v * ns for v in base], "ns per iteration"))
    b.put("dp1_base2", base2, "guest cycles per iteration",
          ns=figure([v * ns for v in base2], "ns per iteration"),
          what="bench_loop2, the two-site loop, unprobed")
    b.put("bare_trap", per["bare"], "guest cycles per trap round trip",
          ns=figure([v * ns for v in per["bare"]], "ns per trap"))
    over: dict[str, list[float]] = {}    # per firing, by key
    for key, vals in per.items():
        if "." not in key:
            continue
        mechanism, what = key.split(".")
        ref = base2 if what == "pair" else base
        # Firings per iteration: 1, or 2 on the pair loop (fewer when lossy).
        fpi = [f / b.sizes.dp_n for f in fired[key]]
        over[key] = [(v - q) / k if k else None for v, q, k in zip(vals, ref, fpi)]
        exp, tail = DP_NAMES[what]
        b.put(f"dp{exp}_{mechanism}_{tail}", vals, "guest cycles per iteration",
              ns=figure([v * ns for v in vals], "ns per iteration"),
              overhead=figure(over[key], "guest cycles per probe firing"),
              firings=figure(fired[key], "firings per loop"),
              **({"program": progs[what].path} if what in progs else {}))
    return over


def _ratios(b: Bench, per: dict, over: dict) -> None:
    """Emulated against the bare trap, programs against none, an RPN
    instruction's cost, and the lossy baselines against emulation."""
    emul = [m for m in b.arch.mechanisms if m not in b.arch.lossy
            and f"{m}.null" in per]
    lossy = [m for m in b.arch.mechanisms if m in b.arch.lossy
             and f"{m}.pair" in per]
    if emul:
        b.null_probe = (emul[0], over[f"{emul[0]}.null"])
    for m in emul:
        b.put(f"ratio_{m}_over_bare", [o / t for o, t in zip(over[f"{m}.null"],
                                                          per["bare"])],
              "ratio", target="emulated_over_bare",
              what=f"{m} null-probe overhead / bare trap round trip")
        if f"{m}.abort" in over:
            b.put(f"ratio_{m}_abort_over_null",
                  [p / q for p, q in zip(over[f"{m}.abort"], over[f"{m}.null"])],
                  "ratio", what=f"{m}: a program of one abort / no program, "
                  "overhead per firing")
        if f"{m}.ops32" in over and f"{m}.abort" in over:
            for n in (8, 32):
                b.put(f"rpn_{m}_insn{n}",
                      [(p - q) / (n - 1) for p, q in zip(over[f"{m}.ops{n}"],
                                                         over[f"{m}.abort"])],
                      "guest cycles per RPN instruction",
                      what=f"{m}: (program of {n} - program of 1) / {n - 1}")
        for lm in lossy:
            b.lossy_firing[lm] = over[f"{lm}.pair"]
            if f"{m}.pair" not in over:
                continue
            b.put(f"ratio_{lm}_over_{m}",
                  [p / q if p and q else None
                   for p, q in zip(over[f"{lm}.pair"], over[f"{m}.pair"])],
                  "ratio", target="baseline_over_emulated",
                  what=f"{lm} / {m}, overhead per firing, 2-site loop")


def dprobes_log(b: Bench, g: Guest, channel: str) -> None:
    """DProbes' experiment 5 alone (record and drain) over a channel:
    figures dp5_M_log_CHANNEL, overhead per firing against the same
    run's base loop."""
    g.command(f"channel {channel}")
    slot = len(DP_PROGRAMS) + 1
    load.load(g, dp_programs(b.arch.name)["log"], slot)
    per: dict[str, list[float]] = {}
    for _ in range(b.reps):
        r = g.command(f"run dprobes n={b.sizes.dp_n} base={b.sizes.dp_base} "
                      f"mechanisms={mechanism_mask(b)} log={slot}")
        got = {}
        for line in r.text:
            w = line.split()
            if w[:1] == ["dp"] and len(w) == 5:
                got[w[1]] = (int(w[2]) / int(w[3]), int(w[4]) / b.sizes.dp_n)
        if not r.ok or "base" not in got:
            raise TraceError(f"dprobes failed: {r.message}: {r.text[-5:]}")
        base = got["base"][0]
        for key, (cyc, fpi) in got.items():
            if key.endswith(".log") and fpi:
                per.setdefault(key.split(".")[0], []).append((cyc, (cyc - base) / fpi))
    ns = 1e9 / b.hz
    for m, vals in per.items():
        b.put(f"dp5_{m}_log_{channel}", [v[0] for v in vals],
              "guest cycles per iteration",
              ns=figure([v[0] * ns for v in vals], "ns per iteration"),
              overhead=figure([v[1] for v in vals], "guest cycles per probe firing"),
              what=f"experiment 5 (log, exit, drained) over {channel}")
    b.say(f"  dprobes 5 over {channel}: " + ", ".join(
        f"{m} +{statistics.median(v[1] for v in vals):,.0f} cyc/firing"
        for m, vals in per.items()))


def probecost(b: Bench, g: Guest) -> None:
    """Guest cycles per firing of entry and return probes on two small
    functions (the probecost workload), per repetition."""
    costs: dict[str, list[int]] = {}
    for _ in range(b.reps):
        r = g.command("run probecost n=1000" if b.sizes.dp_n < 1000
                      else "run probecost")
        for line in r.text:
            w = line.split()
            if len(w) == 3 and w[0] == "cost" and w[2].isdigit():
                costs.setdefault(w[1], []).append(int(w[2]))
    for name, vals in costs.items():
        b.put(f"cost_{name}", vals, "guest cycles per firing",
              what="probecost: entry/return probes on two small functions")
