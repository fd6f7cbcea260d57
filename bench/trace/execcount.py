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
iteration at a time), which the caller leaves out.

The workloads are deterministic in what they execute (their answers and
per-thread call counts are closed forms), so the twin's counts are the
probed run's.
"""

from __future__ import annotations

import re
import socket
import tempfile
import time
from collections import Counter
from pathlib import Path

from ..errors import BenchError
from ..guest.qemu import Guest
from ..paths import BUILD

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
    runs `before` (guest commands, e.g. `timer 20000`), then `run
    run_line` singlestepped and logged."""
    addrs = set(addrs)
    BUILD.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="tbexec-", dir="/tmp"))
    sock, log = tmp / "monitor", BUILD / "logs" / f"execcount-{arch.name}-{tmp.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
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
    counts: Counter = Counter()
    trapped = arch.exec_trap_entry
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
    log.unlink()
    sock.unlink(missing_ok=True)
    tmp.rmdir()
    return counts
