"""The stresses that prove a mechanism lossless: many threads, all CPUs.

lossless(): the calltree workload on many threads with probes on all its
functions (and, where the arch has the branch provider, on every other
control transfer in them); per-function entry and return counts are
compared with the counts the workload kept itself, with buffers large
enough that a drop is a failure of the run, not of the drain. Its records
are not kept in memory: a thread moves the frames off the guest's list
as they come into a spool file (bench/trace/spool.py: the frames as they
arrived, some 33 bytes a record on i386), and once the run is flushed
they are read back merged by CPU and verified a few frames at a time
(bench/trace/stream.py):
a run of 10^8 records must not hold them all. Not while the run goes: a
verifying thread held the interpreter's lock from the shm consumer for up
to 1.1 s at a time (10^7 records at 256 KiB a CPU lost 2.5 million).

toggle_stress(): every calltree probe armed and disarmed over and over
while the workload runs on every CPU; the workload checks its own results,
and nesting is checked inside every armed window.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass

from .. import arches
from ..guest import build
from ..guest.backend import open_guest
from ..wire.records import Capture
from . import sites
from .session import TraceError, cycles_of, open_session, reply_count
from .spool import Spool
from .stream import StreamVerifier
from .verify import Report, check_windows, verify


@dataclass
class LosslessResult:
    mechanism: str
    report: Report
    capture: Capture
    result_ok: bool
    seconds: float
    channel: str = ""       # where the trace travelled (HELLO's channel)

    @property
    def missed(self) -> int:
        return self.report.missed

    @property
    def firings_expected(self) -> int:
        return self.report.expected_firings


LOSSLESS_FUNCS = "fbt:ct_*:entry,fbt:ct_*:return"


def lossless_probes(arch: arches.Arch) -> str:
    """The stress's probes: calltree's entries and returns, plus every
    other control transfer of it where the arch has a branch provider."""
    return LOSSLESS_FUNCS + (",branch:ct_*" if arch.branch_provider else "")


def lossless(arch: arches.Arch, mechanism: str, smp: int, threads: int, iters: int,
             depth: int = 4, timer_hz: int = 0, on_line=print,
             buffer_bytes: int | None = None, also: str = "") -> LosslessResult:
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
    # Given a size (the guest's default 256 KiB, say), the drain must keep
    # up with the firings instead: the channel is what is measured.
    buf = buffer_bytes or buf
    with open_guest(arch, label=f"lossless-{mechanism}", smp=smp, memory_mb=memory,
                    command_timeout=1800) as g:
        s = open_session(g)
        # `also`: more probes beside calltree's (insn:ct_*+* puts out-of-line
        # sites in the stress), with the most room the memory gives.
        spec = lossless_probes(arch) + (f",{also}" if also else "")
        if also and not buffer_bytes:
            buf = 1 << (cap.bit_length() - 1)
        s.setup(spec, mechanism, buffer_bytes=buf, strict=False)
        s.enable(True)
        for n in s.notes:
            on_line(f"  note: {n}")
        if timer_hz:
            s.must(f"timer {timer_hz}")
        on_line(f"  {len(s.probes)} probes on calltree ({mechanism}), {threads} threads x "
                f"{iters} iterations on {smp} CPUs, buffers {buf >> 10} KiB per CPU, "
                f"trace over {g.channel_used}")
        sv = StreamVerifier(s.probes, g.byte_order, g.hello["word_bytes"], smp,
                            s.refused)
        done, failed, spool = threading.Event(), [], Spool(key=sv.frame_key)
        feeder = threading.Thread(target=_feed,
                                  args=(g.trace_frames, sv, spool, done, failed),
                                  name="stream-verify", daemon=True)
        feeder.start()
        t0 = time.monotonic()
        try:
            r = s.cmd(f"run calltree threads={threads} iters={iters} depth={depth}",
                      timeout=1800)
            secs = time.monotonic() - t0
            s.enable(False)
            s.must("trace flush", timeout=600)
        finally:
            done.set()
            feeder.join()
        if failed:
            raise failed[0]
        rep = sv.report(g.link_errors, allow_missing=mechanism in arch.lossy)
        cap = sv.capture()
        on_line(f"  verified as they came: {sv.walked} records walked, at most "
                f"{sv.peak_queued} held back, at most {spool.peak >> 20} MiB waiting "
                "on disk")
        channel = g.channel_used
        if channel == "shm":
            on_line(f"  {g.shm_stats()}")
        g.exit(0)
    if not rep.entries_probed | rep.returns_probed:
        raise TraceError("no calltree function could be probed")
    return LosslessResult(mechanism, rep, cap, r.ok, secs, channel)


# Frames verified at a time, once the run is over: all that is in memory.
FEED_FRAMES = 32


def _feed(frames: list, sv: StreamVerifier, spool: Spool, done: threading.Event,
          failed: list) -> None:
    """Move the frames off the front of the guest's list (its reader only
    appends) into the spool; once done, verify the spool's FEED_FRAMES at a
    time, until both are empty; what the decoding raised goes to `failed`,
    for the run's thread."""
    try:
        while True:
            last = done.is_set()
            n = len(frames)
            if n:
                batch = frames[:n]
                del frames[:n]
                spool.put(batch)
            if last and len(spool):
                sv.feed(spool.get(FEED_FRAMES))
            elif last and not n:
                return
            elif not n:
                time.sleep(0.02)
    except Exception as e:          # noqa: BLE001 - re-raised by lossless()
        failed.append(e)
    finally:
        spool.close()


