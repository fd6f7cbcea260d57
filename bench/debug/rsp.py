"""A small GDB Remote Serial Protocol client: the harness reads guest state
through QEMU's GDB stub without running gdb.

    with RSPClient.connect_unix(guest.wait_gdb_socket()) as stub:
        stop = stub.halt()                 # Ctrl-C, or '?' if it was stopped
        regs = stub.registers("i386")      # 'g', decoded (arches.Arch.gdb_registers)
        code = stub.read_memory(addr, 4)   # 'm'
        stub.detach()                      # 'D': the guest runs on

Theory of operation. A packet is `$payload#cc`, cc the sum of the payload
bytes mod 256 in two hex digits; the receiver answers `+` (good) or `-`
(resend). QEMU's stub has no QStartNoAckMode, so acks are always on: every
packet we send waits for its `+` (a `-` resends it, a few times at most),
and every packet we receive is checked and acked. Replies may escape bytes
(`}` then byte ^ 0x20) and run-length encode (`X*n`: X repeated n - 29 more
times); both are undone before a reply is returned. An empty reply means
"not supported"; `Enn` is an error, raised as StubErrorReply with its
number. `c` has no reply until the target stops again: cont() only sends,
wait_stop() reads the stop reply (`S`/`T` packets; `W`/`X` say the target
is gone). An interrupt is the bare byte 0x03 outside any packet; QEMU drops the
first byte that reaches a running VM (it only stops it), so a session
with a guest that may be running starts with halt().

Every read has a deadline (StubTimeout); anything malformed raises
StubProtocolError naming what arrived. The socket is any connected stream
socket, so the unit tests talk to a fake stub on a socketpair.
"""

from __future__ import annotations

import re
import socket
import struct
import time
from dataclasses import dataclass, field

from ..errors import BenchError

INTERRUPT = b"\x03"


class StubError(BenchError):
    """Talking to a GDB stub failed."""


class StubTimeout(StubError):
    pass


class StubProtocolError(StubError):
    pass


class StubClosed(StubError):
    pass


class StubErrorReply(StubError):
    def __init__(self, command: str, code: int):
        super().__init__(f"the stub answered {command!r} with error E{code:02x}")
        self.command = command
        self.code = code


class StubUnsupported(StubError):
    def __init__(self, command: str):
        super().__init__(f"the stub does not support {command!r} (empty reply)")
        self.command = command


def checksum(payload: bytes) -> int:
    return sum(payload) & 0xFF


def frame(payload: bytes) -> bytes:
    """`$payload#cc`, with $ # } * escaped in the payload."""
    out = bytearray()
    for b in payload:
        if b in b"$#}*":
            out += bytes((0x7D, b ^ 0x20))
        else:
            out.append(b)
    return b"$" + bytes(out) + b"#" + b"%02x" % checksum(bytes(out))


def unescape(data: bytes) -> bytes:
    """Undo `}` escapes and `*` run-length encoding of a received payload."""
    out = bytearray()
    i = 0
    while i < len(data):
        b = data[i]
        if b == 0x7D:
            if i + 1 >= len(data):
                raise StubProtocolError(f"payload ends inside an escape: {data[-20:]!r}")
            out.append(data[i + 1] ^ 0x20)
            i += 2
        elif b == 0x2A:
            if not out or i + 1 >= len(data):
                raise StubProtocolError(f"run-length code with nothing to repeat: "
                                        f"{data[:40]!r}")
            out += bytes((out[-1],)) * (data[i + 1] - 29)
            i += 2
        else:
            out.append(b)
            i += 1
    return bytes(out)


@dataclass
class StopReply:
    """A stop packet: S05, T05thread:01;..., W00 (exited), X09 (killed)."""
    kind: str                  # 'S', 'T', 'W' or 'X'
    signal: int
    raw: str
    values: dict = field(default_factory=dict)   # T packet's n:r pairs

    @property
    def exited(self) -> bool:
        return self.kind in "WX"


def parse_stop(reply: str) -> StopReply:
    m = re.fullmatch(r"([STWX])([0-9a-fA-F]{2})(.*)", reply, re.S)
    if not m:
        raise StubProtocolError(f"not a stop reply: {reply[:80]!r}")
    values = {}
    if m.group(1) == "T":
        for pair in filter(None, m.group(3).split(";")):
            k, _, v = pair.partition(":")
            values[k] = v
    return StopReply(m.group(1), int(m.group(2), 16), reply, values)


