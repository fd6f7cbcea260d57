"""bench/debug/rsp.py against a fake GDB stub on a socketpair: framing, acks and
resends, checksums, escapes and run-length codes, each command's packet and
reply, errors as exceptions. No QEMU here (tests/test_stub.py uses the real
stub)."""

import socket
import struct
import threading
import time

import pytest

from bench.debug import rsp


def _sum(b: bytes) -> bytes:
    return b"%02x" % (sum(b) & 0xFF)


def pkt(payload: bytes) -> bytes:
    return b"$" + payload + b"#" + _sum(payload)


class FakeStub:
    """Reads packets, checks them, answers from a script. `script` maps a
    received payload (bytes) to the raw bytes to send back (acks included),
    or a callable. Every packet received is recorded in `got`."""

    def __init__(self, script, ack: bool = True, naks: int = 0, on_nak=None):
        self.client_sock, self.sock = socket.socketpair()
        self.script = script
        self.ack = ack
        self.naks = naks              # packets to refuse with '-' first
        self.on_nak = on_nak          # what to send when the client NAKs
        self.got: list[bytes] = []
        self.raw = bytearray()
        self.acks = bytearray()       # + and - the client sent
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            self._loop()
        except OSError:          # the test closed a side: the fake is done
            pass

    def _loop(self):
        buf = bytearray()
        while True:
            try:
                chunk = self.sock.recv(4096)
            except OSError:
                return
            if not chunk:
                return
            self.raw += chunk
            buf += chunk
            while buf:
                if buf[0] in b"+-":
                    self.acks.append(buf[0])
                    if buf[0] == ord("-") and self.on_nak:
                        self.sock.sendall(self.on_nak())
                    del buf[0]
                    continue
                if buf[0] == 3:
                    del buf[0]
                    self.got.append(b"\x03")
                    self._answer(b"\x03")
                    continue
                end = buf.find(b"#")
                if buf[0] != 0x24 or end < 0 or len(buf) < end + 3:
                    break
                body = bytes(buf[1:end])
                assert bytes(buf[end + 1:end + 3]) == _sum(body), "client checksum"
                del buf[:end + 3]
                self.got.append(body)
                self._answer(body)

    def _answer(self, body: bytes):
        if self.naks and body != b"\x03":
            self.naks -= 1
            self.sock.sendall(b"-")
            return
        if self.ack and body != b"\x03":
            self.sock.sendall(b"+")
        r = self.script.get(body, None) if isinstance(self.script, dict) else self.script(body)
        if r is None:
            r = pkt(b"")
        if callable(r):
            r = r()
        if r:
            self.sock.sendall(r)

    def client(self, timeout=2.0):
        return rsp.RSPClient(self.client_sock, timeout=timeout)

    def close(self):
        self.sock.close()


def test_framing_and_checksum():
    assert rsp.frame(b"g") == b"$g#67"
    assert rsp.frame(b"m100,4") == b"$m100,4#" + _sum(b"m100,4")
    # $ # } * are escaped, the checksum covers the escaped bytes
    assert rsp.frame(b"a}b") == b"$a}]b#" + _sum(b"a}]b")
    assert rsp.unescape(b"a}]b") == b"a}b"
    assert rsp.unescape(b"0* ") == b"0" * 4            # ' ' = 32: 3 more
    assert rsp.unescape(b"ab*\"c") == b"ab" + b"b" * 5 + b"c"
    with pytest.raises(rsp.StubProtocolError, match="escape"):
        rsp.unescape(b"ab}")
    with pytest.raises(rsp.StubProtocolError, match="nothing to repeat"):
        rsp.unescape(b"* ")


