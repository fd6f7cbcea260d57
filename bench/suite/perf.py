"""`make bench`: the seeds' experiments side by side, measured in one run.

Every figure is measured now, `reps` times, and kept with its unit, its
repetitions, their median and spread; a ratio is taken per repetition
from two loops of the same boot (then its median), never across boots.
The boots:

  A  the image, one CPU: the fire path's cost stage by stage (the
     firepath workload: stamps at each stage, stamp.h); DProbes' five
     experiments (the dprobes workload:
     base loop; null probes under the lossy baselines; under each
     emulating mechanism the fire path with no program, then the paper's
     handlers as probe programs — `abort`, `push` a register, `log` and
     `exit` drained — and programs of 8 and 32 instructions, whence the
     cost of one RPN instruction) with the bare trap round trip, over the
     16550; the drain against the raw channel (drainrate) over the 16550
     and, in the same boot, over the virtio port (where the guest has
     one), with experiment 5 alone over each; function-boundary tracing
     of fib and of calltree (1 thread) untraced and under every mechanism;
     the cost of a watch firing: watchctr on one thread, its
     counter unwatched and under a `w` watch with the null action, set
     against experiment 3's null probe (the same boot, per repetition).
  B  the same workloads built with -finstrument-functions (build.py's
     instrumented image): hooks off, and hooks writing the same records.
  C  (i386) 4 CPUs: calltree on 8 threads under every mechanism; then the
     scaling of aggregate firings/s with calltree on 1, 2 and 4 threads
     (one a vCPU), probes emulated with the null action, held against the
     scaling of the bare trap itself on as many threads (baretraps): QEMU
     raises every exception under its big lock, so trap-based firings
     scale at most as the bare trap does.
  D  (i386) 4 CPUs, instrumented: calltree on 8 threads.
     Then the sustained run: calltree on 8 threads with the default
     256 KiB buffers, over the virtio channel (and again with the drains
     woken by their ticks only, `trace kick off`) and over the 16550.
  E  2 CPUs (sparc64: 1): every kernel function the fbt provider accepts,
     probed during calltree, counted by count.rpn in the guest against
     recording every firing: firings/s, bytes on the wire, losses.
  A, at its end, where the arch's TLB misses are software traps
     (sun4u): seed 003's interrupt-avoidance methods off and on
     (bench/trace/avoid.py): the tracer's own misses and faults by kind,
     cycles per traced instruction, bytes per record; with all on, none.

The table (stdout) puts the targets beside the figures they judge, `met`
or `MISSED`; results.json holds everything with the configuration (QEMU
version, accel, smp per boot, git commit); PNG plots go beside it.
`small=True` is the same machinery with few iterations (the host test).
"""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import time
from dataclasses import dataclass

from .. import arches
from ..guest import build
from ..guest.backend import open_guest
from ..guest.qemu import Guest
from ..paths import BUILD, PROGRAMS, REPO
from ..program import aggregate, asm, load
from ..trace import avoid as avoid_methods
from ..trace.image import load_image
from ..trace.session import TraceError, open_session
from ..trace.stress import LOSSLESS_FUNCS
from ..trace.verify import verify
from ..wire import frames
from . import perf_kernel

TARGETS = {
    "emulated_over_bare": ("≤ 1.15", lambda v: v <= 1.15),
    "int3_over_opt": ("≥ 10", lambda v: v >= 10),
    "baseline_over_emulated": ("≥ 3", lambda v: v >= 3),
    "scaling_2_over_1": ("≥ 1.8", lambda v: v >= 1.8),
    "scaling_over_bare": ("≥ 0.95", lambda v: v >= 0.95),
    "serial_payload_over_raw": ("≥ 0.9", lambda v: v >= 0.9),
    "virtio_payload_over_raw": ("≥ 0.9", lambda v: v >= 0.9),
    "virtio_raw_over_serial": ("≥ 100", lambda v: v >= 100),
    "virtio_raw_bytes": ("≥ 50 MB/s", lambda v: v >= 50e6),
    "sustained_lost": ("= 0", lambda v: v == 0),
    "missed_emulated": ("= 0", lambda v: v == 0),
    "lost_counted": ("= 0", lambda v: v == 0),
    "tracer_own_traps": ("= 0", lambda v: v == 0),
}


FBT_BUFFER = 8 << 20       # bytes per CPU
DRAIN_TRIES = 3            # drainrate keeps the fastest of these


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
    fib_n: int = 16
    ct_iters: int = 300
    ct_threads_smp: int = 8
    scale_iters: int = 5000
    # opt and the unprobed workload run ~20x faster than int3: iterations
    # enough for ~0.1 s a run, so thread start and a tick are noise.
    scale_fast_iters: int = 40000
    kernel_iters: int = 20
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
                   kernel_iters=2,
                   stage_n=200, bare_traps=2000, avoid_iters=20,
                   avoid_configs=("untraced", "none", "buffer_physical", "all"))


# The programs of the dprobes workload, by its parameter: DProbes'
# handlers (bench/programs/dp_*.rpn) and two of 8 and 32 instructions.
DP_PROGRAMS = ("abort", "push", "ops8", "ops32", "log")
# Figure names of the dprobes workload's lines, by suffix: experiment, tail.
DP_NAMES = {"pair": (2, "null_pair"), "null": (3, "null"), "abort": (3, "abort"),
            "ops8": (3, "ops8"), "ops32": (3, "ops32"), "push": (4, "push"),
            "log": (5, "log")}
KERNEL_SPEC = "fbt:kernel:*:entry"


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


def figure(values, unit: str, **extra) -> dict:
    values = [v for v in values if v is not None]
    f = {"unit": unit, "repetitions": len(values), "values": values,
         "median": statistics.median(values) if values else None,
         "spread": [min(values), max(values)] if values else None}
    f.update(extra)
    return f


