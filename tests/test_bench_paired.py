"""The paired measurement (bench/suite/perf/paired.py) and QEMU's vCPU
time (bench/guest/cputime.py), with no guest: a made-up host whose speed
halves for a stretch of seconds, two workloads of known cost run on it,
and a made-up /proc. The paired ratio (runs alternating, a ratio per
pair) stays the true one; the same runs taken one boot after the other,
as the bench used to, read the slowdown as a cost."""

import statistics

import pytest

from bench import arches
from bench.guest.cputime import vcpu_ns
from bench.suite.perf import core
from bench.suite.perf.paired import alone, alternate, per_pair, put_ratios
from bench.suite.perf.table import judge, spread

PROBED_MS, HOOKED_MS = 12.0, 10.0          # the true ratio: 1.2
REPS = 9


class SlowingHost:
    """Host time in seconds; between SLOW[0] and SLOW[1] everything runs
    at half speed. A run of cost c ms takes c / speed of guest time;
    after each repetition the drain and the check take GAP seconds."""
    SLOW = (1.0, 5.0)
    GAP = 0.5

    def __init__(self):
        self.t = 0.0

    def speed(self) -> float:
        return 0.5 if self.SLOW[0] <= self.t < self.SLOW[1] else 1.0

    def run(self, cost_ms: float):
        """A repetition's first half, as fbt.start: the run; then its
        second half, the drain and the check."""
        took = cost_ms / self.speed()
        self.t += took / 1e3

        def finish():
            self.t += self.GAP
            return took
        return finish


def one_boot_then_the_other(first, second, reps):
    """The old way: every repetition of the plain image's boot, then
    every one of the instrumented image's, paired in order."""
    return [first()() for _ in range(reps)], [second()() for _ in range(reps)]


def _ratios(order) -> list[float]:
    host = SlowingHost()
    probed, hooked = order(lambda: host.run(PROBED_MS), lambda: host.run(HOOKED_MS), REPS)
    assert len(probed) == len(hooked) == REPS
    return per_pair(probed, hooked)


def test_the_paired_ratio_ignores_a_slowdown_of_seconds():
    ratios = _ratios(alternate)
    assert statistics.median(ratios) == pytest.approx(1.2), ratios
    # Every pair reads the truth here (none straddles an edge of the
    # slowdown; one that did, at each edge, would read between).
    assert sum(abs(r - 1.2) > 1e-9 for r in ratios) <= 2, ratios


def test_the_cross_boot_ratio_reads_the_slowdown_as_cost():
    """The broken variant: the same runs, one boot after the other, give
    a median far from the truth, which the check above catches."""
    ratios = _ratios(one_boot_then_the_other)
    assert statistics.median(ratios) != pytest.approx(1.2, rel=0.2), ratios
    assert statistics.median(ratios) == pytest.approx(2.4), ratios


def test_warmup_pairs_are_run_and_dropped():
    host = SlowingHost()
    host.SLOW = (0.0, 0.0)                 # a steady host
    costs = iter([50.0, 40.0] + [PROBED_MS, HOOKED_MS] * 3)
    probed, hooked = alternate(lambda: host.run(next(costs)),
                               lambda: host.run(next(costs)), 3, warmup=1)
    assert (probed, hooked) == ([PROBED_MS] * 3, [HOOKED_MS] * 3)


def test_a_pair_without_a_value_is_unresolved_not_dropped():
    assert per_pair([2.0, None, 3.0], [1.0, 1.0, 0.0]) == [2.0, None, None]
    f = core.figure(per_pair([2.0, None, 3.0], [1.0, 1.0, 0.0]), "ratio")
    assert f["repetitions"] == 1 and f["unresolved"] == 2, f
    with pytest.raises(ValueError):
        per_pair([1.0, 2.0], [1.0])


class StillGuest:
    """A guest that can be stopped, as Guest.freeze stops QEMU."""
    def __init__(self, name):
        self.name, self.frozen = name, False

    def freeze(self, frozen=True):
        self.frozen = frozen
        return True


def _who_ran_alone(wrap) -> list:
    """Pairs of runs on two StillGuests, each run wrapped by wrap(guest,
    other, run); what each run and each check saw: (guest, whether it
    was going, whether the other was stopped)."""
    a, b = StillGuest("a"), StillGuest("b")
    seen = []

    def run(guest, other):
        seen.append((guest.name, not guest.frozen, other.frozen))

        def finish():
            seen.append((guest.name + " check", not guest.frozen, None))
        return finish
    alternate(lambda: wrap(a, b, lambda: run(a, b)),
              lambda: wrap(b, a, lambda: run(b, a)), 2, warmup=1)
    return seen


