"""The shm channel's consumer process, over a synthetic guest RAM.

The RAM is an anonymous shared mapping, so the forked consumer
(bench/guest/shm_consumer.py) sees what test_shm's Writer stores here,
as it sees QEMU's. Pinned: every sub-buffer reaches the harness as an
EVENTS frame, numbered in order, and the stream file is the run's log;
a drain answers only once its frames are handed on; the consumer reads
on while the harness holds its interpreter lock (the broken variant, a
consumer thread in the harness's process, is caught); a write that
blocks holds up the writer thread, not the polls (the broken variant, a
poller that writes itself, is caught); copy buffers are taken again once
written and never before (the broken variant, given back at once, is
caught); a stopped
consumer (SIGSTOP) costs the records counted as discarded and no more;
a protocol error reaches the harness, and so does a consumer that dies
(its traceback on stderr); the consumer keeps none of the harness's
descriptors and ends when the harness does; it asks for its priority
and says what it got.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import mmap
import os
import sys
import time

import pytest

from bench.guest import shm_channel, shm_consumer
from bench.wire import shm
from test_shm import TABLE_AT, WORD, Writer, _field

RAM = 64 << 10


class _Ram(shm.BufferRam):
    def close(self):
        pass


def _channel(tmp_path, monkeypatch, log=True, **kw):
    """A started channel over shared RAM, its Writer, and what it hands on."""
    monkeypatch.setattr(shm_channel, "_raise", False)
    ram = mmap.mmap(-1, RAM)
    w = Writer(ram, "<", **kw)
    ch = shm_channel.ShmChannel(1, False, path="",
                                log_path=tmp_path / "run.shm" if log else None)
    ch._ram = _Ram(ram)
    ch.reader = shm.RingReader(ch._ram, TABLE_AT, "<", WORD)
    ch._order, ch._word = "<", WORD
    got = []
    ch.start(got.extend)
    return ch, w, got


def _records(frames):
    out = []
    for f in frames:
        body = bytes(f.payload)[shm.EVENTS_HEAD.size:]
        out += [body[off:off + size] for off, _k, size in shm.records_in(body, "<", WORD)]
    return out


@contextlib.contextmanager
def _unseen(w):
    """The ring hidden from the consumer meanwhile (its CPU row's ring
    address 0: a ring not set up yet), so what is written in it shows
    all at once, however the host schedules the consumer."""
    at = w.row + _field(shm.CPU, "ring")
    was = bytes(w.ram[at:at + 8])
    w.store(at, bytes(8))
    try:
        yield
    finally:
        w.store(at, was)


def _fill(w, subbuffers, discard=False) -> int:
    """subbuffers' worth of records put (each kept, unless discard), the
    last sub-buffer committed; how many were put."""
    per = (w.subbuf - shm.SUBBUF.size) // 32
    for _ in range(subbuffers * per):
        assert w.put() or discard
    w.flush()
    return subbuffers * per


def test_every_record_reaches_the_harness_in_order_and_the_stream_is_the_log(
        tmp_path, monkeypatch):
    ch, w, got = _channel(tmp_path, monkeypatch)
    try:
        assert ch.pid > 0 and ch.pid != os.getpid()
        for _ in range(5):
            _fill(w, 2)
            ch.drain()          # answers once this poll's frames are handed on
            assert _records(got) == w.written
        acct = ch.account()
        assert acct["pid"] == ch.pid and acct["subbuffers"] == len(got)
    finally:
        ch.close()
    assert [f.seq for f in got] == list(range(len(got))) and len(got) >= 10
    assert shm.read_log((tmp_path / "run.shm").read_bytes()) == \
        [bytes(f.payload) for f in got]
    assert "shm consumer (pid" in ch.stats()    # its last word, after close


def test_a_run_without_a_log_leaves_no_stream_and_an_empty_log_goes(tmp_path, monkeypatch):
    ch, w, got = _channel(tmp_path, monkeypatch, log=False)
    stream = ch._stream
    _fill(w, 1)
    ch.drain()
    ch.close()
    assert got and not os.path.exists(stream)
    ch, w, got = _channel(tmp_path, monkeypatch)
    ch.close()
    assert not got and not (tmp_path / "run.shm").exists()


def _lock_held_while_rings_fill(ch, w) -> int:
    """Three sub-buffers filled and then 1 s in a C call that keeps the
    interpreter lock (as a long collection does), no other thread of this
    process let in meanwhile; the sub-buffer the consumer reached by the
    time the lock is let go."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(60)       # no other thread of ours runs meanwhile
    try:
        _fill(w, 3)
        ctypes.PyDLL(None).usleep(1_000_000)
        return w.consumed()
    finally:
        sys.setswitchinterval(interval)


