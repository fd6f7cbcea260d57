"""Seed 003: the interrupts the tracer itself causes (tlbwalk).

Where the arch's TLB misses are software traps (sun4u), each of
bench/trace/avoid.py's interrupt-avoidance methods off and on: the
tracer's own misses and faults by kind, cycles per traced instruction,
bytes per record; with all on, none (the `tracer_own_traps` target).
Elsewhere a note says why the table is absent.
"""

from __future__ import annotations

from ...guest.qemu import Guest
from ...trace import avoid as avoid_methods
from .core import Bench, figure


def avoid(b: Bench, g: Guest) -> None:
    """Each interrupt-avoidance method off and on, where the guest can
    count the TLB misses the tracer causes (avoid.py)."""
    if not avoid_methods.tlb_visible(g):
        b.notes.append(f"no interrupt-avoidance table: {b.arch.name}'s TLB "
                       "is refilled by hardware, so the misses the tracer "
                       "causes cannot be seen (sun4u's can)")
        return
    sz = b.sizes
    # A 1 ms tick: the commands between walks wait for ticks.
    g.command("timer 1000")
    rows = avoid_methods.measure(g, sz.avoid_pages, sz.avoid_iters, b.reps,
                                 sz.avoid_configs, on_line=b.say)
    g.command("timer 100")
    units = {"own_itlb": "ITLB misses", "own_dtlb": "DTLB misses",
             "own_buffer": "DTLB misses on the buffer",
             "own_served": "served reads of execute-only code",
             "own_faults": "faults", "own_window": "window spills and fills",
             "own_total": "misses and faults",
             "locked": "pages locked", "all_dtlb": "DTLB misses (every code)",
             "cycles_per_insn": "guest cycles per traced instruction",
             "bytes_per_record": "bytes per record (the firings' records)"}
    for name, f in avoid_methods.figures(rows).items():
        fig = {"what": f["what"], "workload": f"tlbwalk pages={sz.avoid_pages} "
               f"iters={sz.avoid_iters}", "probes": avoid_methods.SPEC}
        for k, unit in units.items():
            if k in f:
                extra = {"target": "tracer_own_traps"} if (name, k) == \
                    ("all", "own_total") else {}
                fig[k] = figure(f[k], unit, **extra)
        b.figures[f"avoid_{name}"] = fig
    for p in avoid_methods.problems(avoid_methods.figures(rows)):
        b.notes.append(f"interrupt avoidance: {p}")
