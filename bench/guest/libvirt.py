"""The libvirt backend: the same guest as a transient libvirt domain.

    with LibvirtGuest("i386", connect=uri) as g:   # or open_guest() after
        g.command("selftest"); g.exit(0)           # use_backend("libvirt", uri)

A LibvirtGuest is a bench/guest/qemu.py Guest whose QEMU is started by a libvirt
daemon instead of by the harness, on this host or another: everything
crosses the libvirt connection, so qemu:///session and qemu+tcp:// or
qemu+ssh:// URIs take the same path. Everything above the serial line
(frames, commands, replies, trace capture, logs in build/logs/) is the base
class's; this module only changes how QEMU starts, how bytes move and how
its end is observed.

Domain. domain_xml() (bench/guest/domain_xml.py) writes the transient
domain (createXML, so nothing stays defined after it stops). The image is
uploaded to the host's pool first and the domain names that volume
(volumes.py). What the domain XML cannot express is passed verbatim
through <qemu:commandline>: the exit devices (isa-debug-exit on i386; the
testdev chardev on sparc64's COM2 — libvirt puts its own serial first, so
COM1 stays the console) and the caller's extra_args (e.g. `-gdb
unix:PATH,...`, which only a daemon on this host can serve).

Ports. The guest's ports (COM1 first, then any channel — the virtio
trace port is one, on i386) are streams over the connection (console.py), opened while the domain is still paused and
only then resumed, so not one byte of the boot is lost. QEMU closing a
port ends its stream; what the pty dropped at that moment comes from
QEMU's log of the port once the domain has stopped (read_port).

Host. The connection closing under a guest (the close callback) or
failing a call is HostLost, with the URI: the matrix then reruns the
cell on another host (bench/suite/matrix.py).

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

import os
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import (GuestExited, GuestTimeout, HostLost, LaunchError,
                      ProtocolError, UsageError)
from ..paths import LOG_DIR, REPO
from . import libvirtd, volumes
from .. import arches
from ..wire import frames as wire
from .console import COM1, ConsoleStream, Port
from .conversation import _EOF, ExitInfo
from .domain_xml import domain_xml
from .qemu import Guest
from .shm_channel import ShmChannel

# How the libvirt lifecycle STOPPED details read (virDomainEventStoppedDetailType).
STOPPED_DETAIL = {0: "shutdown", 1: "destroyed", 2: "crashed", 3: "migrated",
                  4: "saved", 5: "failed", 6: "from-snapshot"}
ENDED_BY_ITSELF = ("failed", "shutdown")
SERIAL_DIR = REPO / "build" / "libvirt" / "serial"
DOMAIN_PREFIX = "trapbench-"

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


TRANSPORTS = ("", "unix", "tcp", "tls", "ssh", "libssh", "libssh2")
CLOSE_REASONS = {0: "a connection error", 1: "end of file: the daemon went away",
                 2: "keepalive timed out: the host stopped answering",
                 3: "closed by the client"}


def is_remote(uri: str) -> bool:
    """Whether the URI names a host (the daemon may be on another machine)."""
    return bool(urlsplit(uri).hostname)


def check_uri(uri: str) -> None:
    """Refuse, before anything starts, the URIs the backend cannot use:
    not the QEMU driver, or a transport libvirt's client does not have.
    Local and remote daemons alike are reached through the connection
    (consoles as streams, images as uploaded volumes)."""
    u = urlsplit(uri)
    driver, _, transport = u.scheme.partition("+")
    if driver != "qemu":
        raise UsageError(f"--connect {uri!r}: the libvirt backend runs QEMU "
                         "domains (qemu:///session, qemu+tcp://HOST/session, "
                         "qemu+ssh://USER@HOST/system, ...)")
    if transport not in TRANSPORTS:
        raise UsageError(f"--connect {uri!r}: unknown transport {transport!r}; "
                         f"libvirt's are {', '.join(t for t in TRANSPORTS if t)}"
                         + (" (ext runs a command of its own that the bench "
                            "cannot check)" if transport == "ext" else ""))
    if u.path.rstrip("/") not in ("/session", "/system"):
        raise UsageError(f"--connect {uri!r}: the path is /session or /system "
                         "(which of the host's QEMU daemons)")


def socket_dir(uri: str | None) -> Path:
    """Where sockets of guests on this URI go: a directory QEMU (running as
    the daemon's user) may create sockets in. A gdb socket goes here too:
    extra_args=("-gdb", f"unix:{socket_dir(uri)}/NAME,server=on,wait=off").
    Only for a daemon on this host: a socket on another host is out of
    the harness's reach."""
    if uri and is_remote(uri):
        raise LaunchError(f"{uri} names another host: a unix socket there "
                          "(e.g. the GDB stub's) is out of the harness's reach")
    private = libvirtd.RUNNING.get(uri)
    if private is not None:
        return private.serial_dir
    SERIAL_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(SERIAL_DIR, 0o1777)
    return SERIAL_DIR


class LibvirtGuest(Guest):
    def __init__(self, arch, *, connect: str | None = None, ports=(COM1,), **kw):
        a = arch if isinstance(arch, arches.Arch) else arches.get(arch)
        # The shm channel maps QEMU's RAM into this process: a domain on
        # this host (a local URI) is mapped through /proc/<QEMU's pid>, as
        # the qemu backend's sun4u; a remote host's RAM is out of reach, so
        # its trace keeps the port, said in the log once it is open.
        want = kw.get("channel") or Guest.DEFAULT_CHANNEL or a.default_channel
        self._shm_refused = want == "shm" and (not connect or is_remote(connect))
        if self._shm_refused:
            kw["channel"] = a.default_channel     # the port (arches.py)
        self._channel_ports: tuple = ()
        super().__init__(a, **kw)
        self.uri = connect
        self.ports = tuple(ports) + self._channel_ports
        if not self.ports or self.ports[0].kind != "serial":
            raise LaunchError("a guest's first port is its console, a serial port")
        self.domain_name = DOMAIN_PREFIX + self.name
        self.conn = None
        self.dom = None
        self.streams: list[ConsoleStream] = []
        self.xml = ""
        self._stopped = threading.Event()
        self._stop_detail: str | None = None
        self._host_lost: str | None = None
        self._callback = None
        self._volumes = []
        self.pool = None
        self._logs_read: set[int] = set()
        self._port_problems: list[str] = []

    @property
    def cmdline(self) -> str:
        return (f"libvirt {self.uri} domain {self.domain_name} "
                f"(XML: {self.xml_path})")

    @property
    def xml_path(self) -> Path:
        return LOG_DIR / f"{self.name}.xml"

    @property
    def alive(self) -> bool:
        return (self.dom is not None and not self._stopped.is_set()
                and not self._host_lost)

    def _launch_process(self) -> None:
        if self._shm_refused:
            self._note(f"# shm channel asked for: {self.uri or 'no URI'} is not a "
                       f"daemon on this host, whose domain's RAM could be mapped "
                       f"here, so the trace goes over {self.channel}")
        libvirt = libvirtd.import_libvirt()
        if not self.uri:
            raise LaunchError("the libvirt backend needs a connection URI "
                              "(--connect, or the CLI's private daemon)")
        check_uri(self.uri)
        _event_loop(libvirt)
        self._note(f"# libvirt: connecting to {self.uri}")
        try:
            self.conn = libvirt.open(self.uri)
        except libvirt.libvirtError as e:
            raise HostLost(f"cannot connect to libvirt at {self.uri}: "
                           f"{e.get_error_message()}", uri=self.uri,
                           **self._context()) from None
        # No keepalive (libvirtd.py says why): a daemon that dies or a
        # host that reboots closes the connection, which the close callback
        # sees at once; a host that goes silent holds the guest until its
        # command's timeout, after which the matrix finds it not answering.
        self.conn.registerCloseCallback(self._on_close, None)
        self._callback = self.conn.domainEventRegisterAny(
            None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._on_lifecycle, None)
        self.pool = volumes.open_pool(self.conn, self.uri)
        vol = volumes.stage(self.pool, self.uri, self.image)
        self._volumes.append(vol)
        self._note(f"# libvirt: {self.image} uploaded to {vol.path()}")
        logs = [f"{self.pool.path}/{volumes.log_name(self.domain_name, i)}"
                for i in range(len(self.ports))]
        self.xml = domain_xml(self.domain_name, self.arch, image=Path(vol.path()),
                              smp=self.smp, memory_mb=self.memory_mb,
                              ports=self.ports, logs=logs,
                              extra_args=self.extra_args,
                              shared_ram=self._shm is not None)
        self.xml_path.write_text(self.xml)
        self._note(f"# libvirt: {self.uri} createXML {self.xml_path}")
        try:
            self.dom = self.conn.createXML(self.xml, libvirt.VIR_DOMAIN_START_PAUSED)
        except libvirt.libvirtError as e:
            self._check_host()
            raise LaunchError(f"libvirt at {self.uri} refused the domain: {e}",
                              **self._context()) from None
        finally:
            for v in self._volumes:   # QEMU has read -kernel/-bios, or failed
                volumes.drop(v)
            self._volumes = []
        self._note(f"# libvirt: domain {self.domain_name} id {self.dom.ID()} "
                   f"created paused")
        for port in self.ports:
            self.streams.append(ConsoleStream(self.conn, self.dom, port, self.uri))
        self._t0 = time.perf_counter()
        try:
            self.dom.resume()
        except libvirt.libvirtError as e:
            self._check_host()
            raise LaunchError(f"libvirt at {self.uri} could not resume the "
                              f"domain: {e}", **self._context()) from None
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

    def _on_close(self, conn, reason, opaque) -> None:
        """The connection closed under us: the daemon went away, the
        network broke, or keepalive gave up."""
        if self._host_lost is None:
            self._host_lost = CLOSE_REASONS.get(reason, f"reason {reason}")
        self._note(f"# libvirt: connection to {self.uri} closed: {self._host_lost}")
        for s in self.streams:
            s._end(f"error: the connection closed ({self._host_lost})")

    def _check_host(self) -> None:
        """Raise HostLost if the connection is gone (rather than the error
        of whatever call noticed it)."""
        if self._host_lost is None and self.conn is not None:
            try:
                if not self.conn.isAlive():
                    self._host_lost = "the connection is no longer alive"
            except Exception as e:
                self._host_lost = f"the connection failed: {e}"
        if self._host_lost is not None:
            raise HostLost(f"lost the libvirt connection to {self.uri} "
                           f"({self._host_lost}); domain {self.domain_name} "
                           "may still run there", uri=self.uri, **self._context())

    # ---- the shm channel: QEMU's RAM on this host ----

    def _plan_shm(self) -> None:
        """The RAM is libvirt's to place (<memoryBacking>, domain_xml): no
        file of ours; shm_channel maps what QEMU has once it runs. The
        frames read go to NAME.shm, as under our own QEMU."""
        self._shm = ShmChannel(self.memory_mb, self.arch.ram_backend, path="",
                               log_path=LOG_DIR / f"{self.name}.shm")

    def _qemu_pid(self) -> int:
        """The pid of this domain's QEMU, found by its -name on this host."""
        want = f"guest={self.domain_name},".encode()
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if any(a.startswith(want) or a == want[:-1] for a in argv):
                return int(d)
        raise LaunchError(f"no QEMU of domain {self.domain_name} on this host "
                          f"(its RAM cannot be mapped)", **self._context())

    # ---- the virtio trace port: one more stream ----

    def _plan_channel(self) -> None:
        """A <channel> with a virtio target named as the guest looks for it
        (libvirt adds the virtio-serial controller; ioeventfd off as in the
        qemu backend, through -global since the controller is libvirt's)."""
        self._channel_ports = (Port("channel", wire.VIRTIO_PORT),)
        self.extra_args += ("-global", "virtio-serial-pci.ioeventfd=off")

    def _open_channel(self) -> bool:
        return len(self.streams) > self._channel_index >= 0

    @property
    def _channel_index(self) -> int:
        for i, p in enumerate(self.ports):
            if p.kind == "channel" and p.name == wire.VIRTIO_PORT:
                return i
        return -1

    def _read_channel_chunk(self, buf: bytearray) -> bytes:
        return self.read_port(self._channel_index)

    # ---- serial over the console stream ----

    def _read_serial_chunk(self) -> bytes:
        return self.read_port(0)

    def read_port(self, index: int) -> bytes:
        """The next bytes of port `index`; at the stream's end, once the
        domain has stopped, what the stream lost from QEMU's log of the port
        (console.py: the last bytes); then b""."""
        s = self.streams[index]
        if index in self._logs_read:
            return b""
        chunk = s.read_chunk()
        if chunk:
            return chunk
        self._logs_read.add(index)
        if s.ended != "closed" or self._host_lost:
            return b""
        if not self._wait_stopped(15):
            self._note(f"# libvirt: port {index} closed but the domain did not "
                       "stop; its log is not read")
            return b""
        try:
            log = volumes.fetch(self.pool, self.uri,
                                volumes.log_name(self.domain_name, index))
            tail = s.tail_from(log)
        except ValueError as e:
            kept = LOG_DIR / f"{self.name}.port{index}.qemu.log"
            kept.write_bytes(log)
            self._port_problems.append(f"{e}; QEMU's log kept in {kept}, the "
                                       f"stream's bytes in {self.serial_path}")
            self._note(f"!! libvirt: {self._port_problems[-1]}")
            return b""
        except LaunchError as e:
            self._port_problems.append(str(e))
            self._note(f"!! libvirt: {e}")
            return b""
        self._note(f"# libvirt: port {index} ({s.port.name}): {s.received} bytes "
                   f"over the stream, {s.recovered} more from QEMU's log of it")
        return tail

    def _write_serial(self, data: bytes) -> None:
        self.streams[0].write(data)     # a refusal ends the stream: see _next

    def _next(self, deadline: float, what: str):
        """The base class's wait, which at the end of the console tells a
        guest that stopped from a host or a stream that went away."""
        try:
            ev = super()._next(deadline, what)
        except GuestTimeout:
            self._check_host()
            raise
        if ev is _EOF:
            if self._port_problems:
                raise ProtocolError("; ".join(self._port_problems),
                                    **self._context())
            ended = self.streams[0].ended or ""
            if ended.startswith("error"):
                time.sleep(0.2)        # let the close callback say why
                self._check_host()
                raise ProtocolError(f"the console stream of domain "
                                    f"{self.domain_name} at {self.uri} broke "
                                    f"({ended[7:]}) while waiting for {what}",
                                    **self._context())
        return ev

    # ---- the end ----

    def wait_exit(self, timeout: float = 10) -> ExitInfo:
        """Wait for the console to close and the domain to stop; believe
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

    def _wait_stopped(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self._stopped.wait(0.2):
            if self._host_lost or time.monotonic() > deadline:
                return False
        return True

    def _reap(self, timeout: float) -> str:
        """Wait for the STOPPED event; destroy the domain if it does not come.
        Returns how the domain stopped; HostLost if its host is gone."""
        if self.dom is None:
            return "never started"
        if not self._wait_stopped(timeout):
            self._check_host()
            self.kill()
            if not self._wait_stopped(10):
                self._check_host()
                return "still running after destroy"
        return self._stop_detail

    def kill(self) -> None:
        if self.dom is not None and not self._stopped.is_set() \
                and not self._host_lost:
            try:
                self.dom.destroy()
                self._note("# harness destroyed the domain")
            except Exception:
                pass   # already gone, or its host is

    def close(self) -> None:
        if self.dom is not None:
            self.kill()
            try:
                self._reap(10)
            except HostLost:
                pass
        for s in self.streams:
            s.close()
        for t in self._threads:
            t.join(timeout=5)
        if self._host_lost and self.dom is not None \
                and not self._stopped.is_set():
            self._reach_again()
        elif self.pool is not None:
            for i in set(range(len(self.ports))) - self._logs_read:
                volumes.discard(self.pool, volumes.log_name(self.domain_name, i))
        if self.conn is not None:
            try:
                if self._callback is not None:
                    self.conn.domainEventDeregisterAny(self._callback)
                self.conn.unregisterCloseCallback()
                self.conn.close()
            except Exception:
                pass
            self.conn = None
        if self.dom is not None:
            self._note(f"# libvirt: domain {self.domain_name} "
                       + (f"left behind: the connection to {self.uri} was lost "
                          f"({self._host_lost})" if self._host_lost and
                          not self._stopped.is_set()
                          else self._stop_detail or "state unknown"))
            self.dom = None
        for f in (self._log, self._raw, self._chan_raw):
            if f:
                f.close()
        self._log = self._raw = self._chan_raw = None

    def _reach_again(self, timeout: float = 10.0) -> None:
        """The connection was lost but the host may still answer (a cut
        connection, not a dead daemon): on a fresh connection, destroy the
        domain and remove its port logs. A host that does not answer
        within timeout keeps them."""
        def clean():
            import libvirt
            try:
                conn = libvirt.open(self.uri)
            except libvirt.libvirtError:
                return
            try:
                try:
                    conn.lookupByName(self.domain_name).destroy()
                    self._note(f"# libvirt: reconnected to {self.uri} and "
                               "destroyed the domain")
                except libvirt.libvirtError:
                    pass
                pool = volumes.open_pool(conn, self.uri)
                for i in range(len(self.ports)):
                    volumes.discard(pool, volumes.log_name(self.domain_name, i))
            except Exception:
                pass
            finally:
                conn.close()
        t = threading.Thread(target=clean, daemon=True)
        t.start()
        t.join(timeout)

    def _stderr_note(self) -> str:
        """QEMU's stderr, from libvirt's domain log when it is on this host
        (the private daemon's); otherwise where to find it."""
        private = libvirtd.RUNNING.get(self.uri)
        log = private.domain_log(self.domain_name) if private else None
        try:
            lines = log.read_text(errors="replace").splitlines()
        except (AttributeError, OSError):
            return (f"; QEMU's stderr is in libvirt's domain log "
                    f"{self.domain_name}.log on the host of {self.uri}")
        said = [ln for ln in lines if ln.startswith("20") and " " in ln][-4:]
        return f"; libvirt's domain log {log} ends:\n    " + "\n    ".join(said)
