"""`make debug`: a guest paused under QEMU's GDB stub, gdb-multiarch on it.

    python3 -m bench debug --arch i386 [--workload my.c] [--probes SPEC]
                           [--run 'fib n=8'] [--mechanism M] [--batch SCRIPT]

Theory of operation. The guest starts with its CPUs stopped at reset (-S)
and the stub on a private unix socket (bench/guest/qemu.Guest's
gdbstub/paused). gdb
gets the kernel ELF (symbols and DWARF), the arch's architecture and byte
order (arches.Arch.gdb_setup: sun4u's stub sends no target.xml), our
extension (bench/debug/gdbext.py: `tb probes`, `tb buffer`, `tb frame`) and
`target remote` to the socket. The serial line stays with the harness: a
driver thread waits for HELLO — which comes once gdb says `continue` —
then adds and enables the probes and runs the workload, printing what the
guest answers as `[bench]` lines. Breakpoints in the fire path
(arches.Arch.fire_path) stop the guest inside a probe's trap; the driver's
command simply waits, without a deadline that matters, until gdb lets the
guest go on.

When gdb exits, the guest is stopped: `exit 0` if the driver finished and
the guest still answers, else QEMU is killed. gdb should `detach` (the
guest runs on) rather than quit, which kills QEMU through the stub.
Interactive gdb owns the terminal; Ctrl-C goes to gdb (it interrupts the
guest), the harness ignores it while gdb runs.

With --batch the same runs unattended: gdb -batch -x SCRIPT, its output
captured (tests/test_debug.py drives both arches this way).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .. import arches
from ..errors import BenchError
from ..guest import build
from ..guest.qemu import Guest
from ..trace import sites
from ..trace.session import open_session

GDB = "gdb-multiarch"
EXTENSION = Path(__file__).resolve().parent / "gdbext.py"
# Long enough for a person at a breakpoint; QEMU is still always reaped.
PATIENCE = 6 * 3600.0


class DebugError(BenchError):
    pass


def gdb_argv(arch: arches.Arch, elf: Path, socket: Path, batch: Path | None = None,
             extra: tuple[str, ...] = ()) -> list[str]:
    exe = shutil.which(GDB)
    if not exe:
        raise DebugError(f"{GDB} is not installed (make deps installs it)")
    argv = [exe, "-q"]
    if batch:
        argv += ["-nx", "-batch"]
    for c in (*arch.gdb_setup, "set pagination off", "set confirm off"):
        argv += ["-ex", c]
    argv += ["-ex", f"file {elf}", "-ex", f"source {EXTENSION}",
             "-ex", f"target remote {socket}"]
    for c in extra:
        argv += ["-ex", c]
    if batch:
        argv += ["-x", str(batch)]
    return argv


@dataclass
class Outcome:
    """What the driver thread got from the guest."""
    lines: list[str] = field(default_factory=list)
    probes: list[sites.Probe] = field(default_factory=list)
    reply: object = None
    error: BaseException | None = None
    done: bool = False


class Debugger:
    """A paused guest with its driver thread; gdb is started by the caller
    (interactive) or by run_batch()."""

    def __init__(self, arch: str | arches.Arch, *, smp: int = 1,
                 workload: str | None = None, probes: str | None = None,
                 mechanism: str | None = None, run: str | None = None, echo=None,
                 channel: str | None = None):
        self.arch = arch if isinstance(arch, arches.Arch) else arches.get(arch)
        self.mechanism = self.arch.check_mechanism(mechanism or
                                                   self.arch.default_mechanism)
        if probes:
            sites.parse_spec(probes)          # bad syntax: refused before booting
        if workload:
            self.image = build.user_image(self.arch, workload)
            self.elf = self.image.parent / self.arch.symbols
        else:
            build.ensure_image(self.arch)
            self.image, self.elf = self.arch.image(), self.arch.elf()
        self.probes, self.run_line, self.smp = probes, run, smp
        self.channel = channel
        self.echo = echo or (lambda line: print(line, flush=True))
        self.outcome = Outcome()
        self.guest: Guest | None = None
        self._driver: threading.Thread | None = None

    def _say(self, line: str) -> None:
        self.outcome.lines.append(line)
        self.echo(f"[bench] {line}")

    def __enter__(self) -> "Debugger":
        self.guest = Guest(self.arch, label="debug", smp=self.smp,
                           image=self.image, elf=self.elf, gdbstub=True, paused=True,
                           channel=self.channel,
                           boot_timeout=PATIENCE, command_timeout=PATIENCE)
        self.guest.__enter__()
        self.socket = self.guest.wait_gdb_socket()
        self._driver = threading.Thread(target=self._drive, daemon=True)
        self._driver.start()
        return self

    def _drive(self) -> None:
        g = self.guest
        try:
            g.wait_ready()
            self._say(f"guest up: {g.hello['arch_name']}, {g.hello['ncpus']} CPU(s)")
            if self.probes:
                s = open_session(g)
                s.setup(self.probes, self.mechanism, strict=False)
                s.enable(True)
                for n in s.notes:
                    self._say(f"note: {n}")
                self.outcome.probes = s.probes
                self._say(f"{len(s.probes)} probes enabled (mechanism "
                          f"{self.mechanism}): " +
                          ", ".join(f"{p.id}={p.function}:{p.kind}" for p in s.probes[:8])
                          + (" ..." if len(s.probes) > 8 else ""))
            if self.run_line:
                self._say(f"run {self.run_line}")
                r = g.command(f"run {self.run_line}")
                self.outcome.reply = r
                self._say(f"{r.status_name}: {r.message}")
            self._say("the guest is idle in its command loop")
        except BaseException as e:          # noqa: BLE001 — reported, not lost
            self.outcome.error = e
            if g.alive:
                self._say(f"driver stopped: {e}")
        finally:
            self.outcome.done = True

    def wait_driver(self, timeout: float) -> bool:
        self._driver.join(timeout)
        return not self._driver.is_alive()

    def __exit__(self, *exc) -> None:
        g = self.guest
        try:
            if self.wait_driver(30) and g.alive and not self.outcome.error:
                g.exit(0)
        except BenchError as e:
            self._say(f"the guest did not exit cleanly: {e}")
        finally:
            g.close()

    def run_batch(self, script: Path, timeout: float = 600) -> subprocess.CompletedProcess:
        argv = gdb_argv(self.arch, self.elf, self.socket, batch=script)
        try:
            return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise DebugError(f"gdb did not finish {script} within {timeout} s; "
                             f"its output:\n{e.stdout}") from None


def cmd_debug(args) -> int:
    arch = arches.get(args.arch)
    run_line = args.run
    if args.workload and not run_line:
        run_line = build.workload_name(args.workload)
    with Debugger(arch, smp=args.smp, workload=args.workload, probes=args.probes,
                  mechanism=args.mechanism, run=run_line or "fib n=8",
                  channel=args.channel) as d:
        print(f"[bench] {arch.name} guest paused at reset under QEMU's GDB stub "
              f"({d.socket}); log {d.guest.log_path}", flush=True)
        if args.batch:
            res = d.run_batch(Path(args.batch))
            sys.stdout.write(res.stdout)
            rc = res.returncode
        else:
            print("[bench] `continue` boots it; the harness then arms the probes "
                  f"and runs the workload. Try: break {arch.fire_path} / continue / "
                  "tb frame / tb probes / tb buffer / detach", flush=True)
            argv = gdb_argv(arch, d.elf, d.socket)
            old = signal.signal(signal.SIGINT, lambda *a: None)  # gdb's Ctrl-C
            try:
                rc = subprocess.call(argv)
            finally:
                signal.signal(signal.SIGINT, old)
        d.wait_driver(10)
    err = d.outcome.error
    if err and not isinstance(err, BenchError):
        raise err
    return rc
