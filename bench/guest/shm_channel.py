"""The shm trace channel: reading the RAM of a QEMU on this host.

Where the machine takes a RAM backend (arches.py's ram_backend: pc), QEMU
gets its RAM from a file under /dev/shm it maps shared (`-object
memory-backend-file,...,share=on -machine memory-backend=`) and this
process maps the same file (FileRam): physical address = file offset
below 4 GiB. QEMU 7.2's sun4u ignores that option, so there the RAM is
read and written in QEMU's own address space through /proc/PID/mem
(ProcessRam, our child), at the host address where the table's magic sits
at its physical offset (RAM at physical 0, in one 2 MiB-aligned
anonymous mapping). A libvirt domain on this host (bench/guest/libvirt.py)
is no child of ours: on pc its RAM is a shared memfd (<memoryBacking>),
mapped through /proc/PID/fd; on sun4u, /proc/PID/mem again. After HELLO
announces the ring table (include/shm.h), `channel shm` makes the guest
record into sub-buffers, and the consumer, a process of its own forked
once the RAM is mapped (shm_consumer.py), polls every ring and appends
each complete sub-buffer, as an EVENTS frame, to the stream file (the
run's log, NAME.shm, else a file of its own that goes at close). A
thread here follows that file and hands the frames on, so the trace is
read as it is from the other channels; nothing runs in the guest for it.
Every REPLY is followed by one more poll (drain()), read up to where the
consumer says it ended, so a reply never overtakes its records: a `trace
flush` has committed every ring before it replies. pause() stops the
consumer with SIGSTOP (a host that stops reading); bench/export/logs.py
reads the log back.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import json
import mmap
import os
import re
import secrets
import signal
import socket
import struct
import tempfile
import threading
import time
import traceback

from ..wire import frames
from ..wire import shm as wire_shm
from . import shm_consumer

_names = itertools.count()
# The consumer asks the host's scheduler for SCHED_RR (shm_consumer.py);
# refused (no privilege, a container), it runs as it was and stats() says
# so. TRAPBENCH_SHM_PRIORITY=0 leaves it as it was (to measure the
# difference). make bench leaves it too (raise_priority(False)): a consumer
# that takes a core whenever it wakes takes it from the vCPU on a busy
# host, and what the bench times is guest time (calltree under i386's opt
# over the -finstrument-functions hooks: 0.93-0.97 as it was, 1.08-2.87
# raised, docs/bench.md).
_raise = os.environ.get("TRAPBENCH_SHM_PRIORITY", "1") != "0"
# False: the consumer runs as a thread of the harness's process, sharing its
# interpreter lock: the broken variant tests/test_shm_consumer.py catches.
_own_process = True
# How long the parent waits for the consumer's answer to a request.
ANSWER_TIMEOUT_S = 60
# What the follower reads of the stream at a time.
FOLLOW_BYTES = 8 << 20


def raise_priority(on: bool) -> None:
    """Whether consumers started from now on raise their priority."""
    global _raise
    _raise = on


_ALIGN = 2 << 20        # QEMU's RAM blocks start 2 MiB-aligned on x86-64 hosts


class FileRam(wire_shm.BufferRam):
    """QEMU's RAM file, mapped shared and populated at once: a page the
    reader touched first would otherwise cost it a fault on every first
    lap of a ring (a 64 KiB copy took 230 us instead of 6). Once both
    QEMU and we map it, its name goes (unlink): nothing is left in
    /dev/shm however either ends. A memfd (a libvirt domain's shared RAM)
    is opened through /proc/PID/fd and has no name to remove."""

    def __init__(self, path: str, size: int, unlink: bool = True):
        with open(path, "r+b") as f:
            super().__init__(mmap.mmap(f.fileno(), size, flags=mmap.MAP_SHARED
                                       | getattr(mmap, "MAP_POPULATE", 0)))
        if unlink:
            os.unlink(path)

    def close(self) -> None:
        self.buf.close()


def memfd_of(pid: int, size: int) -> str | None:
    """/proc/PID/fd/N of a memfd of exactly size bytes that QEMU (pid)
    holds: its RAM when libvirt backs it with a shared memfd."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for n in fds:
        path = f"/proc/{pid}/fd/{n}"
        try:
            if os.readlink(path).startswith("/memfd:") and os.stat(path).st_size == size:
                return path
        except OSError:
            continue
    return None


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _process_vm_readv():
    try:
        f = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).process_vm_readv
    except (OSError, AttributeError):
        return None
    f.restype = ctypes.c_ssize_t
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong,
                  ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    return f


