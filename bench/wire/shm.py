"""The shm channel's consumer: the guest's per-CPU rings read out of its RAM.

The layout and the protocol are include/shm.h's (read through cdefs): HELLO
names the table's physical address; each CPU's ring is sub-buffers, each a
header and records exactly as an EVENTS frame carries them. poll() takes,
per CPU, sub-buffer n = `consumed` only when n is before the writer's
`write` and its `commit` is n + 1 (LTTng's rule: complete, and not the one
being written), checks its header against its first and last records
(which must end its content), copies it out, and only then stores consumed = n + 1, which gives
the slot back to the writer. A sub-buffer that breaks the rules (a commit
with a header of another number, a torn header, records that do not add
up) raises ShmError and advances nothing. What poll() returns becomes
EVENTS frames (events_frames), so records.py decodes them as any other.
`ram` is the guest's RAM indexed by physical address: read(at, n),
read_into(at, buffer), write(at, data) and size (BufferRam over an mmap of
QEMU's RAM file or a bytearray in the tests; bench/guest/shm_channel.py's
ProcessRam). A sub-buffer's records are copied once, straight into the
EVENTS frame that carries them (read_into a memoryview past the frame's
head), and that frame is a slice of an arena (Arena): memory mapped and
populated in one system call, growing by doubling. The copy itself runs
at several GB/s; what bounded the reader was the page faults of fresh
memory for every byte kept (16 MiB of rings: 46 ms of faults, 5 ms of copy).
"""

from __future__ import annotations

import mmap
import struct
import threading
from dataclasses import dataclass

from ..errors import ProtocolError
from . import cdefs
from . import frames

SHM = cdefs.load("include/shm.h")
TABLE = SHM.structs["shm_table"]
CPU = SHM.structs["shm_cpu"]
SUBBUF = SHM.structs["shm_subbuf"]
TABLE_MAGIC = SHM.const("SHM_TABLE_MAGIC")
SUBBUF_MAGIC = SHM.const("SHM_SUBBUF_MAGIC")
VERSION = SHM.const("SHM_VERSION")
EVENT = frames.WIRE.structs["wire_event"]
EVENTS_HEAD = frames.WIRE.structs["wire_events"]
_CONSUMED = next(f.offset for f in CPU.fields if f.name == "consumed")
_NEXT = 1 << 32
_KIND = next(f.offset for f in EVENT.fields if f.name == "kind")
_CYCLES = next(f.offset for f in EVENT.fields if f.name == "cycles")
_NWORDS = next(f.offset for f in EVENT.fields if f.name == "nwords")
_KINDS = frozenset(e.value for e in frames.WIRE.table("WIRE_EVENT_KINDS")) - {0}
if any(f.ctype != "uint8_t" for f in EVENT.fields if f.name in ("kind", "nwords")):
    raise cdefs.CdefsError("wire.h: wire_event's kind and nwords are no longer bytes")


class ShmError(ProtocolError):
    """A ring in guest RAM that breaks shm.h's protocol."""


class BufferRam:
    """Guest RAM in anything with the buffer protocol, physical 0 at 0."""

    def __init__(self, buf):
        self.buf, self.size = buf, len(buf)

    def read(self, at: int, n: int) -> bytes:
        return bytes(self.buf[at:at + n])

    def read_into(self, at: int, dst: memoryview) -> None:
        """dst's length of bytes from at: one copy, no bytes between."""
        with memoryview(self.buf) as ram:
            dst[:] = ram[at:at + len(dst)]

    def write(self, at: int, data: bytes) -> None:
        self.buf[at:at + len(data)] = data


@dataclass(frozen=True)
class SubBuffer:
    cpu: int
    seq: int
    first: int
    last: int
    discarded: int          # records the CPU discarded before it opened
    payload: memoryview     # room for an EVENTS head, then the records
    count: int

    @property
    def records(self) -> memoryview:
        """Whole records, as an EVENTS frame's."""
        return memoryview(self.payload)[EVENTS_HEAD.size:]


_COMPILED: dict[tuple[str, str], tuple[struct.Struct, tuple[str, ...]]] = {}


def _compiled(s, order: str) -> tuple[struct.Struct, tuple[str, ...]]:
    """A scalar-only struct of shm.h as a compiled Struct and its names: the
    reader unpacks a header per sub-buffer, at the channel's rate (kept by
    name: hashing the struct's description cost more than the unpack)."""
    key = (s.name, order)
    if key not in _COMPILED:
        if any(f.count != 1 for f in s.fields):
            raise cdefs.CdefsError(f"shm.h: struct {s.name} has an array")
        _COMPILED[key] = struct.Struct(s.format(order)), tuple(f.name for f in s.fields)
    return _COMPILED[key]


