"""The shm channel's protocol, host side, over a synthetic guest RAM.

Writer is include/shm.h's writer (tracer/core/ring.c) in Python, store by
store, over a bytearray; bench/wire/shm.py's RingReader is the host under
test. Each case pins one rule: a sub-buffer is read only when complete
and not the writer's current one, in order; a header that is torn or
names another sub-buffer is refused with consumed left where it was; a
consumer that falls behind or stops costs exactly the records counted as
discarded, and never stops the writer. The broken variants (a reader that
takes the current sub-buffer; a writer whose commit is not its last store)
must be caught. The channel around the reader (bench/guest/shm_channel.py):
its log, written as it goes by a thread that is not the consumer's; no
full garbage collection while the rings are read (bench/guest/gc_hold.py).
"""

from __future__ import annotations

import gc
import os
import struct
import threading
import time

import pytest

from bench.wire import frames, records
from bench.wire import shm

ORDERS = {"little-endian (pc)": "<", "big-endian (sun4u)": ">"}
WORD = 8
TABLE_AT, RING_AT = 0x100, 0x1000
EVENT = frames.WIRE.structs["wire_event"]
K_ENTRY = records.K_ENTRY


def _field(s, name):
    return next(f.offset for f in s.fields if f.name == name)


class Writer:
    """One CPU's ring as ring.c writes it. commit_last=False is the broken
    writer, a commit without the release store: its header's content and
    last are stored after commit and write, as a compiler may sink them."""

    def __init__(self, ram, order, subbuf=512, nsub=4, commit_last=True):
        self.ram, self.order, self.subbuf, self.nsub = ram, order, subbuf, nsub
        self.commit_last = commit_last
        self.w = self.count = self.off = self.discarded = 0
        self.open = False
        self.cycles = 1000
        self.written: list[bytes] = []      # records, in order
        self.row = TABLE_AT + shm.TABLE.size
        ram[TABLE_AT:TABLE_AT + shm.TABLE.size] = shm.TABLE.pack(
            order, magic=shm.TABLE_MAGIC, version=shm.VERSION, ncpus=1,
            cpu_bytes=shm.CPU.size, subbuf_header=shm.SUBBUF.size)
        ram[self.row:self.row + shm.CPU.size] = shm.CPU.pack(
            order, ring=RING_AT, subbuf_bytes=subbuf, nsub=nsub)

    def _u(self, fmt, at, value):
        return (at, struct.pack(self.order + fmt, value))

    def store(self, at, data):
        self.ram[at:at + len(data)] = data

    def slot(self, n):
        return RING_AT + (n % self.nsub) * self.subbuf

    def consumed(self):
        at = self.row + _field(shm.CPU, "consumed")
        return struct.unpack_from(self.order + "I", self.ram, at)[0]

    def put(self, probe=1) -> bool:
        self.cycles += 7
        rec = EVENT.pack(self.order, kind=K_ENTRY, nwords=2, thread=1, probe=probe,
                         cycles=self.cycles) + struct.pack(self.order + "QQ", probe, 0)
        if self.open and self.off + len(rec) > self.subbuf:
            self.commit()
        if not self.open and not self.open_next():
            self.discarded += 1
            self.store(*self._u("Q", self.row + _field(shm.CPU, "discarded"),
                                self.discarded))
            return False
        self.store(self.slot(self.w) + self.off, rec)
        if not self.count:
            self.first = self.cycles
        self.count += 1
        self.last = self.cycles
        self.last_off = self.off
        self.off += len(rec)
        self.written.append(rec)
        return True

    def open_next(self) -> bool:
        if self.w - self.consumed() >= self.nsub:
            return False
        at = self.slot(self.w)
        head = shm.SUBBUF.pack(self.order, magic=shm.SUBBUF_MAGIC, version=shm.VERSION,
                               cpu=0, seq=self.w, discarded=self.discarded)
        commit = _field(shm.SUBBUF, "commit")
        self.store(at, head[:commit])       # commit keeps its old value
        self.open, self.off, self.count = True, shm.SUBBUF.size, 0
        return True

    def commit_stores(self):
        """The commit's stores, in the writer's order."""
        at = self.slot(self.w)
        header = [self._u("I", at + _field(shm.SUBBUF, "content"), self.off - shm.SUBBUF.size),
                  self._u("Q", at + _field(shm.SUBBUF, "first"), self.first),
                  self._u("Q", at + _field(shm.SUBBUF, "last"), self.last),
                  self._u("I", at + _field(shm.SUBBUF, "records"), self.count),
                  self._u("I", at + _field(shm.SUBBUF, "last_record"),
                          self.last_off - shm.SUBBUF.size)]
        commit = [self._u("I", at + _field(shm.SUBBUF, "commit"), self.w + 1)]
        tail = [self._u("I", self.row + _field(shm.CPU, "write"), self.w + 1)]
        return header + commit + tail if self.commit_last else commit + tail + header

    def commit(self, stores=None):
        for st in self.commit_stores() if stores is None else stores:
            self.store(*st)
        self.open = False
        self.w += 1

    def flush(self):
        if self.open and self.count:
            self.commit()