_vm_readv = _process_vm_readv()


class ProcessRam:
    """QEMU's RAM in its own address space: /proc/PID/mem for the table
    and headers, process_vm_readv for the records (read_into)."""

    def __init__(self, pid: int, size: int, table_phys: int):
        self.size, self.pid = size, pid
        self.fd = os.open(f"/proc/{pid}/mem", os.O_RDWR)
        magics = {struct.pack(o + "I", wire_shm.TABLE_MAGIC) for o in "<>"}
        self.base = next((b for b in self._candidates(pid)
                          if self._peek(b + table_phys, 4) in magics), None)
        if self.base is None:
            os.close(self.fd)
            raise wire_shm.ShmError(f"no mapping of QEMU (pid {pid}) holds the "
                                    f"ring table at physical {table_phys:#x}")

    def _candidates(self, pid: int):
        """2 MiB-aligned starts of writable mappings with room for the RAM."""
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                m = re.match(r"([0-9a-f]+)-([0-9a-f]+) rw", line)
                if m:
                    lo, hi = int(m[1], 16), int(m[2], 16)
                    yield from range(-(-lo // _ALIGN) * _ALIGN, hi - self.size + 1, _ALIGN)

    def _peek(self, at: int, n: int) -> bytes:
        try:
            return os.pread(self.fd, n, at)
        except OSError:
            return b""

    def read(self, at: int, n: int) -> bytes:
        return os.pread(self.fd, n, self.base + at)

    def read_into(self, at: int, dst: memoryview) -> None:
        """A sub-buffer's records: process_vm_readv copies them once, from
        QEMU's pages into dst; /proc/PID/mem goes through a kernel page
        per 4 KiB (two copies), and is the fallback."""
        n = len(dst)
        got = -1
        if _vm_readv is not None:
            local = _Iovec(ctypes.addressof(ctypes.c_char.from_buffer(dst)), n)
            remote = _Iovec(self.base + at, n)
            got = _vm_readv(self.pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got != n:
            got = os.preadv(self.fd, [dst], self.base + at)
        if got != n:
            raise wire_shm.ShmError(f"{n} bytes at physical {at:#x}: QEMU's "
                                    f"memory gave {got}")

    def write(self, at: int, data: bytes) -> None:
        os.pwrite(self.fd, data, self.base + at)

    def keep_fds(self) -> tuple[int, ...]:
        """What the consumer process must keep open to read it."""
        return (self.fd,)

    def close(self) -> None:
        os.close(self.fd)


class ShmChannel:
    def __init__(self, memory_mb: int, ram_backend: bool, path: str | None = None,
                 log_path=None):
        self.size = memory_mb << 20
        # A name QEMU creates the file under (none is made before it runs);
        # path="": QEMU's RAM is someone else's to place (libvirt's), found
        # as a memfd or in QEMU's address space once it runs.
        self.path = path if path is not None else (
            f"/dev/shm/trapbench-ram-{os.getpid()}-{next(_names)}-"
            f"{secrets.token_hex(4)}" if ram_backend else "")
        self.reader: wire_shm.RingReader | None = None
        self.error: wire_shm.ShmError | None = None
        self._ram = None
        self.how = ""           # where the RAM was mapped from, once it is
        self.log_path = log_path
        self.pid = 0            # the consumer process, once started
        self.paused = False
        self._sock: socket.socket | None = None
        self._ask_lock = threading.Lock()
        self._stream = ""       # the file the consumer appends to
        self._stream_fd = -1    # ours, to read it
        self._stream_ours = False   # a file of its own (no log): goes at close
        self._follow_lock = threading.Lock()
        self._off = 0           # how far the stream has been handed on
        self.seq = 0            # frames handed on so far (their seqs)
        self._deliver = None
        self._stop = threading.Event()
        self._follower: threading.Thread | None = None
        self._last_stats: dict = {}

    def qemu_args(self) -> list[str]:
        if not self.path:
            return []
        return ["-object", f"memory-backend-file,id=tbram,size={self.size},"
                           f"mem-path={self.path},share=on",
                "-machine", "memory-backend=tbram"]

    def map(self, pid: int, table_phys: int, order: str, word_bytes: int) -> str:
        """Reach the RAM and find the table in it: "" or why not."""
        try:
            memfd = None if self.path else memfd_of(pid, self.size)
            self._ram = (FileRam(self.path, self.size) if self.path else
                         FileRam(memfd, self.size, unlink=False) if memfd else
                         ProcessRam(pid, self.size, table_phys))
            self.how = (f"the file {self.path}" if self.path else
                        f"QEMU's memfd {memfd}" if memfd else
                        f"QEMU's address space (/proc/{pid}/mem)")
            self.reader = wire_shm.RingReader(self._ram, table_phys, order, word_bytes)
        except (OSError, wire_shm.ShmError) as e:
            return str(e)
        self._order, self._word = order, word_bytes
        return ""

    def start(self, deliver) -> None:
        """Fork the consumer (shm_consumer.py) on the mapped RAM and follow
        its stream: deliver(frames) gets the EVENTS frames in order."""
        self._deliver = deliver
        if self.log_path:
            self._stream = str(self.log_path)
        else:
            fd, self._stream = tempfile.mkstemp(prefix="trapbench-shm-", suffix=".shm")
            os.close(fd)
            self._stream_ours = True
        out_fd = os.open(self._stream, os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                         | os.O_APPEND, 0o644)
        self._stream_fd = os.open(self._stream, os.O_RDONLY)
        ours, theirs = socket.socketpair()
        consumer = shm_consumer.Consumer(self.reader, self._order, self._word, out_fd)
        keep = {theirs.fileno(), out_fd, *getattr(self._ram, "keep_fds", tuple)()}
        if not _own_process:    # the broken variant: a thread of ours
            threading.Thread(target=shm_consumer.serve, name="shm-consumer",
                             args=(consumer, theirs.fileno(), _raise), daemon=True).start()
            self._sock, self.pid, self._held = ours, -1, (theirs, out_fd)
            self._sock.settimeout(ANSWER_TIMEOUT_S)
            self._start_follower()
            return
        pid = os.fork()
        if pid == 0:            # the consumer: nothing of the harness's runs here
            code = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                _close_all_but(keep)
                shm_consumer.serve(consumer, theirs.fileno(), _raise)
                code = 0
            except BaseException:   # said on stderr; the harness's next ask fails
                os.write(2, f"shm consumer {os.getpid()}: {traceback.format_exc()}".encode())
            finally:
                os._exit(code)
        self.pid = pid
        theirs.close()
        os.close(out_fd)
        self._sock = ours
        self._sock.settimeout(ANSWER_TIMEOUT_S)
        self._start_follower()

    def _start_follower(self) -> None:
        self._follower = threading.Thread(target=self._follow, name="shm-follow",
                                          daemon=True)
        self._follower.start()

    def _ask(self, request: str, resume: bool = False) -> dict:
        """A request to the consumer and its answer (shm_consumer.py);
        resume: the consumer is stopped, and is let go once the request
        waits for it."""
        with self._ask_lock:
            try:
                self._sock.sendall(request.encode() + b"\n")
                if resume:
                    self._resume()
                line = b""
                while not line.endswith(b"\n"):
                    got = self._sock.recv(65536)
                    if not got:
                        raise OSError("end of file")
                    line += got
            except socket.timeout:
                raise wire_shm.ShmError(
                    f"the shm consumer (pid {self.pid}) did not answer {request!r} "
                    f"in {ANSWER_TIMEOUT_S} s") from None
            except OSError as e:
                raise wire_shm.ShmError(
                    f"the shm consumer (pid {self.pid}) did not answer {request!r}: "
                    f"it ended ({e})") from None
        out = json.loads(line)
        if out.get("error") and not self.error:
            self.error = wire_shm.ShmError(out["error"])
        return out

    def drain(self) -> int:
        """One more poll of every ring (unless paused), its frames handed
        on before this returns; how many sub-buffers it read. Raises the
        ShmError the consumer met, now or before."""
        if self.error:
            raise self.error
        if not self.pid or self.paused:
            return 0
        out = self._ask("d")
        self._follow_to(out["end"])
        if self.error:
            raise self.error
        return out["n"]

    def drain_all(self) -> tuple[int, float]:
        """Read until every ring is empty, paused or not, and hand it all
        on; the record bytes read and the consumer's seconds copying them
        out of the RAM since it was last let go (the bench's raw rate of
        this channel). A stopped consumer is let go with the request
        waiting for it, and stopped again after."""
        if self.error:
            raise self.error
        was = self.paused
        try:
            out = self._ask("a", resume=was)
            self._follow_to(out["end"])
        finally:
            self.pause(was)
        if self.error:
            raise self.error
        return out["bytes"], out["seconds"]

    def pause(self, paused: bool = True) -> None:
        """Stop the consumer (SIGSTOP: a host that stops reading), or let
        it go on; told first, it reports no gap across the stop."""
        if not self.pid or paused == self.paused:
            return
        if self.pid < 0:
            raise wire_shm.ShmError("a consumer thread cannot be stopped")
        if paused:              # returns once it has stopped
            self._ask("r")
            os.kill(self.pid, signal.SIGSTOP)
            os.waitpid(self.pid, os.WUNTRACED)
            self.paused = True
        else:
            self._resume()

    def _resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        self.paused = False

    def _follow(self) -> None:
        """Hand on what the consumer appended, as it comes."""
        while not self._stop.wait(0.005):
            try:
                self._follow_to(0)
            except (OSError, ValueError):
                return          # closed under us

    def _follow_to(self, end: int) -> None:
        """Hand on every whole frame in the stream, at least up to end."""
        with self._follow_lock:
            while True:
                size = os.fstat(self._stream_fd).st_size
                if size - self._off < 4:
                    break
                buf = os.pread(self._stream_fd, min(size - self._off, FOLLOW_BYTES),
                               self._off)
                payloads, used = wire_shm.log_entries(buf)
                if not used:    # one frame longer than the read: all of it
                    n = 4 + struct.unpack_from("<I", buf)[0]
                    if size - self._off < n:
                        break
                    payloads, used = wire_shm.log_entries(
                        os.pread(self._stream_fd, n, self._off))
                self._off += used
                out = [frames.Frame(frames.T_EVENTS, self.seq + i, p, -1)
                       for i, p in enumerate(payloads)]
                self.seq += len(out)
                self._deliver(out)
            if self._off < end:
                raise wire_shm.ShmError(f"the shm stream {self._stream} ends at "
                                        f"{self._off} bytes, its consumer said {end}")

    def account(self) -> dict:
        """What the consumer says of itself (shm_consumer.Consumer.stats):
        asked now while it runs, else its last word ({} if none)."""
        if self.pid and not self.paused and self._sock is not None:
            try:
                self._last_stats = self._ask("s")
            except wire_shm.ShmError:
                pass
        return self._last_stats

    def stats(self) -> str:
        """The consumer's account of itself, for the run's report."""
        if not self.pid and not self._last_stats:
            return "shm consumer: not started"
        s = self.account()
        if not s:
            return "shm consumer: no account of itself"
        ms = {k: s[k] * 1e3 for k in ("longest_gap", "oversleep", "longest_poll",
                                      "longest_write")}
        return (f"shm consumer (pid {s['pid']}): {s['polls']} polls, "
                f"{s['subbuffers']} sub-buffers, {s['bytes']} bytes; longest gap "
                f"between polls {ms['longest_gap']:.1f} ms (overslept up to "
                f"{ms['oversleep']:.1f} ms, longest poll {ms['longest_poll']:.1f} ms, "
                f"longest write {ms['longest_write']:.1f} ms, at most "
                f"{s['most_queued'] / 1e6:.1f} MB waiting for it, "
                f"{s['mappings']} copy buffers); fullest ring "
                f"{s['fullest']} of {s['fullest_of']} sub-buffers waiting; "
                f"priority {s['priority']}")

    def close(self) -> None:
        """End the consumer (its account kept for stats()), hand on what it
        wrote, close the RAM; a stream with nothing in it is removed."""
        if self.pid:
            self.pause(False)
            try:
                self._last_stats = self._ask("q")
            except wire_shm.ShmError:
                if self.pid > 0:
                    os.kill(self.pid, signal.SIGKILL)
            if self.pid > 0:
                _reap(self.pid)
            else:
                os.close(self._held[1])
                self._held[0].close()
            self._sock.close()
            self._sock = None
            self._stop.set()
            self._follower.join(timeout=5)
            try:
                self._follow_to(0)
            except (OSError, wire_shm.ShmError):
                pass
            os.close(self._stream_fd)
            if self._stream_ours or self._off == 0:
                try:
                    os.unlink(self._stream)
                except OSError:
                    pass
            self.pid = 0
        if self._ram is not None:
            self._ram.close()
            self._ram = None
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def _close_all_but(keep: set[int]) -> None:
    """In the consumer: every descriptor but stdio and keep closed, so it
    holds none of the harness's pipes and sockets open (a gdb waiting for
    its stdin to end, a socket's peer waiting for it to close)."""
    lo = 3
    for fd in sorted(k for k in keep if k >= 3):
        os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, os.sysconf("SC_OPEN_MAX"))


def _reap(pid: int, timeout: float = 5) -> None:
    """Wait for the consumer to exit; kill it if it has not in time."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return
        time.sleep(0.005)
