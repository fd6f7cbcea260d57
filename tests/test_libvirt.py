"""The libvirt backend against a real libvirt daemon.

The module starts its own libvirtd in session mode (bench/guest/libvirtd.py: every
file under build/libvirt/, as `nobody` when the tests run as root) and stops
it at the end; the guest tests skip, saying why, only when that daemon
cannot start here. Against it, for every arch: the guest boots as a
transient domain with the machine, CPUs and memory of the plain QEMU run
(read back from libvirt's own record of QEMU's command line); commands and
replies cross the unix-socket serial line; an `exit N` reaches the host as
status N with the domain seen to stop by itself, and a crash as the crash's
status; a hung guest is timed out and its domain destroyed; the gdbstub
passed through <qemu:commandline> answers the Remote Serial Protocol; and a
traced calltree run through the unchanged harness (stress.lossless) is
lossless: missed=0, dropped=0, the workload's own result right.

The XML translation and the refusals of bad backends and URIs need no
daemon and always run."""

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from bench import arches
from bench.errors import GuestExited, GuestTimeout, LaunchError, UsageError
from bench.guest import backend, libvirtd
from bench.guest import libvirt as virt
from bench.guest.console import Port
from bench.guest.backend import open_guest
from bench.paths import REPO
from bench.trace import stress
from bench.guest.conversation import EXIT_STATUS
from bench.guest.qemu import Guest

QEMU_NS = "{http://libvirt.org/schemas/domain/qemu/1.0}"


# ---- no daemon needed ----

def _xml(arch, **kw):
    a = arches.ARCHES[arch]
    args = dict(image=a.image(), smp=1, memory_mb=128)
    args.update(kw)
    return ET.fromstring(virt.domain_xml("trapbench-x", a, **args))


def _qemu_args(root):
    return [e.get("value") for e in root.find(f"{QEMU_NS}commandline")]


def test_i386_domain_says_what_the_qemu_command_line_says():
    a = arches.ARCHES["i386"]
    root = _xml("i386", smp=4, memory_mb=256, extra_args=("-gdb", "unix:/tmp/g"))
    assert root.get("type") == "qemu"                       # TCG, never KVM
    t = root.find("os/type")
    assert (t.get("arch"), t.get("machine")) == ("i686", "pc")
    assert root.find("os/kernel").text == str(a.image())
    assert root.find("os/loader") is None
    assert root.find("vcpu").text == "4"
    assert (root.find("memory").text, root.find("memory").get("unit")) == ("256", "MiB")
    assert root.find("features/acpi") is not None           # the kernel reads the MADT
    assert root.find("on_reboot").text == "destroy"
    # COM1 is a pty, carried to the harness as a console stream over the
    # libvirt connection (bench/guest/console.py); no socket on this host.
    serials = root.findall("devices/serial")
    assert [(s.get("type"), s.find("target").get("port")) for s in serials] \
        == [("pty", "0")], ET.tostring(root.find("devices")).decode()
    assert root.find("devices/serial/source") is None
    assert root.find("devices/channel") is None
    # What the XML cannot say goes through verbatim: the exit device, then
    # the caller's extra arguments.
    assert _qemu_args(root) == [*a.exit_device, "-gdb", "unix:/tmp/g"]


def test_sparc64_domain_boots_our_prom_with_the_testdev_on_com2():
    a = arches.ARCHES["sparc64"]
    root = _xml("sparc64")
    t = root.find("os/type")
    assert (t.get("arch"), t.get("machine")) == ("sparc64", "sun4u")
    loader = root.find("os/loader")
    assert (loader.get("type"), loader.text) == ("rom", str(a.image()))
    assert root.find("os/kernel") is None
    assert _qemu_args(root) == list(a.exit_device)
    assert "-chardev" in _qemu_args(root) and "testdev,id=exitdev" in _qemu_args(root)


def test_xml_special_characters_in_paths_are_escaped():
    root = _xml("i386", image="/tmp/a'b&c.elf", extra_args=("x<y",),
                ports=(virt.COM1, Port("channel", "org.x'<y>.0")))
    assert root.find("os/kernel").text == "/tmp/a'b&c.elf"
    assert root.find("devices/channel/target").get("name") == "org.x'<y>.0"
    assert _qemu_args(root)[-1] == "x<y"