def _setup(order, **kw):
    ram = bytearray(64 << 10)
    w = Writer(ram, order, **kw)
    return ram, w, shm.RingReader(shm.BufferRam(ram), TABLE_AT, order, WORD)


def _records(subs, order):
    out = []
    for sb in subs:
        out += [sb.records[off:off + size]
                for off, _k, size in shm.records_in(sb.records, order, WORD)]
    return out


@pytest.fixture(params=list(ORDERS.values()), ids=list(ORDERS))
def order(request):
    return request.param


def test_complete_subbuffers_are_read_in_order_and_the_current_one_is_not(order):
    ram, w, r = _setup(order)
    per = (w.subbuf - shm.SUBBUF.size) // 32
    for i in range(3 * per + 5):
        assert w.put(i)
    subs = r.poll()
    assert [s.seq for s in subs] == [0, 1, 2]        # the 4th is being written
    got = _records(subs, order)
    assert got == w.written[:3 * per]
    assert r.poll() == []
    w.flush()                                        # the end of a run
    got += _records(r.poll(), order)
    assert got == w.written
    # They decode as the EVENTS frames of any other channel.
    cap = records.decode(shm.events_frames(subs, order, WORD), order, WORD)
    assert len(cap.events) == 3 * per


def test_a_subbuffer_committed_out_of_order_waits_for_the_one_before(order):
    ram, w, r = _setup(order)
    per = (w.subbuf - shm.SUBBUF.size) // 32
    for i in range(per):
        w.put(i)
    held = w.commit_stores()
    w.commit(stores=[s for s in held if s[0] != w.slot(0) + _field(shm.SUBBUF, "commit")])
    for i in range(per):
        w.put(100 + i)
    w.flush()                                        # 1 committed, 0 not yet
    assert r.poll() == []
    assert w.consumed() == 0
    commit_at = w.slot(0) + _field(shm.SUBBUF, "commit")
    w.store(*next(st for st in held if st[0] == commit_at))   # 0's commit lands
    assert [s.seq for s in r.poll()] == [0, 1]
    assert w.consumed() == 2


@pytest.mark.parametrize("damage", ["magic", "seq", "content", "cpu"])
def test_a_torn_or_misnumbered_header_is_refused_and_nothing_consumed(order, damage):
    ram, w, r = _setup(order)
    for i in range(3):
        w.put(i)
    w.flush()
    at = w.slot(0) + _field(shm.SUBBUF, damage)
    size = {"magic": 4, "seq": 4, "content": 4, "cpu": 2}[damage]
    value = {"magic": 0xdead, "seq": 4, "content": 3 * 32 + 8, "cpu": 1}[damage]
    ram[at:at + size] = value.to_bytes(size, "little" if order == "<" else "big")
    with pytest.raises(shm.ShmError, match="sub-buffer 0"):
        r.poll()
    assert w.consumed() == 0


