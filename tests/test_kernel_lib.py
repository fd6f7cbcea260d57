"""Real third-party C as a workload (tests/workloads/kernel_lib.c): Linux's
lib/sort.c and lib/rbtree.c, unpacked from Debian's linux-source-6.1 when
the image is built (kernel_lib.mk), never kept in this repository.

Theory of operation: the workload checks itself (sorted, same sum and xor,
an rbtree walk equal to the sorted array before and after erasing half);
the trace's entries and returns of our half (kl_insert, kl_walk) must
equal the workload's own counts, and the kernel's functions must fire.
spoil=1 swaps two keys after sorting, a broken sort the workload must
catch (the run fails). The full matrix runs it under every mechanism of
both arches in check mode and with every instruction probed and counted
(ci/matrix.cfg, *-realcode-*).
"""

import subprocess
import sys
from pathlib import Path

from bench.paths import REPO

TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
WORKLOAD = "tests/workloads/kernel_lib.c"


def _run(arch, run, *extra):
    assert TARBALL.is_file(), f"{TARBALL}: apt-get install linux-source-6.1 (ci/packages.txt)"
    cmd = [sys.executable, "-m", "bench", "run", "--arch", arch, "--workload", WORKLOAD,
           "--run", run, "--limit", "0", "--timeout", "300", *extra]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout + p.stderr


def test_nothing_of_the_kernel_is_vendored():
    here = REPO / "tests" / "workloads"
    assert not list(here.glob("**/sort.c")) and not list(here.glob("**/rbtree*"))


def test_the_kernels_sort_and_rbtree_run_traced(arch):
    rc, out = _run(arch, "kernel_lib n=64", "--probes",
                   "fbt:kl_*:entry,fbt:kl_*:return,fbt:rb_*:entry,fbt:sort_r:entry")
    assert rc == 0, out[-3000:]
    assert "result kernel_lib = " in out and "(ok)" in out, out[-3000:]
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()
            if ln.startswith("  ") and " entries " in ln}
    assert rows["kl_insert"][2] == "64" and rows["kl_walk"][2] == "2", rows
    assert int(rows["rb_insert_color"][2]) == 64 and int(rows["rb_erase"][2]) == 32, rows
    assert rows["sort_r"][2] == "1", rows


def test_a_broken_sort_is_caught():
    rc, out = _run("i386", "kernel_lib n=64 spoil=1", "--probes", "fbt:kl_walk:entry")
    assert rc != 0 and "result kernel_lib = " in out and "(WRONG)" in out, out[-3000:]
