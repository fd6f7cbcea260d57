"""QEMU's own CPU time: how long its vCPU threads have run, as the host's
scheduler counts it.

Under TCG a guest's clock follows host time, so its guest time includes
every moment the host gave QEMU's vCPU thread to someone else. The first
field of /proc/PID/task/TID/schedstat is the nanoseconds that thread has
spent on a CPU; summed over the threads whose name (comm) holds "TCG"
(QEMU names them "CPU 0/TCG", or "ALL CPUs/TCG" for one thread serving
every vCPU, when started with `-name ...,debug-threads=on`:
bench/guest/qemu_args.py), it is the guest's execution alone, without the
main loop's, the I/O threads' or the waits. A QEMU whose threads are not
named (debug-threads off) has no such reading: None, never a guess from
every thread.
"""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def vcpu_ns(pid: int, proc: Path = PROC) -> int | None:
    """Nanoseconds QEMU process pid's vCPU threads have run so far; None
    when it names no thread TCG (or has gone)."""
    total, found = 0, False
    for task in (proc / str(pid) / "task").glob("*"):
        try:
            if "TCG" not in (task / "comm").read_text():
                continue
            total += int((task / "schedstat").read_text().split()[0])
            found = True
        except (OSError, ValueError, IndexError):
            continue        # a thread that exited between the listing and the read
    return total if found else None
