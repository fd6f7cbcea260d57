"""What sampling costs: profile-997 on every CPU over a workload.

profsplit (two threads per CPU, its 3:1 leaf loops) runs twice per
repetition in one boot: unprobed, then with `profile 997 all` running a
program that counts by stack (`stack`, `count`, `abort`: DTrace's
`profile-997 { @[stack()] = count(); }`). The figure is the ratio of the
run's guest cycles, probed over unprobed, and beside it the samples per
CPU per second of guest time (997 when the timer keeps its rate).
"""

from __future__ import annotations

import re

from ...guest.qemu import Guest
from ...program import asm, load
from ...trace.session import TraceError
from .core import Bench, figure

HZ = 997
BY_STACK = "stack\ncount @s, 1\nabort\n"


def _run(b: Bench, g: Guest) -> int:
    threads = 2 * g.hello["ncpus"]
    r = g.command(f"run profsplit threads={threads} rounds={b.sizes.profile_rounds} "
                  "chunk=20000", timeout=600)
    if not r.ok or not r.results:
        raise TraceError(f"profile: profsplit failed: {r.message}")
    return r.results[-1]["cycles"]


def profile(b: Bench, g: Guest) -> None:
    """profile_997_overhead: probed / unprobed run time; profile_997_rate:
    samples per CPU per second."""
    load.load(g, asm.assemble(BY_STACK, b.arch.name, "profile"), 0)
    ratio, rate = [], []
    for i in range(b.reps):
        base = _run(b, g)
        if not g.command(f"profile {HZ} all 0").ok:
            raise TraceError("profile: the guest refused to sample")
        probed = _run(b, g)
        off = g.command("profile off").message
        samples = [int(x) for x in re.search(r"samples=([\d,]+)", off).group(1).split(",")]
        cycles = int(re.search(r"cycles=(\d+)", off).group(1))
        ratio.append(probed / base)
        rate.append(sum(samples) / len(samples) / (cycles / b.hz))
        b.say(f"  profile {i + 1}/{b.reps}: {ratio[-1]:.3f}x, {rate[-1]:,.0f} samples/s per CPU")
    g.command("program clear")
    b.put("profile_997_overhead", ratio, "ratio",
          what=f"profile-{HZ} on every CPU, by stack: profsplit probed / unprobed",
          rate=figure(rate, "samples per CPU per second"))


def rows(b: Bench) -> list[tuple[str, str, str]]:
    """The table's row for profile()'s figure (none if it did not run)."""
    f = b.figures.get("profile_997_overhead")
    if not f:
        return []
    lo, hi = f["spread"]
    return [(f"  {f['what']}", f"{f['median']:.3f} [{lo:.3f}..{hi:.3f}]x, "
             f"{f['rate']['median']:,.0f} samples/s per CPU", "")]
