"""The transient libvirt domain a guest runs as: images/domain.xml filled in.

domain_xml() turns the arch table's QEMU arguments and libvirt_arch
(bench/arches.py) into a domain: `-M X` becomes <type machine='X'>,
`-kernel F` <kernel>, `-bios F` <loader type='rom'>, memory and vCPUs
<memory> and <vcpu>, domain type 'qemu' TCG; the guest's ports become
ptys and virtio <channel>s (port_xml), sun4u's virtio-serial controller is
moved behind simba B by a <qemu:override> (device_override_xml), the shm
channel's RAM is a shared memfd where the machine takes a RAM backend,
and what the XML cannot say goes through <qemu:commandline> verbatim.
Every value is XML-escaped. bench/guest/libvirt.py creates the domain.
"""

from __future__ import annotations

from pathlib import Path
from string import Template
from xml.sax.saxutils import escape

from ..errors import LaunchError
from ..paths import REPO
from .console import COM1

TEMPLATE = REPO / "images" / "domain.xml"
# The alias libvirt gives the virtio-serial controller it adds for the
# first <channel> with a virtio target.
VIRTIO_SERIAL_ALIAS = "virtio-serial0"


def _attr(value) -> str:
    return escape(str(value), {"'": "&apos;", '"': "&quot;"})


def port_xml(ports, logs=()) -> str:
    """The domain's devices for the guest's ports, in order: serials are
    ptys (COM1 first), channels virtio ports on unix sockets libvirt names;
    logs[i], if given, is the file QEMU copies port i's output to."""
    out, n = [], 0
    for i, p in enumerate(ports):
        log = (f"<log file='{_attr(logs[i])}' append='off'/>"
               if i < len(logs) else "")
        if p.kind == "serial":
            out.append(f"<serial type='pty'>{log}<target port='{n}'/></serial>")
            n += 1
        else:
            out.append(f"<channel type='unix'><source mode='bind'/>{log}"
                       f"<target type='virtio' name='{_attr(p.name)}'/></channel>")
    return "\n    ".join(out)


def device_override_xml(arch, ports) -> str:
    """Where the machine needs the virtio-serial controller somewhere
    libvirt would not put it (arches.py's virtio_serial_bus: sun4u's
    behind simba B), a <qemu:override> of the controller libvirt adds for
    the trace <channel>, with those properties: libvirt still owns the
    channel, so it streams over the connection like any other."""
    if not arch.virtio_serial_bus or not any(p.kind == "channel" for p in ports):
        return ""
    props = "".join(
        f"<qemu:property name='{_attr(k)}' type='string' value='{_attr(v)}'/>"
        for k, _, v in (kv.partition("=") for kv in arch.virtio_serial_bus.split(",")))
    return (f"<qemu:override><qemu:device alias='{VIRTIO_SERIAL_ALIAS}'>"
            f"<qemu:frontend>{props}</qemu:frontend></qemu:device></qemu:override>")


# RAM the harness on this host can map as QEMU does (the shm channel).
SHARED_MEMFD = ("<memoryBacking><source type='memfd'/><access mode='shared'/>"
                "</memoryBacking>")


def domain_xml(name: str, arch, *, image: Path, smp: int, memory_mb: int,
               ports=(COM1,), logs=(), extra_args=(), shared_ram=False) -> str:
    """A transient domain running what Guest's QEMU command line runs
    (images/domain.xml filled in); image is its path on the daemon's host;
    shared_ram: its RAM in a shared memfd, where the machine takes one."""
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
        memory_backing=SHARED_MEMFD if shared_ram and arch.ram_backend else "",
        arch=arch.libvirt_arch, machine=_attr(machine),
        boot="\n    ".join(boot), ports=port_xml(ports, logs),
        overrides=device_override_xml(arch, ports),
        qemu_args="\n".join(f"    <qemu:arg value='{_attr(a)}'/>"
                            for a in passthrough))
