"""What the tests of the recording paths share (test_opt_fast.py,
test_tramp_fast.py): a switch of the guest's poked and a word read back
through QEMU's GDB stub, and the same workloads traced once per setting,
each run verified lossless before its records are compared. Each test
then puts the records in its own comparable form (threads and stack
addresses are each run's own)."""

from bench.debug import rsp
from bench.trace.verify import verify

ENTRY, RETURN = 1, 2


def poke(g, s, name: str, value: int) -> None:
    """The 4-byte word at symbol `name` set to value (in the guest's byte
    order, as its HELLO gave it), the guest halted meanwhile."""
    order = "big" if g.byte_order == ">" else "little"
    with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
        stub.halt()
        stub.write_identity(s.image.symbols[name], value.to_bytes(4, order))
        stub.detach()


def peek(g, s, name: str, offset: int, n: int) -> bytes:
    with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
        stub.halt()
        raw = stub.read_identity(s.image.symbols[name] + offset, n)
        stub.detach()
    return raw


def sub_buffers(g, s, sb_on: int) -> bool:
    """Whether CPU 0's ring is in its sub-buffer form (tcpu[0].sb.on, at
    sb_on in struct tracer_cpu)."""
    return peek(g, s, "tcpu", sb_on, 1) != b"\0"


def probe_events(g, s, spec: str, mechanism: str, runs, buffer_bytes: int,
                 timeout: int) -> list:
    """Per `run LINE` of runs, the records of spec's probes, lossless
    and nested (verify()), holding both entries and returns."""
    out = []
    for line in runs:
        since = len(g.trace_frames)
        s.must("probe clear")
        s.setup(spec, mechanism, buffer_bytes=buffer_bytes)
        s.enable(True, strict=True)
        r = s.must(f"run {line}", timeout=timeout)
        s.enable(False)
        s.must("trace flush", timeout=120)
        cap = g.capture(since)
        assert r.ok
        rep = verify(cap, s.probes, g.link_errors)
        assert rep.ok and rep.missed == 0 and rep.dropped == 0, rep.problems
        ids = {p.id for p in s.probes}
        events = [e for e in cap.events if e.probe in ids]
        assert events and {e.kind for e in events} == {ENTRY, RETURN}
        out.append(events)
    return out
