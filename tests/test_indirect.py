"""Indirect calls and jumps under `insn:FUNC+*` on i386 (tests/workloads/
indirect.c): every instruction of functions that call through a table, a
register and a stack word, and jump through a switch's table, is armed
(an indirect call runs out of line rewritten as `push $return; jmp
*operand`, insn.c's i386_insn_indirect_call; an indirect jmp runs as it
is), the workload's own sum is right (a call resumed at the wrong target
or returning to the slot would change it, or crash), and each probe's
firings equal QEMU's count of its instruction (`--exec-count`)."""

import re
import subprocess
import sys

from bench.paths import REPO

WORKLOAD = "tests/workloads/indirect.c"


def _run(*extra):
    cmd = [sys.executable, "-m", "bench", "run", "--arch", "i386", "--workload", WORKLOAD,
           "--probes", "insn:ind_*+*", "--run", "indirect n=40", "--limit", "0",
           "--timeout", "300", *extra]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    return p.returncode, p.stdout + p.stderr


def test_every_instruction_of_indirect_calls_and_jumps_counts_as_qemu_does(built):
    built("i386")
    rc, out = _run("--exec-count")
    assert rc == 0, out[-3000:]
    assert "result indirect = " in out and "(ok)" in out, out[-3000:]
    assert "refused" not in out, out[-3000:]
    m = re.search(r"exec-count: (\d+) insn probes, (\d+) executions in the unprobed "
                  r"twin, (\d+) equal, (\d+) differ", out)
    assert m, out[-3000:]
    probes, runs, equal, differ = map(int, m.groups())
    assert probes == equal > 60 and differ == 0 and runs > 2000, m.group(0)


def test_check_mode_refuses_what_it_cannot_record_and_says_why(built):
    built("i386")
    rc, out = _run("--check")
    assert "an indirect call run out of line leaves the slot" in out, out[-3000:]
    assert "an indirect jmp leaves the slot" in out, out[-3000:]
