"""Which backend runs a guest: open_guest() is the one place that picks.

    with open_guest("i386", label="run", smp=4) as g: ...

Backend "qemu" (the default) is bench/guest/qemu.py's Guest: the harness
starts QEMU itself. Backend "libvirt" is bench/guest/libvirt.py's
LibvirtGuest: the same guest as a transient domain of the libvirt daemon
at a URI. The CLI's --backend/--connect call use_backend() once for the
whole process; open_guest's own backend=/connect= arguments win over it.
"""

from __future__ import annotations

from ..errors import UsageError
from .libvirt import LibvirtGuest
from .qemu import Guest

BACKENDS = ("qemu", "libvirt")
_default = {"name": "qemu", "connect": None}


def use_backend(name: str, connect: str | None = None) -> None:
    """Make every open_guest() from now on use this backend."""
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}: known backends are "
                         f"{', '.join(BACKENDS)}")
    _default.update(name=name, connect=connect)


def open_guest(arch, *, backend: str | None = None, connect: str | None = None,
               **kw) -> Guest:
    """A Guest of the chosen backend (not yet launched: use it with `with`)."""
    name = backend or _default["name"]
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}: known backends are "
                         f"{', '.join(BACKENDS)}")
    if name == "libvirt":
        return LibvirtGuest(arch, connect=connect or _default["connect"], **kw)
    if connect:
        raise UsageError("--connect needs --backend libvirt")
    return Guest(arch, **kw)