class RSPClient:
    def __init__(self, sock: socket.socket, timeout: float = 10.0, retries: int = 3):
        self.sock = sock
        self.timeout = timeout
        self.retries = retries
        self._buf = bytearray()
        self.log: list[str] = []       # packets both ways, for error messages
        self.late_stops: list[StopReply] = []   # _read_ack's

    @classmethod
    def connect_unix(cls, path, timeout: float = 10.0) -> "RSPClient":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(timeout)
            s.connect(str(path))
        except OSError as e:
            s.close()
            raise StubError(f"cannot connect to the GDB stub at {path}: {e}") from None
        return cls(s, timeout)

    @classmethod
    def connect_tcp(cls, host: str, port: int, timeout: float = 10.0) -> "RSPClient":
        try:
            s = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise StubError(f"cannot connect to the GDB stub at {host}:{port}: {e}") from None
        return cls(s, timeout)

    def __enter__(self) -> "RSPClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    # ---- bytes ----

    def _fill(self, deadline: float, what: str) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise StubTimeout(f"no {what} from the GDB stub within {self.timeout} s"
                              + self._recent())
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise StubTimeout(f"no {what} from the GDB stub within {self.timeout} s"
                              + self._recent()) from None
        except OSError as e:
            raise StubClosed(f"GDB stub connection failed: {e}") from None
        if not chunk:
            raise StubClosed(f"the GDB stub closed the connection while we waited "
                             f"for {what}" + self._recent())
        self._buf += chunk

    def _recent(self) -> str:
        return ("; last packets: " + " | ".join(self.log[-4:])) if self.log else ""

    def _write(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise StubClosed(f"cannot write to the GDB stub: {e}") from None

    def _read_ack(self, deadline: float, packet: bytes) -> bool:
        """True for '+', False for '-'. A stop reply before it is the
        stub's answer to an interrupt that came later than halt() waited
        (a loaded host: QEMU sent it before it read our packet); it is
        acked and kept in late_stops. Other stray bytes are errors."""
        while True:
            while not self._buf:
                self._fill(deadline, f"ack for {packet[:40]!r}")
            b = self._buf[0]
            if b == 0x24:
                reply = self._read_packet(deadline, f"a packet before the ack for "
                                                    f"{packet[:40]!r}")
                if not re.match(r"[ST][0-9a-fA-F]{2}", reply):
                    raise StubProtocolError(f"expected + or - after {packet[:40]!r}, "
                                            f"got the packet {reply[:40]!r}")
                self.late_stops.append(parse_stop(reply))
                continue
            del self._buf[0]
            if b == 0x2B:
                return True
            if b == 0x2D:
                return False
            raise StubProtocolError(f"expected + or - after {packet[:40]!r}, got "
                                    f"{bytes([b])!r} then {bytes(self._buf[:40])!r}")

    def _read_packet(self, deadline: float, what: str) -> str:
        """One `$...#cc` packet (acked), its payload unescaped and decoded."""
        bad = 0
        while True:
            # Skip acks left over and '%' notifications' lead-in is not used
            # by QEMU; anything else before '$' is garbage.
            while True:
                while not self._buf:
                    self._fill(deadline, what)
                if self._buf[0] in b"+":
                    del self._buf[0]
                    continue
                if self._buf[0] != 0x24:
                    raise StubProtocolError(f"expected a packet ($) as {what}, got "
                                            f"{bytes(self._buf[:40])!r}")
                break
            while True:
                end = self._buf.find(b"#")
                if end >= 0 and len(self._buf) >= end + 3:
                    break
                self._fill(deadline, what)
            body = bytes(self._buf[1:end])
            sent = bytes(self._buf[end + 1:end + 3])
            del self._buf[:end + 3]
            try:
                ok = int(sent, 16) == checksum(body)
            except ValueError:
                ok = False
            if ok:
                self._write(b"+")
                text = unescape(body).decode("latin-1")
                self.log.append(f"<- {text[:60]}")
                return text
            bad += 1
            self.log.append(f"<- bad checksum {sent!r} for {body[:40]!r}")
            if bad > self.retries:
                raise StubProtocolError(f"{bad} packets with bad checksums as {what}"
                                        + self._recent())
            self._write(b"-")

    # ---- packets ----

    def send(self, payload: str) -> None:
        """Send one packet and wait for its ack, resending on '-'."""
        pkt = frame(payload.encode("latin-1"))
        deadline = time.monotonic() + self.timeout
        self.log.append(f"-> {payload[:60]}")
        for _ in range(self.retries + 1):
            self._write(pkt)
            if self._read_ack(deadline, pkt):
                return
        raise StubProtocolError(f"the stub refused {payload[:40]!r} "
                                f"{self.retries + 1} times (bad checksum?)")

    def request(self, payload: str, timeout: float | None = None) -> str:
        """Send a packet, return the reply's payload. Enn raises."""
        self.send(payload)
        deadline = time.monotonic() + (timeout or self.timeout)
        reply = self._read_packet(deadline, f"the reply to {payload[:40]!r}")
        if re.fullmatch(r"E[0-9a-fA-F]{2}", reply):
            raise StubErrorReply(payload[:40], int(reply[1:], 16))
        return reply

    def _ok(self, payload: str) -> None:
        reply = self.request(payload)
        if reply == "":
            raise StubUnsupported(payload)
        if reply != "OK":
            raise StubProtocolError(f"expected OK to {payload!r}, got {reply[:80]!r}")

    # ---- commands ----

    def halt(self, settle: float = 2.0) -> StopReply:
        """Stop the target whether it runs or not. QEMU's stub, while the VM
        runs, takes the first byte it receives as "stop" and discards it
        (then sends a stop reply of its own), so a packet sent to a running
        guest is lost; an interrupt is the safe first word. A target that
        was already stopped sends nothing for it: then `?` asks."""
        self.log.append("-> ^C")
        self._write(INTERRUPT)
        try:
            return self.wait_stop(settle)
        except StubTimeout:
            return self.halt_reason()

    def halt_reason(self) -> StopReply:
        return parse_stop(self.request("?"))

    def read_registers(self) -> bytes:
        reply = self.request("g")
        try:
            # QEMU sends 'xx' for registers it cannot read; they read as 0.
            return bytes.fromhex(reply.replace("xx", "00"))
        except ValueError:
            raise StubProtocolError(f"'g' reply is not hex: {reply[:80]!r}") from None

    def registers(self, layout) -> dict[str, int]:
        """'g' decoded with an arches.Arch.gdb_registers layout:
        (struct format of one register, names in order, or '' to skip)."""
        fmt, names = layout
        raw = self.read_registers()
        size = struct.calcsize(fmt)
        if len(raw) < size * len(names):
            raise StubProtocolError(f"'g' gave {len(raw)} bytes, the layout needs "
                                    f"{size * len(names)}")
        return {n: struct.unpack_from(fmt, raw, i * size)[0]
                for i, n in enumerate(names) if n}

    def read_memory(self, addr: int, length: int, chunk: int = 0x200) -> bytes:
        out = bytearray()
        while len(out) < length:
            n = min(chunk, length - len(out))
            a = addr + len(out)
            reply = self.request(f"m{a:x},{n:x}")
            try:
                data = bytes.fromhex(reply)
            except ValueError:
                raise StubProtocolError(f"'m' reply is not hex: {reply[:80]!r}") from None
            if not data:
                raise StubProtocolError(f"'m{a:x},{n:x}' returned no bytes")
            out += data
        return bytes(out)

    def write_memory(self, addr: int, data: bytes) -> None:
        self._ok(f"M{addr:x},{len(data):x}:{data.hex()}")

    def read_identity(self, addr: int, length: int) -> bytes:
        """read_memory of memory mapped at its own physical address (the
        guest kernel's, mmu.c): QEMU's sun4u stub translates a virtual
        address through the TLBs alone, so a page no TLB entry holds at
        the halt answers an error (which page that is depends on what ran
        last); the same address is then read as physical memory."""
        return self._identity(lambda: self.read_memory(addr, length))

    def write_identity(self, addr: int, data: bytes) -> None:
        """write_memory of identity-mapped memory, as read_identity reads."""
        self._identity(lambda: self.write_memory(addr, data))

    def _identity(self, access):
        try:
            return access()
        except StubErrorReply:
            self.set_physical(True)
            try:
                return access()
            finally:
                self.set_physical(False)

    def set_physical(self, on: bool) -> None:
        """QEMU's Qqemu.PhyMemMode: m/M address physical memory (on) or
        virtual memory through the CPU's MMU (off, the default)."""
        self._ok(f"Qqemu.PhyMemMode:{1 if on else 0}")

    def insert_breakpoint(self, addr: int, kind: int = 1) -> None:
        """Z0: a software breakpoint (kind: the breakpoint's size in bytes)."""
        self._ok(f"Z0,{addr:x},{kind:x}")

    def remove_breakpoint(self, addr: int, kind: int = 1) -> None:
        self._ok(f"z0,{addr:x},{kind:x}")

    def cont(self) -> None:
        """Resume; the stop reply comes later (wait_stop)."""
        self.send("c")

    def wait_stop(self, timeout: float | None = None) -> StopReply:
        deadline = time.monotonic() + (timeout or self.timeout)
        return parse_stop(self._read_packet(deadline, "a stop reply"))

    def interrupt(self, timeout: float | None = None) -> StopReply:
        """Ctrl-C: stop a running target; returns its stop reply."""
        self.log.append("-> ^C")
        self._write(INTERRUPT)
        return self.wait_stop(timeout)

    def detach(self) -> None:
        """Remove our breakpoints and let the target run on."""
        self._ok("D")
