"""A guest under QEMU, driven over its serial line: the guest's lifecycle.

    with Guest("i386") as g:            # launches QEMU, waits for HELLO
        r = g.command("selftest")       # a Reply (bench/guest/conversation.py)

QEMU (its command line: bench/guest/qemu_args.py) runs under TCG with COM1
on pipes. Reader threads deframe it, and the virtio trace stream (its own
seq) where there is one, into the queue the conversation reads (a mixin);
under the shm channel the trace is read out of QEMU's RAM instead
(bench/guest/shm_channel.py),
keeping every byte in build/logs/<name>.serial and a transcript in .log.
gdbstub=True serves QEMU's GDB stub on a private unix socket (paused=True:
entering returns before HELLO). The context manager always reaps QEMU.
bench/guest/libvirt.py's LibvirtGuest is the same guest as a libvirt domain;
it replaces how QEMU starts (_launch_process), how serial bytes move
(_read_serial_chunk, _write_serial) and how its end is observed and forced
(wait_exit, kill, _reap, close, alive). open_guest() picks one.
"""

from __future__ import annotations

import itertools
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from .. import arches
from ..errors import LaunchError, UsageError
from ..paths import LOG_DIR
from ..wire import frames as wire
from .conversation import _EOF, Conversation, ExitInfo, _OnChannel
from . import cputime
from .qemu_args import gdbstub_args, machine_args, virtio_channel_args
from .shm_channel import ShmChannel

_serial = itertools.count()
CHANNELS = tuple(wire.CHANNEL_IDS)
# Under shm the guest never waits for the host: a consumer the
# host's scheduler leaves asleep while QEMU's vCPUs run is records lost.
# Three boots at once on a loaded 2-core host (i386, 4 CPUs, a million
# records at 256 KiB per CPU, load 5-18): with QEMU at nice 0, 3 runs of
# 12 lost records (53,686, 20,917 and 520; 8 of 8 sub-buffers waiting), a
# consumer that found records had slept up to 50 ms past its wake-up; at
# nice 5, 0 of 9 lost, up to 26 ms late, at most 5 of 8 waiting. Only our
# own QEMU is lowered, and only under shm. Against other users' load it
# does nothing (docs/channel.md's Limits: nice 10 lost more, not less).
SHM_QEMU_NICE = 5


