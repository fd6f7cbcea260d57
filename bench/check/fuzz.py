"""`python3 -m bench fuzz`: an arch's probe emulator against unicorn on
random states, class by class (the arch's fuzzer module says how: the
module named by arches.Arch.fuzzer, bench/check/fuzz_<arch>.py).

The states of a class are cut into chunks of one seed each (seed_base +
chunk), run by a pool of worker processes; each worker builds its states,
runs them through the emulator compiled for the host and through a
long-lived unicorn instance, and judges a disagreement again on a fresh
instance before it counts. A class passes when every state agreed. The
same seed gives the same states, so a mismatch can be replayed with
--seed and --states.

make check runs a small size (tests/test_*_emulate.py, which also prove
that deliberately broken emulators are caught within a few thousand
states); the matrix's full group runs 10^6 states per class.
"""

from __future__ import annotations

import importlib
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from .. import arches
from ..errors import UsageError

CHUNKS = 8           # seeds per class


@dataclass
class ClassResult:
    name: str
    states: int
    mismatches: list[str] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)

    @property
    def compared(self) -> int:
        return self.stats["compared"]

    @property
    def ok(self) -> bool:
        return not self.mismatches and self.compared >= self.states

    def line(self) -> str:
        paths = ", ".join(f"{k} {v}" for k, v in sorted(self.stats.items())
                          if k not in ("compared", "rechecked", "instances"))
        return (f"{self.name}: {self.compared} states compared with unicorn, "
                f"{len(self.mismatches)} with differences ({self.stats['rechecked']} "
                f"rechecked on a fresh instance)" + (f"; {paths}" if paths else ""))


def fuzzer(arch: arches.Arch):
    """The arch's fuzzer module, or UsageError if it has none."""
    if not arch.fuzzer:
        raise UsageError(f"{arch.name} has no emulator fuzzer")
    return importlib.import_module(arch.fuzzer)


def fuzz_class(mod, exe, cls: str, states: int, seed_base: int,
               jobs: int | None = None) -> ClassResult:
    per = -(-states // CHUNKS)
    work = [(exe, cls, seed_base + i, per) for i in range(CHUNKS)]
    res = ClassResult(cls, per * CHUNKS)
    with ProcessPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        for bad, stats in pool.map(mod.chunk, work):
            res.mismatches += bad
            res.stats.update(stats)
    return res


def run(arch: arches.Arch, states: int, classes=None, seed: int = 0,
        jobs: int | None = None, on_line=print) -> list[ClassResult]:
    mod = fuzzer(arch)
    wanted = list(classes or mod.CLASSES)
    for c in wanted:
        if c not in mod.CLASSES:
            raise UsageError(f"class {c!r}: the {arch.name} emulator's classes are "
                             f"{', '.join(mod.CLASSES)}")
    if states < 1:
        raise UsageError("--states must be at least 1")
    exe = mod.runner()
    out = []
    for c in wanted:
        base = 100000 * seed + 1000 * mod.CLASSES.index(c)
        r = fuzz_class(mod, exe, c, states, base, jobs)
        on_line(r.line())
        for m in r.mismatches:
            on_line(f"  MISMATCH {m}")
        out.append(r)
    return out
