"""What `make bench` runs: its boots, and the experiments in each, in order.

Every figure is measured `reps` times in one run and kept with its unit,
repetitions, median and spread; a ratio is taken per repetition from two
loops of the same boot, or of two guests up at once whose runs alternate
(paired.py), then its median; never across boots run one after the
other, whose host speeds differ by up to 2x. PLAN says
which boots an arch gets (A: one CPU, the image; B: -finstrument-functions;
C and D: 4 CPUs, where the arch has them; E: the whole kernel probed) and
what each measures; `measure` runs it and times every experiment.

`only` picks experiments by name (`firepath`, or `A:fbt` for one boot's):
the boots that hold none of them are not booted, and the untimed command
steps of a booted one still run, so a picked experiment meets the state
it meets in the whole plan. A name the plan does not hold is refused
before anything boots.

To add an experiment: write `def measure(b: Bench, g: Guest)` that puts
its figures (b.put, or b.figures[name]) in a module of this package, add
an `Experiment` to its boot below, and its rows to table.SECTIONS.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from ... import arches
from ...errors import UsageError
from ...guest.qemu import Guest
from ...wire import frames
from .channels import drain, sustained
from .core import Bench, Sizes
from .dprobes import dprobes, dprobes_log, probecost
from .fbt import hooked, hooked_smp, probed, probed_smp
from .firepath import firepath
from .interrupts import avoid
from .kernel import kernel
from .lang import lang
from .paired import paired
from .profile import profile
from .scaling import scaling
from .shm import hooked_virtio, probed_virtio, record_cost, shm_raw
from .stackwalk import stackwalk
from .watch import watchcost
from .wholekernel import wholekernel

Measure = Callable[[Bench, Guest], None]


@dataclass(frozen=True)
class Experiment:
    """One timed step of a boot. `when` asks the booted guest whether it
    applies; when it does not, `otherwise` (if any) becomes a note."""
    name: str
    measure: Measure
    when: Callable[[Guest], bool] = lambda g: True
    otherwise: str = ""


def commands(*lines: str) -> Experiment:
    """Guest commands between experiments (untimed); `{channel}` is the
    channel the guest chose at boot."""
    def run(b: Bench, g: Guest) -> None:
        for line in lines:
            g.command(line.format(channel=g.channel_used))
    return Experiment("", run)


@dataclass(frozen=True)
class Boot:
    label: str
    experiments: tuple[Experiment, ...]
    smp: Callable[[arches.Arch], int] = lambda a: 1
    instrumented: bool = False
    when: Callable[[arches.Arch], bool] = lambda a: True


def _virtio(g: Guest) -> bool:
    """The guest has the virtio port (HELLO's channel), whatever it uses."""
    return frames.CHANNELS.get(g.hello["channel"]) == "virtio"


def _shm(g: Guest) -> bool:
    return g.channel_used == "shm"


def _shm_and_virtio(g: Guest) -> bool:
    return _shm(g) and _virtio(g)


def _byte_ring_channel(b: Bench, g: Guest) -> None:
    """The channel of the byte ring and its drain: virtio where there is
    the port, else the 16550."""
    g.command(f"channel {'virtio' if _virtio(g) else 'serial'}")


def _smp4(a: arches.Arch) -> bool:
    return a.max_smp >= 4


PLAN = (
    # The image, one CPU: the fire path stage by stage; DProbes' five
    # experiments with the bare trap; D against hand-written RPN; a watch firing against experiment
    # 3's null probe; the drain over the 16550 and, in the same boot, over
    # virtio, with experiment 5 alone over each; fib and calltree untraced
    # and under every mechanism; the stack walk's cost per frame and
    # profile-997's overhead; at its end, where TLB misses are software
    # traps (sun4u), seed 003's interrupt-avoidance methods.
    Boot("A", (
        # A 1 ms tick: the flushes that end experiment 5 and the drain poll
        # at tick granularity. DProbes' five and the serial drain as ever
        # over the 16550; then, in the same boot, the virtio channel's
        # drain and experiment 5.
        commands("timer 1000", "channel serial"),
        Experiment("dprobes", dprobes),
        Experiment("firepath", firepath),
        Experiment("probecost", probecost),
        Experiment("lang", lang),
        Experiment("watchcost", watchcost),
        Experiment("drain serial", partial(drain, channel="serial")),
        Experiment("drain virtio", partial(drain, channel="virtio"), when=_virtio,
                   otherwise="no virtio channel on {arch}: its drain rows are the "
                   "16550's alone"),
        Experiment("dprobes 5 virtio", partial(dprobes_log, channel="virtio"),
                   when=_virtio),
        Experiment("dprobes 5 serial", partial(dprobes_log, channel="serial"),
                   when=_virtio),
        Experiment("shm raw", shm_raw, when=_shm_and_virtio,
                   otherwise="no shm channel beside virtio on {arch}: no shm raw rows"),
        Experiment("record cost", record_cost, when=_shm_and_virtio),
        commands("channel {channel}", "timer 100"),
        Experiment("fbt", probed),
        Experiment("fbt virtio", probed_virtio, when=_shm_and_virtio),
        Experiment("stackwalk", stackwalk),
        Experiment("profile", profile),
        # Seed 003's methods over the byte ring and its drain, as their
        # figures have always been taken (the sub-buffers are written by
        # physical address too: tests/test_avoid.py runs them over shm).
        Experiment("", _byte_ring_channel),
        Experiment("avoid", avoid),
    )),
    # The same workloads built with -finstrument-functions, hooks off/on;
    # then, with the plain image booted beside it, calltree under each
    # lossless mechanism against the hooks, the two guests' runs
    # alternating (the judged ratio).
    Boot("B", (Experiment("fbt", hooked),
               Experiment("fbt virtio", hooked_virtio, when=_shm_and_virtio),
               Experiment("paired", paired)),
         instrumented=True),
    # 4 CPUs: calltree on 8 threads under every mechanism; firings/s by
    # vCPUs against the bare trap's; the sustained run over each channel.
    Boot("C", (
        Experiment("fbt", probed_smp),
        Experiment("scaling", scaling),
        Experiment("sustained shm", partial(sustained, channel="shm"), when=_shm),
        Experiment("sustained virtio", partial(sustained, channel="virtio"),
                   when=_virtio),
        Experiment("sustained serial", partial(sustained, channel="serial")),
        Experiment("sustained virtio ticks",
                   partial(sustained, channel="virtio", kick="off"), when=_virtio),
    ), smp=lambda a: 4, when=_smp4),
    # 4 CPUs, instrumented: calltree on 8 threads.
    Boot("D", (Experiment("fbt", hooked_smp),), smp=lambda a: 4, instrumented=True,
         when=_smp4),
    # 2 CPUs (sparc64: 1): every kernel function probed.
    Boot("E", (Experiment("kernel", kernel), Experiment("whole kernel", wholekernel)),
         smp=lambda a: min(2, a.max_smp)),
)


def names() -> list[str]:
    """Every name `only` accepts: an experiment's, and BOOT:experiment."""
    out = []
    for boot in PLAN:
        for e in boot.experiments:
            if e.name:
                out += [e.name, f"{boot.label}:{e.name}"]
    return list(dict.fromkeys(out))


def check_only(only) -> None:
    """Refuse names the plan does not hold, saying which it does."""
    unknown = [n for n in only or () if n not in names()]
    if unknown:
        raise UsageError(f"no bench experiment {', '.join(unknown)}; the plan's: "
                         + ", ".join(names()))


def _picked(boot: Boot, e: Experiment, only) -> bool:
    return not only or e.name in only or f"{boot.label}:{e.name}" in only


def measure(arch: arches.Arch, reps: int, sizes: Sizes, on_line=print,
            only=()) -> Bench:
    """Every boot of PLAN that the arch has, every experiment in it (or
    those `only` names, with their boots' command steps)."""
    check_only(only)
    b = Bench(arch, reps, sizes, on_line)
    b.only = tuple(only)
    for boot in PLAN:
        if not boot.when(arch):
            continue
        if not any(e.name and _picked(boot, e, only) for e in boot.experiments):
            continue
        with b.boot(boot.label, smp=boot.smp(arch), instrumented=boot.instrumented) as g:
            for e in boot.experiments:
                if e.name and not _picked(boot, e, only):
                    continue
                if not e.when(g):
                    if e.otherwise:
                        b.notes.append(e.otherwise.format(arch=arch.name))
                elif e.name:
                    with b.timed(e.name):
                        e.measure(b, g)
                else:
                    e.measure(b, g)
            g.exit(0)
    return b