class Guest(Conversation):
    # The rings read out of QEMU's RAM: no drain in the guest. A guest that
    # announces no ring table falls back to what HELLO says (_start_shm);
    # libvirt.py's domains, whose RAM is not ours to map, keep the arch's
    # default_channel (the virtio port).
    DEFAULT_CHANNEL = "shm"

    def __init__(self, arch: str | arches.Arch, *, label: str = "guest",
                 smp: int = 1, memory_mb: int = 128, extra_args=(),
                 boot_timeout: float = 15.0, command_timeout: float = 60.0,
                 on_text=None, image: Path | None = None, elf: Path | None = None,
                 gdbstub: bool = False, paused: bool = False,
                 channel: str | None = None):
        self.arch = arch if isinstance(arch, arches.Arch) else arches.get(arch)
        if not 1 <= smp <= self.arch.max_smp:
            raise UsageError(f"{self.arch.name} runs 1 to {self.arch.max_smp} CPUs "
                             f"(asked for {smp})")
        self.smp, self.memory_mb, self.extra_args = smp, memory_mb, tuple(extra_args)
        self.image = Path(image) if image else self.arch.image()
        self.elf = Path(elf) if elf else (self.image if image else self.arch.elf())
        self.boot_timeout = boot_timeout
        self.command_timeout = command_timeout
        self.on_text = on_text
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.name = f"{stamp}-{os.getpid()}-{next(_serial)}-{self.arch.name}-{label}"
        self.args = machine_args(self.arch, self.image, smp, memory_mb, extra_args)
        # The trace channel: the rings read out of QEMU's RAM (shm), or a
        # virtio-serial port on a socket QEMU listens on (the arch's
        # default); under shm the port is there too where the arch's guest
        # drives it (the raw channel's filler, and `channel virtio` in the
        # same boot).
        self.channel = channel or self.DEFAULT_CHANNEL or self.arch.default_channel
        if self.channel not in CHANNELS:
            raise UsageError(f"channel {self.channel!r}: one of {', '.join(CHANNELS)}")
        self.channel_socket: Path | None = None
        self._shm: ShmChannel | None = None
        if self.channel == "virtio" or (self.channel == "shm" and
                                        self.arch.default_channel == "virtio"):
            self._plan_channel()
        if self.channel == "shm":
            self._plan_shm()
        # QEMU's GDB stub on a private unix socket (bench/debug/rsp.py, gdb): asked
        # for, it is added; paused, the CPUs wait at reset for a debugger's
        # `continue`, and entering the context does not wait for HELLO.
        if paused and not gdbstub:
            raise UsageError("a paused guest needs gdbstub=True (nothing could start it)")
        self.paused = paused
        self.gdb_socket: Path | None = None
        if gdbstub:
            self._gdb_dir = tempfile.mkdtemp(prefix="trapbench-gdb-")
            self.gdb_socket = Path(self._gdb_dir) / "stub"
            self.args += gdbstub_args(self.gdb_socket, paused)
        self.proc: subprocess.Popen | None = None
        self.hello: dict | None = None
        self.byte_order = "<"
        self.text: list[str] = []
        self.link_errors: list[wire.LinkError] = []
        # EVENTS, STATS and EXPECT frames, in arrival order (capture()).
        self.trace_frames: list[wire.Frame] = []
        self.exit_info: ExitInfo | None = None
        self.boot_seconds: float | None = None
        self._events: queue.Queue = queue.Queue()
        self._tail: deque[str] = deque(maxlen=40)
        self._stderr = bytearray()
        self._commands_sent = 0
        self._exit_status: int | None = None
        self._eof = False
        self._symbols = None
        self._threads: list[threading.Thread] = []
        self._log = None
        self._raw = None
        self._chan_sock = None
        self._chan_reading = False      # a thread reads the virtio stream (any backend)
        self._chan_raw = None
        self._chan_next = 0             # next seq expected on the virtio stream
        self._chan_eof = False
        self._chan_paused = threading.Event()
        self.channel_used: str | None = None    # what HELLO said
        self.channel_absent = ""                # the guest's reason, if not virtio
        # Fault injection (tests): a function of each chunk read from the
        # virtio stream, applied before it is logged and deframed.
        self.channel_tamper = None

    def _plan_channel(self) -> None:
        """The virtio trace port, this backend's way: a unix socket QEMU
        listens on, in a directory of its own."""
        self._chan_dir = tempfile.mkdtemp(prefix="tbch-")
        self.channel_socket = Path(self._chan_dir) / "trace"
        self.args += self._channel_args(self.channel_socket)

    def _plan_shm(self) -> None:
        """QEMU's RAM in a file this process maps too (shm_channel.py)."""
        self._shm = ShmChannel(self.memory_mb, self.arch.ram_backend,
                               log_path=LOG_DIR / f"{self.name}.shm")
        self.args += self._shm.qemu_args()

    def _start_shm(self) -> None:
        """After HELLO: the rings as sub-buffers, and our consumer on them;
        without a table, or refused, the trace stays where HELLO said."""
        table = self.hello.get("shm_table", 0)
        if not table:
            self.channel_absent = "the guest announced no ring table"
        else:
            self.channel_absent = self._shm.map(self._qemu_pid(), table, self.byte_order,
                                                self.hello["word_bytes"])
        reply = None if self.channel_absent else self.command("channel shm")
        if reply and not reply.ok:
            self.channel_absent = reply.message
        if self.channel_absent:
            self._note(f"# no shm channel: {self.channel_absent}")
            return
        self._note(f"# shm: guest RAM mapped from {self._shm.how}")
        self._shm.start(self.trace_frames.extend)
        if self._chan_paused.is_set():
            self._shm.pause(True)
        self.channel_used = "shm"

    def _qemu_pid(self) -> int:
        return self.proc.pid

    def vcpu_ns(self) -> int | None:
        """Nanoseconds QEMU's vCPU threads have run so far (summed over
        them); None where QEMU does not name them (cputime.py) or runs
        on another host (a remote libvirt domain)."""
        try:
            return cputime.vcpu_ns(self._qemu_pid()) if self.alive else None
        except LaunchError:
            return None

    def freeze(self, frozen: bool = True) -> bool:
        """Stop QEMU's process (SIGSTOP), or let it go on (SIGCONT): a
        guest kept off the host's CPUs while another guest is measured
        (bench/suite/perf/paired.py). An idle guest whose idle loop does
        not halt (sun4u's) spins at about 60% of a core; one that halts
        still wakes for its ticks. Its guest clock runs on while it is
        stopped: time it only while it goes. False (nothing done) where
        QEMU runs on another host."""
        try:
            pid = self._qemu_pid()
        except LaunchError:
            return False
        os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)
        return True

    def shm_drain_all(self) -> tuple[int, float]:
        """Under shm, read every ring empty now, even with the reading
        paused; the record bytes read and the consumer's seconds copying
        them out of the RAM."""
        if not self._shm or self.channel_used != "shm":
            raise UsageError("this guest's trace does not come over shm")
        return self._shm.drain_all()

    def shm_stats(self) -> str:
        """The shm consumer's polls, gaps and fullest ring (one line)."""
        return self._shm.stats() if self._shm else "shm consumer: none"

    def _channel_args(self, sock: Path) -> list[str]:
        return virtio_channel_args(self.arch, sock)

    # ---- paths and context ----

    @property
    def cmdline(self) -> str:
        return shlex.join(self._nice_prefix() + self.args)

    def _nice_prefix(self) -> list[str]:
        """Under shm, QEMU runs SHM_QEMU_NICE below us: our consumer
        thread must win its wake-ups against the guest's own vCPUs."""
        return ["nice", "-n", str(SHM_QEMU_NICE)] if self._shm and SHM_QEMU_NICE else []

    @property
    def log_path(self) -> Path:
        return LOG_DIR / f"{self.name}.log"

    @property
    def serial_path(self) -> Path:
        return LOG_DIR / f"{self.name}.serial"

    @property
    def channel_path(self) -> Path:
        """The raw bytes of the virtio stream."""
        return LOG_DIR / f"{self.name}.virtio"

    def _context(self) -> dict:
        return {"cmdline": self.cmdline, "log": str(self.log_path),
                "tail": "\n".join(self._tail)}

    def __enter__(self) -> "Guest":
        try:
            self.launch()
            if not self.paused:
                self.wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- lifecycle ----

    def launch(self) -> None:
        if not self.image.exists():
            raise LaunchError(f"{self.arch.name}: no guest image at {self.image} "
                              "(build it with `make image ARCH=...`)",
                              cmdline=self.cmdline)
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w", encoding="utf-8", errors="replace")
        self._raw = open(self.serial_path, "wb")
        self._t0 = time.perf_counter()
        # What a later `bench export` needs to read this run back
        # (bench/export/logs.py): the ELF behind the addresses.
        self._note(f"# elf: {self.elf}")
        self._launch_process()
        if (self.channel == "virtio" or self.channel_socket) and self._open_channel():
            self._chan_raw = open(self.channel_path, "wb")
            t = threading.Thread(target=self._read_channel, daemon=True)
            t.start()
            self._threads.append(t)
            self._chan_reading = True

    def _open_channel(self) -> bool:
        """Connect to the socket QEMU listens on for the trace port; False
        if QEMU is gone (wait_ready then says how it ended)."""
        deadline = time.monotonic() + self.boot_timeout
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(self.channel_socket))
                self._chan_sock = s
                return True
            except OSError as e:
                s.close()
                if not self.alive:
                    return False
                if time.monotonic() > deadline:
                    raise LaunchError(f"cannot connect to the trace channel's "
                                      f"socket {self.channel_socket}: {e}"
                                      + self._stderr_note(),
                                      **self._context()) from None
                time.sleep(0.01)

    def _launch_process(self) -> None:
        """Start QEMU and the threads that read it (the backend's part)."""
        self._note(f"# qemu: {self.cmdline}")
        try:
            self.proc = subprocess.Popen(
                self._nice_prefix() + self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            raise LaunchError(f"cannot start {self.arch.qemu}: {e}",
                              **self._context()) from None
        for target in (self._read_stdout, self._read_stderr):
            t = threading.Thread(target=target, daemon=True)
            t.start()
            self._threads.append(t)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._note("# harness killed QEMU")

    def close(self) -> None:
        """Reap QEMU (killing it if still running) and close the logs."""
        self._chan_paused.clear()
        if self.proc:
            self.kill()
            self._reap(10)
            for t in self._threads:
                t.join(timeout=5)
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                try:
                    stream.close()
                except (OSError, ValueError):
                    pass
            if self._stderr:
                self._note("# qemu stderr:\n" +
                           self._stderr.decode("utf-8", "replace").rstrip())
            self._note(f"# qemu rc {self.proc.returncode}")
        if self._chan_sock:
            try:
                self._chan_sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._chan_sock.close()
        for f in (self._log, self._raw, self._chan_raw):
            if f:
                f.close()
        self._log = self._raw = self._chan_raw = None
        if self.gdb_socket:
            shutil.rmtree(self._gdb_dir, ignore_errors=True)
        if self.channel_socket:
            shutil.rmtree(self._chan_dir, ignore_errors=True)
        if self._shm:
            self._shm.close()

    def wait_gdb_socket(self, timeout: float = 10) -> Path:
        """The stub's socket path, once QEMU listens on it."""
        if not self.gdb_socket:
            raise UsageError("this guest was started without gdbstub=True")
        deadline = time.monotonic() + timeout
        while not self.gdb_socket.exists():
            if not self.alive or time.monotonic() > deadline:
                raise LaunchError(f"QEMU did not open its GDB stub at {self.gdb_socket}"
                                  + self._stderr_note(), **self._context())
            time.sleep(0.01)
        return self.gdb_socket

    @property
    def alive(self) -> bool:
        return bool(self.proc) and self.proc.poll() is None

    # ---- internals ----

    def _write_serial(self, data: bytes) -> None:
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass   # QEMU is gone; the wait that follows says how

    def _note(self, line: str) -> None:
        self._tail.append(line)
        if self._log:
            self._log.write(line + "\n")
            self._log.flush()

    def _read_serial_chunk(self) -> bytes:
        """The next bytes from the guest's serial line; b"" at its end."""
        try:
            return os.read(self.proc.stdout.fileno(), 65536)
        except OSError:
            return b""

    def _read_stdout(self) -> None:
        deframer = wire.Deframer()
        while True:
            chunk = self._read_serial_chunk()
            if not chunk:
                break
            if self._raw:
                self._raw.write(chunk)
                self._raw.flush()
            for item in deframer.feed(chunk):
                self._events.put(item)
        for item in deframer.finish():
            self._events.put(item)
        self._events.put(_EOF)

    def _read_channel_chunk(self, buf: bytearray) -> bytes:
        """The next bytes of the virtio stream (buf is scratch space for
        them); b"" at its end."""
        try:
            n = self._chan_sock.recv_into(buf)
        except OSError:
            n = 0
        return bytes(buf[:n])

    def _read_channel(self) -> None:
        """The virtio stream: its own deframer and seq, into the queue."""
        # The harness is connected before the guest's first frame there,
        # so the stream starts at seq 0: a lost first frame is a gap too.
        deframer = wire.Deframer(stream="virtio", next_seq=0)
        buf = bytearray(1 << 20)
        while True:
            while self._chan_paused.is_set():
                time.sleep(0.01)
            chunk = self._read_channel_chunk(buf)
            if not chunk:
                break
            if self.channel_tamper:
                chunk = self.channel_tamper(chunk)
            if self._chan_raw:
                self._chan_raw.write(chunk)
            for item in deframer.feed(chunk):
                self._events.put(_OnChannel(item))
        for item in deframer.finish():
            self._events.put(_OnChannel(item))
        self._events.put(_OnChannel(_EOF))

    def _read_stderr(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):
            self._stderr += chunk

    def _reap(self, timeout: float):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.proc.wait(timeout=10)

    def _stderr_note(self) -> str:
        if self.proc and self.proc.poll() is not None:
            for t in self._threads:
                t.join(timeout=2)
        err = self._stderr.decode("utf-8", "replace").strip()
        return f"; QEMU said: {err[-500:]}" if err else ""
