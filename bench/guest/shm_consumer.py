"""The shm channel's consumer: a process of its own, reading the rings.

A consumer thread in the harness's process shares its interpreter lock
and its collector: in a 10^8-record i386 run it overslept 93 ms waiting
for the lock another harness thread held, and a full collection once
stopped it for 294 ms, while a 256 KiB ring fills in about 35 ms. So
the consumer is a child forked by ShmChannel.start() (shm_channel.py):
the collector off, at the priority the host grants it, doing nothing
but poll every ring (bench/wire/shm.py's RingReader, over the RAM its
parent mapped) and hand each sub-buffer's EVENTS frame to its writer
thread, which appends it to the stream file (the run's NAME.shm log:
each payload after its length, 4 bytes little-endian). The file is the
queue between the two processes: the page cache holds what the harness
has not read yet, so a harness that stalls delays its verdict and never
the consumer; and a write that blocks delays the writer, not the polls.

The parent drives it over a socket pair, a request a line, a JSON line
back for each:

    d    poll once now                   {"end", "n", "error"}
    a    poll until every ring is empty  {"end", "bytes", "seconds", "error"}
         (bytes and seconds: read since the last r, and its copying)
    r    a stop (SIGSTOP) follows: count anew, and take no gap across it  {}
    s    the consumer's account of itself (stats)
    q    the account, then exit

("seconds": the polls' checks and copies out of the RAM alone.) "end"
is the stream's length once the poll's frames are written: the parent
reads up to there before it answers for the poll (a REPLY never
overtakes its records). A protocol error (ShmError) stops the polling
and is in every answer after it; a RAM that went away (QEMU ended)
stops it silently. End of file on the socket (the harness is gone)
ends the child. Between polls that found nothing it waits on the
socket, from POLL_IDLE_S doubling up to POLL_IDLE_MAX_S.
"""

from __future__ import annotations

import gc
import json
import os
import select
import sys
import threading
import time

from ..wire import shm as wire_shm

# A 256 KiB ring takes tens of milliseconds to fill at the fastest firing
# rates; an idle guest costs the host (and its vCPUs) little.
POLL_IDLE_S = 0.0005
POLL_IDLE_MAX_S = 0.004
# SCHED_RR at the lowest real-time priority (it sleeps between polls, and a
# poll is short), else a nice of CONSUMER_NICE: what loses records at
# 256 KiB is how late a loaded host wakes it (docs/channel.md, Limits).
CONSUMER_RT_PRIORITY = 1
CONSUMER_NICE = -10
# True: the poller writes its frames itself, a write that blocks stopping
# the polls: the broken variant tests/test_shm_consumer.py catches.
_write_inline = False
# iovecs per writev (Linux's IOV_MAX is 1024: two per frame).
_IOV = 1024


def raise_priority(on: bool) -> str:
    """This process first in the host's run queue: SCHED_RR, else a
    negative nice, else as it was; what it got, for stats()."""
    if not on:
        return "not raised (TRAPBENCH_SHM_PRIORITY=0, or make bench)"
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(CONSUMER_RT_PRIORITY))
        return f"SCHED_RR {CONSUMER_RT_PRIORITY}"
    except (OSError, AttributeError) as e:
        why = f"SCHED_RR refused ({e})"
    try:
        os.setpriority(os.PRIO_PROCESS, 0, CONSUMER_NICE)
        return f"nice {CONSUMER_NICE} ({why})"
    except OSError as e:
        return f"not raised ({why}; nice {CONSUMER_NICE} refused: {e})"