def test_registers_memory_breakpoints():
    regs = struct.pack("<16I", *range(100, 116)).hex().encode() + b"xx" * 4
    stub = FakeStub({
        b"?": pkt(b"T05thread:01;"),
        b"g": pkt(regs),
        b"m1000,4": pkt(b"cc895590"),
        b"M2000,2:0f0b": pkt(b"OK"),
        b"Z0,102370,1": pkt(b"OK"),
        b"z0,102370,1": pkt(b"OK"),
        b"D": pkt(b"OK"),
    })
    with stub.client() as c:
        stop = c.halt_reason()
        assert (stop.kind, stop.signal, stop.values) == ("T", 5, {"thread": "01"})
        r = c.registers(("<I", ("eax", "ecx", "", "ebx")))
        assert r == {"eax": 100, "ecx": 101, "ebx": 103}
        assert len(c.read_registers()) == 16 * 4 + 4     # 'xx' reads as 00
        assert c.read_memory(0x1000, 4) == bytes.fromhex("cc895590")
        c.write_memory(0x2000, b"\x0f\x0b")
        c.insert_breakpoint(0x102370)
        c.remove_breakpoint(0x102370)
        c.detach()
    stub.thread.join(2)
    assert stub.got == [b"?", b"g", b"g", b"m1000,4", b"M2000,2:0f0b",
                        b"Z0,102370,1", b"z0,102370,1", b"D"]
    assert set(stub.acks) == {ord("+")}, "every reply acked"
    stub.close()


def test_memory_in_chunks_and_rle_reply():
    stub = FakeStub(lambda body: pkt(b"0* ") if body.startswith(b"m") else None)
    with stub.client() as c:
        assert c.read_memory(0x10, 6, chunk=2) == bytes(6)
    assert stub.got == [b"m10,2", b"m12,2", b"m14,2"]
    stub.close()


def test_resend_on_nak_and_bad_reply_checksum():
    # The stub NAKs the first copy: the client sends the packet again.
    stub = FakeStub({b"D": pkt(b"OK")}, naks=1)
    with stub.client() as c:
        c.detach()
    assert stub.got == [b"D", b"D"]
    stub.close()

    # Every copy NAKed: the client gives up after its retries, saying so.
    stub = FakeStub({b"D": pkt(b"OK")}, naks=99)
    with stub.client() as c:
        with pytest.raises(rsp.StubProtocolError, match="refused 'D' 4 times"):
            c.detach()
    stub.close()

    # A reply with a wrong checksum is NAKed; the resend is accepted.
    stub = FakeStub({b"D": b"$OK#00"}, on_nak=lambda: pkt(b"OK"))
    with stub.client() as c:
        c.detach()
    stub.thread.join(2)               # the client closed: the fake sees EOF
    assert bytes(stub.acks) == b"-+"
    stub.close()


def test_errors_are_exceptions():
    stub = FakeStub({b"m0,4": pkt(b"E14"), b"Z0,10,1": pkt(b""),
                     b"g": pkt(b"zz"), b"D": pkt(b"WHAT")})
    with stub.client() as c:
        with pytest.raises(rsp.StubErrorReply) as e:
            c.read_memory(0, 4)
        assert e.value.code == 0x14 and "m0,4" in str(e.value)
        with pytest.raises(rsp.StubUnsupported, match="Z0,10,1"):
            c.insert_breakpoint(0x10)
        with pytest.raises(rsp.StubProtocolError, match="not hex"):
            c.read_registers()
        with pytest.raises(rsp.StubProtocolError, match="expected OK"):
            c.detach()
    stub.close()


