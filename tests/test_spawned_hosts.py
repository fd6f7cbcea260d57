"""The verdict `bench matrix --spawn-hosts N --kill-one` gives on a lost
host (bench/suite/spawned_hosts.py), on made-up results: a run that kept
every promise has no problem, and each broken promise — a cell that
failed, a lost host's cell not rerun, rerun twice, rerun on the host that
went away, a rerun blamed on a host that did not go away, a killed host
not reported down, a victim that never ran a guest — is named. The real
run across three daemons is tests/test_remote_matrix.py and the full
group's `hosts` cells; the options' refusals are checked here too."""

import subprocess
import sys

from bench.suite.hosts import Host
from bench.suite.matrix_plan import Cell
from bench.suite.matrix_report import MatrixResult, Outcome
from bench.suite.spawned_hosts import survival_problems
from conftest import REPO

A, B, C = (f"qemu+tcp://127.0.0.1:{p}/session" for p in (40001, 40002, 40003))


def _result(**change):
    hosts = [Host(A, "127.0.0.1:40001"), Host(B, "127.0.0.1:40002"),
             Host(C, "127.0.0.1:40003", down="stopped answering: gone")]
    outs = [Outcome(Cell(f"c{i}", "i386", "trace", ("quick",)), "PASS", host=h)
            for i, h in enumerate(("127.0.0.1:40001", "127.0.0.1:40002",
                                   "127.0.0.1:40003", "127.0.0.1:40001"))]
    outs[3].attempts = ["127.0.0.1:40003: host failed (the host stopped answering)"]
    res = MatrixResult("quick", outs, hosts=hosts)
    for k, v in change.items():
        v(res)
    return res


def test_a_run_that_kept_every_promise_has_no_problem():
    assert survival_problems(_result(), C, killed=True) == []


def test_each_broken_promise_is_named():
    def fail(r):
        r.outcomes[1].verdict = "FAIL"

    def no_rerun(r):
        r.outcomes[3].attempts = []

    def twice(r):
        r.outcomes[3].attempts.append("127.0.0.1:40003: host failed (again)")

    def on_victim(r):
        r.outcomes[3].host = "127.0.0.1:40003"

    def wrong_host(r):
        r.outcomes[3].attempts = ["127.0.0.1:40002: host failed (busy)"]

    def not_down(r):
        r.hosts[2].down = None

    cases = {fail: "c1: FAIL on 127.0.0.1:40002",
             no_rerun: "no cell was rerun after 127.0.0.1:40003 went away",
             twice: "c3: tried 3 times",
             on_victim: "c3: rerun on the host that went away",
             wrong_host: "c3: rerun after a failure on a host that did not go away",
             not_down: "host 127.0.0.1:40003 was killed but not reported down"}
    for broken, said in cases.items():
        got = survival_problems(_result(b=broken), C, killed=True)
        assert any(said in p for p in got), (broken.__name__, got)
    assert survival_problems(_result(), C, killed=False) == [
        f"the host to lose ({C}) never ran a guest"]
    assert survival_problems(_result(), "qemu+tcp://127.0.0.1:1/session",
                             killed=True) == [
        "qemu+tcp://127.0.0.1:1/session is not among the run's hosts"]


def test_bad_host_options_are_refused_before_anything_starts():
    for argv, said in (
            (["--spawn-hosts", "1", "--kill-one"], "at least 2 with --kill-one"),
            (["--spawn-hosts", "0"], "--spawn-hosts: 1 to 8"),
            (["--kill-one"], "--kill-one needs --spawn-hosts"),
            (["--spawn-hosts", "2", "--host", A], "no --host with it")):
        r = subprocess.run([sys.executable, "-m", "bench", "matrix", *argv],
                           cwd=REPO, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and said in r.stderr, (argv, r.stderr)
