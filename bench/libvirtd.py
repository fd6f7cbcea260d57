"""A private libvirt daemon in session mode, for the libvirt backend.

    with PrivateDaemon(REPO / "build" / "libvirt" / "run-123") as d:
        Guest("i386", backend="libvirt", connect=d.uri)

libvirt has two kinds of daemon. A *system* daemon (run as root) keeps its
state in /etc/libvirt, /run/libvirt and /var/lib/libvirt, and its QEMU
driver refuses to start until the `libvirt-qemu` user exists; a *session*
daemon (run as any other user) keeps everything under the XDG directories
of its environment. The bench wants a daemon of its own that changes
nothing on the host, so it starts a session daemon with every XDG
directory, its configuration and its logs under one private directory:

    <root>/libvirtd.conf     logging only; no network listeners
    <root>/config/libvirt/qemu.conf   stdio_handler = "file" (no virtlogd)
    <root>/run/libvirt/libvirt-sock   the socket the URI names
    <root>/cache/libvirt/qemu/log/    each domain's QEMU command line + stderr
    <root>/serial/           the guests' serial and gdb sockets
    <root>/libvirtd.log      the daemon's own warnings and errors

and connects with `qemu:///session?socket=<root>/run/libvirt/libvirt-sock`.

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
import subprocess
import time
from pathlib import Path

from .errors import LaunchError

LIBVIRTD = "libvirtd"
UNPRIVILEGED_USER = "nobody"
IDLE_TIMEOUT_S = 120
# sockaddr_un.sun_path holds 108 bytes with the terminating NUL.
MAX_SOCKET_PATH = 107

QEMU_CONF = '''\
# The bench's private session daemon: QEMU's stdout/stderr to a plain file
# under cache/libvirt/qemu/log/, so no virtlogd is spawned.
stdio_handler = "file"
'''


class DaemonUnavailable(LaunchError):
    """The private daemon could not be started here (no libvirtd, no
    python3-libvirt, no unprivileged user, or it died): the reason says which."""


def import_libvirt():
    try:
        import libvirt
    except ImportError:
        raise DaemonUnavailable("the libvirt backend needs python3-libvirt "
                                "(`make deps` installs it)") from None
    return libvirt


class PrivateDaemon:
    def __init__(self, root: Path, *, start_timeout: float = 60.0):
        self.root = Path(root).resolve()
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.conn = None
        self.user = UNPRIVILEGED_USER if os.geteuid() == 0 else None

    @property
    def socket(self) -> Path:
        return self.root / "run" / "libvirt" / "libvirt-sock"

    @property
    def uri(self) -> str:
        return f"qemu:///session?socket={self.socket}"

    @property
    def serial_dir(self) -> Path:
        return self.root / "serial"

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
        if shutil.which("qemu-system-i386") is None and \
                shutil.which("qemu-system-sparc64") is None:
            raise DaemonUnavailable("no qemu-system-* on PATH")
        if len(str(self.serial_dir / "s000.sock")) > MAX_SOCKET_PATH:
            raise DaemonUnavailable(f"{self.root} is too deep: unix socket paths "
                                    f"under it would exceed {MAX_SOCKET_PATH} bytes")
        for sub in ("run", "config/libvirt", "cache", "data", "state", "serial"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "config" / "libvirt" / "qemu.conf").write_text(QEMU_CONF)
        (self.root / "libvirtd.conf").write_text(
            f'log_outputs = "3:file:{self.log}"\n')
        if self.user:
            try:
                pw = pwd.getpwnam(self.user)
            except KeyError:
                raise DaemonUnavailable(f"running as root, the session daemon "
                                        f"needs the user {self.user!r}") from None
            for dirpath, dirnames, filenames in os.walk(self.root):
                for n in [dirpath, *(os.path.join(dirpath, f) for f in filenames)]:
                    os.chown(n, pw.pw_uid, pw.pw_gid)
            self._ids = (pw.pw_uid, pw.pw_gid)
        r = str(self.root)
        return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                "HOME": r, "LC_ALL": "C",
                "XDG_RUNTIME_DIR": f"{r}/run", "XDG_CONFIG_HOME": f"{r}/config",
                "XDG_CACHE_HOME": f"{r}/cache", "XDG_DATA_HOME": f"{r}/data",
                "XDG_STATE_HOME": f"{r}/state"}

    def start(self) -> None:
        libvirt = import_libvirt()
        env = self._prepare()
        kw = {}
        if self.user:
            kw = dict(user=self._ids[0], group=self._ids[1], extra_groups=[])
        cmd = [LIBVIRTD, "--config", str(self.root / "libvirtd.conf"),
               "--timeout", str(IDLE_TIMEOUT_S)]
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
                    return
                except libvirt.libvirtError as e:
                    last = str(e)
            time.sleep(0.1)
        raise DaemonUnavailable(f"{LIBVIRTD} did not answer within "
                                f"{self.start_timeout:.0f} s: {last}" + self._said())

    def _said(self) -> str:
        lines = []
        for f in (self.root / "libvirtd.out", self.log):
            try:
                lines += [ln for ln in f.read_text(errors="replace").splitlines()
                          if " error : " in ln or not ln.startswith("20")]
            except OSError:
                pass
        return ("; it said:\n  " + "\n  ".join(lines[-8:])) if lines else ""

    def stop(self) -> None:
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
