"""A guest's character device as a libvirt stream over the connection.

    port = Port("serial", "serial0")          # COM1; Port("channel", NAME) too
    s = ConsoleStream(conn, dom, port, uri)   # opened on a domain still paused
    s.read_chunk() -> bytes, b"" at its end;  s.write(data);  s.close()

libvirt carries a guest's console to the client as a virStream inside the
RPC connection (virDomainOpenConsole, and virDomainOpenChannel for a
<channel>), so the same code serves a daemon on this host and one at
qemu+tcp:// or qemu+ssh://: nothing but the libvirt connection crosses
between the hosts. The QEMU driver opens a console only on a pty device
and a channel only on a unix socket QEMU listens on (domain.xml holds
both kinds); each port of a guest is one more stream of the same kind.

The stream is non-blocking and read from libvirt's event loop (the
process's one loop thread, bench/guest/libvirt.py): the READABLE callback
drains it into a queue the guest's reader thread blocks on, so closing
never has to interrupt a blocking virStreamRecv. How the stream ended is
kept in `ended`: "closed" when QEMU closed the device (the guest stopped),
else the error libvirt gave (the daemon went away, the connection broke),
which the guest reports with the URI named.

The last bytes. QEMU writes a pty's bytes into the kernel at once, and a
guest that stops itself (isa-debug-exit, testdev) ends QEMU right after
its EXIT frame; the kernel discards what the daemon had not yet read from
the pty when the master side closes (seen here: the EXIT frame of 1 run in
8 lost under load). So QEMU also logs every byte of each port to a file
in the host's pool (<log file=...> in the domain), and once the domain
has stopped the guest reads that file back through the connection
(bench/guest/volumes.py) and takes what follows the stream's last 4 KiB
in it (`tail_from`). Not the whole log: it is not byte-exact (in one run
of 517 KB it held a 0x00 the guest never sent, a CRC error where the
stream was clean), so the stream stays the record and the frames' CRCs
judge the recovered tail like any other bytes. `received` and
`recovered` count both.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass

from ..errors import LaunchError

KINDS = ("serial", "channel")
WRITE_TIMEOUT_S = 30.0
LAST_BYTES = 4096


@dataclass(frozen=True)
class Port:
    kind: str       # "serial": a pty <serial> opened with openConsole;
                    # "channel": a unix <channel> opened with openChannel
    name: str       # the device's alias (serial0) or the channel's target name

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"port kind {self.kind!r}: one of {', '.join(KINDS)}")


COM1 = Port("serial", "serial0")


class ConsoleStream:
    def __init__(self, conn, dom, port: Port, uri: str):
        import libvirt
        self._lv = libvirt
        self.port, self.uri = port, uri
        self.ended: str | None = None
        self.received = 0            # bytes that came over the stream
        self.recovered = 0           # bytes that came from QEMU's log after
        self._last = b""              # the stream's last LAST_BYTES bytes
        self._q: queue.Queue = queue.Queue()
        self._callback = False
        self.stream = conn.newStream(libvirt.VIR_STREAM_NONBLOCK)
        try:
            if port.kind == "serial":
                dom.openConsole(port.name, self.stream,
                                libvirt.VIR_DOMAIN_CONSOLE_FORCE)
            else:
                dom.openChannel(port.name, self.stream,
                                libvirt.VIR_DOMAIN_CHANNEL_FORCE)
            self.stream.eventAddCallback(
                libvirt.VIR_STREAM_EVENT_READABLE | libvirt.VIR_STREAM_EVENT_ERROR
                | libvirt.VIR_STREAM_EVENT_HANGUP, self._on_event, None)
            self._callback = True
        except libvirt.libvirtError as e:
            self._abort()
            raise LaunchError(f"libvirt at {uri} could not open the guest's "
                              f"{port.kind} {port.name!r} as a stream: {e}") from None

    def _end(self, why: str) -> None:
        if self.ended is None:
            self.ended = why
        self._q.put(b"")
        if self._callback:
            self._callback = False
            try:
                self.stream.eventRemoveCallback()
            except self._lv.libvirtError:
                pass

    def _on_event(self, stream, events, opaque) -> None:
        lv = self._lv
        if self.ended is not None:
            return
        if events & lv.VIR_STREAM_EVENT_READABLE:
            while True:
                try:
                    data = stream.recv(65536)
                except lv.libvirtError as e:
                    return self._end(f"error: {e.get_error_message()}")
                if data == -2:          # drained for now
                    break
                if not data:
                    return self._end("closed")
                self.received += len(data)
                self._last = (self._last + data)[-LAST_BYTES:]
                self._q.put(data)
        if events & lv.VIR_STREAM_EVENT_ERROR:
            self._end("error: the stream reported an error")
        elif events & lv.VIR_STREAM_EVENT_HANGUP:
            self._end("closed")

    def read_chunk(self) -> bytes:
        """The next bytes the guest sent; b"" once the stream has ended
        (see `ended`). Blocks; the guest's deadlines are its caller's."""
        return self._q.get()

    def tail_from(self, log: bytes) -> bytes:
        """Given QEMU's log of this port: what follows, in the log, the last
        bytes the stream delivered — the bytes the stream lost at its end.
        ValueError if the stream's end is not in the log."""
        if not self.received:
            tail = log
        else:
            for n in (LAST_BYTES, 256, 32):     # shorter, past a stray byte
                pos = log.rfind(self._last[-n:])
                if pos >= 0:
                    break
            else:
                raise ValueError(f"the last bytes the {self.port.kind} "
                                 f"{self.port.name!r} stream delivered are not "
                                 f"in QEMU's log of it ({len(log)} bytes)")
            tail = log[pos + len(self._last[-n:]):]
        self.recovered = len(tail)
        return tail

    def write(self, data: bytes) -> None:
        """Send all of data; a stream that refuses ends it (the reader then
        sees the end and the guest says why)."""
        lv = self._lv
        deadline = time.monotonic() + WRITE_TIMEOUT_S
        view = memoryview(data)
        while view and self.ended is None:
            try:
                n = self.stream.send(bytes(view))
            except lv.libvirtError as e:
                return self._end(f"error: {e.get_error_message()}")
            if n == -2:                 # the connection's buffer is full
                if time.monotonic() > deadline:
                    return self._end(f"error: nothing could be sent for "
                                     f"{WRITE_TIMEOUT_S:g} s")
                time.sleep(0.005)
                continue
            view = view[n:]

    def _abort(self) -> None:
        try:
            self.stream.abort()
        except self._lv.libvirtError:
            pass

    def close(self) -> None:
        was_open = self.ended is None
        self._end(self.ended or "closed by the harness")
        if was_open:
            self._abort()
