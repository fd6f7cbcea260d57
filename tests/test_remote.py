"""The libvirt backend against daemons reached over TCP, as remote hosts are.

The module starts two private libvirtd daemons (bench/guest/libvirtd.py),
each listening on its own loopback TCP port (listen_tcp, auth none, bound
to 127.0.0.1), and reaches them only through qemu+tcp://127.0.0.1:P/session:
the guest image goes over as an uploaded volume, COM1 comes back as a
console stream. Against them: a guest boots from the uploaded image (the
domain names no file of this checkout) and answers over the stream, its
exit status arriving; the bytes a pty loses when QEMU exits are taken from
QEMU's log of the port; a daemon killed under a running guest is HostLost
naming its URI, and the QEMU it left is ended; an unreachable URI is exit
status 3; a traced fib over TCP gives the very records the plain QEMU run
gives, and a lossless calltree run loses nothing. The tests skip, saying
why, only where a daemon cannot start. The matrix's quick group across two
such hosts is tests/test_remote_matrix.py (full size, not in make check)."""

import os
import shutil
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from bench import arches
from bench.errors import EXIT_HOST, HostLost
from bench.guest import console, libvirtd, volumes
from bench.guest import libvirt as virt
from bench.guest.backend import open_guest
from bench.guest.qemu import Guest
from bench.paths import REPO
from bench.trace import stress
from bench.trace.session import open_session


def start_tcp_daemon(tag: str) -> libvirtd.PrivateDaemon:
    """A private daemon on a free loopback port, or the test skips saying why."""
    try:
        return libvirtd.start_on_free_port(REPO / "build" / "libvirt", tag)
    except libvirtd.DaemonUnavailable as e:
        pytest.skip(f"no libvirt daemon on loopback TCP here: {e}")


@pytest.fixture(scope="module")
def hosts(request):
    ds = [start_tcp_daemon("tcp"), start_tcp_daemon("tcp")]
    failed = request.session.testsfailed
    yield ds
    for d in ds:
        d.stop()
        assert d.proc.poll() is not None
        if request.session.testsfailed == failed:
            shutil.rmtree(d.root, ignore_errors=True)


def _volumes_of(d, g):
    """What of guest g is in the host's pool: its uploaded image, its logs."""
    pool = d.conn.storagePoolLookupByName(volumes.POOL)
    pool.refresh(0)
    image = f"{g.image.stem}-{socket.gethostname().split('.')[0][:20]}-{os.getpid()}-"
    return sorted(v for v in pool.listVolumes()
                  if v.startswith(image) or v.startswith(g.domain_name))


def test_a_guest_on_a_tcp_host_boots_from_an_uploaded_image(arch, built, hosts):
    built(arch)
    d = hosts[0]
    with virt.LibvirtGuest(arch, connect=d.tcp_uri, label="tcp-exit") as g:
        assert g.command("echo over tcp").message == "over tcp"
        root = ET.fromstring(g.xml)
        boot = root.find("os/kernel") if arch == "i386" else root.find("os/loader")
        assert boot.text.startswith(str(d.root / "pool") + "/"), boot.text
        assert str(g.image) not in g.xml, "the domain names the local image"
        serial = root.find("devices/serial")
        assert serial.get("type") == "pty" and serial.find("log") is not None
        # The trace port is a second stream over the same connection.
        assert g.channel_used == "virtio", g.channel_used
        assert sorted(_volumes_of(d, g)) == [volumes.log_name(g.domain_name, i)
                                             for i in range(len(g.ports))], \
            "the image volume outlived QEMU's start"
        r = g.command("run fib n=12")
        assert r.ok and r.results[0]["value"] == 144
        info = g.exit(5)
    assert (info.status, info.end) == (5, "libvirt: stopped, failed")
    log = g.log_path.read_text()
    assert f"connecting to {d.tcp_uri}" in log and "uploaded to" in log
    assert "bytes over the stream" in log
    assert g.streams[0].received > 0
    assert _volumes_of(d, g) == [], "QEMU's port log was left in the pool"


class LossyStream(console.ConsoleStream):
    """Once `lossy` is set, what the daemon sends is read and thrown away,
    as the kernel throws away a pty's unread bytes when QEMU exits."""
    lossy = False

    def _on_event(self, stream, events, opaque):
        if self.lossy and events & self._lv.VIR_STREAM_EVENT_READABLE:
            while True:
                data = stream.recv(65536)
                if data == -2:
                    return
                if not data:
                    return self._end("closed")
        return super()._on_event(stream, events, opaque)


def test_bytes_the_stream_loses_at_the_end_come_from_qemus_log(built, hosts, monkeypatch):
    built("i386")
    monkeypatch.setattr(virt, "ConsoleStream", LossyStream)
    with virt.LibvirtGuest("i386", connect=hosts[1].tcp_uri, label="tcp-lossy") as g:
        g.command("echo before")
        g.streams[0].lossy = True
        info = g.exit(7)
    assert info.status == 7, "the EXIT frame did not come back from the log"
    assert g.streams[0].recovered > 0 and not g.link_errors, g.link_errors
    assert f"{g.streams[0].recovered} more from QEMU's log" in g.log_path.read_text()


