"""The libvirt backend: the same guest as a transient libvirt domain.

    with LibvirtGuest("i386", connect=uri) as g:   # or open_guest() after
        g.command("selftest"); g.exit(0)           # use_backend("libvirt", uri)

A LibvirtGuest is a bench/guest/qemu.py Guest whose QEMU is started by a libvirt
daemon instead of by the harness. Everything above the serial line (frames,
commands, replies, trace capture, logs in build/logs/) is the base class's;
this module only changes how QEMU starts, how bytes move and how its end
is observed.

Domain. domain_xml() fills in images/domain.xml from the arch table's
QEMU arguments and libvirt_arch (bench/arches.py), as a transient domain (createXML, so
nothing stays defined after it stops): `-M X` → <type machine='X'>,
`-kernel F` → <kernel>, `-bios F` → <loader type='rom'>, memory and vCPUs
→ <memory> and <vcpu>, domain type 'qemu' → TCG. What the domain XML
cannot express is passed verbatim through <qemu:commandline>: the exit
devices (isa-debug-exit on i386; the testdev chardev on sparc64's COM2 —
libvirt puts its own serial first, so COM1 stays the console) and the
caller's extra_args (e.g. `-gdb unix:PATH,server=on,wait=off`).

Serial. COM1 is a <serial type='unix'> in bind mode: libvirt creates the
listening socket in the daemon's serial directory. The domain is created
paused, the harness connects, and only then resumes it, so not one byte
of the boot is lost. QEMU closing the socket is the end of the stream.
The trace channel (channel="virtio") is a <channel type='unix'> in bind
mode beside it, whose virtio target names the guest's port; libvirt adds
the virtio-serial controller. The harness connects to it as to QEMU's own
socket (bench/guest/qemu.py reads and deframes it).

End. libvirt never sees QEMU's exit code (QEMU is not its child), so
ExitInfo.rc is None. What it does see is why the domain stopped, delivered
as a lifecycle event: a QEMU that exits by itself (isa-debug-exit, testdev)
stops with detail "failed" (seen on both arches), a kill with
"destroyed"; an ACPI or power-register power-off would be "shutdown"
(neither guest stops that way today). A guest status is believed only when the EXIT frame arrived
and then the domain stopped by itself ("failed" or "shutdown");
ExitInfo.end records which.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from string import Template
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

from ..errors import GuestExited, LaunchError, ProtocolError
from ..paths import LOG_DIR, REPO
from . import libvirtd
from ..wire import frames as wire
from .qemu import ExitInfo, Guest

# How the libvirt lifecycle STOPPED details read (virDomainEventStoppedDetailType).
STOPPED_DETAIL = {0: "shutdown", 1: "destroyed", 2: "crashed", 3: "migrated",
                  4: "saved", 5: "failed", 6: "from-snapshot"}
ENDED_BY_ITSELF = ("failed", "shutdown")
SERIAL_DIR = REPO / "build" / "libvirt" / "serial"
TEMPLATE = REPO / "images" / "domain.xml"
DOMAIN_PREFIX = "trapbench-"

_socket_no = itertools.count()
_loop_lock = threading.Lock()
_loop_started = False


def _event_loop(libvirt) -> None:
    """libvirt delivers domain events only to a process that runs its
    event loop: one daemon thread for the whole process."""
    global _loop_started
    with _loop_lock:
        if _loop_started:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run():
            while True:
                libvirt.virEventRunDefaultImpl()
        threading.Thread(target=run, name="libvirt-events", daemon=True).start()
        _loop_started = True


def _attr(value) -> str:
    return escape(str(value), {"'": "&apos;", '"': "&quot;"})


def channel_xml(path: Path) -> str:
    """The trace channel as a domain device: QEMU listens on path."""
    return (f"\n    <channel type='unix'>\n"
            f"      <source mode='bind' path='{_attr(path)}'/>\n"
            f"      <target type='virtio' name='{_attr(wire.VIRTIO_PORT)}'/>\n"
            f"    </channel>")


def domain_xml(name: str, arch, *, image: Path, smp: int, memory_mb: int,
               serial: Path, extra_args=(), channel: Path | None = None) -> str:
    """A transient domain running what Guest's QEMU command line runs
    (images/domain.xml filled in)."""
    if not arch.libvirt_arch:
        raise LaunchError(f"{arch.name}: no libvirt architecture for {arch.qemu}")
    machine = None
    boot = []
    passthrough = []
    args = list(arch.machine) + [a.replace("{image}", str(image))
                                 for a in arch.boot_args]
    it = iter(args)
    for a in it:
        if a in ("-M", "-machine"):
            machine = next(it)
        elif a == "-kernel":
            boot.append(f"<kernel>{escape(next(it))}</kernel>")
        elif a == "-bios":
            boot.append(f"<loader type='rom'>{escape(next(it))}</loader>")
        else:
            passthrough.append(a)
    if machine is None or "," in machine:
        raise LaunchError(f"{arch.name}: cannot express machine {arch.machine} "
                          "in a domain")
    passthrough += [*arch.exit_device, *extra_args]
    return Template(TEMPLATE.read_text()).substitute(
        name=escape(name), memory_mb=int(memory_mb), smp=int(smp),
        arch=arch.libvirt_arch, machine=_attr(machine),
        boot="\n    ".join(boot), serial=_attr(serial),
        channel=channel_xml(channel) if channel else "",
        qemu_args="\n".join(f"    <qemu:arg value='{_attr(a)}'/>"
                            for a in passthrough))


def check_uri(uri: str) -> None:
    """The serial line is a unix socket on the daemon's host: refuse URIs
    that name another host before anything is started."""
    u = urlsplit(uri)
    if not u.scheme.startswith("qemu"):
        raise LaunchError(f"--connect {uri!r}: the libvirt backend runs QEMU "
                          "domains (qemu:///session, qemu:///system, ...)")
    if u.hostname:
        raise LaunchError(f"--connect {uri!r} names the host {u.hostname!r}: the "
                          "guest's serial line is a unix socket the harness "
                          "connects to, so the daemon must run on this host")


def socket_dir(uri: str | None) -> Path:
    """Where sockets of guests on this URI go: a directory QEMU (running as
    the daemon's user) may create sockets in. A gdb socket goes here too:
    extra_args=("-gdb", f"unix:{socket_dir(uri)}/NAME,server=on,wait=off")."""
    private = libvirtd.RUNNING.get(uri)
    if private is not None:
        return private.serial_dir
    SERIAL_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(SERIAL_DIR, 0o1777)
    return SERIAL_DIR


class LibvirtGuest(Guest):
    def __init__(self, arch, *, connect: str | None = None, **kw):
        super().__init__(arch, **kw)
        self.uri = connect
        self.domain_name = DOMAIN_PREFIX + self.name
        self.conn = None
        self.dom = None
        self.sock: socket.socket | None = None
        self.xml = ""
        self._stopped = threading.Event()
        self._stop_detail: str | None = None
        self._callback = None
        self.socket_dir: Path | None = None

    @property
    def cmdline(self) -> str:
        return (f"libvirt {self.uri} domain {self.domain_name} "
                f"(XML: {self.xml_path})")

    @property
    def xml_path(self) -> Path:
        return LOG_DIR / f"{self.name}.xml"

    @property
    def alive(self) -> bool:
        return self.dom is not None and not self._stopped.is_set()

    def _launch_process(self) -> None:
        libvirt = libvirtd.import_libvirt()
        if not self.uri:
            raise LaunchError("the libvirt backend needs a connection URI "
                              "(--connect, or the CLI's private daemon)")
        check_uri(self.uri)
        _event_loop(libvirt)
        self.socket_dir = socket_dir(self.uri)
        serial = self.socket_dir / f"s{os.getpid()}-{next(_socket_no)}.sock"
        if len(str(serial)) > libvirtd.MAX_SOCKET_PATH:
            raise LaunchError(f"serial socket path too long: {serial}")
        serial.unlink(missing_ok=True)
        if self.channel_socket:
            # Where QEMU (the daemon's user) may create it, beside COM1's.
            shutil.rmtree(self._chan_dir, ignore_errors=True)
            self.channel_socket = serial.with_name("c" + serial.name[1:])
            self.channel_socket.unlink(missing_ok=True)
        self.xml = domain_xml(self.domain_name, self.arch, image=self.image,
                              smp=self.smp, memory_mb=self.memory_mb,
                              serial=serial, extra_args=self.extra_args,
                              channel=self.channel_socket)
        self.xml_path.write_text(self.xml)
        self._note(f"# libvirt: {self.uri} createXML {self.xml_path}")
        try:
            self.conn = libvirt.open(self.uri)
        except libvirt.libvirtError as e:
            raise LaunchError(f"cannot connect to libvirt at {self.uri}: {e}",
                              **self._context()) from None
        self._callback = self.conn.domainEventRegisterAny(
            None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._on_lifecycle, None)
        try:
            self.dom = self.conn.createXML(self.xml, libvirt.VIR_DOMAIN_START_PAUSED)
        except libvirt.libvirtError as e:
            raise LaunchError(f"libvirt refused the domain: {e}",
                              **self._context()) from None
        self._note(f"# libvirt: domain {self.domain_name} id {self.dom.ID()} "
                   f"created paused")
        try:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(str(serial))
        except OSError as e:
            raise LaunchError(f"cannot connect to the guest's serial socket "
                              f"{serial}: {e}", **self._context()) from None
        self._t0 = time.perf_counter()
        try:
            self.dom.resume()
        except libvirt.libvirtError as e:
            raise LaunchError(f"libvirt could not resume the domain: {e}",
                              **self._context()) from None
        t = threading.Thread(target=self._read_stdout, daemon=True)
        t.start()
        self._threads.append(t)

    def _on_lifecycle(self, conn, dom, event, detail, opaque) -> None:
        import libvirt
        if dom.name() != self.domain_name:
            return
        if event == libvirt.VIR_DOMAIN_EVENT_STOPPED:
            self._stop_detail = STOPPED_DETAIL.get(detail, f"detail {detail}")
            self._stopped.set()

    # ---- serial over the socket ----

    def _read_serial_chunk(self) -> bytes:
        try:
            return self.sock.recv(65536)
        except OSError:
            return b""

    def _write_serial(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError:
            pass   # QEMU is gone; the wait that follows says how

    # ---- the end ----

    def wait_exit(self, timeout: float = 10) -> ExitInfo:
        """Wait for the serial line to close and the domain to stop; believe
        the EXIT frame only if the domain then stopped by itself."""
        if self.exit_info:
            return self.exit_info
        deadline = time.monotonic() + timeout
        while not self._eof:
            self._handle(self._next(deadline, "the guest to exit"))
        end = self._reap(max(0.1, deadline - time.monotonic()))
        status = self._exit_status
        if status is None:
            raise GuestExited(f"the domain stopped ({end}) and the guest sent no "
                              "EXIT frame" + self._stderr_note(),
                              status=None, status_name="none", **self._context())
        if end not in ENDED_BY_ITSELF:
            raise ProtocolError(f"guest said EXIT {status} but the domain ended "
                                f"{end}, not by itself" + self._stderr_note(),
                                **self._context())
        self.exit_info = ExitInfo(status, None, list(self.text),
                                  end=f"libvirt: stopped, {end}")
        self._note(f"# libvirt: domain stopped, {end}")
        return self.exit_info

    def _reap(self, timeout: float) -> str:
        """Wait for the STOPPED event; destroy the domain if it does not come.
        Returns how the domain stopped."""
        if self.dom is None:
            return "never started"
        if not self._stopped.wait(timeout):
            self.kill()
            if not self._stopped.wait(10):
                return "still running after destroy"
        return self._stop_detail

    def kill(self) -> None:
        if self.dom is not None and not self._stopped.is_set():
            try:
                self.dom.destroy()
                self._note("# harness destroyed the domain")
            except Exception:
                pass   # already gone

    def close(self) -> None:
        self._chan_paused.clear()
        if self.dom is not None:
            self.kill()
            self._reap(10)
        if self._chan_sock is not None:
            try:
                self._chan_sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            for t in self._threads:
                t.join(timeout=5)
            self.sock.close()
            self.sock = None
        if self.conn is not None:
            try:
                if self._callback is not None:
                    self.conn.domainEventDeregisterAny(self._callback)
                self.conn.close()
            except Exception:
                pass
            self.conn = None
        if self.dom is not None:
            self._note(f"# libvirt: domain {self.domain_name} "
                       f"{self._stop_detail or 'state unknown'}")
            self.dom = None
        if self._chan_sock is not None:
            self._chan_sock.close()
            self._chan_sock = None
        for f in (self._log, self._raw, self._chan_raw):
            if f:
                f.close()
        self._log = self._raw = self._chan_raw = None

    def _stderr_note(self) -> str:
        """QEMU's stderr, from libvirt's domain log when it is on this host
        (the private daemon's); otherwise where to find it."""
        private = libvirtd.RUNNING.get(self.uri)
        log = private.domain_log(self.domain_name) if private else None
        try:
            lines = log.read_text(errors="replace").splitlines()
        except (AttributeError, OSError):
            return (f"; QEMU's stderr is in libvirt's domain log "
                    f"{self.domain_name}.log")
        said = [ln for ln in lines if ln.startswith("20") and " " in ln][-4:]
        return f"; libvirt's domain log {log} ends:\n    " + "\n    ".join(said)