def test_the_consumer_reads_on_while_the_harness_holds_its_interpreter_lock(
        tmp_path, monkeypatch):
    """The broken variant, the consumer a thread of the harness's process
    (as it was), cannot poll until the lock is let go."""
    def reached() -> int:
        ch, w, got = _channel(tmp_path, monkeypatch, nsub=4)
        try:
            ch.drain()
            return _lock_held_while_rings_fill(ch, w)
        finally:
            ch.close()
    assert reached() == 3
    monkeypatch.setattr(shm_channel, "_own_process", False)
    try:
        assert reached() == 0
    finally:
        gc.enable()             # the thread's serve() changed them here
        sys.setswitchinterval(0.005)


def _until(what, want, within: float):
    """what() once it gives want, or what it gives after within seconds."""
    deadline = time.monotonic() + within
    while (got := what()) != want and time.monotonic() < deadline:
        time.sleep(0.005)
    return got


def _consumed_while_writes_block(tmp_path, monkeypatch) -> list[int]:
    """Every write to the stream 2 s late; two sub-buffers filled, and two
    more once the consumer took those: where it was 0.6 s after each (the
    1.4 s left over is for this process to be late on a loaded host: the
    broken variant's second poll comes 2 s after its first)."""
    real = os.writev

    def slow(fd, bufs):
        time.sleep(2.0)
        return real(fd, bufs)
    monkeypatch.setattr(os, "writev", slow)        # in the child too: forked
    ch, w, got = _channel(tmp_path, monkeypatch, nsub=4)
    try:
        with _unseen(w):
            _fill(w, 2)
        seen = [_until(w.consumed, 2, 0.6)]
        with _unseen(w):
            _fill(w, 2)
        seen.append(_until(w.consumed, 4, 0.6))
        ch.drain()
        assert _records(got) == w.written
    finally:
        ch.close()
        monkeypatch.setattr(os, "writev", real)
    return seen


def test_a_write_that_blocks_does_not_stop_the_polls(tmp_path, monkeypatch):
    """The page cache's writeback once held a write 55.5 ms (a 10^8-record
    run, rings that fill in 35): the consumer's writer thread waits for it,
    the polls go on. The broken variant, a poller that writes itself, is
    still in its first write when the next two sub-buffers are due."""
    assert _consumed_while_writes_block(tmp_path, monkeypatch) == [2, 4]
    monkeypatch.setattr(shm_consumer, "_write_inline", True)
    assert _consumed_while_writes_block(tmp_path, monkeypatch) == [2, 2]


def _through_small_buffers(tmp_path, monkeypatch) -> tuple[bool, int]:
    """Copy buffers of 4 KiB (7 of this ring's sub-buffers each) and a
    first write 1 s late: 30 sub-buffers polled meanwhile, then 40 more
    drained one poll at a time. Whether every record came through as
    written, and how many buffers the consumer made."""
    monkeypatch.setattr(shm.Arena, "FIRST", 4096)
    monkeypatch.setattr(shm.Arena, "MOST", 4096)
    real, late = os.writev, [1.0]

    def first_late(fd, bufs):
        time.sleep(late.pop() if late else 0)
        return real(fd, bufs)
    monkeypatch.setattr(os, "writev", first_late)
    ch, w, got = _channel(tmp_path, monkeypatch, nsub=4)
    try:
        for i in range(10):
            _fill(w, 3)
            assert _until(w.consumed, 3 * (i + 1), 2) == 3 * (i + 1)
        for _ in range(40):
            _fill(w, 1)
            ch.drain()
        made = ch.account()["mappings"]
    finally:
        ch.close()
        monkeypatch.setattr(os, "writev", real)
    return _records(got) == w.written, made


def test_copy_buffers_are_taken_again_once_written_and_never_before(tmp_path, monkeypatch):
    """The consumer copies into buffers it has faulted in already (a fresh
    page can cost a poll a reclaim when the page cache is full of the
    run's log): 70 sub-buffers through 5 or 6 buffers (10 new ones
    without it), every record intact. The broken variant gives a buffer back as soon as it is
    filled, before its frames are written: what the log gets is not
    what the guest wrote."""
    intact, made = _through_small_buffers(tmp_path, monkeypatch)
    assert intact and made <= 7, made          # a new buffer per 7 without it
    take = shm.Arena.take

    def given_back_at_once(self, n):
        out = take(self, n)
        self.release(out)
        return out
    monkeypatch.setattr(shm.Arena, "take", given_back_at_once)
    intact, made = _through_small_buffers(tmp_path, monkeypatch)
    assert not intact, "a buffer taken again before it was written went unnoticed"


