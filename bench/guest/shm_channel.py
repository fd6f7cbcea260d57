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
record into sub-buffers, and a thread of ours is the consumer
(bench/wire/shm.py): it polls every ring, copies out each complete
sub-buffer and hands its records on as EVENTS frames, so the trace is read
as it is from the other channels. Nothing runs in the guest for it. Every
REPLY is followed by one more poll (drain()), so a reply never overtakes
its records: a `trace flush` has committed every ring before it replies.
The frames it delivered are written to the guest's log (NAME.shm: each
EVENTS payload after its length, 4 bytes little-endian) by a thread of
their own, LOG_BATCH frames at a time, and the rest when the channel
closes: a file write per sub-buffer would cost the consumer as much as its
copy, and keeping them all to the end held a 10^8-record run's whole
trace in memory. bench/export/logs.py reads them back.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import mmap
import os
import queue
import re
import secrets
import struct
import threading
import time

from ..wire import shm as wire_shm
from . import gc_hold

# Between polls that found nothing: from POLL_IDLE_S, doubling up to
# POLL_IDLE_MAX_S while the rings stay empty, so an idle guest costs the
# host (and QEMU's vCPUs beside it on the same cores) little; a 256 KiB
# ring takes tens of milliseconds to fill at the fastest firing rates.
POLL_IDLE_S = 0.0005
POLL_IDLE_MAX_S = 0.004
_names = itertools.count()
# Frames (sub-buffers, 32 KiB each at 256 KiB a ring) handed to the log's
# writer at a time: few writes, and a few tens of MB held at most.
LOG_BATCH = 1024
# The consumer thread asks the host's scheduler for SCHED_RR at this
# priority (the lowest real-time one: it sleeps between polls, and a poll
# is short), else a nice of CONSUMER_NICE: what loses records at 256 KiB
# is how late a loaded host wakes it (docs/channel.md, Limits). Refused
# (no privilege, a container), it runs as it was and stats() says so.
# TRAPBENCH_SHM_PRIORITY=0 leaves it as it was (to measure the difference).
# make bench leaves it too (raise_priority(False)): a consumer that takes a
# core whenever it wakes takes it from the vCPU on a busy host, and what the
# bench times is guest time (calltree under i386's opt over the
# -finstrument-functions hooks: 0.93-0.97 as it was, 1.08-2.87 raised,
# docs/bench.md).
CONSUMER_RT_PRIORITY = 1
CONSUMER_NICE = -10
_raise = os.environ.get("TRAPBENCH_SHM_PRIORITY", "1") != "0"


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
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._paused = threading.Event()
        self._deliver = None
        self.how = ""           # where the RAM was mapped from, once it is
        self.log_path = log_path
        self.delivered: list = []   # frames not yet handed to the log's writer
        self.seq = 0                # frames delivered so far (their seqs)
        self._log_queue: queue.Queue | None = None
        self._log_thread: threading.Thread | None = None
        # What the consumer thread saw (stats()): polls, and of those that
        # found sub-buffers waiting, the longest time since the one before
        # and the longest it had slept past its wake-up (the host's
        # scheduler, or another thread holding the GIL).
        self.polls = 0
        self.longest_gap = 0.0
        self.oversleep = 0.0
        self.longest_poll = 0.0     # inside drain(): copies, checks, arenas
        self.priority = "not raised"    # what the consumer thread got (_raise_priority)
        self._gc_held = False

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

    def start(self, deliver, paused: threading.Event) -> None:
        """Read the rings from now on: deliver(frames) gets each poll's
        EVENTS frames; paused (set) stops the polling thread."""
        self._deliver, self._paused = deliver, paused
        # No full collection of the harness's heap while the rings are
        # read (gc_hold.py: one took 294 ms; a ring fills in 35).
        gc_hold.hold()
        self._gc_held = True
        if self.log_path:
            self._start_log()
        self._thread = threading.Thread(target=self._run, name="shm-consumer",
                                        daemon=True)
        self._thread.start()

    def drain(self, force: bool = False) -> int:
        """Read every complete sub-buffer now (unless paused, or forced);
        how many there were. Raises the ShmError a poll met, here or in
        the thread."""
        if self.error:
            raise self.error
        if not self._deliver or (self._paused.is_set() and not force):
            return 0
        with self._lock:
            try:
                subs = self.reader.poll()
            except wire_shm.ShmError as e:
                self.error = e
                raise
            if subs:
                out = wire_shm.events_frames(subs, self._order, self._word, self.seq)
                self.seq += len(out)
                if self.log_path:
                    self.delivered += out
                    if len(self.delivered) >= LOG_BATCH:
                        self._to_log(self.delivered)
                        self.delivered = []
                self._deliver(out)
        return len(subs)

    def _start_log(self) -> None:
        """The log's writer thread, started by the thread that opens the
        channel (start()): one started by the consumer would inherit its
        SCHED_RR, which is for the consumer's wake-ups alone, and a writer
        at real-time priority takes the core from the vCPU on every write."""
        self._log_queue = queue.Queue()
        self._log_thread = threading.Thread(target=wire_shm.write_log_batches,
                                            args=(self.log_path, self._log_queue),
                                            name="shm-log", daemon=True)
        self._log_thread.start()

    def _to_log(self, batch: list) -> None:
        """Hand frames to the log's writer thread (start() started it; a
        channel driven by drain() alone, as in the tests, starts it here)."""
        if self._log_thread is None:
            self._start_log()
        self._log_queue.put(batch)

    def drain_all(self) -> int:
        """Read until every ring is empty, paused or not; the record bytes
        read (the bench's raw rate of this channel)."""
        before = self.reader.bytes
        while self.drain(force=True):
            pass
        return self.reader.bytes - before

    def stats(self) -> str:
        """The consumer's account of itself, for the run's report."""
        r = self.reader
        if r is None:
            return "shm consumer: not started"
        return (f"shm consumer: {self.polls} polls, {r.subbuffers} sub-buffers, "
                f"{r.bytes} bytes; longest gap between polls "
                f"{self.longest_gap * 1e3:.1f} ms (overslept up to "
                f"{self.oversleep * 1e3:.1f} ms, longest poll "
                f"{self.longest_poll * 1e3:.1f} ms); fullest ring {r.fullest} of "
                f"{r.fullest_of} sub-buffers waiting; priority {self.priority}; "
                f"gc while read: {gc_hold.summary()}")

    def _raise_priority(self) -> None:
        """This (the consumer) thread first in the host's run queue: SCHED_RR,
        else a negative nice, else as it was; self.priority says which."""
        if not _raise:
            self.priority = "not raised (TRAPBENCH_SHM_PRIORITY=0, or make bench)"
            return
        tid = threading.get_native_id()
        try:
            os.sched_setscheduler(tid, os.SCHED_RR,
                                  os.sched_param(CONSUMER_RT_PRIORITY))
            self.priority = f"SCHED_RR {CONSUMER_RT_PRIORITY}"
            return
        except (OSError, AttributeError) as e:
            why = f"SCHED_RR refused ({e})"
        try:
            os.setpriority(os.PRIO_PROCESS, tid, CONSUMER_NICE)
            self.priority = f"nice {CONSUMER_NICE} ({why})"
        except OSError as e:
            self.priority = f"not raised ({why}; nice {CONSUMER_NICE} refused: {e})"

    def _run(self) -> None:
        self._raise_priority()
        idle = POLL_IDLE_S
        last, late = None, 0.0
        while not self._stop.is_set():
            if self._paused.is_set():
                time.sleep(0.01)
                last = None
                continue
            now = time.monotonic()
            self.polls += 1
            try:
                n = self.drain()
            except wire_shm.ShmError:
                return          # kept in self.error; the next REPLY raises it
            except (ValueError, OSError):
                return          # the RAM was closed under us
            if n:
                # Only polls that found records: an idle poll while the
                # main thread decodes waits on the GIL, harmlessly.
                self.longest_poll = max(self.longest_poll, time.monotonic() - now)
                if last is not None:
                    self.longest_gap = max(self.longest_gap, now - last)
                    self.oversleep = max(self.oversleep, late)
                idle, late = POLL_IDLE_S, 0.0
            else:
                t = time.monotonic()
                time.sleep(idle)
                late = time.monotonic() - t - idle
                idle = min(2 * idle, POLL_IDLE_MAX_S)
            last = now

    def close(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        with self._lock:
            if self._ram is not None:
                self._ram.close()
                self._ram = None
            if self._log_thread is not None:
                self._log_queue.put(self.delivered)
                self._log_queue.put(None)
                self._log_thread.join()
                self._log_thread = None
            elif self.log_path and self.delivered:
                wire_shm.write_log(self.log_path, self.delivered)
            self.delivered = []
        if self._gc_held:
            self._gc_held = False
            gc_hold.release()
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass
