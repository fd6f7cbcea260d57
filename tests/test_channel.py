"""The trace channel: a virtio-console port beside the 16550.

What the harness asks QEMU for, per arch and --channel; a sparc64 guest
finds the device behind simba B, reads its config in its own byte order
and traces over it; in an i386 guest:
fib traced over the virtio port with every call counted and the records
on that stream only; a guest started without the device falls back to
the 16550 and says why, and refuses `channel virtio`; both channels in one
boot, each stream with its own seq; a byte flipped and bytes cut on the
virtio stream found as on the serial one; and a host that stops reading
the port does not wedge the command line, its losses all counted; and a
ring past half full wakes its drain before the tick, on both arches.
Throughput is the bench's (`make bench`: the drain rows), not a test's."""

import time

import pytest

from bench import arches
from bench.errors import UsageError
from bench.guest.qemu import Guest
from bench.trace.session import open_session
from bench.trace.verify import accounting_problems, verify
from bench.wire import frames as wire
from bench.wire import records

ARCH = "i386"
FIB_CALLS = 2 * 233 - 1                  # fib(12) makes 465 calls


@pytest.fixture(scope="module")
def i386(built):
    built(ARCH)
    return arches.get(ARCH)


def _args(g):
    return " ".join(g.args)


def test_qemu_gets_the_port_the_guest_looks_for():
    g = Guest("i386", channel="virtio")
    assert "virtio-serial-pci" in _args(g)
    assert f"name={wire.VIRTIO_PORT}" in _args(g)
    assert g.channel_socket and f"path={g.channel_socket}" in _args(g)
    g.close()
    assert "virtio-serial" not in _args(Guest("i386", channel="serial"))
    # The default: shm, with the port beside it (on sun4u behind simba B),
    # where the harness starts QEMU (test_channel_shm.py); the arch's own
    # default, the virtio port, is libvirt's (below).
    for arch in ("i386", "sparc64"):
        default = Guest(arch)
        assert default.channel == "shm", arch
        assert arches.get(arch).default_channel == "virtio", arch
        assert "virtio-serial-pci" in _args(default), arch
        default.close()
    sparc = Guest("sparc64")
    assert arches.get("sparc64").virtio_serial_bus in _args(sparc)
    sparc.close()
    assert "virtio-serial" not in _args(Guest("sparc64", channel="serial"))
    with pytest.raises(UsageError, match="one of serial, virtio, shm"):
        Guest("i386", channel="usb")


def _trace_fib(g, n=12):
    s = open_session(g)
    s.setup("fbt:fib:entry,fbt:fib:return", "int3")
    s.enable(True, strict=True)
    s.must(f"run fib n={n}")
    s.enable(False)
    return s, s.finish()


def _events_bytes(path):
    """Bytes of EVENTS frames in a raw stream log."""
    d = wire.Deframer()
    return sum(len(f.payload) for f in d.feed(path.read_bytes())
               if isinstance(f, wire.Frame) and f.type == wire.T_EVENTS)


def test_fib_traced_over_virtio(i386):
    with Guest(i386, label="channel-virtio", channel="virtio") as g:
        assert g.channel_used == "virtio", g.hello
        s, cap = _trace_fib(g)
        r = g.command("channel")
        g.exit(0)
    rep = verify(cap, s.probes, g.link_errors)
    assert rep.ok, rep.problems
    assert rep.entries["fib"] == rep.returns["fib"] == FIB_CALLS
    assert not g.link_errors
    assert r.message.startswith("channel=virtio") and "frames=0" not in r.message, r.message
    # The records came over the port, none over the 16550.
    assert _events_bytes(g.channel_path) > 0
    assert _events_bytes(g.serial_path) == 0