def _state(pid: int) -> str:
    return open(f"/proc/{pid}/stat").read().split(") ")[1][0]


def test_a_stopped_consumer_costs_exactly_what_the_writer_counts(tmp_path, monkeypatch):
    ch, w, got = _channel(tmp_path, monkeypatch, nsub=4)
    try:
        ch.pause(True)
        assert _state(ch.pid) == "T"
        put = _fill(w, 6, discard=True)     # 4 slots: the rest discarded
        assert w.discarded > 0 and ch.drain() == 0 and not got
        # What the bench's raw rate times: every ring emptied by the one
        # request (no poll of the consumer's own first), stopped again after.
        nbytes, _ = ch.drain_all()
        assert nbytes == sum(map(len, w.written)) and _state(ch.pid) == "T"
        ch.pause(False)
        ch.drain()
        put += _fill(w, 1)
        ch.drain()
        live = ch.reader.discarded()
    finally:
        ch.close()
    assert _records(got) == w.written               # every record kept, read
    assert put == len(w.written) + w.discarded and live == [w.discarded]


def test_a_protocol_error_reaches_the_harness(tmp_path, monkeypatch):
    ch, w, got = _channel(tmp_path, monkeypatch)
    try:
        with _unseen(w):
            _fill(w, 2)
            w.store(w.slot(0), b"\xff\xff\xff\xff")  # a torn header's magic
        with pytest.raises(shm.ShmError, match="torn or out-of-order"):
            ch.drain()
        with pytest.raises(shm.ShmError):
            ch.drain()                              # and every drain after
        assert not got
    finally:
        ch.close()


def test_the_consumer_holds_nothing_of_the_harness_and_ends_with_it(tmp_path, monkeypatch):
    r, keep = os.pipe()         # a pipe whose reader waits for its end
    try:
        ch, w, got = _channel(tmp_path, monkeypatch)
        ch.drain()              # it answers: it is serving
        fds = {int(n) for n in os.listdir(f"/proc/{ch.pid}/fd")}
        assert keep not in fds and r not in fds, fds
        assert len(fds - {0, 1, 2}) == 2, [os.readlink(f"/proc/{ch.pid}/fd/{n}")
                                          for n in fds]    # the socket, the stream
    finally:
        os.close(r)
        os.close(keep)
    pid = ch.pid
    ch._sock.close()            # as when the harness dies
    deadline = time.monotonic() + 5
    while os.waitpid(pid, os.WNOHANG)[0] == 0:
        assert time.monotonic() < deadline, "the consumer outlived its harness"
        time.sleep(0.01)
    ch.pid = 0
    ch.close()


def test_the_consumer_asks_for_priority_and_says_what_it_got(monkeypatch):
    """SCHED_RR, else a negative nice, else as it was: each refusal is
    said in stats()'s priority, never raised."""
    asked = []

    def refuse(*a):
        asked.append(a)
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "sched_setscheduler", lambda *a: asked.append(a))
    assert shm_consumer.raise_priority(True) == "SCHED_RR 1" and asked[-1][1] == os.SCHED_RR
    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    monkeypatch.setattr(os, "setpriority", lambda *a: asked.append(a))
    assert shm_consumer.raise_priority(True).startswith("nice -10 (SCHED_RR refused") \
        and asked[-1][2] == -10
    monkeypatch.setattr(os, "setpriority", refuse)
    got = shm_consumer.raise_priority(True)
    assert got.startswith("not raised (SCHED_RR refused") and "nice -10 refused" in got
    n = len(asked)
    assert shm_consumer.raise_priority(False).startswith("not raised (TRAPBENCH")
    assert len(asked) == n


def test_a_consumer_that_dies_is_said_at_the_next_drain(tmp_path, monkeypatch, capfd):
    """Its traceback on stderr, and the harness's next drain fails with
    why instead of waiting."""
    def broken(consumer, sock_fd, raise_prio):
        raise RuntimeError("a consumer bug")
    monkeypatch.setattr(shm_consumer, "serve", broken)
    ch, w, got = _channel(tmp_path, monkeypatch)
    try:
        with pytest.raises(shm.ShmError, match="did not answer 'd': it ended"):
            ch.drain()
    finally:
        ch.close()
    assert "RuntimeError: a consumer bug" in capfd.readouterr().err