@dataclass
class ToggleResult:
    toggles: int
    result_ok: bool
    windows: int
    nesting_checked: int
    nesting_errors: list
    report: Report
    seconds: float
    check: object = None        # check mode's CheckReport (bench/check/report.py)
    check_records: int = 0
    firings: int = 0            # records of the probes' firings, insn ones too
    late: int = 0               # traps at probes being disarmed (tracer_late)


def toggle_stress(arch: arches.Arch, mechanism: str, smp: int, threads: int,
                  iters: int, toggles: int, on_line=print,
                  buffer_bytes: int = 32 << 20, also: str = "",
                  check: bool = False) -> ToggleResult:
    """Arm and disarm every calltree probe `toggles` times while the
    workload runs on all CPUs; the workload checks its own results. With
    check, in check mode: every CHECK record re-run by the arch's checker
    (an opt site's int3 stage, which arming and disarming pass through,
    is checked there)."""
    build.ensure_image(arch)
    with open_guest(arch, label=f"toggle-{mechanism}", smp=smp, memory_mb=256,
                    command_timeout=1800) as g:
        s = open_session(g)
        s.setup(LOSSLESS_FUNCS + (f",{also}" if also else ""), mechanism,
                buffer_bytes=buffer_bytes, strict=False, check=check)
        added = len(s.probes)
        s.enable(True)          # drops probes the mechanism cannot arm
        s.enable(False)
        if len(s.probes) < added:
            # `probe enable all` would try them again and fail: keep in the
            # guest only the probes the mechanism arms.
            s.must("probe clear")
            for p in s.probes:
                s.must(f"probe add {p.id} {p.addr:#x} {p.kind} {p.nargs}")
        t0 = time.monotonic()
        windows = []
        for n in range(toggles):
            on = s.must("probe enable all")
            if n == 0:
                # The first window opens before the workload starts, so
                # that it holds firings however fast the workload ends
                # (a busy host can delay the harness's first toggle past
                # the whole run).
                s.must(f"start calltree threads={threads} iters={iters} depth=4")
            off = s.must("probe disable all")
            windows.append((cycles_of(on.message), cycles_of(off.message)))
            if n % 200 == 199:
                on_line(f"  {n + 1} toggles")
        r = s.cmd("wait", timeout=1800)
        secs = time.monotonic() - t0
        # A trap taken as its probe is being disarmed still runs the
        # instruction (and, in check mode, writes its CHECK record) but is
        # not a firing: the guest counts it as late and records nothing.
        late = reply_count(s.must("trace stats").message, "late")
        cap = s.finish()
        g.exit(0)
    # Counts and nesting are measured per window, but every firing is a
    # record, a counted drop or a counted miss however the probes toggle.
    rep = verify(cap, s.probes, g.link_errors, allow_missing=True, refused=s.refused,
                 accounting=not check)
    checked, errors = check_windows(cap, s.probes, windows, s.refused)
    crep = None
    if check:
        crep = importlib.import_module(arch.checker).verify(
            cap.checks, sites.sites_of(s.image, s.probes))
    ids = {p.id for p in s.probes}
    return ToggleResult(toggles, r.ok, len(windows), checked, errors, rep, secs,
                        crep, len(cap.checks), sum(e.probe in ids for e in cap.events),
                        late)