class Arena:
    """Where the reader's copies live: slices of anonymous mappings made
    and populated whole (MAP_POPULATE), FIRST bytes and then twice the last
    each, up to MOST; a slice keeps its mapping alive as long as a frame
    holds it. MOST is small because populating is done in the poll: on a
    loaded host 16 MiB took 4 to 53 ms, and a 64 MiB arena stopped the
    consumer for long enough that 256 KiB rings filled (a poll 463 ms
    after the one before, in a ten-million-record run that lost 1.2 %).

    recycle=True (the consumer process, whose frames are written out and
    dropped in the order they were taken): a mapping whose slices have
    all been given back (release()) is taken again instead of a new one,
    so a long run faults in no fresh memory once it is under way (with
    the page cache full of the run's own log, a fresh page can cost the
    poll a reclaim)."""
    FIRST, MOST = 1 << 20, 4 << 20

    def __init__(self, recycle: bool = False):
        self.size, self.view, self.off = 0, memoryview(b""), 0
        self.recycle = recycle
        self._lock = threading.Lock()
        self._out: dict[int, int] = {}      # id(mapping): slices not given back
        self._maps: list = []               # every mapping, oldest first
        self.made = 0                       # mappings made (not taken again)

    def take(self, n: int) -> memoryview:
        if self.off + n > len(self.view):
            self._next(n)
        out = self.view[self.off:self.off + n]
        self.off += (n + 7) & ~7
        if self.recycle:
            with self._lock:
                self._out[id(out.obj)] += 1
        return out

    def release(self, payload: memoryview) -> None:
        """payload (a slice take() gave) will not be read again."""
        if self.recycle and isinstance(payload, memoryview):
            with self._lock:
                key = id(payload.obj)
                if key in self._out:
                    self._out[key] -= 1

    def _next(self, n: int) -> None:
        if self.recycle:
            with self._lock:
                for m in self._maps:
                    if self._out[id(m)] == 0 and len(m) >= n and m is not self.view.obj:
                        self.view, self.off = memoryview(m), 0
                        return
        self.size = max(n, min(self.MOST, 2 * self.size or self.FIRST))
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
        m = mmap.mmap(-1, self.size, flags=flags)
        self.view, self.off = memoryview(m), 0
        self.made += 1
        if self.recycle:
            with self._lock:
                self._maps.append(m)
                self._out[id(m)] = 0


def _before(n: int, write: int) -> bool:
    """n precedes write in 32-bit free-running numbers."""
    return 0 < (write - n) % _NEXT < 1 << 31


