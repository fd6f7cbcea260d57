"""The serial framing, host side: deframing and the small payloads.

Every number and layout comes from include/wire.h through cdefs; this
file holds only the logic. Deframer.feed() takes bytes as they arrive and
returns what they completed, in order:

  Frame        a frame whose CRC matched
  LinkError    something on the line was wrong, with the stream offset:
                 'crc'   a frame-shaped run whose CRC did not match
                 'gap'   seq jumped: frames were lost (count = how many)
                 'junk'  bytes that belong to no frame (skipped while
                         resynchronising)

Resynchronisation: at any position that does not start a valid frame, the
deframer drops one byte and looks for the next magic, so a damaged frame
costs that frame only. A length field above WIRE_MAX_PAYLOAD cannot be a
frame, and is treated as damage at once rather than waited for.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from dataclasses import dataclass, field

from ..errors import ProtocolError
from . import cdefs

WIRE = cdefs.load("include/wire.h")
MAGIC = bytes([WIRE.const("WIRE_MAGIC0"), WIRE.const("WIRE_MAGIC1")])
VERSION = WIRE.const("WIRE_VERSION")
HEADER_SIZE = WIRE.const("WIRE_HEADER_SIZE")
CRC_SIZE = WIRE.const("WIRE_CRC_SIZE")
MAX_PAYLOAD = WIRE.const("WIRE_MAX_PAYLOAD")
MAX_COMMAND = WIRE.const("WIRE_MAX_COMMAND")

FRAME_TYPES = WIRE.by_name("WIRE_FRAME_TYPES")
FRAME_NAMES = {e.value: e.name for e in FRAME_TYPES.values()}
REPLY_STATUS = WIRE.by_name("WIRE_REPLY_STATUSES")
REPLY_NAMES = {e.value: e.name for e in REPLY_STATUS.values()}
BYTE_ORDERS = {e.value: e.name for e in WIRE.table("WIRE_BYTE_ORDERS")}
ARCH_IDS = {e.value: e.meaning for e in WIRE.table("WIRE_ARCHES")}
# Where the trace travels (HELLO's channel): value -> word ("serial", "virtio").
CHANNELS = {e.value: e.meaning for e in WIRE.table("WIRE_CHANNELS")}
CHANNEL_IDS = {e.meaning: e.value for e in WIRE.table("WIRE_CHANNELS")}
# The virtio port's name (QEMU virtserialport name=, libvirt <channel>).
VIRTIO_PORT = WIRE.by_name("WIRE_VIRTIO_PORTS")["TRACE"].meaning
# Frame types the guest sends on the virtio stream when it has one.
BULK_TYPES = tuple(e.value for e in WIRE.table("WIRE_BULK_FRAMES"))

T_HELLO = FRAME_TYPES["HELLO"].value
T_TEXT = FRAME_TYPES["TEXT"].value
T_REPLY = FRAME_TYPES["REPLY"].value
T_EXIT = FRAME_TYPES["EXIT"].value
T_RESULT = FRAME_TYPES["RESULT"].value
T_EVENTS = FRAME_TYPES["EVENTS"].value
T_STATS = FRAME_TYPES["STATS"].value
T_EXPECT = FRAME_TYPES["EXPECT"].value
T_FILL = FRAME_TYPES["FILL"].value
T_AGGS = FRAME_TYPES["AGGS"].value
T_PROBES = FRAME_TYPES["PROBES"].value
T_STACKS = FRAME_TYPES["STACKS"].value
# Kept with the capture, not shown: FILL rides with the trace so that the
# raw channel and the drain are read the same way on the host.
TRACE_TYPES = (T_EVENTS, T_STATS, T_EXPECT, T_FILL, T_AGGS, T_PROBES, T_STACKS)

# struct wire_frame_header, little-endian on every arch.
HEADER = WIRE.structs["wire_frame_header"]
if HEADER.size != HEADER_SIZE:
    raise cdefs.CdefsError("wire.h: struct wire_frame_header is not "
                           "WIRE_HEADER_SIZE bytes")


@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes
    offset: int                     # where it started in the stream

    @property
    def type_name(self) -> str:
        return FRAME_NAMES.get(self.type, f"type{self.type}")


@dataclass(frozen=True)
class LinkError:
    kind: str                       # 'crc' | 'gap' | 'junk'
    offset: int
    count: int                      # bytes (crc, junk) or lost frames (gap)
    detail: str = ""
    stream: str = "serial"          # which stream: "serial" or "virtio"

    def __str__(self) -> str:
        what = {"crc": "bytes in a frame with a bad CRC",
                "gap": "frames lost (sequence gap)",
                "junk": "bytes outside any frame"}[self.kind]
        extra = f": {self.detail}" if self.detail else ""
        on = f" on {self.stream}" if self.stream != "serial" else ""
        return (f"link {self.kind}{on} at byte {self.offset}: "
                f"{self.count} {what}{extra}")


def encode(ftype: int, seq: int, payload: bytes) -> bytes:
    """A frame exactly as the guest would send it (for tests and tools)."""
    head = HEADER.pack("<", magic=list(MAGIC), version=VERSION, type=ftype,
                       seq=seq & 0xffffffff, length=len(payload))
    body = head + payload
    return body + struct.pack("<I", zlib.crc32(body))


@dataclass
class Deframer:
    buf: bytearray = field(default_factory=bytearray)
    base: int = 0                   # stream offset of buf[0]
    next_seq: int | None = None
    junk_start: int | None = None
    junk_len: int = 0
    damaged_until: int = 0          # bytes before this belong to a bad frame
    frames: int = 0
    errors: list = field(default_factory=list)
    # The stream's name, carried by its errors: each stream (the 16550,
    # the virtio port) has its own deframer and its own seq.
    stream: str = "serial"
    ending: bool = False            # finish(): no more bytes will come

    def feed(self, data: bytes) -> list:
        self.buf += data
        out: list = []
        while True:
            item = self._step()
            if item is None:
                break
            out.extend(item)
        out = [self._named(e) for e in out]
        for e in out:
            if isinstance(e, LinkError):
                self.errors.append(e)
        return out

    def finish(self) -> list:
        """End of stream. A frame still waiting for bytes never gets them:
        its length may be the damage (a flipped bit in it claims a longer
        payload, swallowing the frames after it), so what it claimed is
        searched again, one byte on, for whole frames; what is left is a
        truncated frame or junk. Returns frames and errors, as feed()."""
        self.ending = True
        out: list = []
        while True:
            item = self._step()
            if item is None:
                break
            out.extend(item)
        out += self._flush_junk()
        if self.buf:
            out.append(LinkError("junk", self.base, len(self.buf),
                                 "stream ended inside a frame"))
            self.base += len(self.buf)
            self.buf.clear()
        out = [self._named(e) for e in out]
        self.errors.extend(e for e in out if isinstance(e, LinkError))
        return out

    def _named(self, item):
        if isinstance(item, LinkError) and item.stream != self.stream:
            return dataclasses.replace(item, stream=self.stream)
        return item

    def _flush_junk(self) -> list:
        if not self.junk_len:
            return []
        e = LinkError("junk", self.junk_start, self.junk_len)
        self.junk_start, self.junk_len = None, 0
        return [e]

    def _skip(self, n: int) -> None:
        counted = max(0, self.base + n - max(self.base, self.damaged_until))
        if counted:
            if self.junk_start is None:
                self.junk_start = self.base + n - counted
            self.junk_len += counted
        del self.buf[:n]
        self.base += n

    def _step(self):
        """One frame, one error, or None when more bytes are needed."""
        i = self.buf.find(MAGIC)
        if i < 0:
            # Keep a trailing first magic byte: it may start a frame.
            keep = 1 if self.buf[-1:] == MAGIC[:1] else 0
            if len(self.buf) > keep:
                self._skip(len(self.buf) - keep)
            return None
        if i:
            self._skip(i)
        if len(self.buf) < HEADER_SIZE:
            return None
        h = HEADER.unpack(bytes(self.buf[:HEADER_SIZE]), "<")
        version, ftype, seq, length = h["version"], h["type"], h["seq"], h["length"]
        if version != VERSION or length > MAX_PAYLOAD:
            self._skip(1)
            return []
        total = HEADER_SIZE + length + CRC_SIZE
        if len(self.buf) < total:
            if not self.ending:
                return None
            # It never completes: junk; resynchronise one byte on.
            self._skip(1)
            return []
        body = bytes(self.buf[:HEADER_SIZE + length])
        (crc,) = struct.unpack_from("<I", self.buf, HEADER_SIZE + length)
        if zlib.crc32(body) != crc:
            out = self._flush_junk()
            out.append(LinkError("crc", self.base, total,
                                 f"{FRAME_NAMES.get(ftype, ftype)} seq {seq}"))
            # Damage may have hit the length: resync one byte on, not total,
            # without reporting the rest of this frame again as junk.
            self.damaged_until = self.base + total
            self._skip(1)
            return out
        out = self._flush_junk()
        if self.next_seq is not None and seq != self.next_seq:
            lost = (seq - self.next_seq) & 0xffffffff
            out.append(LinkError("gap", self.base, lost,
                                 f"expected seq {self.next_seq}, got {seq}"))
        self.next_seq = (seq + 1) & 0xffffffff
        out.append(Frame(ftype, seq, bytes(body[HEADER_SIZE:]), self.base))
        del self.buf[:total]
        self.base += total
        self.frames += 1
        return out


# ---- payloads ----

def byte_order_of(hello_payload: bytes) -> str:
    """'<' or '>' from the first byte of a HELLO payload."""
    order = BYTE_ORDERS.get(hello_payload[0]) if hello_payload else None
    if order is None:
        raise ProtocolError(f"HELLO announces unknown byte order {hello_payload[:1]!r}")
    return "<" if order == "LITTLE" else ">"


def decode_hello(payload: bytes) -> dict:
    hello = WIRE.structs["wire_hello"].unpack(payload, byte_order_of(payload))
    hello["arch_name"] = ARCH_IDS.get(hello["arch"], f"arch{hello['arch']}")
    return hello


def decode_reply(payload: bytes, order: str) -> tuple[int, int, str]:
    s = WIRE.structs["wire_reply"]
    head = s.unpack(payload, order)
    return head["status"], head["command"], payload[s.size:].decode("utf-8", "replace")


def reply_channel_frames(payload: bytes, order: str) -> int:
    """How many frames the guest had put on the virtio stream before this
    REPLY (the host reads that stream up to them before taking it)."""
    return WIRE.structs["wire_reply"].unpack(payload, order)["channel_frames"]


def decode_exit(payload: bytes, order: str) -> int:
    return WIRE.structs["wire_exit"].unpack(payload, order)["status"]


def decode_result(payload: bytes, order: str) -> dict:
    s = WIRE.structs["wire_result"]
    res = s.unpack(payload, order)
    res["name"] = payload[s.size:].decode("utf-8", "replace")
    return res