def test_a_reply_never_overtakes_the_records_before_it(i386):
    # The host reads the port slowly: each chunk waits a fifth of a second.
    # `trace flush` still returns only once its records are in.
    def slow(chunk):
        time.sleep(0.2)
        return chunk

    with Guest(i386, label="channel-slow", channel="virtio") as g:
        g.channel_tamper = slow
        s = open_session(g)
        s.setup("fbt:fib:entry,fbt:fib:return", "int3")
        s.enable(True, strict=True)
        s.must("run fib n=12")
        s.enable(False)
        cap = s.finish()            # trace flush, then the capture at once
        g.exit(0)
    assert sum(1 for e in cap.events if e.kind == records.K_ENTRY) == FIB_CALLS


def test_a_guest_without_the_device_falls_back_and_says_why(i386):
    with Guest(i386, label="channel-none", channel="serial") as g:
        assert g.hello["channel"] == wire.CHANNEL_IDS["serial"]
        r = g.command("channel")
        assert "absent (no virtio-serial-pci function" in r.message, r.message
        r = g.command("channel virtio")
        assert r.status_name == "FAILED" and "no virtio channel" in r.message, r.message
        r = g.command("channel usb")
        assert r.status_name == "BAD_ARGS" and "serial, virtio or shm" in r.message, r.message
        s, cap = _trace_fib(g)
        g.exit(0)
    rep = verify(cap, s.probes, g.link_errors)
    assert rep.ok and rep.entries["fib"] == FIB_CALLS, rep.problems
    assert _events_bytes(g.serial_path) > 0


def test_both_channels_in_one_boot_each_with_its_own_seq(i386):
    with Guest(i386, label="channel-both", channel="virtio") as g:
        s = open_session(g)
        s.setup("fbt:fib:entry,fbt:fib:return", "int3")
        counts = {}
        for ch in ("serial", "virtio", "serial", "virtio"):
            assert g.command(f"channel {ch}").ok
            mark = len(g.trace_frames)
            s.enable(True, strict=True)
            s.must("run fib n=8")
            s.enable(False)
            s.must("trace flush")
            cap = g.capture(mark)
            counts.setdefault(ch, []).append(
                sum(1 for e in cap.events if e.kind == records.K_ENTRY))
        g.exit(0)
    assert counts == {"serial": [67, 67], "virtio": [67, 67]}, counts
    assert not g.link_errors, g.link_errors
    assert _events_bytes(g.serial_path) > 0 and _events_bytes(g.channel_path) > 0


@pytest.mark.parametrize("damage", ["flip", "cut"])
def test_damage_on_the_virtio_stream_is_found(i386, damage):
    state = {"done": False}

    def tamper(chunk):
        # The first chunk long enough: a byte flipped, or 40 bytes cut,
        # inside its first frame's payload.
        if state["done"] or len(chunk) < 200:
            return chunk
        state["done"] = True
        if damage == "flip":
            return chunk[:100] + bytes([chunk[100] ^ 0x20]) + chunk[101:]
        return chunk[:100] + chunk[140:]

    with Guest(i386, label=f"channel-{damage}", channel="virtio") as g:
        g.channel_tamper = tamper
        s, cap = _trace_fib(g)
        g.exit(0)
    assert state["done"]
    on_virtio = [e for e in g.link_errors if e.stream == "virtio"]
    kinds = {e.kind for e in on_virtio}
    assert "gap" in kinds and kinds & {"crc", "junk"}, g.link_errors
    rep = verify(cap, s.probes, g.link_errors)
    assert not rep.ok, "a damaged stream must fail the run"


def _full(channel_reply: str) -> int:
    """How often the guest found its port's transmit buffers all busy."""
    return int(channel_reply.split("full=")[1].split()[0])