@pytest.mark.parametrize("commit_last", [True, False], ids=["release", "broken-commit-first"])
def test_a_reader_between_any_two_of_the_commits_stores(order, commit_last):
    """Read after every prefix of a commit's stores: with commit stored
    last the reader sees nothing, then the whole sub-buffer; the broken
    writer (commit first) is refused at each torn point, never read wrong."""
    ram, w, _ = _setup(order, commit_last=commit_last)
    for i in range(5):
        w.put(i)
    stores = w.commit_stores()
    caught = 0
    for k in range(len(stores) + 1):
        copy = bytearray(ram)
        for at, data in stores[:k]:
            copy[at:at + len(data)] = data
        r = shm.RingReader(shm.BufferRam(copy), TABLE_AT, order, WORD)
        try:
            got = _records(r.poll(), order)
        except shm.ShmError:
            caught += 1
            continue
        assert got in ([], w.written), (k, got)
        assert got == w.written or k < len(stores)
    header = len(stores) - 2                         # all but commit and write
    assert caught == (0 if commit_last else header)


def test_a_consumer_that_falls_behind_loses_exactly_what_is_counted(order):
    ram, w, r = _setup(order)
    got, kept = [], 0
    for i in range(5000):
        kept += w.put(i)
        if i % 97 == 0:                              # the host reads late
            subs = r.poll()
            got += _records(subs, order)
            for s in subs:                           # each header: discards so far
                assert s.discarded <= w.discarded
    w.flush()
    got += _records(r.poll(), order)
    assert got == w.written and len(got) == kept
    assert w.discarded == 5000 - kept > 0
    assert r.discarded() == [w.discarded]