class TlbOnlyStub:
    """QEMU's sun4u stub: a virtual access whose page no TLB holds answers
    E14; in physical mode (Qqemu.PhyMemMode:1) the same address is RAM.
    `broken`: physical mode fails too (no fallback can help)."""

    def __init__(self, broken=False):
        self.physical = False
        self.broken = broken
        self.mem = bytearray(range(16))

    def __call__(self, body: bytes):
        if body.startswith(b"Qqemu.PhyMemMode:"):
            self.physical = body.endswith(b"1")
            return pkt(b"OK")
        if not self.physical or self.broken:
            return pkt(b"E14")
        if body.startswith(b"m"):
            a, n = (int(x, 16) for x in body[1:].split(b","))
            return pkt(self.mem[a:a + n].hex().encode())
        if body.startswith(b"M"):
            where, data = body[1:].split(b":")
            a = int(where.split(b",")[0], 16)
            self.mem[a:a + len(data) // 2] = bytes.fromhex(data.decode())
            return pkt(b"OK")
        return None


def test_identity_mapped_memory_falls_back_to_physical_and_back():
    fake = TlbOnlyStub()
    stub = FakeStub(fake)
    with stub.client() as c:
        assert c.read_identity(4, 2) == bytes([4, 5])
        assert not fake.physical          # virtual mode again for what follows
        c.write_identity(8, b"\xaa")
        assert fake.mem[8] == 0xaa and not fake.physical
        with pytest.raises(rsp.StubErrorReply):
            c.read_memory(4, 2)           # the plain read does not fall back
    assert stub.got[:4] == [b"m4,2", b"Qqemu.PhyMemMode:1", b"m4,2", b"Qqemu.PhyMemMode:0"]
    stub.close()

    # Physical memory refused too: the error is the caller's, mode restored.
    fake = TlbOnlyStub(broken=True)
    stub = FakeStub(fake)
    with stub.client() as c:
        with pytest.raises(rsp.StubErrorReply, match="m4,2"):
            c.read_identity(4, 2)
    assert not fake.physical and stub.got[-1] == b"Qqemu.PhyMemMode:0"
    stub.close()


def test_timeout_garbage_and_closed():
    stub = FakeStub({b"?": b""})           # acked, never answered
    with stub.client(timeout=0.3) as c:
        with pytest.raises(rsp.StubTimeout, match="reply to '\\?'"):
            c.halt_reason()
    stub.close()

    stub = FakeStub({b"?": b"garbage"})
    with stub.client() as c:
        with pytest.raises(rsp.StubProtocolError, match="expected a packet"):
            c.halt_reason()
    stub.close()

    stub = FakeStub({b"?": pkt(b"Q99")})
    with stub.client() as c:
        with pytest.raises(rsp.StubProtocolError, match="not a stop reply"):
            c.halt_reason()
    stub.close()

    stub = FakeStub({})
    c = stub.client()
    stub.sock.close()
    with pytest.raises(rsp.StubClosed):
        c.halt_reason()
    c.close()

    with pytest.raises(rsp.StubError, match="cannot connect"):
        rsp.RSPClient.connect_unix("/nonexistent/stub.sock")


def test_continue_interrupt_stop():
    stub = FakeStub({b"c": b"", b"\x03": pkt(b"T02thread:01;")})
    with stub.client() as c:
        c.cont()
        stop = c.interrupt()
        assert (stop.kind, stop.signal) == ("T", 2)
    assert stub.got == [b"c", b"\x03"]
    stub.close()

    stub = FakeStub({b"c": pkt(b"W00")})
    with stub.client() as c:
        c.cont()
        assert c.wait_stop().exited
    stub.close()


def test_halt_running_or_stopped():
    # Running: the interrupt brings the stop reply.
    stub = FakeStub({b"\x03": pkt(b"T02thread:01;")})
    with stub.client() as c:
        assert c.halt(settle=1).signal == 2
    assert stub.got == [b"\x03"]
    stub.close()
    # Already stopped: nothing answers the interrupt, so '?' asks.
    stub = FakeStub({b"\x03": b"", b"?": pkt(b"S05")})
    with stub.client() as c:
        stop = c.halt(settle=0.2)
        assert (stop.kind, stop.signal) == ("S", 5)
    assert stub.got == [b"\x03", b"?"]
    stub.close()
    # Running, but its stop reply later than halt() waits: it comes
    # before the ack of '?' (seen under load), is acked and kept; '?'
    # gets its own answer.
    stub = FakeStub({b"\x03": b"", b"?": pkt(b"T02thread:01;") + b"+" + pkt(b"T05thread:01;")},
                    ack=False)
    with stub.client() as c:
        stop = c.halt(settle=0.2)
        assert (stop.kind, stop.signal) == ("T", 5)
        assert [s.signal for s in c.late_stops] == [2]
    deadline = time.monotonic() + 5          # the fake's thread reads the acks
    while len(stub.acks) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stub.got == [b"\x03", b"?"] and bytes(stub.acks) == b"++", stub.acks
    stub.close()
    # Any other packet before an ack is still an error.
    stub = FakeStub({b"?": pkt(b"OK") + b"+" + pkt(b"S05")}, ack=False)
    with stub.client() as c:
        with pytest.raises(rsp.StubProtocolError, match="got the packet 'OK'"):
            c.halt_reason()
    stub.close()