def test_each_run_has_the_host_to_itself():
    seen = _who_ran_alone(alone)
    assert [s for s in seen if s[2] is not None] == [("a", True, True), ("b", True, True)] * 3
    assert all(going for _, going, _ in seen), seen      # checks too


def test_a_partner_left_running_is_caught():
    """The broken variant: runs not wrapped leave the other guest going."""
    seen = _who_ran_alone(lambda guest, other, run: run())
    assert ("a", True, True) not in seen, seen


def _rows(seconds, cpu, missed=0):
    return [{"seconds": s, "cpu": c, "missed": missed} for s, c in zip(seconds, cpu)]


def test_each_lossless_mechanism_against_the_hooks_is_judged_where_it_rides():
    b = core.Bench(arches.get("i386"), 3, core.Sizes.small(), on_line=[].append)
    hooks = _rows([1.0, 2.0, 1.0], [0.5, 0.5, 0.5])
    put_ratios(b, "calltree", "opt", _rows([1.2, 2.5, 1.1], [0.6, 0.6, 0.6]), hooks)
    put_ratios(b, "calltree", "int3", _rows([2.5, 5.0, 2.5], [1.5, 1.5, 1.5]), hooks)
    opt = b.figures["ratio_calltree_opt_over_finstrument"]
    assert opt["median"] == pytest.approx(1.2) and judge(opt) == "≤ 1.3 met", opt
    assert opt["spread"] == [pytest.approx(1.1), pytest.approx(1.25)], opt
    assert opt["probed"]["values"] == [1.2, 2.5, 1.1] and opt["hooks"]["median"] == 1.0
    # QEMU's CPU ratio beside it, shown and not judged; int3 not judged.
    cpu = b.figures["ratio_calltree_opt_over_finstrument_cpu"]
    assert cpu["median"] == pytest.approx(1.2) and judge(cpu) == "", cpu
    assert judge(b.figures["ratio_calltree_int3_over_finstrument"]) == ""
    put_ratios(b, "calltree", "opt", _rows([1.5, 3.0, 1.5], [0.6, 0.6, 0.6]), hooks)
    assert judge(b.figures["ratio_calltree_opt_over_finstrument"]) == "≤ 1.3 MISSED"
    assert not b.notes
    put_ratios(b, "calltree", "opt", _rows([1.2, 2.5, 1.1], [0.6] * 3, missed=4), hooks)
    assert b.notes == ["calltree paired under opt: 12 firings missed in the pairs' "
                       "runs (their ratio counts a lossy run)"], b.notes


def test_a_qemu_whose_vcpu_time_is_unknown_leaves_its_row_without_a_value():
    """A remote domain, or a QEMU that names no thread: the CPU-time ratio
    has no value, and the table says so instead of failing."""
    b = core.Bench(arches.get("i386"), 3, core.Sizes.small(), on_line=[].append)
    put_ratios(b, "calltree", "opt", _rows([1.2, 2.5, 1.1], [None] * 3),
               _rows([1.0, 2.0, 1.0], [None] * 3))
    cpu = b.figures["ratio_calltree_opt_over_finstrument_cpu"]
    assert cpu["median"] is None and cpu["unresolved"] == 3, cpu
    assert spread(cpu, ".2f") == "no value (3 unresolved)"
    assert spread(b.figures["ratio_calltree_opt_over_finstrument"], ".2f") == \
        "1.20 [1.10..1.25]"


def _proc(tmp_path, threads):
    """A made-up /proc/PID/task: (comm, schedstat run ns) per thread."""
    for tid, (comm, ns) in enumerate(threads, 100):
        d = tmp_path / "42" / "task" / str(tid)
        d.mkdir(parents=True)
        (d / "comm").write_text(comm + "\n")
        (d / "schedstat").write_text(f"{ns} 777 12\n")
    return tmp_path


def test_vcpu_time_sums_the_tcg_threads_alone(tmp_path):
    proc = _proc(tmp_path, [("qemu-system-i38", 5_000), ("call_rcu", 70),
                            ("CPU 0/TCG", 1_000), ("CPU 1/TCG", 300)])
    # Summing every thread (main loop, RCU) would read 6,370.
    assert vcpu_ns(42, proc) == 1_300


def test_vcpu_time_of_a_qemu_that_names_no_thread_is_unknown(tmp_path):
    proc = _proc(tmp_path, [("qemu-system-spa", 5_000), ("qemu-system-spa", 70)])
    assert vcpu_ns(42, proc) is None
    assert vcpu_ns(43, proc) is None               # gone
