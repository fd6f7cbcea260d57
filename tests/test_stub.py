"""The harness's own RSP client (bench/debug/rsp.py) against QEMU's real GDB stub,
on every arch: probed sites read through the stub after a run — a disabled
probe left the compiler's instruction, an enabled one shows the trap — and
a breakpoint in the probe fire path (Z0, c, the stop, g) and Ctrl-C."""

import threading

import pytest

from bench import arches
from bench.debug import rsp, sitecheck
from bench.trace.session import open_session
from bench.guest.qemu import Guest


def _probes(a):
    return "fbt:fib:entry,fbt:fib:return" + (",branch:fib" if a.branch_provider else "")


def test_sites_after_a_run(arch, built):
    built(arch)
    a = arches.get(arch)
    mechanism = a.default_mechanism
    with Guest(a, label="stub-sites", gdbstub=True) as g:
        s = open_session(g)
        s.setup(_probes(a), mechanism)
        s.enable(True, strict=True)
        ids = [p.id for p in s.probes]
        enabled = set(ids[::2])
        disabled = [i for i in ids if i not in enabled]
        assert enabled and disabled, ids
        s.must("probe disable " + " ".join(map(str, disabled)))
        assert s.must("run fib n=8").message == "fib = 21"

        states = sitecheck.read_sites(g, s.image, s.probes, mechanism, enabled)
        for st in states:
            print(st.describe())
        assert [st.probe.id for st in states] == ids
        bad = [st.describe() for st in states if not st.ok]
        assert not bad, "\n".join(bad)
        for st in states:
            assert st.original != st.trap, st.describe()
            assert st.got == (st.trap if st.enabled else st.original), st.describe()
            # The check can fail: the same bytes under the other state.
            flipped = sitecheck.SiteState(st.probe, not st.enabled, st.original,
                                          st.trap, st.got)
            assert not flipped.ok, flipped.describe()

        # Detached, the guest runs on: the enabled probes still fire.
        assert s.must("run fib n=8").message == "fib = 21"
        s.enable(False)
        after = sitecheck.read_sites(g, s.image, s.probes, mechanism, set())
        assert all(st.ok and st.got == st.original for st in after), \
            [st.describe() for st in after if not st.ok]
        g.exit(0)


def test_breakpoint_in_fire_path_and_interrupt(arch, built):
    built(arch)
    a = arches.get(arch)
    with Guest(a, label="stub-break", gdbstub=True) as g:
        s = open_session(g)
        s.setup("fbt:fib:entry", a.default_mechanism)
        s.enable(True, strict=True)
        fire = s.image.symbols[a.fire_path]
        site = s.probes[0].addr
        replies = []
        with rsp.RSPClient.connect_unix(g.wait_gdb_socket(), timeout=60) as stub:
            stop = stub.halt()
            assert not stop.exited, stop
            stub.insert_breakpoint(fire)
            stub.cont()
            t = threading.Thread(target=lambda: replies.append(g.command("run fib n=5")))
            t.start()
            stop = stub.wait_stop(60)
            assert (stop.kind, stop.signal) in (("T", 5), ("S", 5)), stop.raw
            regs = stub.registers(a.gdb_registers)
            pc = regs.get("eip", regs.get("pc"))
            assert pc == fire, f"stopped at {pc:#x}, fire path at {fire:#x}"
            # The armed site under the stub: the trap, not the compiler's code.
            trap = bytes.fromhex(a.probe_trap[a.default_mechanism].format(id=0))
            assert sitecheck.read_code(stub, site, len(trap)) == trap
            assert s.image.code(site, len(trap)) != trap
            with pytest.raises(rsp.StubErrorReply):
                stub.read_memory(0xFFFFF000 if a.name == "i386" else 0xB0000000, 4)
            stub.remove_breakpoint(fire)
            stub.cont()
            t.join(60)
            assert replies and replies[0].message == "fib = 5", replies
            stop = stub.interrupt(10)          # Ctrl-C while it idles
            assert stop.signal == 2, stop.raw
            stub.detach()
        assert g.command("run fib n=5").message == "fib = 5"
        g.exit(0)
