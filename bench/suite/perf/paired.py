"""calltree under each lossless mechanism against -finstrument-functions,
measured in pairs: both images up at once, their runs alternating.

This host's speed changes by up to 2x for seconds at a time (a cloud VM's
neighbours), and under TCG guest time is host time: two boots' runs taken
seconds apart read 0.6 to 1.3 for the same code. So boot B (the
instrumented image, hooks on) gets the plain image booted beside it (its
probes armed under mechanism M), the runs go A, B, A, B, ... with each
pair's two runs milliseconds apart (their drain and check wait until both
have run: fbt.start), the other guest's QEMU stopped during each run,
and the ratio is taken per pair, probed over hooked: a slowdown lasting
seconds stretches both runs of a pair alike.
The figure is the pairs' median, their spread kept. Each run's QEMU
vCPU time (bench/guest/cputime.py) gives a second paired ratio beside
it, shown, not judged: the issue's target is on guest time, and the CPU
ratio is its cross-check (where they agree, the verdict is not the
host's scheduling).
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from ...guest.qemu import Guest
from .core import Bench, figure
from .fbt import prepare, session, start, workloads

# A repetition's first half: it runs, and returns its second half.
Run = Callable[[], Callable[[], object]]
# Pairs run and dropped before the measured ones: a guest's first run
# after its probes are planted, or after boot, is QEMU translating the
# workload's code afresh.
WARMUP = 1


def alternate(first: Run, second: Run, reps: int,
              warmup: int = 0) -> tuple[list, list]:
    """first, second, first, second, ...: reps of each, after `warmup`
    pairs whose results are dropped. Each call runs and returns what
    finishes its repetition (the drain and the check), called once the
    pair's second run is over, so that nothing but a few commands lies
    between the two runs of a pair."""
    firsts, seconds = [], []
    for k in range(warmup + reps):
        finish_first = first()
        finish_second = second()
        done = finish_first(), finish_second()
        if k >= warmup:
            firsts.append(done[0])
            seconds.append(done[1])
    return firsts, seconds


def per_pair(numerators: list, denominators: list) -> list:
    """n/d for each pair; None where either run gave no value (or the
    denominator is 0): the figure counts it unresolved."""
    return [n / d if n is not None and d else None
            for n, d in zip(numerators, denominators, strict=True)]


def put_ratios(b: Bench, wl: str, mechanism: str, probed: list[dict],
               hooks: list[dict]) -> None:
    """ratio_WL_M_over_finstrument (guest time, judged for the mechanisms
    whose returns ride on their entry and those that take no trap) and
    ..._cpu (QEMU's vCPU time) from the rows of paired runs; each keeps
    both sides' own figures."""
    judged = mechanism in b.arch.return_trampolines | b.arch.trap_free
    for suffix, key, what in (("", "seconds", "guest time"),
                              ("_cpu", "cpu", "QEMU vCPU time")):
        num, den = [r[key] for r in probed], [r[key] for r in hooks]
        b.put(f"ratio_{wl}_{mechanism}_over_finstrument{suffix}", per_pair(num, den),
              "ratio", what=f"{wl}, every entry and return recorded: {what} under "
              f"{mechanism} / -finstrument-functions (paired runs)",
              probed=figure(num, "s"), hooks=figure(den, "s"),
              **({"target": "trampoline_over_finstrument"} if judged and not suffix
                 else {}))
    missed = [(p["missed"] or 0) + (h["missed"] or 0) for p, h in zip(probed, hooks)]
    if any(missed):
        b.notes.append(f"{wl} paired under {mechanism}: {sum(missed)} firings missed "
                       "in the pairs' runs (their ratio counts a lossy run)")


def alone(guest: Guest, other: Guest, run: Run) -> Callable[[], object]:
    """run (a repetition's first half) on guest with the other guest's
    QEMU stopped, so that the guest not measured takes no CPU from the one
    that is (an idle sparc64 guest spins: 60% of a core, on a host of 2);
    its second half lets guest go on again first, since the other's run
    may have stopped it meanwhile."""
    other.freeze(True)
    guest.freeze(False)
    finish = run()

    def done():
        guest.freeze(False)
        return finish()
    return done


def paired(b: Bench, g: Guest) -> None:
    """Boot B's experiment: g is the instrumented image; the plain image
    is booted beside it for the experiment's length."""
    wl, spec, cmd = workloads(b.sizes)[1]
    with b.guest("B-plain") as plain:
        hooked_s, plain_s = session(g), session(plain)
        hook_probes = prepare(b, g, hooked_s, wl, spec, "finstrument", hooks=True)
        if not (g.freeze(False) and plain.freeze(False)):
            b.notes.append(f"{wl} paired: a QEMU on another host cannot be stopped; "
                           "the guest not measured ran beside each run")
        try:
            for m in [m for m in b.arch.mechanisms if m not in b.arch.lossy]:
                probes = prepare(b, plain, plain_s, wl, spec, m, hooks=False)
                probed, hooks = alternate(
                    partial(alone, plain, g,
                            partial(start, plain, plain_s, cmd, m, False, probes)),
                    partial(alone, g, plain,
                            partial(start, g, hooked_s, cmd, "finstrument", True,
                                    hook_probes)),
                    b.reps, WARMUP)
                put_ratios(b, wl, m, probed, hooks)
                _say(b, wl, m)
        finally:
            g.freeze(False)
            plain.freeze(False)
        plain.exit(0)


def _say(b: Bench, wl: str, m: str) -> None:
    f = b.figures[f"ratio_{wl}_{m}_over_finstrument"]
    c = b.figures[f"ratio_{wl}_{m}_over_finstrument_cpu"]
    b.say(f"  {wl} {m} / finstrument, paired: guest time {f['median']:.2f} "
          f"[{f['spread'][0]:.2f}..{f['spread'][1]:.2f}], QEMU CPU "
          + (f"{c['median']:.2f}" if c["median"] is not None else "-"))
