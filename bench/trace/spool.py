"""A first-in first-out of trace frames on disk: what a verifier slower than
the guest has not read yet waits in a file, not in memory.

The host verifies a 10^8-record run at some 800,000-950,000 records a
second of CPU (bench/trace/stream.py; 180,000-210,000 a record at a time), the
guest writes up to 900,000 a second, and the channel has no
backpressure (the guest never waits for the host): the difference has to
wait somewhere. Spool.put() appends frames to an unlinked temporary file
(type, seq and length, 9 bytes little-endian, then the payload: some 40
bytes a record on i386), get() reads them back, at most `most` frames at a
time; only the frames of one get() are in memory. One thread uses it
(bench/trace/stress.py's feeder), alternating put() and get().

Given a `key` (frame -> (cpu, first cycle), or None for a frame of no
CPU), get() hands the frames back merged by CPU instead of as they came: a
CPU's frames in their own order, the CPU whose next frame starts earliest
first, and a frame of no CPU once every CPU frame that came before it has
gone. Frames come as the channel completes them: a CPU that records
little fills its sub-buffer late (at the end of a run, the last of its
threads), so in arrival order its records trail the others' by millions
and a verifier that merges by cycle must hold all of those; merged here,
it holds about one frame per CPU.
"""

from __future__ import annotations

import heapq
import os
import struct
import tempfile
from collections import deque

from ..wire.frames import Frame

_HEAD = struct.Struct("<BII")       # type, seq, payload length


class Spool:
    def __init__(self, directory: str | None = None, key=None):
        fd, path = tempfile.mkstemp(prefix="trapbench-spool-", dir=directory)
        os.unlink(path)              # nothing is left however the run ends
        self.file = os.fdopen(fd, "w+b", buffering=0)
        self.written = self.read = 0     # bytes
        self.frames_in = self.frames_out = 0
        self.peak = 0                    # most bytes waiting at once
        self.key = key
        # Merged order (key): each CPU's frames waiting, (first cycle,
        # arrival, offset), and the frames of no CPU, (arrival, offset).
        self.cpus: dict[int, deque] = {}
        self.others: deque = deque()
        self.arrivals = 0

    def put(self, frames) -> None:
        parts, at = [], self.written
        for fr in frames:
            head = _HEAD.pack(fr.type, fr.seq & 0xffffffff, len(fr.payload))
            if self.key is not None:
                self._index(fr, at)
            parts.append(head)
            parts.append(bytes(fr.payload))
            at += len(head) + len(fr.payload)
        data = b"".join(parts)
        self.file.seek(self.written)
        self.file.write(data)
        self.written += len(data)
        self.frames_in += len(frames)
        self.peak = max(self.peak, self.written - self.read)

    def _index(self, fr, at: int) -> None:
        k = self.key(fr)
        arrival = self.arrivals
        self.arrivals += 1
        if k is None:
            self.others.append((arrival, at))
            return
        cpu, first = k
        q = self.cpus.setdefault(cpu, deque())
        if first is None:           # no record: keep its place in its CPU's order
            first = q[-1][0] if q else -1
        q.append((first, arrival, at))

    def get(self, most: int) -> list[Frame]:
        """Up to `most` frames, oldest first, or merged by CPU (key);
        [] when none waits."""
        if self.key is not None:
            return self._get_merged(most)
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

    def _get_merged(self, most: int) -> list[Frame]:
        out = []
        heads = [(q[0][0], q[0][1], cpu) for cpu, q in self.cpus.items() if q]
        heapq.heapify(heads)
        while len(out) < most and (heads or self.others):
            # A frame of no CPU goes once no CPU frame that came before it waits.
            oldest_cpu_frame = min((self.cpus[c][0][1] for _, _, c in heads),
                                   default=None)
            if self.others and (oldest_cpu_frame is None
                                or self.others[0][0] < oldest_cpu_frame):
                out.append(self._read_at(self.others.popleft()[1]))
                continue
            _, _, cpu = heapq.heappop(heads)
            q = self.cpus[cpu]
            out.append(self._read_at(q.popleft()[2]))
            if q:
                heapq.heappush(heads, (q[0][0], q[0][1], cpu))
        self.frames_out += len(out)
        if self.frames_out == self.frames_in:   # empty: start the file again
            self.file.truncate(0)
            self.read = self.written = 0
        return out

    def _read_at(self, at: int) -> Frame:
        self.file.seek(at)
        kind, seq, n = _HEAD.unpack(self.file.read(_HEAD.size))
        self.read += _HEAD.size + n
        return Frame(kind, seq, self.file.read(n), -1)

    def __len__(self) -> int:
        return self.frames_in - self.frames_out

    def close(self) -> None:
        self.file.close()
