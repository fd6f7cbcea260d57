"""How often each instruction ran, counted by QEMU itself in an unprobed
twin of a run: the independent count `bench run --exec-count` holds every
insn probe's firings against.

The twin boots the same image on as many CPUs with a second HMP monitor on
a socket and `-D LOG`; once it is up, `singlestep on` makes every
translation block one instruction and `log exec,nochain` logs each block
as it starts (`Trace N: ... [cs_base/PC/flags/cflags] sym`), only for the
workload's run (`log none` after it: booting singlestepped and logged would
take minutes). A block logged but not run — an exit was requested (an
interrupt, another vCPU's code write) just as it began — is logged again
by QEMU as `Stopped execution of TB chain before ... [PC]`, and counts
minus one. An instruction that takes a synchronous trap (sparc64: a
window spill or fill, an MMU miss) is logged, traps, and is logged again
when the handler retries it: where the arch can tell such a trap's entry
(arches.Arch.exec_trap_entry), the block logged before it on the same CPU
(`Trace N:` is the CPU) counts minus one. So, per PC, Trace lines less
those is how many times the instruction at PC ran, on every CPU: exact for
any instruction but a REP-prefixed one (which singlestep runs one
iteration at a time): what the arch cannot count (arches.Arch.
exec_uncounted) is left out by compare(), each such probe named with why.

The workloads are deterministic in what they execute (their answers and
per-thread call counts are closed forms), so the twin's counts are the
probed run's whatever its timer rate. That is why the twin's rate is at
most the kernel's default (TIMER_DEFAULT_HZ): singlestepped and logged,
the twin runs a few million instructions a second, and at 20000 Hz a
tick's handler and the scheduler take all of them (the log's samples were
trap_entry, timer_interrupt, sched_tick to the end); a lower rate is said.
Every command of the twin waits at most the run's --timeout, and its exec
log (build/logs, gigabytes when a run goes long) and its /tmp directory
are removed whether it ends well or not.
"""

from __future__ import annotations

import re
import shutil
import socket
import tempfile
import time
from collections import Counter
from pathlib import Path

from ..errors import BenchError
from ..guest.qemu import Guest
from ..paths import BUILD, LOG_DIR
from ..wire import cdefs

# The twin's timer rate at most (see the top): the kernel's own default.
TWIN_TIMER_HZ = cdefs.load("guest-kernel/include/timer.h").const("TIMER_DEFAULT_HZ")

_TRACE = re.compile(r"^Trace (\d+): \S+ \[[0-9a-f]+/([0-9a-f]+)/")
_STOPPED = re.compile(r"^Stopped execution of TB chain before \S+ \[([0-9a-f]+)\]")


class _Monitor:
    """QEMU's human monitor on a UNIX socket, one command at a time."""

    def __init__(self, path: str, timeout: float = 30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise BenchError(f"no QEMU monitor at {path}") from None
                time.sleep(0.1)
        self.sock.settimeout(timeout)
        self._prompt()

    def _prompt(self) -> bytes:
        buf = b""
        while not buf.endswith(b"(qemu) "):
            chunk = self.sock.recv(4096)
            if not chunk:
                raise BenchError("the QEMU monitor closed")
            buf += chunk
        return buf

    def command(self, line: str) -> str:
        self.sock.sendall(line.encode() + b"\n")
        return self._prompt().decode(errors="replace")

    def close(self):
        self.sock.close()


def count(arch, addrs, run_line: str, symbols: dict, smp: int = 1, before=(),
          image=None, elf=None, timeout: float = 600) -> Counter:
    """{pc: times it ran} for every pc in addrs, in an unprobed twin that
    runs `before` (guest commands, e.g. `timer 100`), then `run run_line`
    singlestepped and logged; each command waits at most timeout seconds.
    The exec log and the temporary directory go, however this ends."""
    BUILD.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="tbexec-", dir="/tmp"))
    log = LOG_DIR / f"execcount-{arch.name}-{tmp.name}.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        _twin(arch, run_line, smp, before, image, elf, timeout, tmp / "monitor", log)
        return _counts(log, set(addrs), arch.exec_trap_entry, symbols)
    finally:
        log.unlink(missing_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)


