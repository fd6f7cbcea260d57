"""Probe sites as the guest's memory holds them, read through QEMU's GDB
stub with the harness's own RSP client (bench/debug/rsp.py), no gdb involved.

    states = sitecheck.read_sites(guest, session.image, probes, mechanism, enabled)
    bad = [s for s in states if not s.ok]

Theory of operation. A disabled probe must leave exactly the compiler's
instruction at its site, and an enabled one must show the arch's trap
(arches.Arch.probe_trap: int3 or ud2 on i386, `illtrap <id>` on
sparc64). The host knows the original bytes from the ELF (trace.Image), so
reading the site through the stub proves what the guest's own `probe
list` can only claim. An interrupt stops QEMU's VM (RSPClient.halt), the
reads follow, and `D` (detach) lets the guest run on — the serial side
does not notice beyond the pause. Under the lossy mechanisms (step,
shellgame) an enabled site may hold either the trap or, between a firing
and the next, the original; both are accepted there.

QEMU's sparc64 stub translates addresses through the TLBs only; a site
whose page no TLB holds is read as physical memory instead (kernel text
is identity-mapped on both arches: RSPClient.read_identity).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..guest.qemu import Guest
from ..trace.image import Image
from ..trace.sites import Probe
from . import rsp


@dataclass
class SiteState:
    probe: Probe
    enabled: bool
    original: bytes
    trap: bytes
    got: bytes
    lossy: bool = False

    @property
    def ok(self) -> bool:
        if not self.enabled:
            return self.got == self.original
        return self.got == self.trap or (self.lossy and self.got == self.original)

    def describe(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        want = self.trap.hex() if self.enabled else self.original.hex()
        return (f"probe {self.probe.id} {self.probe.function}:{self.probe.kind} at "
                f"{self.probe.addr:#x} ({state}): site holds {self.got.hex()}, "
                f"expected {want}" + (" (or the original: lossy mechanism)"
                                      if self.enabled and self.lossy else ""))


def read_code(stub: rsp.RSPClient, addr: int, length: int) -> bytes:
    """A site's bytes: kernel text is identity-mapped (RSPClient.read_identity)."""
    return stub.read_identity(addr, length)


def read_sites(guest: Guest, image: Image, probes: list[Probe],
               mechanism: str, enabled: set[int], timeout: float = 20) -> list[SiteState]:
    fmt = guest.arch.probe_trap.get(mechanism)
    if fmt is None:
        raise rsp.StubError(f"{guest.arch.name} has no armed-site bytes for "
                            f"mechanism {mechanism!r}")
    out = []
    with rsp.RSPClient.connect_unix(guest.wait_gdb_socket(), timeout=timeout) as stub:
        stop = stub.halt()
        if stop.exited:
            raise rsp.StubError(f"the guest is gone: stop reply {stop.raw!r}")
        try:
            for p in probes:
                trap = bytes.fromhex(fmt.format(id=p.id))
                original = image.code(p.addr, len(trap))
                got = read_code(stub, p.addr, len(trap))
                out.append(SiteState(p, p.id in enabled, original, trap, got,
                                     mechanism in guest.arch.lossy))
        finally:
            stub.detach()
    return out