class Bench:
    def __init__(self, arch: arches.Arch, reps: int, sizes: Sizes, on_line=print):
        self.arch, self.reps, self.sizes, self.say = arch, reps, sizes, on_line
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

    def put(self, name: str, values, unit: str, **extra) -> None:
        self.figures[name] = figure(values, unit, **extra)

    @contextlib.contextmanager
    def boot(self, label: str, smp: int = 1, instrumented: bool = False):
        kw = {}
        if instrumented:
            image, elf = build.instrumented_image(self.arch)
            kw = {"image": image, "elf": elf}
        self.say(f"bench {self.arch.name}: boot {label} ({smp} CPU"
                 f"{'s' if smp > 1 else ''}{', -finstrument-functions' if instrumented else ''})")
        with open_guest(self.arch, label=f"bench-{label}", smp=smp,
                        memory_mb=self.arch.max_memory_mb, command_timeout=600,
                        **kw) as g:
            self.hz = g.hello["cycles_hz"]
            self.boots.append({"label": label, "smp": smp, "instrumented": instrumented,
                               "cycles_hz": self.hz})
            yield g

    # ---- DProbes' five experiments ----

    def dprobes(self, g: Guest) -> None:
        per: dict[str, list[float]] = {}
        fired: dict[str, list[int]] = {}
        progs = dp_programs(self.arch.name)
        slots = []
        for slot, (param, prog) in enumerate(progs.items(), start=1):
            load.load(g, prog, slot)
            slots.append(f"{param}={slot}")
        for i in range(self.reps):
            r = g.command(f"run dprobes n={self.sizes.dp_n} base={self.sizes.dp_base} "
                          + " ".join(slots))
            got = {}
            for line in r.text:
                w = line.split()
                if w[:1] != ["dp"] or len(w) < 3:
                    continue
                if w[2] == "refused:":
                    if i == 0:
                        self.notes.append(f"experiment under {w[1]}: {' '.join(w[2:])}")
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
            self.say(f"  dprobes {i + 1}/{self.reps}: base {got['base']:.1f} cycles/iter, "
                     + ", ".join(f"{k} {v:,.0f}" for k, v in got.items()
                                 if k not in ("base", "base2")))
        ns = 1e9 / self.hz
        base, base2 = per["base"], per["base2"]
        self.put("dp1_base", base, "guest cycles per iteration",
                 ns=figure([v * ns for v in base], "ns per iteration"))
        self.put("dp1_base2", base2, "guest cycles per iteration",
                 ns=figure([v * ns for v in base2], "ns per iteration"),
                 what="bench_loop2, the two-site loop, unprobed")
        self.put("bare_trap", per["bare"], "guest cycles per trap round trip",
                 ns=figure([v * ns for v in per["bare"]], "ns per trap"))
        over: dict[str, list[float]] = {}    # per firing, by key
        for key, vals in per.items():
            if "." not in key:
                continue
            mechanism, what = key.split(".")
            ref = base2 if what == "pair" else base
            # Firings per iteration: 1, or 2 on the pair loop (fewer when lossy).
            fpi = [f / self.sizes.dp_n for f in fired[key]]
            over[key] = [(v - b) / k if k else None for v, b, k in zip(vals, ref, fpi)]
            exp, tail = DP_NAMES[what]
            self.put(f"dp{exp}_{mechanism}_{tail}", vals, "guest cycles per iteration",
                     ns=figure([v * ns for v in vals], "ns per iteration"),
                     overhead=figure(over[key], "guest cycles per probe firing"),
                     firings=figure(fired[key], "firings per loop"),
                     **({"program": progs[what].path} if what in progs else {}))
        emul = [m for m in self.arch.mechanisms if m not in self.arch.lossy
                and f"{m}.null" in per]
        lossy = [m for m in self.arch.mechanisms if m in self.arch.lossy
                 and f"{m}.pair" in per]
        if emul:
            self.null_probe = (emul[0], over[f"{emul[0]}.null"])
        for m in emul:
            self.put(f"ratio_{m}_over_bare", [o / t for o, t in zip(over[f"{m}.null"],
                                                                    per["bare"])],
                     "ratio", target="emulated_over_bare",
                     what=f"{m} null-probe overhead / bare trap round trip")
            if f"{m}.abort" in over:
                self.put(f"ratio_{m}_abort_over_null",
                         [a / b for a, b in zip(over[f"{m}.abort"], over[f"{m}.null"])],
                         "ratio", what=f"{m}: a program of one abort / no program, "
                         "overhead per firing")
            if f"{m}.ops32" in over and f"{m}.abort" in over:
                for n in (8, 32):
                    self.put(f"rpn_{m}_insn{n}",
                             [(a - b) / (n - 1) for a, b in zip(over[f"{m}.ops{n}"],
                                                                over[f"{m}.abort"])],
                             "guest cycles per RPN instruction",
                             what=f"{m}: (program of {n} - program of 1) / {n - 1}")
            for lm in lossy:
                self.lossy_firing[lm] = over[f"{lm}.pair"]
                if f"{m}.pair" not in over:
                    continue
                self.put(f"ratio_{lm}_over_{m}",
                         [a / b if a and b else None
                          for a, b in zip(over[f"{lm}.pair"], over[f"{m}.pair"])],
                         "ratio", target="baseline_over_emulated",
                         what=f"{lm} / {m}, overhead per firing, 2-site loop")

    def probecost(self, g: Guest) -> None:
        costs: dict[str, list[int]] = {}
        for _ in range(self.reps):
            r = g.command("run probecost n=1000" if self.sizes.dp_n < 1000
                          else "run probecost")
            for line in r.text:
                w = line.split()
                if len(w) == 3 and w[0] == "cost" and w[2].isdigit():
                    costs.setdefault(w[1], []).append(int(w[2]))
        for name, vals in costs.items():
            self.put(f"cost_{name}", vals, "guest cycles per firing",
                     what="probecost: entry/return probes on two small functions")

    # ---- the fire path, stage by stage ----

    def firepath(self, g: Guest) -> None:
        """The firepath workload: each stage's median cycles, for the bare
        trap and every mechanism x site x action (stamp.h says where each
        stage ends); a row's total against the bare trap's is its ratio."""
        vals: dict[str, dict[str, list[int]]] = {}
        for i in range(self.reps):
            r = g.command(f"run firepath n={self.sizes.stage_n}")
            if not r.ok:
                raise TraceError(f"firepath failed: {r.message}: {r.text[-5:]}")
            for line in r.text:
                w = line.split()
                if w[:1] != ["stage"] or len(w) < 4:
                    continue
                if w[2] == "refused:":
                    if i == 0:
                        self.notes.append(f"stage table: {w[1]} {' '.join(w[2:])}")
                    continue
                vals.setdefault(w[1], {}).setdefault(w[2], []).append(int(w[3]))
        for name, stages in vals.items():
            if name in ("call", "stamp"):
                continue
            fig = {"unit": "guest cycles", "repetitions": self.reps,
                   "what": "bare trap round trip" if name == "bare" else
                   f"{name}: mechanism.site.action"}
            for stage, v in stages.items():
                fig[stage] = figure(v, "firings" if stage == "stamps" else "guest cycles")
            self.figures[f"stages_{name.replace('.', '_')}"] = fig
        self.put("stages_call", vals["call"]["-"], "guest cycles",
                 what="the unprobed call between the stamps")
        self.put("stages_stamp", vals["stamp"]["-"], "guest cycles",
                 what="one stamp's own cost, taken off each stage")
        bare = vals["bare"]["total"]
        for name, stages in vals.items():
            if not name.endswith(".null"):
                continue
            self.put(f"ratio_stages_{name.replace('.', '_')}_over_bare",
                     [t / b if b else None for t, b in zip(stages["total"], bare)],
                     "ratio", what=f"{name[:-5]}: null-probe total / bare trap, "
                     "stage table")
        # i386's jump-optimized probe against int3 on the same prologue, in
        # this boot: the null probe's whole cost, the stage table's total.
        # Unstamped ("plain"): opt's detour counts a null probe in assembly
        # and takes no stamp unless stamping is on, so only the plain run
        # times the path an opt firing really takes.
        if "opt.prologue.null" in vals and "int3.prologue.null" in vals:
            self.put("ratio_int3_over_opt",
                     [i / o if o else None for i, o in
                      zip(vals["int3.prologue.null"]["plain"],
                          vals["opt.prologue.null"]["plain"])],
                     "ratio", target="int3_over_opt",
                     what="int3 / opt, null-probe cost per firing on the "
                     "prologue site, stamps off")
        self._ool(vals)
        self.say("  stages: " + ", ".join(
            f"{n} {statistics.median(v['total']):,.0f}" for n, v in vals.items()
            if "total" in v))

    def _ool(self, vals: dict) -> None:
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
            self.put(f"ool_{m}_null", ool, "guest cycles per firing",
                     what=f"{m}: null probe run out of line, stage table total")
            if emul:
                self.put(f"ratio_ool_over_emulated_{m}",
                         [o / e if e else None for o, e in
                          zip(ool, vals[f"{m}.{emul}.null"]["total"])],
                         "ratio", what=f"{m}: out of line / emulated ({emul}), "
                         "null-probe total per firing, stage table")
            for lm, lossy in self.lossy_firing.items():
                self.put(f"ratio_{lm}_over_ool_{m}",
                         [b / o if b and o else None for b, o in zip(lossy, ool)],
                         "ratio", what=f"{lm} (experiment 2, per firing) / {m} out "
                         "of line (stage table total), same boot")

    # ---- watchpoints ----

    def watchcost(self, g: Guest) -> None:
        """Guest cycles per watch firing: watchctr (1 thread, writes only)
        with its counter watched (`w`, null action) less the same run
        unwatched, over the writes; and that / experiment 3's null probe."""
        if not self.arch.watch_types:
            self.notes.append(f"no watch cost: {self.arch.name} has no watchpoints")
            return
        img = load_image(self.arch.elf())
        addr, size = img.objects["watchctr_counter"]
        n = self.sizes.dp_n * 5
        run = f"run watchctr threads=1 writes={n} reads=0"
        per = []
        for i in range(self.reps):
            r0 = g.command(run)
            w = g.command(f"watch add 4000 w {addr:#x} {size} null")
            r1 = g.command(run)
            rm = g.command("watch remove 4000")
            if not (r0.ok and w.ok and r1.ok and rm.ok) or f"hits={n} " not in rm.message:
                raise TraceError(f"watch cost: {r0.message} / {w.message} / "
                                 f"{r1.message} / {rm.message}")
            c0, c1 = r0.results[0]["cycles"], r1.results[0]["cycles"]
            per.append((c1 - c0) / n)
            self.say(f"  watch {i + 1}/{self.reps}: {per[-1]:,.0f} cycles per firing")
        ns = 1e9 / self.hz
        self.put("watch_w_null", per, "guest cycles per watch firing",
                 ns=figure([v * ns for v in per], "ns per firing"),
                 what=f"a w watch firing, null action (watchctr threads=1 writes={n})")
        if self.null_probe:
            m, probe = self.null_probe
            self.put("ratio_watch_over_probe", [w / p if p else None
                                                for w, p in zip(per, probe)],
                     "ratio", what=f"watch firing / {m} null-probe firing "
                     "(overhead per firing, same boot)")

    # ---- the trace channels' drain ----

    def drain(self, g: Guest, channel: str = "serial") -> None:
        """drainrate over one channel (`channel` chooses it in the guest):
        figures CHANNEL_raw, CHANNEL_payload, CHANNEL_payload_over_raw."""
        virtio = channel == "virtio"
        nbytes = self.sizes.virtio_bytes if virtio else self.sizes.drain_bytes
        firings = self.sizes.virtio_firings if virtio else self.sizes.drain_firings
        g.command(f"channel {channel}")
        g.command(f"trace buffer {16 << 20 if virtio else 1 << 20}", timeout=60)
        raw, pay, ratio = [], [], []
        for i in range(self.reps):
            mark = len(g.trace_frames)
            r = g.command(f"run drainrate bytes={nbytes} "
                          f"firings={firings} tries={DRAIN_TRIES}")
            vals = {}
            for line in r.text:
                w = line.split()
                if w[:1] == ["drain"] and len(w) == 4 and w[2].isdigit():
                    vals[w[1]] = (int(w[2]), int(w[3]))
            if not r.ok or len(vals) != 2:
                raise TraceError(f"drainrate failed: {r.message}: {r.text[-3:]}")
            rec_bytes = sum(len(f.payload) - 8 for f in g.trace_frames[mark:]
                            if f.type == frames.T_EVENTS) / DRAIN_TRIES
            rb = vals["raw"][0] / (vals["raw"][1] / self.hz)
            pb = rec_bytes / (vals["payload"][1] / self.hz)
            raw.append(rb)
            pay.append(pb)
            ratio.append(pb / rb)
            self.say(f"  drain {channel} {i + 1}/{self.reps}: raw {rb / 1e3:,.0f} kB/s, "
                     f"payload {pb / 1e3:,.0f} kB/s")
        g.command("trace buffer 262144", timeout=60)
        self.put(f"{channel}_raw", raw, "bytes/s", what="FILL frames, header and CRC "
                 "included, back to back",
                 **({"target": "virtio_raw_bytes"} if virtio else {}))
        self.put(f"{channel}_payload", pay, "bytes/s", what="trace record bytes drained "
                 "from a full buffer")
        self.put(f"{channel}_payload_over_raw", ratio, "ratio",
                 target=f"{channel}_payload_over_raw")
        if virtio and "serial_raw" in self.figures:
            # Same boot, same repetition index: a ratio per repetition.
            self.put("virtio_raw_over_serial",
                     [v / s for v, s in zip(raw, self.figures["serial_raw"]["values"])],
                     "ratio", target="virtio_raw_over_serial")

    def dprobes_log(self, g: Guest, channel: str) -> None:
        """DProbes' experiment 5 alone (record and drain) over a channel:
        figures dp5_M_log_CHANNEL, overhead per firing against the same
        run's base loop."""
        g.command(f"channel {channel}")
        slot = len(DP_PROGRAMS) + 1
        load.load(g, dp_programs(self.arch.name)["log"], slot)
        per: dict[str, list[float]] = {}
        for _ in range(self.reps):
            r = g.command(f"run dprobes n={self.sizes.dp_n} base={self.sizes.dp_base} "
                          f"log={slot}")
            got = {}
            for line in r.text:
                w = line.split()
                if w[:1] == ["dp"] and len(w) == 5:
                    got[w[1]] = (int(w[2]) / int(w[3]), int(w[4]) / self.sizes.dp_n)
            if not r.ok or "base" not in got:
                raise TraceError(f"dprobes failed: {r.message}: {r.text[-5:]}")
            base = got["base"][0]
            for key, (cyc, fpi) in got.items():
                if key.endswith(".log") and fpi:
                    per.setdefault(key.split(".")[0], []).append((cyc, (cyc - base) / fpi))
        ns = 1e9 / self.hz
        for m, vals in per.items():
            self.put(f"dp5_{m}_log_{channel}", [v[0] for v in vals],
                     "guest cycles per iteration",
                     ns=figure([v[0] * ns for v in vals], "ns per iteration"),
                     overhead=figure([v[1] for v in vals], "guest cycles per probe firing"),
                     what=f"experiment 5 (log, exit, drained) over {channel}")
        self.say(f"  dprobes 5 over {channel}: " + ", ".join(
            f"{m} +{statistics.median(v[1] for v in vals):,.0f} cyc/firing"
            for m, vals in per.items()))

    def sustained(self, g: Guest, channels) -> None:
        """calltree on 8 threads at the full firing rate (int3-like default
        mechanism) with the guest's default 256 KiB per-CPU buffers, over
        each channel: records arrived, lost, and the run's time; over virtio
        also with the drains left to their ticks (`trace kick off`), which
        shows what waking them at a ring's half is worth."""
        s = open_session(g)
        g.command("probe clear")
        s.setup(LOSSLESS_FUNCS, self.arch.default_mechanism, buffer_bytes=262144,
                strict=False)
        ids = [str(p.id) for p in s.probes]
        runs = [(c, "on") for c in channels]
        if "virtio" in channels:
            runs.append(("virtio", "off"))
        for channel, kick in runs:
            g.command(f"channel {channel}")
            s.must(f"trace kick {kick}")
            key = f"sustained_{channel}" + ("_ticks" if kick == "off" else "")
            rows = []
            for _ in range(self.reps):
                s.must("trace reset")
                mark = len(g.trace_frames)
                for k in range(0, len(ids), 12):
                    s.must("probe enable " + " ".join(ids[k:k + 12]))
                r = s.cmd(f"run calltree threads=8 iters={self.sizes.sustained_iters}",
                          timeout=1800)
                s.must("probe disable all")
                s.must("trace flush", timeout=1800)
                if not r.ok or not r.results:
                    raise TraceError(f"sustained calltree over {channel} failed: "
                                     f"{r.message}")
                cap = g.capture(mark)
                rep = verify(cap, s.probes, (), allow_missing=True)
                rows.append((len(cap.events), rep.dropped, rep.fired,
                             r.results[-1]["cycles"] / self.hz))
            s.must("trace kick on")
            col = lambda i: [row[i] for row in rows]
            self.figures[key] = {
                "what": f"calltree threads=8 iters={self.sizes.sustained_iters}, "
                        f"{g.hello['ncpus']} CPUs, 256 KiB buffers, over {channel}"
                        + (", drains woken by their ticks only" if kick == "off" else ""),
                "records": figure(col(0), "records"),
                "fired": figure(col(2), "firings"),
                "guest_seconds": figure(col(3), "s"),
                # Judged over virtio only: the 16550 is the comparison.
                "lost": figure(col(1), "records",
                               **({"target": "sustained_lost"} if key == "sustained_virtio"
                                  else {})),
            }
            f = self.figures[key]
            self.say(f"  sustained over {channel}"
                     + (" (drains at ticks only)" if kick == "off" else "")
                     + f": {f['records']['median']:,.0f} records, "
                     f"dropped {f['lost']['median']:,.0f} of {f['fired']['median']:,.0f} "
                     f"fired, {f['guest_seconds']['median']:.2f} s")

    # ---- function-boundary tracing ----

    def fbt(self, g: Guest, workloads, mechanisms, hooks: bool = False,
            tag: str = "") -> None:
        s = open_session(g)
        # Room for every record of a run, however far the drain falls behind
        # (a drop would show as missed): the largest run is ~90,000 records.
        g.command("probe clear")
        s.must(f"trace buffer {FBT_BUFFER}", timeout=60)
        for wl, spec, cmd in workloads:
            for mechanism in mechanisms:
                traced = mechanism not in ("untraced", "hooks_off")
                g.command("probe clear")
                s.setup(spec, self.arch.default_mechanism if hooks or not traced
                        else mechanism, buffer_bytes=None, strict=False)
                # The hooks write RETURN records under the entry probe's id,
                # which verify counts by function, as a trap's.
                vprobes = list(s.probes)
                if traced and not hooks:
                    s.enable(True)
                    s.enable(False)
                    for n in s.notes:
                        self.notes.append(f"{wl} {mechanism}: {n}")
                    vprobes = list(s.probes)
                ids = [str(p.id) for p in s.probes]
                rows = []
                for _ in range(self.reps):
                    s.must("trace reset")
                    mark = len(g.trace_frames)
                    if hooks and traced:
                        s.must("probe hooks on")
                    elif traced:
                        for k in range(0, len(ids), 12):
                            s.must("probe enable " + " ".join(ids[k:k + 12]))
                    t0 = time.monotonic()
                    r = s.cmd(cmd, timeout=600)
                    wall = time.monotonic() - t0
                    if hooks:
                        s.must("probe hooks off")
                    elif traced:
                        s.must("probe disable all")
                    s.must("trace flush", timeout=600)
                    if not r.ok or not r.results:
                        raise TraceError(f"{cmd} under {mechanism} failed: {r.message}")
                    cap = g.capture(mark)
                    rep = verify(cap, vprobes if traced else [], (), allow_missing=True)
                    cycles = r.results[-1]["cycles"]
                    ev = len(cap.events)
                    rows.append({
                        "wall": wall, "cycles": cycles, "events": ev,
                        "events_per_s": ev / (cycles / self.hz),
                        "missed": rep.missed if traced else None,
                        "dropped": rep.dropped if traced else None,
                        "wire_bytes": sum(frames.HEADER_SIZE + len(f.payload)
                                          + frames.CRC_SIZE
                                          for f in g.trace_frames[mark:]
                                          if f.type == frames.T_EVENTS),
                        "expected": rep.expected_firings if traced else None})
                key = f"fbt_{wl}_{mechanism}{tag}"
                col = lambda k: [row[k] for row in rows]
                self.figures[key] = {
                    "workload": cmd, "mechanism": mechanism, "smp": g.hello["ncpus"],
                    "repetitions": len(rows),
                    "wall": figure(col("wall"), "s"),
                    "guest_cycles": figure(col("cycles"), "guest cycles"),
                    "guest_seconds": figure([c / self.hz for c in col("cycles")], "s"),
                    "events": figure(col("events"), "records"),
                    "events_per_s": figure(col("events_per_s"), "records/s (guest time)"),
                    "missed": figure(col("missed"), "firings"),
                    "dropped": figure(col("dropped"), "records"),
                    "wire_bytes": figure(col("wire_bytes"), "bytes (EVENTS frames)"),
                    "expected": figure(col("expected"), "firings"),
                }
                med = self.figures[key]
                self.say(f"  {wl}{tag} {mechanism}: {med['guest_seconds']['median'] * 1e3:,.1f} ms, "
                         f"{med['events']['median']:,.0f} records"
                         + (f", missed {med['missed']['median']}" if traced else ""))

    # ---- seed 003: the tracer's own interrupts ----

    def avoid(self, g: Guest) -> None:
        """Each interrupt-avoidance method off and on, where the guest can
        count the TLB misses the tracer causes (avoid.py)."""
        if not avoid_methods.tlb_visible(g):
            self.notes.append(f"no interrupt-avoidance table: {self.arch.name}'s TLB "
                              "is refilled by hardware, so the misses the tracer "
                              "causes cannot be seen (sun4u's can)")
            return
        sz = self.sizes
        # A 1 ms tick: the commands between walks wait for ticks.
        g.command("timer 1000")
        rows = avoid_methods.measure(g, sz.avoid_pages, sz.avoid_iters, self.reps,
                                     sz.avoid_configs, on_line=self.say)
        g.command("timer 100")
        units = {"own_itlb": "ITLB misses", "own_dtlb": "DTLB misses",
                 "own_buffer": "DTLB misses on the buffer",
                 "own_served": "served reads of execute-only code",
                 "own_faults": "faults", "own_window": "window spills and fills",
                 "own_total": "misses and faults",
                 "locked": "pages locked", "all_dtlb": "DTLB misses (every code)",
                 "cycles_per_insn": "guest cycles per traced instruction",
                 "bytes_per_record": "bytes per record (EVENTS payload)"}
        for name, f in avoid_methods.figures(rows).items():
            fig = {"what": f["what"], "workload": f"tlbwalk pages={sz.avoid_pages} "
                   f"iters={sz.avoid_iters}", "probes": avoid_methods.SPEC}
            for k, unit in units.items():
                if k in f:
                    extra = {"target": "tracer_own_traps"} if (name, k) == \
                        ("all", "own_total") else {}
                    fig[k] = figure(f[k], unit, **extra)
            self.figures[f"avoid_{name}"] = fig
        for p in avoid_methods.problems(avoid_methods.figures(rows)):
            self.notes.append(f"interrupt avoidance: {p}")

    # ---- the whole kernel ----

    def kernel(self, g: Guest) -> None:
        """Every function the fbt provider accepts, probed during calltree:
        counted by count.rpn (aggregation frames only), then recording
        every firing (the default action), per repetition, in one boot."""
        s = open_session(g)
        prog = asm.assemble((PROGRAMS / "count.rpn").read_text(), self.arch.name,
                            "count.rpn")
        s.setup(KERNEL_SPEC, self.arch.default_mechanism, strict=False, program=prog)
        s.enable(True)
        s.enable(False)
        ids = [str(p.id) for p in s.probes]
        cmd = f"run calltree threads=4 iters={self.sizes.kernel_iters}"
        rows: dict[str, list[dict]] = {"count": [], "record": []}
        for i in range(self.reps):
            for variant in rows:
                s.must("probe program all " + ("0" if variant == "count" else "none"))
                s.must("trace reset")
                mark = len(g.trace_frames)
                for k in range(0, len(ids), 12):
                    s.must("probe enable " + " ".join(ids[k:k + 12]))
                r = s.cmd(cmd, timeout=600)
                s.must("probe disable all")
                s.must("trace flush", timeout=600)
                if not r.ok or not r.results:
                    raise TraceError(f"{cmd} with every kernel function probed failed: "
                                     f"{r.message}")
                cap = g.capture(mark)
                fired = sum(st["fired"] for st in cap.stats.values())
                row = {
                    "fired": fired,
                    "per_s": fired / (r.results[-1]["cycles"] / self.hz),
                    "wire": sum(frames.HEADER_SIZE + len(f.payload) + frames.CRC_SIZE
                                for f in g.trace_frames[mark:]
                                if f.type in (frames.T_EVENTS, frames.T_AGGS,
                                              frames.T_PROBES)),
                    "dropped": sum(st["dropped"] for st in cap.stats.values()),
                }
                if variant == "count":
                    counted = sum(aggregate.per_probe_counts(
                        aggregate.merge(cap.aggs), {0: prog}).values())
                    row["lost"] = fired - counted + sum(cap.agg_dropped.values())
                else:
                    row["lost"] = row["dropped"]
                rows[variant].append(row)
            c, d = rows["count"][-1], rows["record"][-1]
            self.say(f"  kernel {i + 1}/{self.reps}: count.rpn {c['per_s'] / 1e3:,.0f}k "
                     f"firings/s, {c['wire']:,} B; record {d['per_s'] / 1e3:,.0f}k "
                     f"firings/s, {d['wire']:,} B, {d['dropped']:,} of {d['fired']:,} "
                     "dropped")
        for variant, vals in rows.items():
            col = lambda k: [row[k] for row in vals]
            what = ("counted by count.rpn" if variant == "count"
                    else "every firing recorded")
            self.figures[f"kernel_{variant}"] = {
                "workload": cmd, "probes": len(ids), "smp": g.hello["ncpus"],
                "what": what, "repetitions": len(vals),
                "fired": figure(col("fired"), "firings"),
                "firings_per_s": figure(col("per_s"), "firings/s (guest time)"),
                "wire_bytes": figure(col("wire"), "bytes (EVENTS, AGGS, PROBES frames)"),
                "bytes_per_firing": figure([w / f for w, f in zip(col("wire"), col("fired"))],
                                           "bytes per firing"),
                "dropped": figure(col("dropped"), "records"),
                "lost": figure(col("lost"), "firings not counted or recorded",
                               **({"target": "lost_counted"} if variant == "count" else {})),
            }

    # ---- scaling ----

    def _rates(self, g: Guest, spec: str, mechanism: str, label: str, iters: int,
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
        for i in range(self.reps):
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
                got[n] = fired / (r.results[-1]["cycles"] / self.hz)
                rates[n].append(got[n])
                refs[n].append(paired(n))
            self.say(f"  {label} {i + 1}/{self.reps}: " + ", ".join(
                f"{n} vCPU {v / 1e3:,.0f}k firings/s" for n, v in got.items()))
        g.command("probe clear")
        return rates, refs

    def _rate(self, g: Guest, command: str) -> float:
        """A workload's result value per second of guest time."""
        r = g.command(command, timeout=600)
        if not r.ok or not r.results:
            raise TraceError(f"{command} failed: {r.message}")
        return r.results[-1]["value"] / (r.results[-1]["cycles"] / self.hz)

    def scaling(self, g: Guest) -> None:
        mechanism = self.arch.default_mechanism
        # The bare trap on as many threads, each run next to the probe's:
        # QEMU serialises exceptions, and this is the most a trap-based
        # probe can scale.
        rates, bare = self._rates(
            g, LOSSLESS_FUNCS, mechanism, "scaling", self.sizes.scale_iters,
            lambda n: self._rate(g, f"run baretraps threads={n} traps={self.sizes.bare_traps}"))
        # i386's opt takes no trap at an entry: its entries alone, so that
        # no firing waits for QEMU's lock on exceptions (below); next to
        # each run the workload unprobed on as many threads: the most any
        # probe's firings can scale on this host (a busy 2-core host cannot
        # give two vCPUs two cores).
        if "opt" in self.arch.mechanisms:
            spec = ",".join(p for p in LOSSLESS_FUNCS.split(",") if p.endswith(":entry"))
            iters = self.sizes.scale_fast_iters
            orates, calls = self._rates(
                g, spec, "opt", "scaling opt", iters,
                lambda n: self._rate(g, f"run calltree threads={n} iters={iters} ref=0"))
            for n, vals in orates.items():
                self.put(f"scaling_opt_{n}_vcpu", vals, "firings/s",
                         what=f"calltree on {n} threads, opt on the entries "
                         "(no trap), action null, 4-CPU boot")
            oratios = [a / b for a, b in zip(orates[2], orates[1])]
            self.put("scaling_opt_2_over_1", oratios, "ratio", target="scaling_2_over_1",
                     what="opt entry probes: firings/s 2/1 vCPU")
            self.put("scaling_untraced_2_over_1", [a / b for a, b in zip(calls[2], calls[1])],
                     "ratio", what="calltree unprobed: calls/s 2/1 vCPU")
            self.put("scaling_opt_2_over_untraced",
                     [o / (a / b) for o, a, b in zip(oratios, calls[2], calls[1])],
                     "ratio", what="opt firings/s 2/1 vCPU ÷ unprobed calls/s 2/1 vCPU")
        for n, vals in rates.items():
            self.put(f"scaling_{n}_vcpu", vals, "firings/s",
                     what=f"calltree on {n} threads, {mechanism}, action null, 4-CPU boot")
            self.put(f"scaling_bare_{n}_vcpu", bare[n], "traps/s",
                     what=f"bare trap round trips on {n} threads, 4-CPU boot")
        # A trap per firing: judged against the bare trap's own scaling
        # (scaling_N_over_bare), not against 1.8, which opt's is.
        self.put("scaling_2_over_1", [a / b for a, b in zip(rates[2], rates[1])], "ratio")
        self.put("scaling_4_over_1", [a / b for a, b in zip(rates[4], rates[1])], "ratio")
        for n in (2, 4):
            self.put(f"scaling_bare_{n}_over_1", [a / b for a, b in zip(bare[n], bare[1])],
                     "ratio")
            self.put(f"scaling_{n}_over_bare", [(a / b) / (c / d) for a, b, c, d in
                                                 zip(rates[n], rates[1], bare[n], bare[1])],
                     "ratio", target="scaling_over_bare",
                     what=f"probe firings/s {n}/1 vCPU ÷ bare traps/s {n}/1 vCPU")


def _workloads(sz: Sizes, threads: int = 1):
    fib = ("fib", "fbt:fib:entry,fbt:fib:return", f"run fib n={sz.fib_n}")
    ct = (f"calltree{threads}" if threads > 1 else "calltree", LOSSLESS_FUNCS,
          f"run calltree threads={threads} iters={sz.ct_iters}")
    return [fib, ct] if threads == 1 else [ct]


def measure(arch: arches.Arch, reps: int, sizes: Sizes, on_line=print) -> Bench:
    b = Bench(arch, reps, sizes, on_line)
    mechanisms = ["untraced", *arch.mechanisms]
    with b.boot("A") as g:
        # A 1 ms tick: the flushes that end experiment 5 and the drain poll
        # at tick granularity.
        g.command("timer 1000")
        # DProbes' five and the serial drain as ever over the 16550; then,
        # in the same boot, the virtio channel's drain and experiment 5.
        g.command("channel serial")
        b.dprobes(g)
        b.firepath(g)
        b.probecost(g)
        b.watchcost(g)
        b.drain(g, "serial")
        if g.channel_used == "virtio":
            b.drain(g, "virtio")
            b.dprobes_log(g, "virtio")
            b.dprobes_log(g, "serial")
        else:
            b.notes.append(f"no virtio channel on {arch.name}: its drain rows are "
                           "the 16550's alone")
        g.command(f"channel {g.channel_used}")
        g.command("timer 100")
        b.fbt(g, _workloads(sizes), mechanisms)
        b.avoid(g)
        g.exit(0)
    with b.boot("B", instrumented=True) as g:
        b.fbt(g, _workloads(sizes), ["hooks_off", "finstrument"], hooks=True)
        g.exit(0)
    if arch.max_smp >= 4:
        with b.boot("C", smp=4) as g:
            b.fbt(g, _workloads(sizes, sizes.ct_threads_smp), mechanisms, tag="_smp4")
            b.scaling(g)
            b.sustained(g, [c for c in ("virtio", "serial")
                            if c == "serial" or g.channel_used == "virtio"])
            g.exit(0)
        with b.boot("D", smp=4, instrumented=True) as g:
            b.fbt(g, _workloads(sizes, sizes.ct_threads_smp),
                  ["hooks_off", "finstrument"], hooks=True, tag="_smp4")
            g.exit(0)
    with b.boot("E", smp=min(2, arch.max_smp)) as g:
        b.kernel(g)
        b.figures.update(perf_kernel.measure(g, arch, reps, sizes.kernel_iters, b.say))
        g.exit(0)
    return b


# ---- the table ----

def _judge(fig: dict) -> str:
    t = fig.get("target")
    if not t or fig.get("median") is None:
        return ""
    text, ok = TARGETS[t]
    return f"{text} {'met' if ok(fig['median']) else 'MISSED'}"


def _spread(f: dict, fmt: str) -> str:
    lo, hi = f["spread"]
    return f"{format(f['median'], fmt)} [{format(lo, fmt)}..{format(hi, fmt)}]"


def table(b: Bench) -> list[tuple[str, str, str]]:
    F = b.figures
    rows = []
    rows.append(("DProbes experiments (cycles/iter, ns/iter, +overhead/firing)", "", ""))
    for name in sorted(k for k in F if k.startswith("dp")):
        f = F[name]
        over = f.get("overhead")
        rows.append((f"  {name}", f"{f['median']:,.1f} cyc, {f['ns']['median']:,.1f} ns"
                     + (f", +{over['median']:,.0f}" if over else ""), ""))
    rows.append(("  bare trap round trip", f"{F['bare_trap']['median']:,.0f} cyc, "
                 f"{F['bare_trap']['ns']['median']:,.0f} ns", ""))
    for name in sorted(k for k in F if k.startswith("ratio_")):
        rows.append((f"  {F[name]['what']}", _spread(F[name], ".2f"), _judge(F[name])))
    stages = [k for k in F if k.startswith("stages_") and "total" in F[k]]
    if stages:
        cols = ["entry", "lookup", "fire", "emulate", "exit", "total", "plain"]
        rows.append((f"fire path by stage (guest cycles, median; call "
                     f"{F['stages_call']['median']:,.0f} is in entry and exit; "
                     "plain: the whole firing with no stamps taken)",
                     " | ".join(cols), ""))
        for k in stages:
            rows.append((f"  {k[7:]}", " | ".join(f"{F[k][c]['median']:,.0f}"
                                                  if c in F[k] else "-" for c in cols),
                         ""))
    for name in sorted(k for k in F if k.startswith("rpn_")):
        rows.append((f"  {F[name]['what']}", _spread(F[name], ",.1f") + " cyc/insn", ""))
    if "watch_w_null" in F:
        f = F["watch_w_null"]
        rows.append((f"  {f['what']}", f"+{f['median']:,.0f} cyc, "
                     f"{f['ns']['median']:,.0f} ns", ""))
    for variant in ("count", "record"):
        f = F.get(f"kernel_{variant}")
        if not f:
            continue
        if variant == "count":
            rows.append((f"whole kernel: {f['probes']} fbt entry probes, {f['workload']}, "
                         f"{f['smp']} CPU(s)", "firings/s | wire B | B/firing | lost", ""))
        lost = f["lost"]
        rows.append((f"  {f['what']}",
                     f"{f['firings_per_s']['median']:,.0f} | {f['wire_bytes']['median']:,.0f} | "
                     f"{f['bytes_per_firing']['median']:,.2f} | {lost['median']:,.0f} of "
                     f"{f['fired']['median']:,.0f}",
                     f"lost {_judge(lost)}" if lost.get("target") else ""))
    rows += perf_kernel.rows(F)
    fbt = [k for k in F if k.startswith("fbt_")]
    if fbt:
        rows.append(("function-boundary tracing (median of reps)", "ms guest | rec/s | "
                     "missed | dropped | wire B", ""))
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
        rows.append((f"  {key[4:]}",
                     f"{f['guest_seconds']['median'] * 1e3:,.1f} | "
                     f"{f['events_per_s']['median']:,.0f} | "
                     f"{'-' if missed is None else int(missed)} | "
                     f"{'-' if f['dropped']['median'] is None else int(f['dropped']['median'])} | "
                     f"{f['wire_bytes']['median']:,.0f}", target))
    for name in ("scaling_1_vcpu", "scaling_2_vcpu", "scaling_4_vcpu"):
        if name in F:
            rows.append((f"firings/s, {name.split('_')[1]} vCPU (null action)",
                         f"{F[name]['median']:,.0f}", ""))
    for name in ("scaling_2_over_1", "scaling_4_over_1"):
        if name in F:
            rows.append((f"firings/s {name[8]} vCPUs / 1 vCPU", _spread(F[name], ".2f"),
                         _judge(F[name])))
    if "scaling_opt_2_over_1" in F:
        rows.append(("opt firings/s 2 vCPUs / 1 vCPU (entries, no trap)",
                     _spread(F["scaling_opt_2_over_1"], ".2f"), _judge(F["scaling_opt_2_over_1"])))
        rows.append(("calltree unprobed, calls/s 2 vCPUs / 1 vCPU",
                     _spread(F["scaling_untraced_2_over_1"], ".2f"), ""))
        rows.append(("  opt 2/1 ÷ unprobed 2/1", _spread(F["scaling_opt_2_over_untraced"], ".2f"),
                     ""))
    for n in (2, 4):
        if f"scaling_bare_{n}_over_1" in F:
            rows.append((f"bare traps/s {n} vCPUs / 1 vCPU (QEMU's exception lock)",
                         _spread(F[f"scaling_bare_{n}_over_1"], ".2f"), ""))
            f = F[f"scaling_{n}_over_bare"]
            rows.append((f"  {f['what']}", _spread(f, ".2f"), _judge(f)))
    for ch in ("serial", "virtio"):
        if f"{ch}_raw" not in F:
            continue
        rows.append((f"{ch} raw channel", f"{F[f'{ch}_raw']['median'] / 1e3:,.0f} kB/s",
                     _judge(F[f"{ch}_raw"])))
        rows.append((f"{ch} drain payload", f"{F[f'{ch}_payload']['median'] / 1e3:,.0f} kB/s",
                     ""))
        rows.append((f"{ch} payload / raw", _spread(F[f"{ch}_payload_over_raw"], ".2f"),
                     _judge(F[f"{ch}_payload_over_raw"])))
    if "virtio_raw_over_serial" in F:
        rows.append(("virtio raw / serial raw (same boot)",
                     _spread(F["virtio_raw_over_serial"], ",.0f"),
                     _judge(F["virtio_raw_over_serial"])))
    avoid = [k for k in F if k.startswith("avoid_")]
    if avoid:
        rows.append(("interrupts the tracer caused (tlbwalk)",
                     "ITLB | DTLB (buffer) | served | faults | window | locked | "
                     "cyc/insn | B/rec", ""))
        for key in avoid:
            f = F[key]
            med = lambda k: f[k]["median"] if k in f and f[k]["median"] is not None else None
            cpi, bpr = med("cycles_per_insn"), med("bytes_per_record")
            rows.append((f"  {f['what']} ({key[6:]})",
                         f"{med('own_itlb'):.0f} | {med('own_dtlb'):.0f} "
                         f"({med('own_buffer'):.0f}) | {med('own_served'):.0f} | "
                         f"{med('own_faults'):.0f} | {med('own_window'):.0f} | "
                         f"{med('locked'):.0f} | "
                         f"{'-' if cpi is None else f'{cpi:.1f}'} | "
                         f"{'-' if bpr is None else f'{bpr:.1f}'}",
                         f"own {_judge(f['own_total'])}" if key == "avoid_all" else ""))
    for ch in ("virtio", "virtio_ticks", "serial"):
        f = F.get(f"sustained_{ch}")
        if f:
            rows.append((f"sustained: {f['what']}",
                         f"{f['records']['median']:,.0f} records, "
                         f"{f['lost']['median']:,.0f} dropped, "
                         f"{f['guest_seconds']['median']:.2f} s",
                         f"lost {_judge(f['lost'])}" if f["lost"].get("target") else ""))
    return rows


def missed_targets(b: Bench) -> list[str]:
    return [f"{name}.{k}" if k else name for name, fig in b.figures.items()
            for k, f in [("", fig), *fig.items()]
            if isinstance(f, dict) and "MISSED" in _judge(f)]


# ---- plots ----

def plots(b: Bench, out) -> list[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        b.notes.append("no plots: python3-matplotlib is not installed (make deps)")
        return []
    F, made = b.figures, []

    def bars(fname, title, ylabel, names, meds, errs, log=False):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        ax.bar(range(len(names)), meds, yerr=errs, capsize=4, color="#4477aa")
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{b.arch.name}: {title}", fontsize=10)
        if log:
            ax.set_yscale("log")
        fig.tight_layout()
        fig.savefig(out / fname, dpi=100)
        plt.close(fig)
        made.append(fname)

    def err(f):
        return [f["median"] - f["spread"][0], f["spread"][1] - f["median"]]

    dp = sorted(k for k in F if k.startswith("dp"))
    e = list(zip(*[err(F[k]["ns"]) for k in dp]))
    bars("dprobes.png", f"DProbes experiments, ns per loop iteration "
         f"(median, min-max of {b.reps})", "ns / iteration (log)",
         dp, [F[k]["ns"]["median"] for k in dp], e, log=True)
    fbt = [k for k in F if k.startswith("fbt_")]
    e = list(zip(*[err(F[k]["guest_seconds"]) for k in fbt]))
    bars("fbt.png", "function-boundary tracing: guest time per run", "ms (log)",
         [k[4:] for k in fbt], [F[k]["guest_seconds"]["median"] * 1e3 for k in fbt],
         [[x * 1e3 for x in side] for side in e], log=True)
    sc = [k for k in ("scaling_1_vcpu", "scaling_2_vcpu", "scaling_4_vcpu") if k in F]
    if sc:
        e = list(zip(*[err(F[k]) for k in sc]))
        bars("scaling.png", "aggregate firings/s by vCPUs (null action)", "firings/s",
             [k.split("_")[1] + " vCPU" for k in sc], [F[k]["median"] for k in sc], e)
    sr = ["serial_raw", "serial_payload"]
    e = list(zip(*[err(F[k]) for k in sr]))
    bars("serial.png", "serial channel: raw vs drained payload", "bytes/s",
         ["raw channel", "drain payload"], [F[k]["median"] for k in sr], e)
    return made


# ---- the command ----

def run(arch_name: str, reps: int = 5, small: bool = False, on_line=print,
        out=None) -> int:
    arch = arches.get(arch_name)
    build.ensure_image(arch)
    t0 = time.monotonic()
    sizes = Sizes.small() if small else Sizes()
    on_line(f"bench {arch.name}: {reps} repetitions of every figure"
            + (" (small sizes)" if small else ""))
    b = measure(arch, reps, sizes, on_line)
    out = out or BUILD / "bench" / arch.name
    out.mkdir(parents=True, exist_ok=True)
    made = plots(b, out)
    rows = table(b)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    qemu = subprocess.run([arch.qemu, "--version"], capture_output=True,
                          text=True).stdout.splitlines()[:1]
    results = {
        "figures": b.figures,
        "targets": {k: v[0] for k, v in TARGETS.items()},
        "missed_targets": missed_targets(b),
        "notes": b.notes,
        "plots": made,
        "config": {"arch": arch.name, "accel": "tcg", "qemu": qemu[0] if qemu else "",
                   "git_commit": commit, "boots": b.boots, "repetitions": reps,
                   "sizes": sizes.__dict__, "small": small,
                   "seconds": round(time.monotonic() - t0, 1)},
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))
    width = max(len(r[0]) for r in rows)
    print(f"\n{'figure':{width}}  {'measured (median [min..max])':>40}  target")
    for name, value, target in rows:
        print(f"{name:{width}}  {value:>40}  {target}")
    for n in b.notes:
        print(f"note: {n}")
    print(f"results: {out / 'results.json'}"
          + (f"; plots: {', '.join(made)}" if made else ""))
    print(f"bench {arch.name}: {results['config']['seconds']} s")
    return 0
