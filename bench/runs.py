"""Traced runs: put probes into a running guest, run a workload, get the
records back and judge them (bench/trace.py).

A session talks to the guest only through its commands:
  probe mode M | probe check on | trace buffer BYTES | trace reset
  probe add ID ADDR entry|return NARGS       (one per site; refusals noted)
  probe enable ID ... / start|run WORKLOAD / probe disable all / trace flush
`trace flush` returns once every record written so far has been sent and
the per-CPU STATS frames are out, so the capture is complete when it
answers. The lossless stress runs the calltree workload on many threads
with probes on all its functions, and compares per-function entry and
return counts with the counts the workload kept itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from . import arches, build, trace
from .errors import BenchError
from .machine import Guest


class TraceError(BenchError):
    """Probes could not be set up as asked."""


def objdump_for(arch: arches.Arch) -> str:
    return {"i386": "i686-linux-gnu-objdump",
            "sparc64": "sparc64-linux-gnu-objdump"}[arch.name]


@dataclass
class Session:
    guest: Guest
    image: trace.Image
    probes: list[trace.Probe] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def cmd(self, line: str, timeout: float | None = None):
        return self.guest.command(line, timeout=timeout)

    def must(self, line: str, timeout: float | None = None):
        r = self.cmd(line, timeout)
        if not r.ok:
            raise TraceError(f"guest refused {line!r}: {r.status_name}: {r.message}",
                             cmdline=self.guest.cmdline, log=str(self.guest.log_path))
        return r

    def setup(self, spec: str, mode: str, check: bool = False,
              buffer_bytes: int | None = None, strict: bool = True) -> None:
        self.probes, self.notes = trace.plan(spec, self.image, mode)
        self.must(f"probe mode {mode}")
        self.must(f"probe check {'on' if check else 'off'}")
        if buffer_bytes:
            self.must(f"trace buffer {buffer_bytes}", timeout=60)
        self.must("trace reset")
        kept = []
        for p in self.probes:
            r = self.cmd(f"probe add {p.id} {p.addr:#x} {p.kind} {p.nargs}")
            if not r.ok:
                p.refused = r.message
                self.notes.append(f"{p.function} {p.kind} at {p.addr:#x}: {r.message}")
                continue
            kept.append(p)
        refused = [p for p in self.probes if p.refused]
        if refused and strict:
            raise TraceError("the guest refused probes:\n  " +
                             "\n  ".join(f"fbt:{p.function}:{p.kind} at {p.addr:#x}: "
                                         f"{p.refused}" for p in refused))
        self.probes = kept
        if not kept:
            raise TraceError("no probe left to enable:\n  " + "\n  ".join(self.notes))

    def enable(self, on: bool = True, strict: bool = False) -> None:
        """Enable every probe; one the mode cannot arm is dropped with a
        note (or is an error, if strict)."""
        if not on:
            self.must("probe disable all")
            return
        kept = []
        for p in self.probes:
            r = self.cmd(f"probe enable {p.id}")
            if r.ok:
                kept.append(p)
                continue
            msg = f"fbt:{p.function}:{p.kind} at {p.addr:#x}: {r.message}"
            if strict:
                raise TraceError(msg)
            self.notes.append(msg)
        self.probes = kept

    def finish(self) -> trace.Capture:
        self.must("trace flush", timeout=600)
        return trace.decode(self.guest.trace_frames, self.guest.byte_order,
                            self.guest.hello["word_bytes"])


def open_session(guest: Guest) -> Session:
    return Session(guest, trace.load_image(guest.elf, objdump_for(guest.arch)))


@dataclass
class LosslessResult:
    mode: str
    report: trace.Report
    capture: trace.Capture
    result_ok: bool
    seconds: float

    @property
    def missed(self) -> int:
        return self.report.missed

    @property
    def firings_expected(self) -> int:
        return self.report.expected_firings


LOSSY_MODES = ("step", "shellgame")
LOSSLESS_FUNCS = "fbt:ct_*:entry,fbt:ct_*:return"


def lossless_probes(arch: arches.Arch) -> str:
    """The stress's probes: calltree's entries and returns, plus every
    other control transfer of it where the arch has a branch provider."""
    return LOSSLESS_FUNCS + (",branch:ct_*" if arch.branch_provider else "")


def lossless(arch: arches.Arch, mode: str, smp: int, threads: int, iters: int,
             depth: int = 4, timer_hz: int = 0, on_line=print) -> LosslessResult:
    build.ensure_image(arch)
    # Room for every record of the run even if the drain falls behind: ~40
    # bytes a firing on i386 (72 with sparc64's words), (2 depth + 8) calls
    # of two firings per iteration (four with branch probes), threads + 1
    # reference run; one CPU may take twice its share.
    per_call = 4 * 72 if arch.branch_provider else 2 * 40
    total = (threads + 1) * iters * (2 * depth + 8) * per_call
    need = total * 2 // smp if smp > 1 else total
    memory = arch.max_memory_mb
    cap = (memory << 20) // 2 // smp
    buf = 1 << max(16, min((need - 1).bit_length(), cap.bit_length() - 1))
    with Guest(arch, label=f"lossless-{mode}", smp=smp, memory_mb=memory,
               command_timeout=1800) as g:
        s = open_session(g)
        s.setup(lossless_probes(arch), mode, buffer_bytes=buf, strict=False)
        s.enable(True)
        for n in s.notes:
            on_line(f"  note: {n}")
        if timer_hz:
            s.must(f"timer {timer_hz}")
        on_line(f"  {len(s.probes)} probes on calltree ({mode}), {threads} threads x "
                f"{iters} iterations on {smp} CPUs, buffers {buf >> 10} KiB per CPU")
        t0 = time.monotonic()
        r = s.cmd(f"run calltree threads={threads} iters={iters} depth={depth}",
                  timeout=1800)
        secs = time.monotonic() - t0
        s.enable(False)
        cap = s.finish()
        rep = trace.verify(cap, s.probes, g.link_errors,
                           allow_missing=mode in LOSSY_MODES)
        g.exit(0)
    if not rep.entries_probed | rep.returns_probed:
        raise TraceError("no calltree function could be probed")
    return LosslessResult(mode, rep, cap, r.ok, secs)


@dataclass
class ToggleResult:
    toggles: int
    result_ok: bool
    windows: int
    nesting_checked: int
    nesting_errors: list
    report: trace.Report
    seconds: float


def _cycles_of(message: str) -> int:
    for word in message.split():
        if word.startswith("cycles="):
            return int(word[7:])
    raise TraceError(f"no cycles= in the reply {message!r}")


def toggle_stress(arch: arches.Arch, mode: str, smp: int, threads: int,
                  iters: int, toggles: int, on_line=print,
                  buffer_bytes: int = 32 << 20) -> ToggleResult:
    """Arm and disarm every calltree probe `toggles` times while the
    workload runs on all CPUs; the workload checks its own results."""
    build.ensure_image(arch)
    with Guest(arch, label=f"toggle-{mode}", smp=smp, memory_mb=256,
               command_timeout=1800) as g:
        s = open_session(g)
        s.setup(LOSSLESS_FUNCS, mode, buffer_bytes=buffer_bytes, strict=False)
        added = len(s.probes)
        s.enable(True)          # drops probes the mode cannot arm
        s.enable(False)
        if len(s.probes) < added:
            # `probe enable all` would try them again and fail: keep in the
            # guest only the probes the mode arms.
            s.must("probe clear")
            for p in s.probes:
                s.must(f"probe add {p.id} {p.addr:#x} {p.kind} {p.nargs}")
        t0 = time.monotonic()
        s.must(f"start calltree threads={threads} iters={iters} depth=4")
        windows = []
        for n in range(toggles):
            on = s.must("probe enable all")
            off = s.must("probe disable all")
            windows.append((_cycles_of(on.message), _cycles_of(off.message)))
            if n % 200 == 199:
                on_line(f"  {n + 1} toggles")
        r = s.cmd("wait", timeout=1800)
        secs = time.monotonic() - t0
        cap = s.finish()
        g.exit(0)
    rep = trace.verify(cap, s.probes, g.link_errors, allow_missing=True)
    checked, errors = trace.check_windows(cap, s.probes, windows)
    return ToggleResult(toggles, r.ok, len(windows), checked, errors, rep, secs)
