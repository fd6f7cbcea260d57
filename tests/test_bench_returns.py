"""The bench's figures for returns that take no trap (bench/suite/perf/
firepath.py's _returns, fbt.py's against_hooks), on made-up stage lines
and fbt figures: which ratios exist, which are judged, and that a
trampoline no cheaper than the trap misses its target."""

from bench import arches
from bench.suite.perf import core
from bench.suite.perf.fbt import against_hooks
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


def _fbt(b, m, seconds):
    b.figures[f"fbt_calltree_{m}"] = {"guest_seconds": core.figure(seconds, "s")}


def test_calltree_against_the_compilers_hooks():
    b = _bench()
    _fbt(b, "finstrument", [1.0, 1.0, 1.0])
    _fbt(b, "opt", [1.2, 1.25, 1.1])
    _fbt(b, "int3", [2.5, 2.5, 2.5])
    _fbt(b, "step", [2.0, 2.0, 2.0])
    against_hooks(b, "calltree")
    opt = b.figures["ratio_calltree_opt_over_finstrument"]
    assert opt["median"] == 1.2 and judge(opt) == "≤ 1.3 met", opt
    # int3 is shown, not judged; the lossy baseline is not compared.
    assert judge(b.figures["ratio_calltree_int3_over_finstrument"]) == ""
    assert "ratio_calltree_step_over_finstrument" not in b.figures
    _fbt(b, "opt", [1.5, 1.5, 1.5])
    against_hooks(b, "calltree")
    assert judge(b.figures["ratio_calltree_opt_over_finstrument"]) == "≤ 1.3 MISSED"