def test_a_stopped_consumer_never_stops_the_writer_and_every_loss_counts(order):
    ram, w, r = _setup(order)
    for i in range(10000):                           # nothing reads meanwhile
        w.put(i)
    held = w.nsub * ((w.subbuf - shm.SUBBUF.size) // 32)
    assert len(w.written) == held                    # the ring, never overwritten
    assert w.discarded == 10000 - held
    w.flush()
    assert _records(r.poll(), order) == w.written
    assert r.discarded() == [10000 - held]
    # The writer goes on where it was; the next sub-buffer carries the count.
    w.put(1)
    w.flush()
    (nxt,) = r.poll()
    assert nxt.discarded == 10000 - held


def test_the_broken_reader_that_takes_the_current_subbuffer_is_caught(order):
    ram, w, _ = _setup(order)
    r = shm.RingReader(shm.BufferRam(ram), TABLE_AT, order, WORD, read_current=True)
    for i in range(5):
        w.put(i)
    with pytest.raises(shm.ShmError, match="torn"):
        r.poll()
    # Even past its own checks, what it read is not the trace: the records
    # written after it took the sub-buffer would never be read.
    w.put(5)
    w.flush()
    good = shm.RingReader(shm.BufferRam(ram), TABLE_AT, order, WORD)
    assert _records(good.poll(), order) == w.written


def test_a_table_that_is_not_there_is_a_clear_error():
    ram = bytearray(4096)
    with pytest.raises(shm.ShmError, match="no ring table at physical 0x100"):
        shm.RingReader(shm.BufferRam(ram), TABLE_AT, "<", WORD)
    with pytest.raises(shm.ShmError, match="outside the guest's 4096 bytes"):
        shm.RingReader(shm.BufferRam(ram), 4090, "<", WORD)


def test_the_shm_log_reads_back_what_was_delivered_and_refuses_a_cut_one(tmp_path):
    """NAME.shm (bench/export/logs.py re-exports a run from it): the
    frames' payloads come back byte for byte; a log cut inside a length or
    a payload is refused with where."""
    ram, w, r = _setup("<")
    for _ in range(40):
        w.put()
    w.flush()
    sent = shm.events_frames(r.poll(), "<", WORD)
    path = tmp_path / "run.shm"
    shm.write_log(path, sent)
    data = path.read_bytes()
    assert shm.read_log(data) == [bytes(f.payload) for f in sent]
    with pytest.raises(shm.ShmError, match="cut short"):
        shm.read_log(data[:-1])
    with pytest.raises(shm.ShmError, match="bytes left"):
        shm.read_log(data + b"\0\0")


def test_the_channel_writes_its_log_as_it_goes_and_keeps_none_of_it(tmp_path, monkeypatch):
    """The consumer hands its frames to the log's writer LOG_BATCH at a
    time (a 10^8-record run must not hold its trace for the log) and the
    rest at close: the log holds every frame delivered, in order, numbered
    on across the batches."""
    from bench.guest import shm_channel
    monkeypatch.setattr(shm_channel, "LOG_BATCH", 3)
    ram, w, r = _setup("<")
    ch = shm_channel.ShmChannel(1, False, path="", log_path=tmp_path / "run.shm")
    ch.reader, ch._order, ch._word = r, "<", WORD
    got = []
    ch._deliver = got.extend
    per = (w.subbuf - shm.SUBBUF.size) // 32
    for _ in range(4):
        for _ in range(2 * per):
            assert w.put()
        w.flush()
        ch.drain()
        assert len(ch.delivered) < 3            # the rest went to the writer
    w.put()
    w.flush()
    ch.drain()
    assert ch.delivered, "a rest for close() to log"
    ch.close()
    assert [f.seq for f in got] == list(range(len(got))) and len(got) >= 8
    logged = shm.read_log((tmp_path / "run.shm").read_bytes())
    assert logged == [bytes(f.payload) for f in got]


def test_the_consumer_asks_for_priority_and_says_what_it_got(monkeypatch):
    """SCHED_RR for the consumer thread, else a negative nice, else as it
    was: each refusal is logged in stats()'s priority, never raised."""

    from bench.guest import shm_channel
    asked = []

    def refuse(*a):
        asked.append(a)
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(shm_channel, "_raise", True)      # put back after
    ch = shm_channel.ShmChannel(1, False, path="")
    monkeypatch.setattr(os, "sched_setscheduler", lambda *a: asked.append(a))
    ch._raise_priority()
    assert ch.priority == "SCHED_RR 1" and asked[-1][1] == os.SCHED_RR
    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    monkeypatch.setattr(os, "setpriority", lambda *a: asked.append(a))
    ch._raise_priority()
    assert ch.priority.startswith("nice -10 (SCHED_RR refused") and asked[-1][2] == -10
    monkeypatch.setattr(os, "setpriority", refuse)
    ch._raise_priority()
    assert ch.priority.startswith("not raised (SCHED_RR refused") and \
        "nice -10 refused" in ch.priority
    shm_channel.raise_priority(False)                   # as make bench does
    n = len(asked)
    ch._raise_priority()
    assert len(asked) == n and ch.priority.startswith("not raised (TRAPBENCH_SHM_PRIORITY=0")


def _started_channel(tmp_path, monkeypatch, raise_priority=False):
    """A channel over the synthetic RAM, its consumer thread polling."""
    from bench.guest import shm_channel
    monkeypatch.setattr(shm_channel, "_raise", raise_priority)
    ram, w, r = _setup("<")
    ch = shm_channel.ShmChannel(1, False, path="", log_path=tmp_path / "run.shm")
    ch.reader, ch._order, ch._word = r, "<", WORD
    got = []
    ch.start(got.extend, threading.Event())
    return ch, w, got


def _collections_while(provoke) -> set:
    """The generations the collector ran while provoke() allocated."""
    gens = set()
    def watch(phase, info):
        if phase == "start":
            gens.add(info["generation"])
    gc.callbacks.append(watch)
    try:
        provoke()
    finally:
        gc.callbacks.remove(watch)
    return gens


def _a_growing_heap():
    """Enough containers kept alive that the collector's own rule calls for
    a full collection (more than a quarter of the long-lived heap pending)."""
    keep = [[] for _ in range(len(gc.get_objects()) + 200_000)]
    return len(keep)


@pytest.fixture
def gc_alone(monkeypatch):
    """The collector as if no other channel of this process were reading:
    pytest-xdist runs other test files' guests in this process, whose
    channels may hold it (gc_hold) for as long as they are open."""
    from bench.guest import gc_hold
    saved, watching = gc.get_threshold(), gc_hold._watch in gc.callbacks
    gc.set_threshold(*(gc_hold._saved or saved))
    monkeypatch.setattr(gc_hold, "_holders", 0)
    monkeypatch.setattr(gc_hold, "_saved", None)
    if watching:
        gc.callbacks.remove(gc_hold._watch)
    yield
    gc.set_threshold(*saved)
    if watching and gc_hold._watch not in gc.callbacks:
        gc.callbacks.append(gc_hold._watch)


def test_no_full_collection_while_the_rings_are_read(tmp_path, monkeypatch, gc_alone):
    """A full collection walks the whole heap with the interpreter's lock
    held (294 ms in a 10^7-record sun4u run, rings that fill in 35 ms):
    while a consumer reads, the collector keeps to the young generations;
    its close puts the thresholds back. The broken variant (a channel that
    leaves the collector as it is) gets its full collection."""
    from bench.guest import gc_hold
    before = gc.get_threshold()
    ch, w, got = _started_channel(tmp_path, monkeypatch)
    try:
        gens = _collections_while(_a_growing_heap)
        assert 2 not in gens and 0 in gens, f"collections of generations {gens}"
        assert "gc while read: gen0" in ch.stats() and "gen2" not in ch.stats()
    finally:
        ch.close()
    assert gc.get_threshold() == before and gc_hold._watch not in gc.callbacks

    monkeypatch.setattr(gc_hold, "hold", lambda: None)      # the broken channel
    monkeypatch.setattr(gc_hold, "release", lambda: None)
    ch, w, got = _started_channel(tmp_path, monkeypatch)
    try:
        assert 2 in _collections_while(_a_growing_heap), \
            "the provocation no longer calls for a full collection: the test proves nothing"
    finally:
        ch.close()


def test_holds_nest_and_the_last_release_restores(monkeypatch, gc_alone):
    """Two guests' channels at once: the first to close leaves the hold on."""
    from bench.guest import gc_hold
    before = gc.get_threshold()
    gc_hold.hold()
    gc_hold.hold()
    gc_hold.release()
    assert gc.get_threshold()[2] == gc_hold.HELD_THRESHOLD2
    gc_hold.release()
    gc_hold.release()                   # one too many changes nothing
    assert gc.get_threshold() == before


def test_the_log_writer_is_started_by_the_opener_not_the_consumer(tmp_path, monkeypatch):
    """The log's writer exists before the consumer's first poll, so it never
    inherits the consumer's SCHED_RR (where the host grants it here, the
    writer is checked to run as an ordinary thread)."""
    ch, w, got = _started_channel(tmp_path, monkeypatch, raise_priority=True)
    try:
        writer = ch._log_thread
        assert writer is not None and writer.is_alive(), \
            "no log writer until the consumer hands it a batch"
        deadline = time.monotonic() + 5
        while ch.priority == "not raised" and time.monotonic() < deadline:
            time.sleep(0.01)
        if ch.priority.startswith("SCHED_RR"):
            assert os.sched_getscheduler(ch._thread.native_id) == os.SCHED_RR
            assert os.sched_getscheduler(writer.native_id) == os.SCHED_OTHER
    finally:
        ch.close()
