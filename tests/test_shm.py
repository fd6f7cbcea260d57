"""The shm channel's protocol, host side, over a synthetic guest RAM.

Writer is include/shm.h's writer (tracer/core/ring.c) in Python, store by
store, over a bytearray; bench/wire/shm.py's RingReader is the host under
test. Each case pins one rule: a sub-buffer is read only when complete
and not the writer's current one, in order; a header that is torn or
names another sub-buffer is refused with consumed left where it was; a
consumer that falls behind or stops costs exactly the records counted as
discarded, and never stops the writer. The broken variants (a reader that
takes the current sub-buffer; a writer whose commit is not its last store)
must be caught. The consumer process around the reader:
tests/test_shm_consumer.py.
"""

from __future__ import annotations

import struct

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
    path.write_bytes(b"".join(shm.log_iov(sent)))      # as the consumer writes it
    data = path.read_bytes()
    assert shm.read_log(data) == [bytes(f.payload) for f in sent]
    with pytest.raises(shm.ShmError, match="cut short"):
        shm.read_log(data[:-1])
    with pytest.raises(shm.ShmError, match="bytes left"):
        shm.read_log(data + b"\0\0")
