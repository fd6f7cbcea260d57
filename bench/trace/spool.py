"""A first-in first-out of trace frames on disk: what a verifier slower than
the guest has not read yet waits in a file, not in memory.

The host verifies a 10^8-record run at some 800,000-950,000 records a
second of CPU (bench/trace/stream.py; 180,000-210,000 a record at a time), the
guest writes up to 900,000 a second, and the channel has no
backpressure (the guest never waits for the host): the difference has to
wait somewhere. Spool.put() appends frames to an unlinked temporary file
(type, seq and length, 9 bytes little-endian, then the payload: some 40
bytes a record on i386), get() reads them back in order, at most `most`
frames at a time; only the frames of one get() are in memory. One thread
uses it (bench/trace/stress.py's feeder), alternating put() and get().
"""

from __future__ import annotations

import os
import struct
import tempfile

from ..wire.frames import Frame

_HEAD = struct.Struct("<BII")       # type, seq, payload length


class Spool:
    def __init__(self, directory: str | None = None):
        fd, path = tempfile.mkstemp(prefix="trapbench-spool-", dir=directory)
        os.unlink(path)              # nothing is left however the run ends
        self.file = os.fdopen(fd, "w+b", buffering=0)
        self.written = self.read = 0     # bytes
        self.frames_in = self.frames_out = 0
        self.peak = 0                    # most bytes waiting at once

    def put(self, frames) -> None:
        parts = []
        for fr in frames:
            parts.append(_HEAD.pack(fr.type, fr.seq & 0xffffffff, len(fr.payload)))
            parts.append(bytes(fr.payload))
        data = b"".join(parts)
        self.file.seek(self.written)
        self.file.write(data)
        self.written += len(data)
        self.frames_in += len(frames)
        self.peak = max(self.peak, self.written - self.read)

    def get(self, most: int) -> list[Frame]:
        """Up to `most` frames, oldest first ([] when none waits)."""
        out = []
        self.file.seek(self.read)
        while len(out) < most and self.read < self.written:
            kind, seq, n = _HEAD.unpack(self.file.read(_HEAD.size))
            out.append(Frame(kind, seq, self.file.read(n), -1))
            self.read += _HEAD.size + n
        self.frames_out += len(out)
        if self.read == self.written:       # empty: start the file again
            self.file.truncate(0)
            self.read = self.written = 0
        return out

    def __len__(self) -> int:
        return self.frames_in - self.frames_out

    def close(self) -> None:
        self.file.close()