class RingReader:
    """The host's half of shm.h for one guest (see the module docstring).
    read_current=True is a deliberately broken reader (it also takes the
    sub-buffer being written) for the tests to catch."""

    def __init__(self, ram, table_phys: int, order: str, word_bytes: int, *,
                 read_current: bool = False):
        self.ram, self.order, self.word_bytes = ram, order, word_bytes
        self.read_current = read_current
        head = self._unpack(TABLE, table_phys)
        if head["magic"] != TABLE_MAGIC or head["version"] != VERSION:
            raise ShmError(f"no ring table at physical {table_phys:#x} (magic "
                           f"{head['magic']:#x}, version {head['version']}; want "
                           f"{TABLE_MAGIC:#x}, {VERSION})")
        if head["cpu_bytes"] != CPU.size or head["subbuf_header"] != SUBBUF.size:
            raise ShmError(f"ring table at {table_phys:#x} was built with other "
                           f"layouts ({head['cpu_bytes']}, {head['subbuf_header']} "
                           f"bytes; this host reads {CPU.size}, {SUBBUF.size})")
        self.ncpus = head["ncpus"]
        self.rows = [table_phys + TABLE.size + c * CPU.size for c in range(self.ncpus)]
        self.subbuffers = 0     # read so far
        self.bytes = 0
        self.arena = Arena()
        # The most sub-buffers a poll found waiting in one ring, and that
        # ring's slots: how close the host came to making its writer discard.
        self.fullest, self.fullest_of = 0, 0

    def _unpack(self, s, at: int) -> dict:
        """struct s at physical at, as a dict (its Struct compiled once)."""
        if at < 0 or at + s.size > self.ram.size:
            raise ShmError(f"struct {s.name} at physical {at:#x} lies outside "
                           f"the guest's {self.ram.size} bytes of RAM")
        data = self.ram.read(at, s.size)
        if len(data) != s.size:     # the RAM went away (QEMU ended)
            raise ShmError(f"struct {s.name} at physical {at:#x}: the guest's "
                           "RAM cannot be read any more")
        packed, names = _compiled(s, self.order)
        return dict(zip(names, packed.unpack(data)))

    def discarded(self) -> list[int]:
        """Each CPU's live count of discarded records."""
        return [self._unpack(CPU, row)["discarded"] for row in self.rows]

    def poll(self) -> list[SubBuffer]:
        """Every complete sub-buffer not yet read, CPU by CPU, in order."""
        out = []
        for cpu, row in enumerate(self.rows):
            out += self._poll_cpu(cpu, row)
        return out

    def _poll_cpu(self, cpu: int, row: int) -> list[SubBuffer]:
        ctl = self._unpack(CPU, row)
        if not ctl["ring"]:
            return []
        n, write, out = ctl["consumed"], ctl["write"], []
        if ctl["nsub"] == 0 or ctl["subbuf_bytes"] <= SUBBUF.size:
            raise ShmError(f"cpu{cpu}: a ring of {ctl['nsub']} sub-buffers of "
                           f"{ctl['subbuf_bytes']} bytes")
        waiting = (write - n) % _NEXT
        if waiting < 1 << 31 and waiting > self.fullest:
            self.fullest, self.fullest_of = waiting, ctl["nsub"]
        while _before(n, write) or (self.read_current and n == write):
            # read_current: the broken reader takes what is there now.
            slot = ctl["ring"] + (n % ctl["nsub"]) * ctl["subbuf_bytes"]
            h = self._unpack(SUBBUF, slot)
            current = n == write
            if h["commit"] != (n + 1) % _NEXT and not current:
                break           # not complete yet; the ones after it wait
            if current:
                h["content"], h["records"], h["last_record"] = self._scan(
                    slot + SUBBUF.size, ctl["subbuf_bytes"] - SUBBUF.size)
            self._check(cpu, n, h, ctl["subbuf_bytes"])
            payload = self.arena.take(EVENTS_HEAD.size + h["content"])
            self.ram.read_into(slot + SUBBUF.size, payload[EVENTS_HEAD.size:])
            count = self._check_records(cpu, n, payload[EVENTS_HEAD.size:], h)
            out.append(SubBuffer(cpu, n, h["first"], h["last"], h["discarded"],
                                 payload, count))
            self.subbuffers += 1
            self.bytes += h["content"]
            n = (n + 1) % _NEXT
            self.ram.write(row + _CONSUMED, struct.pack(self.order + "I", n))
            if current:
                break
        return out

    def _check(self, cpu: int, n: int, h: dict, subbuf_bytes: int) -> None:
        want = {"magic": SUBBUF_MAGIC, "version": VERSION, "cpu": cpu, "seq": n}
        wrong = [f"{k} {h[k]:#x} (want {v:#x})" for k, v in want.items() if h[k] != v]
        if h["content"] > subbuf_bytes - SUBBUF.size:
            wrong.append(f"content {h['content']} past the sub-buffer's "
                         f"{subbuf_bytes - SUBBUF.size} bytes")
        if wrong:
            raise ShmError(f"cpu{cpu} sub-buffer {n}: torn or out-of-order header, "
                           "committed with " + ", ".join(wrong))

    def _records(self, body: bytes):
        return records_in(body, self.order, self.word_bytes)

    def _check_records(self, cpu: int, n: int, body: bytes, h: dict) -> int:
        """How many records body holds; ShmError unless its first record is
        at the header's first timestamp and its last at the header's last
        offset and timestamp, ending at its content: a header read before
        the writer finished it (a commit that was not stored last) shows
        as none of that. No walk of the records: that is records.py's, on
        every channel alike, and a walk here would halve the channel."""
        last = h["last_record"]
        problem = ""
        if not h["records"] or len(body) < EVENT.size * h["records"]:
            problem = f"{h['records']} records in {len(body)} bytes"
        elif last + EVENT.size > len(body):
            problem = f"its last record at byte {last} of {len(body)}"
        else:
            end = last + EVENT.size + body[last + _NWORDS] * self.word_bytes
            kinds = (body[_KIND], body[last + _KIND])
            times = (self._cycles(body, 0), self._cycles(body, last))
            if end != len(body):
                problem = f"its last record ends at byte {end} of {len(body)}"
            elif not set(kinds) <= _KINDS:
                problem = f"records of kinds {kinds}"
            elif times != (h["first"], h["last"]):
                problem = (f"its records run from cycle {times[0]} to {times[1]}, "
                           f"its header says {h['first']} to {h['last']}")
        if problem:
            raise ShmError(f"cpu{cpu} sub-buffer {n}: torn: {problem}")
        return h["records"]

    def _cycles(self, body: bytes, off: int) -> int:
        return struct.unpack_from(self.order + "Q", body, off + _CYCLES)[0]

    def _scan(self, at: int, room: int) -> tuple[int, int, int]:
        """How far records run from at, how many, where the last starts
        (the broken reader's guess at a header not written yet)."""
        body = self.ram.read(at, room)
        end = count = last = 0
        for off, kind, size in self._records(body):
            if kind == 0 or off + size > room:
                break
            end, count, last = off + size, count + 1, off
        return end, count, last