def test_a_host_that_stops_reading_does_not_wedge_the_commands(i386):
    with Guest(i386, label="channel-stall", channel="virtio",
               command_timeout=120) as g:
        s = open_session(g)
        s.setup("fbt:ct_*:entry,fbt:ct_*:return", "int3", buffer_bytes=65536)
        g.pause_channel(True)
        s.enable(True, strict=True)
        # ~90,000 records (~2.9 MB) a run: more than QEMU's socket, the
        # port's buffers and the trace buffer hold together — run again
        # until the guest finds its port full (how much the host's socket
        # absorbs first varies), a few times at most.
        for _ in range(4):
            s.must("run calltree threads=2 iters=1000")
            if _full(g.command("channel").message):
                break
        t0 = time.monotonic()
        assert g.command("echo still here").message == "still here"
        stalled = g.command("channel").message
        answer_s = time.monotonic() - t0
        s.enable(False)
        g.pause_channel(False)
        cap = s.finish()
        g.exit(0)
    # Answered at all is the point (a wedged guest answers never); the bound
    # is loose because this machine's load, not the guest, sets the pace.
    assert answer_s < 60, f"the command line took {answer_s:.1f} s while stalled"
    assert _full(stalled) > 0, stalled
    rep = verify(cap, s.probes, g.link_errors)
    # Records were lost to the full buffer, each one counted: every firing
    # arrived or is in a drop count; no frame was lost or damaged.
    assert rep.dropped > 0 and rep.missed <= rep.dropped, (rep.missed, rep.dropped)
    # (Since SWITCH and IRQ records, recorded holds more than the firings'
    # records: verify's own accounting tells them apart.)
    assert not accounting_problems(cap, s.probes), accounting_problems(cap, s.probes)
    assert not [p for p in rep.problems if "the guest sent" in p], rep.problems
    assert not g.link_errors, g.link_errors
    assert not rep.nesting_errors, rep.nesting_errors[:3]


def test_sun4u_finds_the_device_behind_simba_b_and_traces_over_it(built):
    """sparc64: the guest numbers simba B, gives the device an I/O BAR in
    the window it routed, reads the device's config in its own byte order
    (QEMU's max_ports, set here to 5 so no constant passes), and fib's
    records come over the port, every call counted, none on the 16550."""
    built("sparc64")
    g = Guest("sparc64", label="channel-sun4u", channel="virtio")
    g.args = [a.replace("virtio-serial-pci,id=tbvs,", "virtio-serial-pci,id=tbvs,max_ports=5,")
              for a in g.args]
    assert "max_ports=5" in _args(g)
    with g:
        assert g.channel_used == "virtio", (g.hello, g.channel_absent)
        pci = g.command("pci")
        chan = g.command("channel")
        s = open_session(g)
        s.setup("fbt:fib:entry,fbt:fib:return", "emulate")
        s.enable(True, strict=True)
        s.must("run fib n=12")
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    dev = [ln for ln in pci.text if " 1af4:1003 " in ln]
    assert dev and dev[0].startswith("01:03.0 "), pci.text
    bar0 = int(dev[0].split("bar0 ")[1].split()[0], 16)
    assert bar0 & 1 and 0x10000 <= bar0 & ~3 <= 0x1ffff, f"BAR0 {bar0:#x}"
    assert "max_ports=5" in chan.message, chan.message
    rep = verify(cap, s.probes, g.link_errors)
    assert rep.ok, rep.problems
    assert rep.entries["fib"] == rep.returns["fib"] == FIB_CALLS
    assert not g.link_errors
    assert _events_bytes(g.channel_path) > 0
    assert _events_bytes(g.serial_path) == 0


