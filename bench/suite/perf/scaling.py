"""Aggregate firings/s as vCPUs are added (4-CPU boot, i386).

calltree on 1, 2 and 4 threads with its probes emulated under the null
action, each run next to the bare trap on as many threads (baretraps):
QEMU raises every exception under its big lock, so a trap-based probe
scales at most as the bare trap does, and is judged against that; i386's
opt, which takes no trap at an entry, is judged against 1.8 and against
the workload's own unprobed scaling on this host.
"""

from __future__ import annotations

from ...guest.qemu import Guest
from ...trace.session import TraceError, open_session
from ...trace.stress import LOSSLESS_FUNCS
from .core import Bench


def _rates(b: Bench, g: Guest, spec: str, mechanism: str, label: str, iters: int,
           paired):
    """Firings/s of calltree on 1, 2 and 4 threads with spec's probes
    under mechanism, action null, per repetition; after each run, with
    the probes disabled, paired(n): the reference rate on as many
    threads, taken next to it so that both see the same host.
    ref=0: the workload's reference run, one thread's work done alone
    inside the run's cycles, would cap every 2/1 ratio at 3/2."""
    s = open_session(g)
    g.command("probe clear")
    s.setup(spec, mechanism, strict=False)
    s.enable(True)
    s.must("probe action all null")
    s.enable(False)
    ids = [str(p.id) for p in s.probes]
    rates: dict[int, list[float]] = {1: [], 2: [], 4: []}
    refs: dict[int, list[float]] = {1: [], 2: [], 4: []}
    for i in range(b.reps):
        got = {}
        for n in rates:
            s.must("trace reset")
            for k in range(0, len(ids), 12):
                s.must("probe enable " + " ".join(ids[k:k + 12]))
            r = s.cmd(f"run calltree threads={n} iters={iters} ref=0", timeout=600)
            s.must("probe disable all")
            mark = len(g.trace_frames)
            s.must("trace stats")
            stats = g.capture(mark).stats
            fired = sum(st["fired"] for st in stats.values())
            got[n] = fired / (r.results[-1]["cycles"] / b.hz)
            rates[n].append(got[n])
            refs[n].append(paired(n))
        b.say(f"  {label} {i + 1}/{b.reps}: " + ", ".join(
            f"{n} vCPU {v / 1e3:,.0f}k firings/s" for n, v in got.items()))
    g.command("probe clear")
    return rates, refs


def _rate(b: Bench, g: Guest, command: str) -> float:
    """A workload's result value per second of guest time."""
    r = g.command(command, timeout=600)
    if not r.ok or not r.results:
        raise TraceError(f"{command} failed: {r.message}")
    return r.results[-1]["value"] / (r.results[-1]["cycles"] / b.hz)


def scaling(b: Bench, g: Guest) -> None:
    """scaling_N_vcpu, scaling_bare_N_vcpu and their ratios, per repetition."""
    mechanism = b.arch.default_mechanism
    # The bare trap on as many threads, each run next to the probe's:
    # QEMU serialises exceptions, and this is the most a trap-based
    # probe can scale.
    rates, bare = _rates(
        b, g, LOSSLESS_FUNCS, mechanism, "scaling", b.sizes.scale_iters,
        lambda n: _rate(b, g, f"run baretraps threads={n} traps={b.sizes.bare_traps}"))
    # i386's opt takes no trap at an entry: its entries alone, so that
    # no firing waits for QEMU's lock on exceptions (below); next to
    # each run the workload unprobed on as many threads: the most any
    # probe's firings can scale on this host (a busy 2-core host cannot
    # give two vCPUs two cores).
    if "opt" in b.arch.mechanisms:
        spec = ",".join(p for p in LOSSLESS_FUNCS.split(",") if p.endswith(":entry"))
        iters = b.sizes.scale_fast_iters
        orates, calls = _rates(
            b, g, spec, "opt", "scaling opt", iters,
            lambda n: _rate(b, g, f"run calltree threads={n} iters={iters} ref=0"))
        for n, vals in orates.items():
            b.put(f"scaling_opt_{n}_vcpu", vals, "firings/s",
                  what=f"calltree on {n} threads, opt on the entries "
                  "(no trap), action null, 4-CPU boot")
        oratios = [p / q for p, q in zip(orates[2], orates[1])]
        b.put("scaling_opt_2_over_1", oratios, "ratio", target="scaling_2_over_1",
              what="opt entry probes: firings/s 2/1 vCPU")
        b.put("scaling_untraced_2_over_1", [p / q for p, q in zip(calls[2], calls[1])],
              "ratio", what="calltree unprobed: calls/s 2/1 vCPU")
        b.put("scaling_opt_2_over_untraced",
              [o / (p / q) for o, p, q in zip(oratios, calls[2], calls[1])],
              "ratio", what="opt firings/s 2/1 vCPU ÷ unprobed calls/s 2/1 vCPU")
    for n, vals in rates.items():
        b.put(f"scaling_{n}_vcpu", vals, "firings/s",
              what=f"calltree on {n} threads, {mechanism}, action null, 4-CPU boot")
        b.put(f"scaling_bare_{n}_vcpu", bare[n], "traps/s",
              what=f"bare trap round trips on {n} threads, 4-CPU boot")
    # A trap per firing: judged against the bare trap's own scaling
    # (scaling_N_over_bare), not against 1.8, which opt's is.
    b.put("scaling_2_over_1", [p / q for p, q in zip(rates[2], rates[1])], "ratio")
    b.put("scaling_4_over_1", [p / q for p, q in zip(rates[4], rates[1])], "ratio")
    for n in (2, 4):
        b.put(f"scaling_bare_{n}_over_1", [p / q for p, q in zip(bare[n], bare[1])],
              "ratio")
        b.put(f"scaling_{n}_over_bare", [(p / q) / (c / d) for p, q, c, d in
                                          zip(rates[n], rates[1], bare[n], bare[1])],
              "ratio", target="scaling_over_bare",
              what=f"probe firings/s {n}/1 vCPU ÷ bare traps/s {n}/1 vCPU")
