"""The shm channel with a guest: the rings read out of QEMU's RAM.

What QEMU is given per arch (a shared RAM file on pc; sun4u, whose RAM
ignores memory-backend= in QEMU 7.2, read through /proc/PID/mem); fib
traced over it on both arches with every call counted and no record on
the 16550; a host that stops reading leaves the guest answering, and every
record it lost is counted, in the STATS, the DROPS records and the
table's live count alike; shm is the default channel, its QEMU niced
below its consumer. The protocol's own cases are tests/test_shm.py.
"""

from __future__ import annotations

from bench import arches
from bench.guest.qemu import Guest
from bench.trace.session import open_session
from bench.trace.verify import accounting_problems, verify
from bench.wire import frames as wire

FIB_CALLS = 2 * 233 - 1                  # fib(12) makes 465 calls


def _args(g):
    return " ".join(g.args)


def test_qemu_gets_ram_the_host_can_read():
    g = Guest("i386", channel="shm")
    assert "memory-backend-file" in _args(g) and "share=on" in _args(g)
    assert f"mem-path={g._shm.path}" in _args(g)
    assert "memory-backend=tbram" in _args(g)
    assert "virtio-serial-pci" in _args(g)          # the port beside it
    g.close()
    sparc = Guest("sparc64", channel="shm")
    assert not arches.get("sparc64").ram_backend
    assert "memory-backend" not in _args(sparc)     # read from QEMU's own memory
    sparc.close()


def test_shm_is_the_default_and_its_qemu_runs_below_its_consumer():
    """The default channel where the harness starts QEMU is shm, and that
    QEMU runs niced (its vCPUs must not starve the consumer process that
    keeps the rings from filling); virtio's QEMU does not."""
    from bench.guest import qemu
    g = Guest("i386")
    assert g.channel == "shm"
    assert g.cmdline.startswith(f"nice -n {qemu.SHM_QEMU_NICE} "), g.cmdline
    g.close()
    v = Guest("i386", channel="virtio")
    assert not v.cmdline.startswith("nice"), v.cmdline
    v.close()


def _events_bytes(path):
    d = wire.Deframer()
    return sum(len(f.payload) for f in d.feed(path.read_bytes())
               if isinstance(f, wire.Frame) and f.type == wire.T_EVENTS)


def test_fib_traced_over_shm(arch, built):
    built(arch)
    with Guest(arch, label="channel-shm", channel="shm") as g:
        assert g.channel_used == "shm", (g.hello, g.channel_absent)
        s = open_session(g)
        s.setup("fbt:fib:entry,fbt:fib:return", arches.get(arch).default_mechanism)
        s.enable(True, strict=True)
        s.must("run fib n=12")
        s.enable(False)
        cap = s.finish()
        r = g.command("channel")
        g.exit(0)
    rep = verify(cap, s.probes, g.link_errors)
    assert rep.ok, rep.problems
    assert rep.entries["fib"] == rep.returns["fib"] == FIB_CALLS
    assert r.message.startswith("channel=shm"), r.message
    # Every record came out of RAM (frames made on the host, at no offset
    # of any stream), none over the 16550.
    events = [f for f in g.trace_frames if f.type == wire.T_EVENTS]
    assert events and all(f.offset == -1 for f in events)
    assert _events_bytes(g.serial_path) == 0
    assert g._shm.account()["subbuffers"] > 0


def test_a_stopped_consumer_leaves_the_guest_running_with_every_loss_counted(built):
    built("i386")
    with Guest("i386", label="channel-shm-stall", channel="shm",
               command_timeout=120) as g:
        s = open_session(g)
        s.setup("fbt:ct_*:entry,fbt:ct_*:return", "int3", buffer_bytes=8192)
        g.pause_channel(True)               # the consumer stops
        s.enable(True, strict=True)
        s.must("run calltree threads=2 iters=200")
        assert g.command("echo still here").message == "still here"
        s.enable(False)
        g.pause_channel(False)
        cap = s.finish()
        live = sum(g._shm.reader.discarded())
        g.exit(0)
    rep = verify(cap, s.probes, g.link_errors)
    assert rep.dropped > 0
    assert live == rep.dropped, (live, rep.dropped)
    # Every firing recorded, dropped or missed; every record sent decoded.
    assert not accounting_problems(cap, s.probes), accounting_problems(cap, s.probes)
    assert not [p for p in rep.problems if "the guest sent" in p], rep.problems
    assert 0 < rep.missed <= rep.dropped, (rep.missed, rep.dropped)
    assert not g.link_errors and not g._shm.error
    assert not rep.nesting_errors, rep.nesting_errors[:3]
