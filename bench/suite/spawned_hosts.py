"""Libvirt hosts the matrix makes for itself, and a host that dies on cue.

    python3 -m bench matrix --group quick --spawn-hosts 3 --kill-one --jobs 3

--spawn-hosts N starts N private libvirt daemons (bench/guest/libvirtd.py),
each on its own loopback TCP port, and places the cells on them through
qemu+tcp://127.0.0.1:P/session exactly as on N remote machines: images
uploaded as volumes, consoles as streams. --kill-one makes the last of
them a machine that goes away: once its first guest has run for a few
seconds the daemon is SIGKILLed and its QEMUs with it. The run must then
show what the matrix promises of a lost host (bench/suite/matrix_run.py):
every cell passes; each cell the lost host held is rerun once, elsewhere,
and passes there; the lost host is reported down. survival_problems()
reads that off the run's result, each broken promise a line. It is the
full-size check of the remote backend (ci/matrix.cfg's `hosts` cells, in
the full group) and of tests/test_remote_matrix.py.
"""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager

from ..guest import libvirtd
from ..paths import BUILD

# Before the kill, the victim's first guest runs this long: booted and
# working, so the kill lands mid-cell.
SETTLE_S = 3.0
# The victim must have run a guest by then, or the test says so.
BUSY_DEADLINE_S = 600.0


class SpawnedHosts(AbstractContextManager):
    def __init__(self, n: int, tag: str = "mx"):
        self.n, self.tag = n, tag
        self.daemons: list[libvirtd.PrivateDaemon] = []
        self.killed = threading.Event()
        self.killed_after: float | None = None
        self._t0 = time.monotonic()

    def __enter__(self) -> "SpawnedHosts":
        try:
            for _ in range(self.n):
                self.daemons.append(libvirtd.start_on_free_port(
                    BUILD / "libvirt", self.tag))
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def uris(self) -> list[str]:
        return [d.tcp_uri for d in self.daemons]

    @property
    def victim(self) -> libvirtd.PrivateDaemon:
        return self.daemons[-1]

    def kill_when_busy(self) -> None:
        """In the background: once the victim runs a guest, SIGKILL it and
        end its QEMUs, which outlive the daemon and would otherwise go on
        using the cores the other hosts share."""
        def watch():
            deadline = time.monotonic() + BUSY_DEADLINE_S
            while not self.victim.qemu_pids() and time.monotonic() < deadline:
                time.sleep(0.2)
            if not self.victim.qemu_pids():
                return
            time.sleep(SETTLE_S)
            self.victim.kill()
            self.victim.stop()
            self.killed_after = time.monotonic() - self._t0
            self.killed.set()
        threading.Thread(target=watch, daemon=True).start()

    def stop(self) -> None:
        for d in self.daemons:
            d.stop()


def survival_problems(res, victim_uri: str, killed: bool) -> list[str]:
    """What of a lost host's promises the matrix result res broke: every
    cell passed, the victim reported down, each cell it failed rerun once
    on another host and passed there."""
    problems = []
    if not killed:
        problems.append(f"the host to lose ({victim_uri}) never ran a guest")
        return problems
    victim = next((h for h in res.hosts if h.uri == victim_uri), None)
    if victim is None:
        return [f"{victim_uri} is not among the run's hosts"]
    if not victim.down:
        problems.append(f"host {victim.label} was killed but not reported down")
    for o in res.outcomes:
        if o.verdict not in ("PASS", "XFAIL"):
            problems.append(f"{o.cell.name}: {o.verdict} on {o.host or 'no host'}")
    reruns = [o for o in res.outcomes if o.attempts]
    if not reruns:
        problems.append(f"no cell was rerun after {victim.label} went away")
    for o in reruns:
        if len(o.attempts) != 1:
            problems.append(f"{o.cell.name}: tried {len(o.attempts) + 1} times")
        if not all(a.startswith(f"{victim.label}:") for a in o.attempts):
            problems.append(f"{o.cell.name}: rerun after a failure on a host "
                            f"that did not go away: {'; '.join(o.attempts)}")
        if o.host == victim.label:
            problems.append(f"{o.cell.name}: rerun on the host that went away")
    return problems