def test_each_port_is_one_more_device_of_its_kind():
    root = _xml("i386", ports=(virt.COM1, Port("channel", "org.trapbench.trace.0"),
                               Port("serial", "serial1")))
    devs = [d for d in root.find("devices") if d.tag in ("serial", "channel")]
    assert [(d.tag, d.get("type")) for d in devs] == \
        [("serial", "pty"), ("channel", "unix"), ("serial", "pty")]
    assert [s.find("target").get("port") for s in root.findall("devices/serial")] \
        == ["0", "1"]
    ch = root.find("devices/channel")
    assert ch.find("source").get("mode") == "bind"
    assert ch.find("target").attrib == {"type": "virtio",
                                        "name": "org.trapbench.trace.0"}
    with pytest.raises(ValueError, match="port kind 'parallel'"):
        Port("parallel", "parallel0")
    with pytest.raises(LaunchError, match="first port is its console"):
        virt.LibvirtGuest("i386", connect="qemu:///session",
                          ports=(Port("channel", "x"),))


@pytest.mark.parametrize("uri", [
    "qemu:///session", "qemu:///system", "qemu+unix:///session?socket=/tmp/x",
    "qemu+tcp://127.0.0.1:16509/session", "qemu+ssh://user@build-host/system",
    "qemu+tls://build-host/system", "qemu+libssh2://u@h/session?known_hosts=/k",
])
def test_local_and_remote_qemu_uris_are_accepted(uri):
    virt.check_uri(uri)
    assert virt.is_remote(uri) == ("//" in uri and not uri.split("//")[1].startswith("/"))


@pytest.mark.parametrize("uri,message", [
    ("xen:///system", "runs QEMU domains"),
    ("lxc:///system", "runs QEMU domains"),
    ("not a uri", "runs QEMU domains"),
    ("qemu+ext:///system?command=/bin/x", "unknown transport 'ext'.*cannot check"),
    ("qemu+http://host/system", "unknown transport 'http'"),
    ("qemu:///embed?root=/tmp/x", "the path is /session or /system"),
    ("qemu+tcp://host/", "the path is /session or /system"),
])
def test_uris_the_backend_cannot_use_are_refused(uri, message):
    with pytest.raises(UsageError, match=message):
        virt.check_uri(uri)


def test_a_gdb_socket_on_another_host_is_refused():
    with pytest.raises(LaunchError, match="out of the harness's reach"):
        virt.socket_dir("qemu+tcp://10.0.0.1/session")


def test_unknown_backend_is_refused():
    with pytest.raises(UsageError, match="known backends are qemu, libvirt"):
        open_guest("i386", backend="docker")
    with pytest.raises(UsageError, match="known backends are qemu, libvirt"):
        backend.use_backend("docker")
    assert type(open_guest("i386")) is Guest
    with pytest.raises(UsageError, match="--connect needs --backend libvirt"):
        open_guest("i386", connect="qemu:///session")


def test_cli_refuses_bad_backend_options_and_starts_nothing():
    # What the CLI's own daemon would be called (bench/cli.py: d<its pid>):
    # other tests, run beside this one, start daemons of their own there.
    pids = []

    def cli(*args):
        p = subprocess.Popen([sys.executable, "-m", "bench", *args], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pids.append(p.pid)
        out, err = p.communicate(timeout=120)
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)
    r = cli("cmd", "--arch", "i386", "--connect", "qemu:///system", "info")
    assert r.returncode == 2 and "--connect needs --backend libvirt" in r.stderr, r
    r = cli("cmd", "--arch", "i386", "--backend", "libvirt",
            "--connect", "xen+ssh://elsewhere/system", "info")
    assert r.returncode == 2 and "runs QEMU domains" in r.stderr, r
    r = cli("cmd", "--arch", "i386", "--backend", "vmware", "info")
    assert r.returncode == 2 and "invalid choice: 'vmware'" in r.stderr, r
    root = REPO / "build" / "libvirt"
    left = [f"d{pid}" for pid in pids if (root / f"d{pid}").exists()]
    assert not left, f"a refused command left a daemon directory: {left}"


# ---- against a real daemon ----

@pytest.fixture(scope="module")
def daemon(request):
    """A private libvirtd for this module; its logs stay in build/libvirt/
    only when a test failed."""
    root = REPO / "build" / "libvirt" / f"test{os.getpid()}"
    d = libvirtd.PrivateDaemon(root)
    try:
        d.start()
    except libvirtd.DaemonUnavailable as e:
        d.stop()
        pytest.skip(f"no libvirt daemon here: {e}")
    failed = request.session.testsfailed
    yield d
    d.stop()
    assert d.proc.poll() is not None, "libvirtd still running after stop()"
    assert not d.sockets.exists(), "the daemon's socket directory was left behind"
    if request.session.testsfailed == failed:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def lv_default(daemon):
    """Every Guest made inside the test uses the libvirt backend."""
    backend.use_backend("libvirt", daemon.uri)
    yield daemon
    backend.use_backend("qemu")


def _domains(daemon):
    return [d.name() for d in daemon.conn.listAllDomains()]


def _qemu_cmdline(daemon, g):
    """QEMU's command line as libvirt ran it (its domain log)."""
    text = daemon.domain_log(g.domain_name).read_text()
    return " ".join(text.split("\n", 1)[1].replace("\\\n", " ").split()) + " "


def test_guest_runs_as_a_transient_domain_and_its_exit_status_arrives(
        arch, built, daemon):
    built(arch)
    a = arches.get(arch)
    smp = min(2, a.max_smp)
    g = open_guest(arch, label="lv-exit", smp=smp, backend="libvirt", connect=daemon.uri)
    assert isinstance(g, virt.LibvirtGuest)
    with g:
        assert g.domain_name in _domains(daemon)
        assert g.hello["arch_name"] == arch and g.hello["ncpus"] == smp
        assert g.command("echo over the socket").message == "over the socket"
        r = g.command("run fib n=20")
        assert r.ok and r.results[0]["value"] == 6765
        info = g.exit(5)
    assert (info.status, info.rc, info.end) == (5, None, "libvirt: stopped, failed")
    assert not g.alive
    assert g.domain_name not in _domains(daemon), "a transient domain outlived QEMU"
    cmd = _qemu_cmdline(daemon, g)
    machine_name = {"i386": "pc-i440fx", "sparc64": "sun4u"}[arch]
    assert f"-machine {machine_name}" in cmd and "-accel tcg" in cmd, cmd
    assert f"-smp {smp}," in cmd and "-m 128 " in cmd, cmd
    assert " ".join(a.exit_device) in cmd, cmd
    assert "-no-acpi" not in cmd
    log = g.log_path.read_text()
    assert "# libvirt: domain stopped, failed" in log
    assert g.xml_path.read_text() == g.xml


def test_a_crash_reaches_the_host_with_its_status(arch, built, lv_default):
    built(arch)
    with open_guest(arch, label="lv-crash") as g:
        kinds = g.command("crash").message.split("one of: ")[1].split()
    kind = next(k for k in kinds if k not in arches.get(arch).crash_status)
    with open_guest(arch, label=f"lv-crash-{kind}") as g:
        with pytest.raises(GuestExited) as exc:
            g.command(f"crash {kind}", timeout=20)
        assert exc.value.status == EXIT_STATUS["UNEXPECTED_TRAP"], str(exc.value)
        assert "UNEXPECTED TRAP" in "\n".join(g.text)
        assert g.exit_info.end == "libvirt: stopped, failed"


def test_a_hung_guest_is_timed_out_and_its_domain_destroyed(arch, built, lv_default):
    built(arch)
    g = open_guest(arch, label="lv-hang")
    assert isinstance(g, virt.LibvirtGuest)
    with g:
        g.command("echo before the hang")
        with pytest.raises(GuestTimeout) as exc:
            g.command("hang", timeout=2)
        assert not g.alive
        assert g._stop_detail == "destroyed"
    assert g.domain_name not in _domains(lv_default)
    msg = str(exc.value)
    assert "timed out waiting for the reply to 'hang'" in msg
    assert g.domain_name in msg and str(g.log_path) in msg
    assert "harness destroyed the domain" in g.log_path.read_text()


class _Rsp:
    """Just enough of the Remote Serial Protocol: packets $body#sum, each
    acknowledged with '+'; QEMU's own '+' acks are skipped."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def packet(self) -> str:
        pat = re.compile(rb"\$([^#]*)#[0-9a-f]{2}")
        while not (m := pat.search(self.buf)):
            chunk = self.sock.recv(65536)
            assert chunk, f"gdbstub closed the connection; had {self.buf[:40]!r}"
            self.buf += chunk
        self.buf = self.buf[m.end():]
        self.sock.sendall(b"+")
        return m.group(1).decode()

    def ask(self, packet: str) -> str:
        body = packet.encode()
        self.sock.sendall(b"$" + body + b"#%02x" % (sum(body) & 0xff))
        return self.packet()


def test_gdbstub_through_qemu_commandline_answers(arch, built, daemon):
    """-gdb passed through <qemu:commandline>: stop reason, all registers in
    the layout FACTS.md gives, and the guest runs on after a detach."""
    built(arch)
    gdb = virt.socket_dir(daemon.uri) / f"g{os.getpid()}.sock"
    assert gdb.parent == daemon.serial_dir
    g = open_guest(arch, label="lv-gdb", backend="libvirt", connect=daemon.uri,
                   extra_args=("-gdb", f"unix:{gdb},server=on,wait=off"))
    with g:
        assert f"-gdb unix:{gdb}" in _qemu_cmdline(daemon, g)
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(20)
            s.connect(str(gdb))
            rsp = _Rsp(s)
            # Connecting stops the guest, and QEMU says so unasked.
            assert re.fullmatch(r"T02.*", rsp.packet())
            assert re.fullmatch(r"T[0-9a-f]{2}.*", rsp.ask("?"))
            regs = bytes.fromhex(rsp.ask("g"))
            assert len(regs) == {"i386": 344, "sparc64": 560}[arch]
            if arch == "i386":
                eip = int.from_bytes(regs[32:36], "little")
                assert 0x100000 <= eip < 0x10000000, hex(eip)   # kernel text
            else:
                pc = int.from_bytes(regs[512:520], "big")
                assert pc != 0 and pc % 4 == 0, hex(pc)
            assert rsp.ask("D") == "OK"
        assert g.command("echo after the debugger").message == "after the debugger"
        assert g.exit(0).status == 0


def test_a_traced_run_through_libvirt_is_lossless(arch, built, lv_default):
    """The harness's own lossless run, unchanged, with its guest a domain."""
    built(arch)
    a = arches.get(arch)
    backend.use_channel("virtio")
    try:
        res = stress.lossless(a, a.default_mechanism, min(2, a.max_smp), threads=4,
                              iters=60, depth=3, timer_hz=0 if arch == "i386" else 20000)
    finally:
        backend.use_channel(None)
    rep = res.report
    # The trace comes over the virtio port, as a second stream over the
    # connection (sun4u's controller behind simba B by a <qemu:override>).
    assert res.channel == "virtio", res.channel
    assert res.result_ok, "the workload's own result is wrong"
    assert rep.dropped == 0 and not rep.link_errors, (rep.dropped, rep.link_errors)
    assert res.missed == 0, (res.firings_expected, rep.fired, rep.problems)
    assert rep.ok, rep.problems
    assert rep.traced > 1000 and rep.nesting_checked > 0


