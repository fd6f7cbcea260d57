"""Disarming is a quiescence point: once `probe disable` answers, no firing
of the probes it disabled is counted or recorded, so the counters `trace
flush` sends afterwards are final (tracer.h's tracer_late). A trap at a
probe no longer enabled — a CPU that still runs the trap after the disarm:
a vCPU held between its trap and its lookup, or QEMU's TCG running a
translation made while the original was stored back (seen as a few records
more than the guest counted, about one whole-kernel run in three under ud
on 4 CPUs) — is late: its instruction still runs, it is counted apart.

The stale trap is made on demand and deterministic here: after the disable
answered, the test writes the int3 back over ct_add's first byte through
QEMU's GDB stub and runs calltree again, so every call of ct_add traps at
a disabled probe. late_broken (set the same way) counts and records such a
trap as a firing, as the tracer did before: the counters then move after
the disable answered, which the test catches."""

import re

from bench import arches
from bench.debug import rsp
from bench.guest.qemu import Guest
from bench.trace.session import open_session
from bench.trace.verify import verify

INT3 = b"\xcc"


def _poke(g, addr, data):
    with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
        stub.halt()
        before = stub.read_memory(addr, len(data))
        stub.write_memory(addr, data)
        stub.detach()
    return before


def _counts(message):
    m = re.search(r"fired=(\d+) late=(\d+)", message)
    assert m, message
    return int(m[1]), int(m[2])


def _stale_trap_run(built, broken):
    """calltree under ct_* probes; disabled; then calltree again with
    ct_add's entry trapping at its disabled probe. The `trace stats`
    counts (fired, late) before and after, the second run's reply, and the
    capture's verdict."""
    built("i386")
    with Guest(arches.get("i386"), label="late", gdbstub=True) as g:
        s = open_session(g)
        s.setup("fbt:ct_*:entry,fbt:ct_*:return", "int3", buffer_bytes=1 << 20)
        s.enable(True)
        if broken:
            _poke(g, s.image.symbols["late_broken"], (1).to_bytes(4, "little"))
        armed = s.arm_window()
        assert s.cmd("run calltree threads=2 iters=10").ok
        window = (armed, s.disarm_window())
        before = _counts(s.must("trace stats").message)
        site = next(p.addr for p in s.probes
                    if p.function == "ct_add" and p.kind == "entry")
        original = _poke(g, site, INT3)
        assert original != INT3, "ct_add still armed after `probe disable all`"
        again = s.cmd("run calltree threads=2 iters=10")
        after = _counts(s.must("trace stats").message)
        _poke(g, site, original)
        cap = s.finish()
        g.exit(0)
    rep = verify(cap, s.probes, g.link_errors, refused=s.refused, window=window)
    return before, after, again, rep


def test_a_trap_after_the_disarm_is_late_and_a_counted_one_is_caught(built):
    before, after, again, rep = _stale_trap_run(built, broken=False)
    # calltree ran right through the stale traps (each ran ct_add's push).
    assert again.ok, again.message
    # Not one firing counted after the disable answered; the traps are late.
    assert after[0] == before[0], (before, after)
    assert after[1] - before[1] >= 100, (before, after)
    # Every firing accounted for, none after the snapshot. (calltree's own
    # call counts take in the second run too, which no probe saw.)
    assert [p for p in rep.problems if "the workload counted" not in p] == [], \
        rep.problems
    # Broken: the same traps counted and recorded as firings.
    before, after, again, _ = _stale_trap_run(built, broken=True)
    assert again.ok, again.message
    assert after[0] - before[0] >= 100 and after[1] == before[1], (before, after)
