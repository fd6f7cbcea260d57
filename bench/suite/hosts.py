"""The libvirt hosts the correctness matrix places its cells on.

    hosts = connect(["qemu+tcp://a:16509/session", "qemu+ssh://b/system"])
    hosts[0].slots      # cells it runs at once: its CPU count, as libvirt says
    check(hosts[0])     # None while it answers, else why it does not

A host is a libvirt URI the matrix's cells pass to `--backend libvirt
--connect URI` (bench/guest/libvirt.py does the rest through the
connection: images uploaded as volumes, consoles as streams). Its slots
come from virNodeGetInfo's CPU count, one cell per CPU, the same rule
bench/suite/matrix_run.py applies to this machine. check() opens a fresh
connection and asks for that count again; the runner calls it after a
cell fails, to tell a cell that failed (the host still answers) from a
host that did (it does not), and takes a host that does not answer out
of the rotation. Connecting is done in a thread with a deadline: a host
that drops packets would otherwise hold libvirt.open() for minutes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from urllib.parse import urlsplit

CONNECT_TIMEOUT_S = 20.0


@dataclass
class Host:
    uri: str
    label: str = ""
    slots: int = 0
    cpus: int = 0
    down: str | None = None        # why it was taken out of the rotation
    down_at: float | None = None   # seconds into the run
    ran: list[str] = field(default_factory=list)


def _ask_cpus(uri: str, timeout: float) -> int:
    """The host's CPU count, or ConnectionError saying why not."""
    out: dict = {}

    def ask():
        try:
            import libvirt
            libvirt.registerErrorHandler(lambda ctx, err: None, None)
            conn = libvirt.open(uri)
            try:
                out["cpus"] = int(conn.getInfo()[2])
            finally:
                conn.close()
        except Exception as e:          # libvirtError, ImportError
            msg = e.get_error_message() if hasattr(e, "get_error_message") else str(e)
            out["error"] = msg or type(e).__name__

    t = threading.Thread(target=ask, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise ConnectionError(f"no answer within {timeout:g} s")
    if "error" in out:
        raise ConnectionError(out["error"])
    return out["cpus"]


def check(host: Host, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """None if the host answers now, else the reason it does not."""
    try:
        _ask_cpus(host.uri, timeout)
        return None
    except ConnectionError as e:
        return str(e)


def labels(uris: list[str]) -> list[str]:
    """Short names for the summary: HOST:PORT where that tells them apart,
    else the whole URI."""
    short = [urlsplit(u).netloc or u for u in uris]
    return [s if short.count(s) == 1 else u for s, u in zip(short, uris)]


def connect(uris: list[str], ask=_ask_cpus,
            timeout: float = CONNECT_TIMEOUT_S) -> list[Host]:
    """A Host per URI with its slots; a host that cannot be reached is
    returned with `down` saying why (the caller decides what that means)."""
    hosts = []
    for uri, label in zip(uris, labels(uris)):
        h = Host(uri, label)
        try:
            h.cpus = ask(uri, timeout)
            h.slots = max(1, h.cpus)
        except ConnectionError as e:
            h.down, h.down_at = f"unreachable at the start: {e}", 0.0
        hosts.append(h)
    return hosts