def test_a_reply_waits_for_the_domains_trace_frames_it_counts(built, lv_default,
                                                               monkeypatch):
    """A REPLY counts the trace frames the guest sent before it; the harness
    reads the channel up to that count before it returns, on a domain's
    stream as on QEMU's socket. Here the stream is read late (as a loaded
    host reads it): were the reply to return at once, `trace flush` would
    leave frames unread and the run would verify short ('the guest sent N
    records, the host decoded M', which make check once met)."""
    built("i386")
    a = arches.get("i386")
    slow = virt.LibvirtGuest._read_channel_chunk

    def late(self, buf):
        time.sleep(0.05)
        return slow(self, buf)
    monkeypatch.setattr(virt.LibvirtGuest, "_read_channel_chunk", late)
    backend.use_channel("virtio")
    try:
        res = stress.lossless(a, a.default_mechanism, 2, threads=4, iters=60, depth=3,
                              timer_hz=0)
    finally:
        backend.use_channel(None)
    assert res.channel == "virtio", res.channel
    assert res.report.ok and res.missed == 0, res.report.problems


def test_a_local_domain_traces_over_shm_its_ram_mapped_here(arch, built, lv_default):
    """The same lossless run with --channel shm: the daemon is on this host,
    so the harness maps the domain's RAM (i386: a shared memfd the domain
    XML asks for, mapped through /proc/PID/fd; sun4u: QEMU's address space
    through /proc/PID/mem) and reads the rings out of it, no drain."""
    built(arch)
    a = arches.get(arch)
    backend.use_channel("shm")
    try:
        res = stress.lossless(a, a.default_mechanism, min(2, a.max_smp), threads=4,
                              iters=60, depth=3,
                              timer_hz=0 if arch == "i386" else 20000)
    finally:
        backend.use_channel(None)
    rep = res.report
    assert res.channel == "shm", res.channel
    assert res.result_ok, "the workload's own result is wrong"
    assert rep.dropped == 0 and not rep.link_errors, (rep.dropped, rep.link_errors)
    assert res.missed == 0 and rep.ok, rep.problems
    assert rep.traced > 1000 and rep.nesting_checked > 0
    xml = sorted((REPO / "build" / "logs").glob(f"*-{arch}-lossless-*.xml"))[-1]
    assert ("<source type='memfd'/><access mode='shared'/>" in xml.read_text()) \
        == a.ram_backend, xml
    log = xml.with_suffix(".log").read_text()
    want = "QEMU's memfd /proc/" if a.ram_backend else "QEMU's address space (/proc/"
    assert f"# shm: guest RAM mapped from {want}" in log, log[:3000]


def test_a_remote_domain_keeps_the_port_and_says_why(arch, built):
    """A URI naming a host is not this machine's RAM: --channel shm falls
    back to the port, and the log says so (no daemon needed to decide)."""
    a = arches.get(arch)
    g = virt.LibvirtGuest(a, connect="qemu+tcp://192.0.2.1/session", channel="shm")
    assert g.channel == "virtio" and g._shm is None
    g2 = virt.LibvirtGuest(a, connect="qemu:///session", channel="shm")
    assert g2.channel == "shm" and g2._shm is not None and g2._shm.path == ""