class Consumer:
    """The child's state: the reader, the stream it appends to, and what
    it saw (polls; of those that found sub-buffers waiting, the longest
    time since the poll before and the longest it slept past its wake-up;
    the longest poll, the longest write)."""

    def __init__(self, reader: wire_shm.RingReader, order: str, word_bytes: int,
                 out_fd: int):
        self.reader, self.order, self.word = reader, order, word_bytes
        # Written frames give their memory back (Arena's recycle): no
        # fresh pages faulted in while the run goes.
        reader.arena = wire_shm.Arena(recycle=True)
        self.out_fd, self.seq = out_fd, 0
        # Frames polled and not yet written (the writer thread's), the
        # stream's end once they are, and its end now.
        self.written = threading.Condition()
        self.queued: list[list] = []
        self.queued_end = self.end = self.most_queued = 0
        self.error = ""
        self.gone = False           # the RAM cannot be read any more
        self.polls = 0
        self.longest_gap = self.oversleep = self.longest_poll = self.longest_write = 0.0
        self.priority = "not raised"
        self.last: float | None = None      # the poll before, for the gaps
        # Record bytes read since the last r, and the seconds the polls
        # that read them took to check and copy them out of the RAM (the
        # frames' hand-off to the writer not counted; a stopped consumer let
        # go may poll once before it reads its socket: its copy is counted
        # all the same); fresh:
        # the next poll that finds records counts no gap (the stop's).
        self.since_bytes, self.since_seconds = 0, 0.0
        self.fresh = False

    def poll(self, late: float = 0.0) -> int:
        """One poll of every ring, its frames appended; the sub-buffers read."""
        if self.error or self.gone:
            return 0
        now = time.monotonic()
        self.polls += 1
        try:
            subs = self.reader.poll()
        except wire_shm.ShmError as e:
            self.error = str(e)
            return 0
        except (ValueError, OSError):
            self.gone = True
            return 0
        if subs:
            copied = time.monotonic() - now
            self._append(wire_shm.events_frames(subs, self.order, self.word, self.seq))
            self.longest_poll = max(self.longest_poll, time.monotonic() - now)
            self.since_bytes += sum(len(sb.payload) - wire_shm.EVENTS_HEAD.size
                                    for sb in subs)
            self.since_seconds += copied
            if self.last is not None and not self.fresh:
                self.longest_gap = max(self.longest_gap, now - self.last)
                self.oversleep = max(self.oversleep, late)
            self.fresh = False
        self.last = now
        return len(subs)

    def _append(self, frames: list) -> None:
        """Hand the frames to the writer thread (write() writes them)."""
        # The log's buffers; the payloads, at iov[1::2], go back to the
        # arena once written.
        iov = wire_shm.log_iov(frames)
        self.seq += len(frames)
        with self.written:
            self.queued_end += sum(len(b) for b in iov)
            self.most_queued = max(self.most_queued, self.queued_end - self.end)
            if not _write_inline:
                self.queued.append(iov)
                self.written.notify_all()
        if _write_inline:
            self._write([iov])

    def write(self) -> None:
        """The writer thread: the queued frames appended to the stream, in
        order. Its writes can block (the page cache's writeback: 55.5 ms
        once in a 10^8-record run) while the rings go on filling, so the
        poller only queues."""
        while True:
            with self.written:
                self.written.wait_for(lambda: self.queued)
                batch, self.queued = self.queued, []
            self._write(batch)

    def _write(self, batch: list) -> None:
        t = time.monotonic()
        done = 0
        try:
            for iov in batch:
                for i in range(0, len(iov), _IOV):
                    part = iov[i:i + _IOV]
                    want = sum(len(b) for b in part)
                    got = os.writev(self.out_fd, part)
                    if got != want:     # a short write: the rest, whole
                        os.write(self.out_fd, b"".join(bytes(b) for b in part)[got:])
                    done += want
        except OSError as e:
            self.error = f"the stream file cannot take the records: {e}"
        self.longest_write = max(self.longest_write, time.monotonic() - t)
        for iov in batch:
            for payload in iov[1::2]:
                self.reader.arena.release(payload)
        with self.written:
            self.end += done
            self.written.notify_all()

    def flushed(self) -> int:
        """The stream's end once every frame queued so far is in it."""
        with self.written:
            self.written.wait_for(lambda: self.end == self.queued_end or self.error)
            return self.end

    def stats(self) -> dict:
        r = self.reader
        return {"polls": self.polls, "subbuffers": r.subbuffers, "bytes": r.bytes,
                "longest_gap": self.longest_gap, "oversleep": self.oversleep,
                "longest_poll": self.longest_poll, "longest_write": self.longest_write,
                "most_queued": self.most_queued, "mappings": self.reader.arena.made,
                "fullest": r.fullest, "fullest_of": r.fullest_of,
                "priority": self.priority, "pid": os.getpid()}

    def answer(self, request: str) -> dict | None:
        """The answer to one request; None for one that has none."""
        if request == "d":
            n = self.poll()
            return {"end": self.flushed(), "n": n, "error": self.error}
        if request == "a":
            while self.poll():
                pass
            return {"end": self.flushed(), "bytes": self.since_bytes,
                    "seconds": self.since_seconds, "error": self.error}
        if request == "r":
            self.fresh = True
            self.since_bytes, self.since_seconds = 0, 0.0
            return {}
        if request == "q":
            self.flushed()
        if request in ("s", "q"):
            return self.stats()
        return {"error": f"the consumer has no request {request!r}"}


def serve(consumer: Consumer, sock_fd: int, raise_prio: bool) -> None:
    """The child's life: poll, answer, until q or the parent is gone."""
    gc.disable()
    # The writer thread takes the interpreter's lock only between writes;
    # the poller waits for it at most this long.
    sys.setswitchinterval(0.0005)
    consumer.priority = raise_priority(raise_prio)
    threading.Thread(target=consumer.write, name="shm-write", daemon=True).start()
    idle, pending, wait_from = POLL_IDLE_S, b"", time.monotonic()
    wait = 0.0
    while True:
        polling = not (consumer.error or consumer.gone)
        ready, _, _ = select.select([sock_fd], [], [], wait if polling else None)
        if ready:
            data = os.read(sock_fd, 4096)
            if not data:
                return                  # the harness is gone
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = line.decode("ascii", "replace").strip()
                out = consumer.answer(request)
                if out is not None:
                    _send(sock_fd, out)
                if request == "q":
                    return
            idle, wait_from = POLL_IDLE_S, time.monotonic()
            wait = 0.0
            continue
        late = max(0.0, time.monotonic() - wait_from - wait)
        if consumer.poll(late):
            idle, wait = POLL_IDLE_S, 0.0
        else:
            wait, idle = idle, min(2 * idle, POLL_IDLE_MAX_S)
        wait_from = time.monotonic()


def _send(sock_fd: int, obj: dict) -> None:
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(sock_fd, data):]
