"""The bench's state: what one `make bench` run has measured so far.

A figure is a measurement kept with its unit, its repetitions, their
median and spread (`figure`); `Bench` holds the figures by name, the
boots they came from, the notes the table prints under it and the host
wall time each boot and experiment took (`timed`), so that where the
minutes go is part of the results. `Sizes` are the iterations of every
experiment, the full bench's or the host test's (`Sizes.small`), and
`TARGETS` the seeds' claims that the table judges figures against.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass

from ... import arches
from ...guest import build
from ...guest.backend import chosen_channel, open_guest
from ...trace import avoid as avoid_methods

TARGETS = {
    "emulated_over_bare": ("≤ 1.15", lambda v: v <= 1.15),
    "int3_over_opt": ("≥ 10", lambda v: v >= 10),
    # A return recorded by int3 at its site against one riding on its
    # entry (a return trampoline, no trap): the stage table's null probe.
    "int3_over_trampoline_return": ("≥ 5", lambda v: v >= 5),
    # calltree with every entry and return recorded, guest time, under a
    # mechanism with a return trampoline against -finstrument-functions.
    "trampoline_over_finstrument": ("≤ 1.3", lambda v: v <= 1.3),
    # A null probe's whole firing at a site a trap-free mechanism takes
    # (a branch to its trampoline) against the bare trap round trip.
    "notrap_over_bare": ("≤ 0.3", lambda v: v <= 0.3),
    "baseline_over_emulated": ("≥ 3", lambda v: v >= 3),
    "scaling_2_over_1": ("≥ 1.8", lambda v: v >= 1.8),
    "scaling_over_bare": ("≥ 0.95", lambda v: v >= 0.95),
    "serial_payload_over_raw": ("≥ 0.9", lambda v: v >= 0.9),
    "virtio_payload_over_raw": ("≥ 0.9", lambda v: v >= 0.9),
    "virtio_raw_over_serial": ("≥ 100", lambda v: v >= 100),
    "virtio_raw_bytes": ("≥ 50 MB/s", lambda v: v >= 50e6),
    "shm_raw_over_virtio": ("≥ 10", lambda v: v >= 10),
    "sustained_lost": ("= 0", lambda v: v == 0),
    "missed_emulated": ("= 0", lambda v: v == 0),
    "lost_counted": ("= 0", lambda v: v == 0),
    "tracer_own_traps": ("= 0", lambda v: v == 0),
    "compiled_over_hand": ("≤ 1.2", lambda v: v <= 1.2),
}


@dataclass
class Sizes:
    """Iterations of each experiment: the full bench, or the host test's."""
    dp_n: int = 2000
    dp_base: int = 100
    drain_bytes: int = 262144
    drain_firings: int = 10240
    # The virtio channel is ~100x faster: more of both, a larger buffer.
    virtio_bytes: int = 16 << 20
    virtio_firings: int = 200000
    # Calltree on 8 threads, 4 CPUs, 256 KiB buffers, over each channel.
    sustained_iters: int = 1000
    # Over the 16550 a sustained run is bound by the line: ~14 MB at
    # ~376 kB/s, 37 s a repetition, more than half of `make bench` at 5.
    # Its figures (records, dropped, guest seconds) vary little between
    # repetitions, so this many, with their spread.
    sustained_serial_reps: int = 2
    fib_n: int = 16
    ct_iters: int = 300
    ct_threads_smp: int = 8
    scale_iters: int = 5000
    # opt and the unprobed workload run ~20x faster than int3: iterations
    # enough for ~0.1 s a run, so thread start and a tick are noise.
    scale_fast_iters: int = 40000
    kernel_iters: int = 20
    # The stack walk's cost: calltree iterations at a recursion depth that
    # makes ct_add's stacks 4 to 20 frames deep.
    stack_iters: int = 1000
    stack_depth: int = 16
    # profsplit's rounds under profile-997 (about 0.3 s of guest time).
    profile_rounds: int = 300
    stage_n: int = 2000
    bare_traps: int = 250000
    # The interrupt-avoidance walks: pages between calls, walks a run, and
    # which configurations (bench/trace/avoid.py).
    avoid_pages: int = 128
    avoid_iters: int = 1000
    avoid_configs: tuple = avoid_methods.ORDER

    @classmethod
    def small(cls) -> "Sizes":
        return cls(dp_n=200, dp_base=10, drain_bytes=16384, drain_firings=512,
                   virtio_bytes=1 << 20, virtio_firings=4096, sustained_iters=20,
                   fib_n=10, ct_iters=20, scale_iters=50, scale_fast_iters=500,
                   kernel_iters=2, stack_iters=20, profile_rounds=20,
                   stage_n=200, bare_traps=2000, avoid_iters=20,
                   avoid_configs=("untraced", "none", "buffer_physical", "all"))


def figure(values, unit: str, **extra) -> dict:
    """A figure over the repetitions that gave a value; those that could
    not (a ratio whose denominator the guest measured as 0 cycles: a cost
    below its timer's resolution) are counted in `unresolved`, never
    dropped silently."""
    unresolved = sum(v is None for v in values)
    values = [v for v in values if v is not None]
    if unresolved:
        extra = {**extra, "unresolved": unresolved}
    f = {"unit": unit, "repetitions": len(values), "values": values,
         "median": statistics.median(values) if values else None,
         "spread": [min(values), max(values)] if values else None}
    f.update(extra)
    return f


class Bench:
    def __init__(self, arch: arches.Arch, reps: int, sizes: Sizes, on_line=print):
        self.arch, self.reps, self.sizes, self.say = arch, reps, sizes, on_line
        self.only: tuple = ()      # the experiments picked (plan.measure), or all
        self.figures: dict[str, dict] = {}
        self.boots: list[dict] = []
        self.notes: list[str] = []
        self.hz = 0
        # Experiment 3's null-probe overhead per firing, per repetition
        # (dprobes), for the watch cost's ratio.
        self.null_probe: tuple[str, list] | None = None
        # The lossy baselines' overhead per firing (experiment 2, the pair
        # loop), per repetition: against the out-of-line path (firepath).
        self.lossy_firing: dict[str, list] = {}
        # Host wall seconds per boot and per experiment in it, in the order
        # run: where `make bench`'s minutes go (printed, and in results.json).
        self.timings: list[dict] = []
        self._boot_label = ""

    def clock(self, experiment: str, t0: float) -> None:
        """Account the host wall time since t0 to experiment, in this boot."""
        sec = round(time.monotonic() - t0, 1)
        self.timings.append({"boot": self._boot_label, "experiment": experiment,
                             "seconds": sec})
        self.say(f"  ({self._boot_label} {experiment}: {sec} s)")

    @contextlib.contextmanager
    def timed(self, experiment: str):
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.clock(experiment, t0)

    def put(self, name: str, values, unit: str, **extra) -> None:
        self.figures[name] = figure(values, unit, **extra)

    def guest(self, label: str, smp: int = 1, instrumented: bool = False):
        """A guest of the plain image or the instrumented one, as every
        boot's (not yet launched: use it with `with`). A boot's own is
        b.boot's; an experiment that needs a second guest up beside it
        opens one here (paired.py)."""
        kw = {}
        if instrumented:
            image, elf = build.instrumented_image(self.arch)
            kw = {"image": image, "elf": elf}
        # shm unless --channel says otherwise: the bench holds the channels
        # against each other in its boots (bench/suite/perf/shm.py).
        return open_guest(self.arch, label=f"bench-{label}", smp=smp,
                          memory_mb=self.arch.max_memory_mb, command_timeout=600,
                          channel=chosen_channel() or "shm", **kw)

    @contextlib.contextmanager
    def boot(self, label: str, smp: int = 1, instrumented: bool = False):
        t0 = time.monotonic()      # the instrumented image's build counts
        guest = self.guest(label, smp, instrumented)
        self.say(f"bench {self.arch.name}: boot {label} ({smp} CPU"
                 f"{'s' if smp > 1 else ''}{', -finstrument-functions' if instrumented else ''})")
        self._boot_label = label
        with guest as g:
            self.hz = g.hello["cycles_hz"]
            self.boots.append({"label": label, "smp": smp, "instrumented": instrumented,
                               "cycles_hz": self.hz})
            self.clock("boot", t0)
            yield g