def _twin(arch, run_line, smp, before, image, elf, timeout, sock: Path, log: Path):
    extra = ["-monitor", f"unix:{sock},server=on,wait=off", "-D", str(log)]
    with Guest(arch, label="execcount", smp=smp, extra_args=extra, image=image,
               elf=elf, command_timeout=timeout) as g:
        for line in before:
            r = g.command(line)
            if not r.ok:
                raise BenchError(f"the twin refused {line!r}: {r.message}")
        mon = _Monitor(str(sock))
        try:
            mon.command("singlestep on")
            mon.command("log exec,nochain")
            r = g.command(f"run {run_line}")
            mon.command("log none")
        finally:
            mon.close()
        if not r.ok:
            raise BenchError(f"the twin's run {run_line!r} failed: {r.message}")
        g.exit(0)


def _counts(log: Path, addrs: set, trapped, symbols: dict) -> Counter:
    counts: Counter = Counter()
    last: dict[str, int] = {}           # CPU: the pc it logged last
    with open(log, errors="replace") as f:
        for line in f:
            m = _TRACE.match(line)
            if m:
                cpu, pc = m.group(1), int(m.group(2), 16)
                if pc in addrs:
                    counts[pc] += 1
                elif trapped and last.get(cpu) in addrs and trapped(pc, symbols):
                    counts[last[cpu]] -= 1
                last[cpu] = pc
                continue
            m = _STOPPED.match(line)
            if m:
                pc = int(m.group(1), 16)
                if pc in addrs:
                    counts[pc] -= 1
    return counts


def twin_timer(timer_hz: int) -> tuple[list[str], str]:
    """The twin's `timer` command for a run at timer_hz (0: the default),
    and a line saying so when the twin's rate is lower."""
    if not timer_hz:
        return [], ""
    hz = min(timer_hz, TWIN_TIMER_HZ)
    said = "" if hz == timer_hz else (
        f"exec-count: the twin's timer at {hz} Hz, not {timer_hz}: singlestepped, "
        "a faster tick leaves the workload no time between ticks; the counts do "
        "not depend on the rate")
    return [f"timer {hz}"], said


def compare(arch, s, rep, line: str, smp: int, timer_hz: int, timeout: float,
            image=None, elf=None) -> tuple[bool, list[str]]:
    """Every insn probe of session s: its firings in rep against the twin's
    count, or named with the reason it is not compared. (all equal, lines)."""
    out = []
    insns = []
    for p in s.probes:
        if p.kind != "insn":
            continue
        why = arch.exec_uncounted(s.image.code(p.addr, 16)) if arch.exec_uncounted else ""
        if why:
            out.append(f"note: exec-count: {p.spec} at {p.addr:#x} not compared: {why}")
        else:
            insns.append(p)
    if not insns:
        return False, out + ["PROBLEM: --exec-count: no insn probe to count"]
    before, said = twin_timer(timer_hz)
    if said:
        out.append(said)
    counts = count(arch, [p.addr for p in insns], line, s.image.symbols, smp=smp,
                   before=before, image=image, elf=elf, timeout=timeout)
    bad = [p for p in insns if rep.insns[p.id] != counts[p.addr]]
    left = sum(1 for p in s.probes if p.kind == "insn") - len(insns)
    out.append(f"exec-count: {len(insns)} insn probes, {sum(counts.values())} executions "
               f"in the unprobed twin, {len(insns) - len(bad)} equal, {len(bad)} differ"
               + (f", {left} not compared (notes above)" if left else ""))
    for p in bad[:20]:
        out.append(f"PROBLEM: {p.spec}: {rep.insns[p.id]} firings, QEMU ran it "
                   f"{counts[p.addr]} times")
    return not bad, out
