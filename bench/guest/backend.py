"""Which backend runs a guest: open_guest() is the one place that picks.

    with open_guest("i386", label="run", smp=4) as g: ...

Backend "qemu" (the default) is bench/guest/qemu.py's Guest: the harness
starts QEMU itself. Backend "libvirt" is bench/guest/libvirt.py's
LibvirtGuest: the same guest as a transient domain of the libvirt daemon
at a URI. The CLI's --backend/--connect call use_backend() once for the
whole process; open_guest's own backend=/connect= arguments win over it.
--channel likewise calls use_channel(): the trace over a virtio port or
the 16550 (bench/guest/qemu.py), unless open_guest is given channel=.
"""

from __future__ import annotations

from ..errors import UsageError
from .libvirt import LibvirtGuest
from .qemu import CHANNELS, Guest

BACKENDS = ("qemu", "libvirt")
_default = {"name": "qemu", "connect": None, "channel": None}


def use_backend(name: str, connect: str | None = None) -> None:
    """Make every open_guest() from now on use this backend."""
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}: known backends are "
                         f"{', '.join(BACKENDS)}")
    _default.update(name=name, connect=connect)


def use_channel(channel: str | None) -> None:
    """Make every open_guest() from now on carry the trace over this
    channel (None: each arch's default)."""
    if channel is not None and channel not in CHANNELS:
        raise UsageError(f"unknown channel {channel!r}: one of {', '.join(CHANNELS)}")
    _default["channel"] = channel


def chosen_channel() -> str | None:
    """The channel --channel asked for, None if it asked for none."""
    return _default["channel"]


def open_guest(arch, *, backend: str | None = None, connect: str | None = None,
               **kw) -> Guest:
    """A Guest of the chosen backend (not yet launched: use it with `with`)."""
    name = backend or _default["name"]
    kw.setdefault("channel", _default["channel"])
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}: known backends are "
                         f"{', '.join(BACKENDS)}")
    if name == "libvirt":
        return LibvirtGuest(arch, connect=connect or _default["connect"], **kw)
    if connect:
        raise UsageError("--connect needs --backend libvirt")
    return Guest(arch, **kw)