def records_in(body: bytes, order: str, word_bytes: int):
    """(offset, kind, size) of each record in body, as far as they go. The
    kind and nwords are bytes (struct wire_event), the same in either order:
    read directly, since a consumer that falls behind loses records."""
    off, end, head = 0, len(body) - EVENT.size, EVENT.size
    while off <= end:
        size = head + body[off + _NWORDS] * word_bytes
        yield off, body[off + _KIND], size
        off += size


def events_frames(subs, order: str, word_bytes: int, seq0: int = 0) -> list[frames.Frame]:
    """The sub-buffers as EVENTS frames (at most 65535 records each, the
    count's width), numbered from seq0: what records.decode reads."""
    out = []
    head, names = _compiled(EVENTS_HEAD, order)
    for sb in subs:
        if sb.count <= 0xffff:      # the payload as read, its head filled in
            fields = {"cpu": sb.cpu, "count": sb.count}
            head.pack_into(sb.payload, 0, *(fields.get(n, 0) for n in names))
            out.append(frames.Frame(frames.T_EVENTS, seq0 + len(out), sb.payload, -1))
            continue
        start, count = 0, 0
        for off, _kind, _size in records_in(sb.records, order, word_bytes):
            if count == 0xffff:
                out.append(_frame(sb.cpu, count, bytes(sb.records[start:off]), order,
                                  seq0 + len(out)))
                start, count = off, 0
            count += 1
        if count:
            out.append(_frame(sb.cpu, count, bytes(sb.records[start:]), order,
                              seq0 + len(out)))
    return out


def _frame(cpu: int, count: int, body: bytes, order: str, seq: int) -> frames.Frame:
    head = EVENTS_HEAD.pack(order, cpu=cpu, count=count)
    return frames.Frame(frames.T_EVENTS, seq, head + body, -1)


def log_iov(events) -> list:
    """The EVENTS frames as a run's NAME.shm log holds them, as buffers to
    write in order: each payload after its length, 4 bytes little-endian
    (bench/guest/shm_consumer.py writes them, log_entries() and read_log()
    read them back, as bench/export/logs.py does)."""
    out = []
    for fr in events:
        out += [struct.pack("<I", len(fr.payload)), fr.payload]
    return out


def log_entries(data) -> tuple[list[memoryview], int]:
    """The whole payloads at the start of a NAME.shm's bytes, and how many
    bytes they take: a payload cut short by the end of data is left for
    later (the consumer may still be writing it)."""
    out, off, view = [], 0, memoryview(data)
    while off + 4 <= len(data):
        n = struct.unpack_from("<I", data, off)[0]
        if off + 4 + n > len(data):
            break
        out.append(view[off + 4:off + 4 + n])
        off += 4 + n
    return out, off


def read_log(data: bytes) -> list[bytes]:
    """The EVENTS payloads of a NAME.shm; ShmError if it is cut short."""
    payloads, off = log_entries(data)
    if off + 4 > len(data) > off:
        raise ShmError(f"shm log: {len(data) - off} bytes left at {off}")
    if off < len(data):
        n = struct.unpack_from("<I", data, off)[0]
        raise ShmError(f"shm log: a payload of {n} bytes at {off} is cut "
                       f"short ({len(data) - off - 4} left)")
    return [bytes(p) for p in payloads]
