"""QEMU's command line for a guest of the qemu backend (bench/guest/qemu.py).

Always TCG, no display, no defaults and no user config, so that only what
is listed here exists: the arch's machine and its exit device (the guest's
exit status comes back as QEMU's exit code, guest-kernel/include/exit.h),
COM1 on QEMU's stdio (pipes: the harness's commands in, frames out), the
arch's boot arguments with the image filled in, then the caller's extras.
QEMU names its threads (debug-threads=on), so that the vCPUs' own CPU
time can be told from the rest (bench/guest/cputime.py).
Two optional parts are added to it: the virtio trace port (a
virtio-serial controller and a virtserialport named wire.VIRTIO_PORT on a
unix socket QEMU listens on; ioeventfd off, so a vCPU's write is served
at once) and the GDB stub on a private unix socket, with -S when the CPUs
are to wait at reset for a debugger.
"""

from __future__ import annotations

from pathlib import Path

from ..wire import frames as wire


def machine_args(arch, image: Path, smp: int, memory_mb: int,
                 extra_args=()) -> list[str]:
    return [
        arch.qemu, *arch.machine, "-accel", "tcg",
        "-name", "trapbench,debug-threads=on",
        "-m", str(memory_mb), "-smp", str(smp),
        "-display", "none", "-nodefaults", "-no-user-config",
        "-monitor", "none", "-serial", "stdio",
        *arch.exit_device,
        *(a.replace("{image}", str(image)) for a in arch.boot_args),
        *extra_args,
    ]


def virtio_channel_args(arch, sock: Path) -> list[str]:
    bus = f",{arch.virtio_serial_bus}" if arch.virtio_serial_bus else ""
    return ["-device", f"virtio-serial-pci,id=tbvs,ioeventfd=off{bus}",
            "-chardev", f"socket,id=tbtrace,path={sock},server=on,wait=off",
            "-device", f"virtserialport,bus=tbvs.0,name={wire.VIRTIO_PORT},"
                       "chardev=tbtrace"]


def gdbstub_args(sock: Path, paused: bool) -> list[str]:
    return ["-gdb", f"unix:{sock},server=on,wait=off"] + (["-S"] if paused else [])
