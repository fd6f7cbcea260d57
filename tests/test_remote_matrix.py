"""The matrix's quick group across libvirt hosts reached over TCP, full size.

`python3 -m bench matrix --group quick --spawn-hosts 3 --kill-one --jobs 3`
(bench/suite/spawned_hosts.py) starts three private libvirtd daemons, each
on its own loopback TCP port (listen_tcp, auth none, 127.0.0.1 only), as
three machines, places the quick group's cells on them, and once the third
daemon's first guest is running kills that daemon (SIGKILL, as a machine
that goes away) and its QEMUs; `--jobs 3` keeps the three "hosts" to this
machine's share. Every cell must pass; each cell the dead host held is
rerun once on another host and passes there (the run's own verdict, and
here again from its output); the summary, the JUnit XML and the TAP name
the host of every cell and say which ran twice and why; no QEMU of the
three daemons is left.

About as long as the quick group itself (minutes on two cores), so it is
not part of make check: TRAPBENCH_REMOTE_MATRIX=1 runs it
(`TRAPBENCH_REMOTE_MATRIX=1 python3 -m pytest tests/test_remote_matrix.py`),
and the matrix's full group runs the same per arch (its `hosts` cells).
"""

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from bench.suite import matrix
from conftest import REPO

pytestmark = pytest.mark.skipif(
    os.environ.get("TRAPBENCH_REMOTE_MATRIX") != "1",
    reason="full-size (the quick group on three daemons, minutes): "
           "TRAPBENCH_REMOTE_MATRIX=1 runs it")


def _daemon_qemus() -> set[int]:
    """QEMUs of private daemons (their monitor sockets under /tmp/tblv-*)."""
    pids = set()
    for d in os.listdir("/proc"):
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read()
        except OSError:
            continue
        if b"qemu-system" in cmd and b"/tmp/tblv-" in cmd:
            pids.add(int(d))
    return pids


def test_the_quick_group_across_tcp_hosts_survives_a_host_that_dies(built):
    built("i386")
    built("sparc64")
    before = _daemon_qemus()
    out = subprocess.run(
        [sys.executable, "-m", "bench", "matrix", "--group", "quick",
         "--spawn-hosts", "3", "--kill-one",
         # Three "machines" on this one's cores: 6 slots would be 6 TCG
         # guests on 2 cores shared with other work: 3 at once.
         "--jobs", "3"],
        cwd=REPO, capture_output=True, text=True, timeout=3600)
    print(out.stdout[-6000:])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    text = out.stdout
    killed = re.search(r"^hosts: (\S+) killed after \d+ s; every promise of a "
                       r"lost host kept$", text, re.M)
    assert killed, text[-3000:]
    dead = killed[1].split("//")[1].split("/")[0]
    last = [ln for ln in text.splitlines() if ln.startswith("matrix quick:")][-1]
    cells = matrix.select(matrix.load(), "quick")
    m = re.search(r"matrix quick: (\d+) passed, 0 failed, 0 expected failures, "
                  r"(\d+) rerun on another host \(3 hosts\)", last)
    assert m and int(m.group(1)) == len(cells), last
    assert f"host {dead} ({killed[1]})" in text and "; down at" in text
    reruns = re.findall(rf"^rerun (\S+): first on {re.escape(dead)}: host failed.*"
                        r"then PASS on (\S+)$", text, re.M)
    assert reruns and len(reruns) == int(m.group(2)), text
    assert all(h != dead for _, h in reruns)
    # Every cell's host in the reports.
    root = ET.parse(REPO / "build" / "matrix" / "quick.xml").getroot()
    for case in root:
        props = {p.get("name"): p.get("value") for p in case.find("properties")}
        assert props["host"].startswith("127.0.0.1:"), case.get("name")
        if case.get("name").split()[0] in {c for c, _ in reruns}:
            assert dead in props["rerun_after"]
    tap = (REPO / "build" / "matrix" / "quick.tap").read_text()
    assert tap.count("  host: '127.0.0.1:") == len(cells)
    assert _daemon_qemus() <= before, "QEMUs of the three daemons left running"
