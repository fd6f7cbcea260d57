"""Files on the libvirt host, carried through the connection as storage
volumes: guest images there, QEMU's logs of the guest's ports back.

    pool = open_pool(conn, uri)                 # the `trapbench` dir pool
    vol = stage(pool, uri, Path("build/i386/kernel.elf"))
    ... domain XML names vol.path() ...; once QEMU has started: drop(vol)
    data = fetch(pool, uri, "NAME.log")         # a file QEMU wrote there

A libvirt daemon on another host cannot read build/ here, so every image a
domain boots (the i386 kernel ELF, sparc64's PROM image) goes to the host
through the connection: a volume is created in the storage pool named
POOL and the file is uploaded into it as a virStream (virStorageVolUpload).
The same happens for a daemon on this host, so one path serves every URI.
The other way, fetch() reads back a file QEMU wrote into the pool's
directory (the log of a console, bench/guest/console.py): the pool is
refreshed so libvirt sees it, downloaded (virStorageVolDownload), deleted.
libvirt refuses a pool's refresh while any of its streams runs ("has
asynchronous jobs running"): guests started at once on one host upload and
download beside each other, so that refusal is waited out (refresh()).

The pool: a directory pool called `trapbench` that the host's administrator
defined is used as it is (its directory must be writable by the daemon's
QEMU: the port logs are written there); without one, a transient
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
import time
from pathlib import Path
from xml.sax.saxutils import escape

from ..errors import LaunchError

POOL = "trapbench"
FALLBACK_DIR = "/var/tmp/trapbench-images"
CHUNK = 256 * 1024
REFRESH_WAIT_S = 60.0       # another guest's upload or download to finish

_serial = itertools.count()
_lock = threading.Lock()


class Pool:
    def __init__(self, pool, path: str):
        self.pool, self.path = pool, path


def open_pool(conn, uri: str) -> Pool:
    """The host's `trapbench` pool, created as a transient directory pool
    if it is not there; refused if it is not a directory pool."""
    import xml.etree.ElementTree as ET
    pool = _pool(conn, uri)
    root = ET.fromstring(pool.XMLDesc(0))
    if root.get("type") != "dir":
        raise LaunchError(f"libvirt at {uri}: pool {POOL!r} is of type "
                          f"{root.get('type')!r}; the bench needs a directory "
                          "pool (QEMU writes the port logs into it)")
    if not pool.isActive():
        try:
            pool.create(0)
        except Exception as e:
            raise LaunchError(f"libvirt at {uri}: pool {POOL!r} is not active "
                              f"and could not be started: {e}") from None
    return Pool(pool, root.findtext("target/path"))


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


def stage(pool: Pool, uri: str, image: Path):
    """A volume on the host at uri holding image's bytes (vol.path() is
    where the daemon's QEMU reads it)."""
    import libvirt
    conn = pool.pool.connect()
    data = Path(image).read_bytes()
    host = socket.gethostname().split(".")[0][:20] or "host"
    name = f"{Path(image).stem}-{host}-{os.getpid()}-{next(_serial)}{Path(image).suffix}"
    xml = (f"<volume><name>{escape(name)}</name>"
           f"<capacity unit='bytes'>{len(data)}</capacity>"
           "<target><format type='raw'/><permissions><mode>0644</mode>"
           "</permissions></target></volume>")
    try:
        vol = pool.pool.createXML(xml, 0)
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


def log_name(domain: str, index: int) -> str:
    """The file in the pool QEMU logs port `index` of `domain` to."""
    return f"{domain}.port{index}.log"


def fetch(pool: Pool, uri: str, name: str, *, keep: bool = False) -> bytes:
    """The bytes of file `name` in the pool's directory, downloaded through
    the connection; the file is deleted after unless keep."""
    import libvirt
    try:
        refresh(pool)
        vol = pool.pool.storageVolLookupByName(name)
        stream = pool.pool.connect().newStream(0)
        vol.download(stream, 0, 0, 0)
        chunks = []
        while True:
            got = stream.recv(CHUNK)
            if not got:
                break
            chunks.append(got)
        stream.finish()
    except libvirt.libvirtError as e:
        raise LaunchError(f"reading {name} back from pool {POOL!r} at {uri} "
                          f"failed: {e.get_error_message()}") from None
    if not keep:
        drop(vol)
    return b"".join(chunks)


def refresh(pool: Pool, wait_s: float = REFRESH_WAIT_S) -> None:
    """Have libvirt see the files in the pool's directory. A refresh is
    refused while a stream of the pool runs (another guest's image going
    up or log coming down, over in moments): that refusal is retried until
    wait_s has passed; any other error is raised at once."""
    import libvirt
    deadline = time.monotonic() + wait_s
    while True:
        try:
            pool.pool.refresh(0)
            return
        except libvirt.libvirtError as e:
            busy = "asynchronous jobs" in (e.get_error_message() or str(e))
            if not busy or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def discard(pool: Pool, name: str) -> None:
    """Delete file `name` from the pool if it is there (a log not read)."""
    import libvirt
    try:
        refresh(pool)
        drop(pool.pool.storageVolLookupByName(name))
    except libvirt.libvirtError:
        pass


def drop(vol) -> None:
    """Delete a staged volume (QEMU has read it); a host that is gone
    keeps it, which is all that can be done."""
    import libvirt
    try:
        vol.delete(0)
    except libvirt.libvirtError:
        pass
