"""The bench's figures for returns that take no trap (bench/suite/perf/
firepath.py's _returns), on made-up stage lines: which ratios exist,
which are judged, and that a trampoline no cheaper than the trap misses
its target. (calltree against the compiler's hooks: test_bench_paired.py.)"""

from bench import arches
from bench.suite.perf import core
from bench.suite.perf.firepath import _returns
from bench.suite.perf.table import judge


def _bench(arch="i386"):
    return core.Bench(arches.get(arch), 3, core.Sizes.small(), on_line=[].append)


def _stages(int3_ret, opt_ret):
    """Plain cycles per repetition: prologue alone, and with its return."""
    return {"int3.prologue.null": {"plain": [1000] * 3},
            "int3.return.null": {"plain": [1000 + int3_ret] * 3},
            "opt.prologue.null": {"plain": [100] * 3},
            "opt.return.null": {"plain": [100 + opt_ret] * 3}}


def test_a_return_riding_on_its_entry_is_judged_against_int3s():
    b = _bench()
    _returns(b, _stages(1500, 250))
    f = b.figures["ratio_int3_over_opt_return"]
    assert f["median"] == 6 and judge(f) == "≥ 5 met", f
    assert b.figures["return_int3_null"]["median"] == 1500


def test_a_trampoline_as_dear_as_the_trap_misses():
    b = _bench()
    _returns(b, _stages(1500, 1500))
    assert judge(b.figures["ratio_int3_over_opt_return"]) == "≥ 5 MISSED"


def test_no_return_rows_where_no_mechanism_rides():
    b = _bench("sparc64")
    _returns(b, _stages(1500, 250))
    assert not [k for k in b.figures if "return" in k], sorted(b.figures)

