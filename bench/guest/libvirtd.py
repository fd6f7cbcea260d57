"""A private libvirt daemon in session mode, for the libvirt backend.

    with PrivateDaemon(REPO / "build" / "libvirt" / "run-123") as d:
        LibvirtGuest("i386", connect=d.uri)      (bench/guest/libvirt.py)

libvirt has two kinds of daemon. A *system* daemon (run as root) keeps its
state in /etc/libvirt, /run/libvirt and /var/lib/libvirt, and its QEMU
driver refuses to start until the `libvirt-qemu` user exists; a *session*
daemon (run as any other user) keeps everything under the XDG directories
of its environment. The bench wants a daemon of its own that changes
nothing on the host, so it starts a session daemon with every XDG
directory, its configuration and its logs in private directories:

    <root>/libvirtd.conf     logging only; no network listeners
    <root>/libvirtd.log      the daemon's own warnings and errors
    <root>/cache/libvirt/qemu/log/    each domain's QEMU command line + stderr
    <root>/pool/             its `trapbench` storage pool: uploaded images,
                             QEMU's logs of the guests' ports
    <sockets>/config/libvirt/qemu.conf   stdio_handler = "file" (no virtlogd)
    <sockets>/config/libvirt/qemu/lib/   per-domain QMP monitor sockets
    <sockets>/run/libvirt/libvirt-sock   the socket the URI names
    <sockets>/serial/        the guests' serial and gdb sockets

and connects with `qemu:///session?socket=<sockets>/run/libvirt/libvirt-sock`.
With tcp_port=P it also listens on 127.0.0.1:P, unauthenticated
(listen_tcp, auth_tcp = "none", `libvirtd --listen`): `tcp_uri`,
qemu+tcp://127.0.0.1:P/session, reaches it as a remote host would be
reached, which is how the tests stand in for other machines. Loopback
only: nothing off this machine can connect.
<root> is under build/libvirt/ and outlives the daemon (its logs); <sockets>
is a short temporary directory (/tmp/tblv-*) removed by stop(), because
libvirt puts each domain's monitor socket four levels under the config
directory and a unix socket path holds at most 107 bytes.

libvirtd decides between the two kinds by its effective uid alone: as root
it is always a system daemon (and `qemu:///session` from root goes to the
system socket). So when the harness runs as root (CI does), the daemon is
started as the unprivileged user `nobody` — and QEMU, which it spawns, runs
as `nobody` too: the guest images must be readable by everyone (build/ is)
and the private directory belongs to that user. `libvirtd --timeout` makes
an orphaned daemon exit by itself once nothing is connected or running;
while a PrivateDaemon is open it holds a connection, so that never
happens under it. stop() ends the daemon by its pid and waits for it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .. import arches
from ..errors import LaunchError

LIBVIRTD = "libvirtd"
UNPRIVILEGED_USER = "nobody"
IDLE_TIMEOUT_S = 120
# sockaddr_un.sun_path holds 108 bytes with the terminating NUL.
MAX_SOCKET_PATH = 107
# Running private daemons by URI, so a guest finds its socket and log paths.
RUNNING: dict[str, "PrivateDaemon"] = {}

QEMU_CONF = '''\
# The bench's private session daemon: QEMU's stdout/stderr to a plain file
# under cache/libvirt/qemu/log/, so no virtlogd is spawned.
stdio_handler = "file"
'''


def running(pid: int) -> bool:
    """Whether pid is a live process (not gone, not a zombie waiting for a
    parent that will not reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class DaemonUnavailable(LaunchError):
    """The private daemon could not be started here (no libvirtd, no
    python3-libvirt, no unprivileged user, or it died): the reason says which."""


def import_libvirt():
    try:
        import libvirt
    except ImportError:
        raise DaemonUnavailable("the libvirt backend needs python3-libvirt "
                                "(`make deps` installs it)") from None
    # Errors are raised as exceptions and reported with their URI; the
    # library's default handler would also print each to stderr.
    libvirt.registerErrorHandler(lambda ctx, err: None, None)
    return libvirt


class PrivateDaemon:
    def __init__(self, root: Path, *, start_timeout: float = 60.0,
                 tcp_port: int | None = None):
        self.root = Path(root).resolve()
        self.tcp_port = tcp_port
        self.sockets: Path | None = None
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.conn = None
        self.user = UNPRIVILEGED_USER if os.geteuid() == 0 else None

    @property
    def socket(self) -> Path:
        return self.sockets / "run" / "libvirt" / "libvirt-sock"

    @property
    def uri(self) -> str:
        return f"qemu:///session?socket={self.socket}"

    @property
    def tcp_uri(self) -> str:
        if not self.tcp_port:
            raise LaunchError("this daemon was started without tcp_port")
        return f"qemu+tcp://127.0.0.1:{self.tcp_port}/session"

    @property
    def serial_dir(self) -> Path:
        return self.sockets / "serial"

    @property
    def log(self) -> Path:
        return self.root / "libvirtd.log"

    def domain_log(self, name: str) -> Path:
        return self.root / "cache" / "libvirt" / "qemu" / "log" / f"{name}.log"

    def __enter__(self) -> "PrivateDaemon":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _prepare(self) -> dict:
        if shutil.which(LIBVIRTD) is None:
            raise DaemonUnavailable(f"no {LIBVIRTD} on PATH (`make deps` installs "
                                    "libvirt-daemon and libvirt-daemon-driver-qemu)")
        if not any(shutil.which(a.qemu) for a in arches.ARCHES.values()):
            raise DaemonUnavailable("no qemu-system-* on PATH")
        self.sockets = Path(tempfile.mkdtemp(prefix="tblv-"))
        os.chmod(self.sockets, 0o755)
        for sub in ("cache", "data", "state"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        for sub in ("run", "config/libvirt", "serial"):
            (self.sockets / sub).mkdir(parents=True, exist_ok=True)
        (self.sockets / "config" / "libvirt" / "qemu.conf").write_text(QEMU_CONF)
        conf = (f'log_outputs = "3:file:{self.log}"\n'
                # No keepalive: under load it cut healthy connections
                # carrying a trace (libvirt's 5 s x 5, and 10 s x 12 too).
                # A daemon that dies still closes the connection at once.
                'keepalive_interval = -1\n')
        if self.tcp_port:
            conf += ('listen_tls = 0\nlisten_tcp = 1\nlisten_addr = "127.0.0.1"\n'
                     f'tcp_port = "{int(self.tcp_port)}"\nauth_tcp = "none"\n')
        (self.root / "libvirtd.conf").write_text(conf)
        if self.user:
            try:
                pw = pwd.getpwnam(self.user)
            except KeyError:
                raise DaemonUnavailable(f"running as root, the session daemon "
                                        f"needs the user {self.user!r}") from None
            for top in (self.root, self.sockets):
                for dirpath, dirnames, filenames in os.walk(top):
                    for n in [dirpath, *(os.path.join(dirpath, f) for f in filenames)]:
                        os.chown(n, pw.pw_uid, pw.pw_gid)
            self._ids = (pw.pw_uid, pw.pw_gid)
        r, k = str(self.root), str(self.sockets)
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                "HOME": r, "LC_ALL": "C",
                "XDG_RUNTIME_DIR": f"{k}/run", "XDG_CONFIG_HOME": f"{k}/config",
                "XDG_CACHE_HOME": f"{r}/cache", "XDG_DATA_HOME": f"{r}/data",
                "XDG_STATE_HOME": f"{r}/state"}

    def start(self) -> None:
        libvirt = import_libvirt()
        env = self._prepare()
        kw = {}
        if self.user:
            kw = dict(user=self._ids[0], group=self._ids[1], extra_groups=[])
        cmd = [LIBVIRTD, "--config", str(self.root / "libvirtd.conf"),
               "--timeout", str(IDLE_TIMEOUT_S)] + (["--listen"] if self.tcp_port else [])
        out = open(self.root / "libvirtd.out", "wb")
        try:
            self.proc = subprocess.Popen(cmd, env=env, cwd=self.root, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True, **kw)
        except OSError as e:
            raise DaemonUnavailable(f"cannot start {LIBVIRTD}: {e}") from None
        finally:
            out.close()
        deadline = time.monotonic() + self.start_timeout
        last = "its socket never appeared"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DaemonUnavailable(
                    f"{LIBVIRTD} exited with rc {self.proc.returncode} while starting"
                    + self._said())
            if self.socket.exists():
                try:
                    self.conn = libvirt.open(self.uri)
                    self._make_pool(libvirt)
                    RUNNING[self.uri] = self
                    if self.tcp_port:
                        RUNNING[self.tcp_uri] = self
                    return
                except libvirt.libvirtError as e:
                    last = str(e)
            time.sleep(0.1)
        raise DaemonUnavailable(f"{LIBVIRTD} did not answer within "
                                f"{self.start_timeout:.0f} s: {last}" + self._said())

    def _make_pool(self, libvirt) -> None:
        """The daemon's own `trapbench` pool (bench/guest/volumes.py) under
        <root>/pool: images and port logs stay with its other files."""
        from .volumes import POOL
        path = self.root / "pool"
        try:
            self.conn.storagePoolCreateXML(
                f"<pool type='dir'><name>{POOL}</name><target><path>{path}</path>"
                "</target></pool>", libvirt.VIR_STORAGE_POOL_CREATE_WITH_BUILD)
        except libvirt.libvirtError as e:
            raise DaemonUnavailable(f"{LIBVIRTD} could not make its pool at "
                                    f"{path}: {e.get_error_message()}") from None

    def _said(self) -> str:
        lines = []
        for f in (self.root / "libvirtd.out", self.log):
            try:
                lines += [ln for ln in f.read_text(errors="replace").splitlines()
                          if " error : " in ln or not ln.startswith("20")]
            except OSError:
                pass
        return ("; it said:\n  " + "\n  ".join(lines[-8:])) if lines else ""

    def qemu_pids(self) -> list[int]:
        """The QEMUs this daemon started that still run (from its pid
        files): they outlive a daemon that is killed."""
        pids = []
        if self.sockets is None:
            return pids
        for f in (self.sockets / "run" / "libvirt" / "qemu" / "run").glob("trapbench-*.pid"):
            try:
                pid = int(f.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if running(pid):
                pids.append(pid)
        return pids

    def kill(self) -> None:
        """SIGKILL the daemon, as a host that goes away (its QEMUs live on:
        stop() ends them)."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.sockets is not None:
            RUNNING.pop(self.uri, None)
            if self.tcp_port:
                RUNNING.pop(self.tcp_uri, None)
        if self.conn is not None:
            try:
                for dom in self.conn.listAllDomains():
                    if dom.name().startswith("trapbench-"):
                        dom.destroy()
            except Exception:
                pass
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        left = self.qemu_pids()          # by a daemon that was killed
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        deadline = time.monotonic() + 10
        while any(running(p) for p in left) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.sockets is not None:
            shutil.rmtree(self.sockets, ignore_errors=True)


def free_port() -> int:
    """A loopback TCP port no one listens on now (it may be taken before
    libvirtd binds it: start_on_free_port tries again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_on_free_port(root: Path, tag: str, tries: int = 3) -> PrivateDaemon:
    """A started private daemon listening on a free loopback port, its root
    under root/<tag><pid>-<port>; DaemonUnavailable after tries ports."""
    last: Exception | None = None
    for _ in range(tries):
        port = free_port()
        d = PrivateDaemon(Path(root) / f"{tag}{os.getpid()}-{port}", tcp_port=port)
        try:
            d.start()
            return d
        except DaemonUnavailable as e:
            d.stop()
            last = e
    raise DaemonUnavailable(f"no private daemon on loopback TCP after {tries} "
                            f"ports: {last}")