def test_libvirt_carries_the_trace_over_its_channel_stream():
    """The libvirt backend reads its ports as streams over the connection;
    on i386 the trace port is one of them, a <channel> with a virtio target
    (tests/test_libvirt.py runs a lossless trace through it); on sun4u too,
    the controller libvirt adds moved behind simba B by a <qemu:override>;
    shm, which maps QEMU's RAM, only for a domain on this host: a URI
    naming a host takes the port instead."""
    from bench.guest.console import Port
    from bench.guest.libvirt import LibvirtGuest
    from bench.wire.frames import VIRTIO_PORT
    g = LibvirtGuest(arches.get("i386"), connect="qemu:///session", channel="virtio")
    assert g.channel == "virtio"
    assert g.ports[-1] == Port("channel", VIRTIO_PORT), g.ports
    assert g._open_channel() is False       # no stream before launch
    assert "virtio-serial-pci.ioeventfd=off" in g.extra_args
    assert LibvirtGuest(arches.get("i386"), connect="qemu:///session",
                        channel="serial").ports == (g.ports[0],)
    from bench.guest.libvirt import domain_xml
    s = LibvirtGuest(arches.get("sparc64"), connect="qemu:///session", channel="virtio")
    assert s.channel == "virtio" and s.ports[-1] == Port("channel", VIRTIO_PORT)
    xml = domain_xml("d", s.arch, image=s.image, smp=1, memory_mb=128, ports=s.ports)
    assert ("<qemu:device alias='virtio-serial0'><qemu:frontend>"
            "<qemu:property name='bus' type='string' value='pciB'/>"
            "<qemu:property name='addr' type='string' value='3'/>") in xml
    assert "<qemu:override>" not in domain_xml("d", g.arch, image=g.image, smp=1,
                                             memory_mb=128, ports=g.ports)
    shm = LibvirtGuest(arches.get("i386"), connect="qemu:///session", channel="shm")
    assert shm.channel == "shm" and shm._shm is not None
    far = LibvirtGuest(arches.get("i386"), connect="qemu+ssh://h/system", channel="shm")
    assert far.channel == "virtio" and far._shm is None
    # Left to the default (shm where the harness starts QEMU): the same.
    assert LibvirtGuest(arches.get("i386"), connect="qemu:///session").channel == "shm"
    assert LibvirtGuest(arches.get("i386"), connect="qemu+tcp://h/session").channel \
        == "virtio"


def test_a_ring_past_half_full_wakes_its_drain_before_the_tick(arch, built):
    """fib(12)'s 930 records into a one-page ring, with the tick at its
    slowest: left to its tick, the drain wakes too late and records are
    lost (each counted); woken when the ring passes half full
    (sched_kick_self: a self-IPI on i386, a software interrupt on sun4u),
    it empties the ring in time and nothing is lost."""
    built(arch)
    a = arches.get(arch)
    lost = {}
    with Guest(a, label="drain-kick", channel="virtio") as g:
        s = open_session(g)
        page = 8192 if a.name == "sparc64" else 4096
        s.setup("fbt:fib:entry,fbt:fib:return", a.default_mechanism, buffer_bytes=page)
        slowest = {"i386": 10, "sparc64": 1}[a.name]
        usual = g.hello["timer_hz"]
        for kick in ("off", "on"):
            r = s.must(f"trace kick {kick}")
            assert r.message.startswith(f"kick {kick}"), r.message
            since = len(g.trace_frames)
            s.must("trace reset")
            s.enable(True, strict=True)
            s.must(f"timer {slowest}")
            s.must("run fib n=12")
            s.must(f"timer {usual}")    # flush's waits are ticks
            s.enable(False)
            s.must("trace flush")
            cap = records.decode(g.trace_frames[since:], g.byte_order,
                                 g.hello["word_bytes"])
            rep = verify(cap, s.probes, g.link_errors, allow_missing=True)
            lost[kick] = (rep.fired, rep.dropped,
                          int(g.command("trace kick").message.split("early ")[1].split()[0]))
        g.exit(0)
    print(f"\n{arch}: (fired, dropped, early wake-ups) kick off {lost['off']}, "
          f"on {lost['on']}")
    assert lost["off"][0] == 2 * 465 and lost["off"][1] > 0, lost
    assert lost["on"][0] == 2 * 465 and lost["on"][1] == 0, lost
    assert lost["on"][2] > 0, lost
