"""The matrix's quick group across libvirt hosts reached over TCP, full size.

Three private libvirtd daemons of the test's own, each on its own loopback
TCP port (listen_tcp, auth none, 127.0.0.1 only), stand for three machines:
`python3 -m bench matrix --group quick --host URI ...` places the quick
group's cells on them, and once the third daemon's first guest is running
the test kills that daemon (SIGKILL, as a machine that goes away) and its
QEMUs; `--jobs 3` keeps the three "hosts" to this machine's share. Every
cell must pass; each cell the dead host held is rerun once on another host
and passes there; the summary, the JUnit XML and the TAP name the host of
every cell and say which ran twice and why; the dead host's QEMUs are
ended by the test.

About as long as the quick group itself (minutes on two cores), so it is
not part of make check: TRAPBENCH_REMOTE_MATRIX=1 runs it
(`TRAPBENCH_REMOTE_MATRIX=1 python3 -m pytest tests/test_remote_matrix.py`).
"""

import os
import re
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import pytest

from bench.suite import matrix
from conftest import REPO
from test_remote import start_tcp_daemon

pytestmark = pytest.mark.skipif(
    os.environ.get("TRAPBENCH_REMOTE_MATRIX") != "1",
    reason="full-size (the quick group on three daemons, minutes): "
           "TRAPBENCH_REMOTE_MATRIX=1 runs it")


def test_the_quick_group_across_tcp_hosts_survives_a_host_that_dies(built, tmp_path):
    built("i386")
    built("sparc64")
    ds = [start_tcp_daemon("mx") for _ in range(3)]
    victim = ds[2]
    killed = threading.Event()

    def kill_when_busy():
        deadline = time.monotonic() + 600
        while not victim.qemu_pids() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)           # its guests are booted and working
        victim.kill()
        # The machine is gone with its guests: their QEMUs, which outlive
        # the daemon, would otherwise run on here, on the cores the other
        # two "hosts" share.
        victim.stop()
        killed.set()

    threading.Thread(target=kill_when_busy, daemon=True).start()
    try:
        out = subprocess.run(
            [sys.executable, "-m", "bench", "matrix", "--group", "quick",
             *[a for d in ds for a in ("--host", d.tcp_uri)],
             # Three "machines" on this one's cores: 6 slots would be 6
             # TCG guests on 2 cores shared with other work: 3 at once.
             "--jobs", "3"],
            cwd=REPO, capture_output=True, text=True, timeout=3600)
    finally:
        for d in ds:
            d.stop()
    print(out.stdout[-6000:])
    assert killed.is_set(), "the third daemon never ran a guest"
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    text = out.stdout
    last = text.strip().splitlines()[-1]
    cells = matrix.select(matrix.load(), "quick")
    m = re.search(r"matrix quick: (\d+) passed, 0 failed, 0 expected failures, "
                  r"(\d+) rerun on another host \(3 hosts\)", last)
    assert m and int(m.group(1)) == len(cells), last
    dead = victim.tcp_uri.split("//")[1].split("/")[0]
    assert f"host {dead} ({victim.tcp_uri})" in text and "; down at" in text
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
    assert all(not d.qemu_pids() for d in ds)
