"""Guest images carried to the libvirt host as storage volumes.

    vol = stage(conn, uri, Path("build/i386/kernel.elf"))
    ... domain XML names vol.path() ...; once QEMU has started: drop(vol)

A libvirt daemon on another host cannot read build/ here, so every image a
domain boots (the i386 kernel ELF, sparc64's PROM image) goes to the host
through the connection: a volume is created in the storage pool named
POOL and the file is uploaded into it as a virStream (virStorageVolUpload).
The same happens for a daemon on this host, so one path serves every URI.

The pool: a pool called `trapbench` that the host's administrator defined
(any type that takes uploads) is used as it is; without one, a transient
directory pool of that name is created at FALLBACK_DIR (the daemon builds
the directory; it is gone from libvirt when the daemon stops, the
directory stays). Each guest uploads its own volume, named after the
image, the harness's host and pid and a counter, so guests started at
once, and daemons sharing the directory, never touch each other's; QEMU
reads -kernel and -bios when it starts, so the volume is deleted as soon
as the domain exists. A host without libvirt's storage driver is refused
with what it lacks.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from pathlib import Path
from xml.sax.saxutils import escape

from ..errors import LaunchError

POOL = "trapbench"
FALLBACK_DIR = "/var/tmp/trapbench-images"
CHUNK = 256 * 1024

_serial = itertools.count()
_lock = threading.Lock()


def _pool(conn, uri: str):
    import libvirt
    try:
        return conn.storagePoolLookupByName(POOL)
    except libvirt.libvirtError as e:
        if e.get_error_code() == libvirt.VIR_ERR_NO_SUPPORT:
            raise LaunchError(f"libvirt at {uri} has no storage driver, so the "
                              "guest image cannot be uploaded: its libvirtd needs "
                              "the storage driver (Debian: libvirt-daemon-driver-"
                              "storage*)") from None
    xml = (f"<pool type='dir'><name>{POOL}</name><target>"
           f"<path>{escape(FALLBACK_DIR)}</path></target></pool>")
    with _lock:
        try:
            return conn.storagePoolLookupByName(POOL)
        except libvirt.libvirtError:
            pass
        try:
            return conn.storagePoolCreateXML(
                xml, libvirt.VIR_STORAGE_POOL_CREATE_WITH_BUILD)
        except libvirt.libvirtError as e:
            try:        # another process of ours made it in the meantime
                return conn.storagePoolLookupByName(POOL)
            except libvirt.libvirtError:
                raise LaunchError(
                    f"libvirt at {uri} has no storage pool {POOL!r} and could not "
                    f"create a directory pool at {FALLBACK_DIR}: "
                    f"{e.get_error_message()} (define a pool named {POOL!r} "
                    "there)") from None


def stage(conn, uri: str, image: Path):
    """A volume on the host at uri holding image's bytes (vol.path() is
    where the daemon's QEMU reads it)."""
    import libvirt
    data = Path(image).read_bytes()
    pool = _pool(conn, uri)
    host = socket.gethostname().split(".")[0][:20] or "host"
    name = f"{Path(image).stem}-{host}-{os.getpid()}-{next(_serial)}{Path(image).suffix}"
    xml = (f"<volume><name>{escape(name)}</name>"
           f"<capacity unit='bytes'>{len(data)}</capacity>"
           "<target><format type='raw'/><permissions><mode>0644</mode>"
           "</permissions></target></volume>")
    try:
        vol = pool.createXML(xml, 0)
    except libvirt.libvirtError as e:
        raise LaunchError(f"libvirt at {uri} refused a volume for {image} in "
                          f"pool {POOL!r}: {e.get_error_message()}") from None
    stream = conn.newStream(0)
    try:
        vol.upload(stream, 0, len(data), 0)
        view = memoryview(data)
        while view:
            n = stream.send(bytes(view[:CHUNK]))
            view = view[n:]
        stream.finish()
    except libvirt.libvirtError as e:
        try:
            stream.abort()
        except libvirt.libvirtError:
            pass
        drop(vol)
        raise LaunchError(f"uploading {image} to libvirt at {uri} failed: "
                          f"{e.get_error_message()}") from None
    return vol


def drop(vol) -> None:
    """Delete a staged volume (QEMU has read it); a host that is gone
    keeps it, which is all that can be done."""
    import libvirt
    try:
        vol.delete(0)
    except libvirt.libvirtError:
        pass
