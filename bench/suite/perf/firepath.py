"""The fire path's cost stage by stage (the firepath workload).

The guest stamps the cycle counter at each stage of a firing (stamp.h
says where each ends) for the bare trap and every mechanism x site x
action; the figures are each stage's median, a null probe's total
against the bare trap's, i386's opt against int3 on the same prologue,
a return trapped at its site against one riding on its entry (opt's
return trampoline, whose own stages `ride` and `ride_fire` are stamped
where it takes them), a trap-free mechanism's firing against the bare
trap (sparc64's tramp), and the out-of-line path (site `ool`) against emulation and against the
lossy baselines' cost per firing that dprobes measured in this boot.
"""

from __future__ import annotations

import statistics

from ...guest.qemu import Guest
from ...trace.session import TraceError
from .core import Bench, figure

# The stages only a return riding on its entry stamps (stamp.h): the
# trampoline's way into C, and its count or record with the shadow pop.
RIDE_STAGES = ("ride", "ride_fire")


def firepath(b: Bench, g: Guest) -> None:
    """The firepath workload: each stage's median cycles, for the bare
    trap and every mechanism x site x action (stamp.h says where each
    stage ends); a row's total against the bare trap's is its ratio."""
    vals: dict[str, dict[str, list[int]]] = {}
    for i in range(b.reps):
        r = g.command(f"run firepath n={b.sizes.stage_n}")
        if not r.ok:
            raise TraceError(f"firepath failed: {r.message}: {r.text[-5:]}")
        for line in r.text:
            w = line.split()
            if w[:1] != ["stage"] or len(w) < 4:
                continue
            if w[2] == "refused:":
                if i == 0:
                    b.notes.append(f"stage table: {w[1]} {' '.join(w[2:])}")
                continue
            vals.setdefault(w[1], {}).setdefault(w[2], []).append(int(w[3]))
    for name, stages in vals.items():
        if name in ("call", "stamp"):
            continue
        fig = {"unit": "guest cycles", "repetitions": b.reps,
               "what": "bare trap round trip" if name == "bare" else
               f"{name}: mechanism.site.action"}
        for stage, v in stages.items():
            if stage in RIDE_STAGES and not any(v):
                continue            # no return rode on this row's entry
            fig[stage] = figure(v, "firings" if stage == "stamps" else "guest cycles")
        b.figures[f"stages_{name.replace('.', '_')}"] = fig
    b.put("stages_call", vals["call"]["-"], "guest cycles",
          what="the unprobed call between the stamps")
    b.put("stages_stamp", vals["stamp"]["-"], "guest cycles",
          what="one stamp's own cost, taken off each stage")
    bare = vals["bare"]["total"]
    for name, stages in vals.items():
        if not name.endswith(".null"):
            continue
        b.put(f"ratio_stages_{name.replace('.', '_')}_over_bare",
              [t / q if q else None for t, q in zip(stages["total"], bare)],
              "ratio", what=f"{name[:-5]}: null-probe total / bare trap, "
              "stage table")
    # i386's jump-optimized probe against int3 on the same prologue, in
    # this boot: the null probe's whole cost, the stage table's total.
    # Unstamped ("plain"): opt's detour counts a null probe in assembly
    # and takes no stamp unless stamping is on, so only the plain run
    # times the path an opt firing really takes.
    if "opt.prologue.null" in vals and "int3.prologue.null" in vals:
        b.put("ratio_int3_over_opt",
              [i / o if o else None for i, o in
               zip(vals["int3.prologue.null"]["plain"],
                   vals["opt.prologue.null"]["plain"])],
              "ratio", target="int3_over_opt",
              what="int3 / opt, null-probe cost per firing on the "
              "prologue site, stamps off")
    _returns(b, vals)
    _trap_free(b, vals)
    _ool(b, vals)
    b.say("  stages: " + ", ".join(
        f"{n} {statistics.median(v['total']):,.0f}" for n, v in vals.items()
        if "total" in v))


def _returns(b: Bench, vals: dict) -> None:
    """A return's own cost per firing, stamps off: the stage site `return`
    (entry and return probes on one function) less its entry alone (site
    `prologue`), per repetition; under the arch's default mechanism the
    return traps at its site, under a mechanism with a return trampoline
    it rides on the entry. The
    trampoline's entry goes to C where the prologue's counts in the slot,
    so the difference charges that to the return too."""
    plain = {n: v["plain"] for n, v in vals.items() if "plain" in v}
    trap = b.arch.default_mechanism                 # the return that traps
    rides = sorted(b.arch.return_trampolines)
    ret = {}
    for m in (trap, *rides) if rides else ():
        both, entry = plain.get(f"{m}.return.null"), plain.get(f"{m}.prologue.null")
        if both and entry:
            ret[m] = [x - e for x, e in zip(both, entry)]
            b.put(f"return_{m}_null", ret[m], "guest cycles per firing",
                  what=f"{m}: a return's null probe, stage table (return less prologue)")
    for m in rides:
        if trap in ret and m in ret:
            b.put(f"ratio_{trap}_over_{m}_return",
                  [i / o if o > 0 else None for i, o in zip(ret[trap], ret[m])],
                  "ratio", target="int3_over_trampoline_return",
                  what=f"{trap} / {m}, a return's null-probe cost per firing "
                  "(trapped at its site / riding on the entry), stamps off")


def _trap_free(b: Bench, vals: dict) -> None:
    """A trap-free mechanism's null firing against the bare trap round
    trip, stamps off, per repetition, at each stage site it takes with no
    trap: those whose fire path took no emulate stamp (fewer than four;
    its other sites take the trap and are emulated)."""
    bare = vals["bare"]["plain"]
    for m in sorted(b.arch.trap_free):
        for name, stages in vals.items():
            mech, site, action = (name.split(".") + ["", ""])[:3]
            if mech != m or action != "null" or "plain" not in stages or \
                    statistics.median(stages["stamps"]) >= 4:
                continue
            b.put(f"ratio_{m}_{site}_over_bare",
                  [t / q if q else None for t, q in zip(stages["plain"], bare)],
                  "ratio", target="notrap_over_bare",
                  what=f"{m} / bare trap, null-probe cost per firing on the "
                  f"{site} site (no trap), stamps off")


def _ool(b: Bench, vals: dict) -> None:
    """The out-of-line path (stage site `ool`, an instruction no
    mechanism emulates) against the emulated first site of the same
    table and against the lossy baselines' cost per firing
    (experiment 2, this boot): per repetition, null action."""
    for name, stages in vals.items():
        m, site, action = (name.split(".") + ["", ""])[:3]
        if site != "ool" or action != "null":
            continue
        emul = next((n.split(".")[1] for n in vals
                     if n.startswith(f"{m}.") and n.endswith(".null")
                     and n.split(".")[1] != "ool"), None)
        ool = stages["total"]
        b.put(f"ool_{m}_null", ool, "guest cycles per firing",
              what=f"{m}: null probe run out of line, stage table total")
        if emul:
            b.put(f"ratio_ool_over_emulated_{m}",
                  [o / e if e else None for o, e in
                   zip(ool, vals[f"{m}.{emul}.null"]["total"])],
                  "ratio", what=f"{m}: out of line / emulated ({emul}), "
                  "null-probe total per firing, stage table")
        for lm, lossy in b.lossy_firing.items():
            b.put(f"ratio_{lm}_over_ool_{m}",
                  [q / o if q and o else None for q, o in zip(lossy, ool)],
                  "ratio", what=f"{lm} (experiment 2, per firing) / {m} out "
                  "of line (stage table total), same boot")