def test_a_daemon_that_dies_under_a_guest_is_host_lost_naming_its_uri(built):
    built("i386")
    d = start_tcp_daemon("tcpkill")
    try:
        with virt.LibvirtGuest("i386", connect=d.tcp_uri, label="tcp-kill") as g:
            g.command("echo alive")
            assert d.qemu_pids(), "no QEMU pid file under the daemon"
            d.kill()
            t0 = time.monotonic()
            with pytest.raises(HostLost) as exc:
                g.command("echo after the kill", timeout=30)
            assert time.monotonic() - t0 < 15, "the loss took a timeout to notice"
        msg = str(exc.value)
        assert f"lost the libvirt connection to {d.tcp_uri}" in msg, msg
        assert exc.value.exit_status == EXIT_HOST
        left = d.qemu_pids()
        assert left, "the QEMU of a killed daemon should outlive it"
    finally:
        d.stop()
    assert d.qemu_pids() == [] and not any(libvirtd.running(p) for p in left)
    shutil.rmtree(d.root, ignore_errors=True)


def test_an_unreachable_host_is_exit_status_3_naming_it(built):
    built("i386")
    uri = f"qemu+tcp://127.0.0.1:{libvirtd.free_port()}/session"
    r = subprocess.run([sys.executable, "-m", "bench", "cmd", "--arch", "i386",
                        "--backend", "libvirt", "--connect", uri, "info"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == EXIT_HOST, (r.returncode, r.stderr)
    assert f"cannot connect to libvirt at {uri}" in r.stderr, r.stderr


def _fib_events(g):
    s = open_session(g)
    s.setup("fbt:fib:entry,fbt:fib:return", "int3")
    s.enable(True)
    s.must("run fib n=12")
    s.enable(False)
    cap = s.finish()
    g.exit(0)
    return [(e.cpu, e.thread, e.probe, e.kind, e.words) for e in cap.events], cap


def test_a_trace_over_tcp_is_the_trace_of_a_plain_qemu_run(built, hosts):
    """fib on one CPU is deterministic: every record but its cycle count is
    the same through the console stream as through QEMU's stdio."""
    built("i386")
    with Guest("i386", label="plain-fib") as g:
        here, _ = _fib_events(g)
    with open_guest("i386", label="tcp-fib", backend="libvirt",
                    connect=hosts[0].tcp_uri) as g:
        there, cap = _fib_events(g)
        assert not g.link_errors
        assert g.channel_used == "virtio", "the trace did not use the channel stream"
    assert len(here) == 2 * 465 and here == there, (len(here), len(there))


def test_a_lossless_run_over_tcp_loses_nothing(built, hosts, monkeypatch):
    built("i386")
    from bench.guest import backend
    backend.use_backend("libvirt", hosts[1].tcp_uri)
    try:
        res = stress.lossless(arches.get("i386"), "int3", 2, threads=4, iters=40,
                              depth=3, on_line=lambda l: None)
    finally:
        backend.use_backend("qemu")
    rep = res.report
    assert res.result_ok and rep.ok, rep.problems
    assert res.missed == 0 and rep.dropped == 0 and not rep.link_errors
    assert rep.traced > 1000 and res.channel == "virtio", (rep.traced, res.channel)



class _Busy:
    """A pool whose refresh libvirt refuses `busy` times as it does while
    another guest's volume is being built in it, then any other error."""

    def __init__(self, busy: int, then: str | None = None):
        import libvirt

        class Error(libvirt.libvirtError):
            def __init__(self, msg):
                Exception.__init__(self, msg)
                self.msg = msg

            def get_error_message(self):
                return self.msg
        self.Error, self.busy, self.then, self.calls = Error, busy, then, 0

    def refresh(self, flags):
        self.calls += 1
        if self.calls <= self.busy:
            raise self.Error("internal error: pool 'trapbench' has asynchronous "
                             "jobs running.")
        if self.then:
            raise self.Error(self.then)


def test_a_refresh_waits_out_another_guests_volume_being_built():
    """libvirt refuses a pool's refresh while a volume is being built in
    it; cells on one host stage images and read logs beside each other, so
    fetch's refresh waits that out (the hosts matrix lost two cells to it:
    'pool trapbench has asynchronous jobs running'), and only that."""
    import libvirt
    busy = _Busy(3)
    volumes.refresh(volumes.Pool(busy, "/nowhere"))
    assert busy.calls == 4
    busy = _Busy(1000)
    t0 = time.monotonic()
    with pytest.raises(libvirt.libvirtError, match="asynchronous jobs"):
        volumes.refresh(volumes.Pool(busy, "/nowhere"), wait_s=0.3)
    assert 0.3 <= time.monotonic() - t0 < 2 and busy.calls > 2
    other = _Busy(0, then="cannot open directory '/nowhere'")
    with pytest.raises(libvirt.libvirtError, match="cannot open"):
        volumes.refresh(volumes.Pool(other, "/nowhere"))
    assert other.calls == 1
