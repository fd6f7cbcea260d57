"""The tracer's own TLB misses on sun4u, and seed 003's method 2 against
them (bench/trace/avoid.py; guest-kernel/include/miss_account.h).

One boot, three small walks of `tlbwalk` (more pages between two calls of
tlbwalk_step than the DTLB holds), each checked end to end:
- untraced: the walk's own misses are counted among all the misses, and
  (almost) none is the tracer's — a counter that took kernel or workload
  misses for the tracer's would show thousands here;
- traced, the buffer written through its mapping: the tracer's code takes
  DTLB misses on its buffer (about one a walk), counted apart;
- traced, the buffer written by physical address (`trace physical on`):
  none on the buffer, the same records to the byte (the host cannot
  tell), every call rebuilt from the branch records;
- tlbwalk_step's page execute-only (method 1) while the tracer reads each
  branch's delay slot: through its mapping it faults twice a firing (the
  trapped word and the slot; the slot then records 0); with the miss
  handler serving its reads (Fig. 2) no fault, served misses counted and
  the right words; by physical address neither. Each such walk ends with
  a read of the page from the workload itself, which must fault (tlbwalk
  fails otherwise): a miss handler that served anyone's reads is caught.
The full table (every method, more iterations) is `make bench ARCH=sparc64`.
"""

import re

import pytest

from bench import arches
from bench.guest.qemu import Guest
from bench.trace import avoid
from bench.trace.session import open_session

PAGES, ITERS = 96, 20


@pytest.fixture(scope="module")
def runs(built):
    built("sparc64")
    out = {}
    with Guest(arches.get("sparc64"), label="test-avoid") as g:
        out["boot"] = g.command("trace misses").message
        s = open_session(g)
        s.setup(avoid.SPEC, "emulate")
        for name in ("untraced", "none", "buffer_physical", "xo_fault", "xo_served",
                     "xo_physical"):
            out[name] = avoid.run_config(s, name, PAGES, ITERS)
        out["stats"] = g.command("trace misses").message
        # fib's recursion spills and fills windows by the hundred: none is
        # the tracer's (no probe is enabled).
        g.command("trace misses reset")
        g.command("run fib n=15")
        out["fib"] = g.command("trace misses").message
        out["refusal"] = g.command("trace physical sideways")
    return out


def test_untraced_walk_misses_are_not_the_tracers(runs):
    w = runs["untraced"]["window"]
    assert w.all_dtlb >= PAGES * ITERS, f"the walk missed only {w.all_dtlb} times"
    # The tracer's drain and reaper wake on ticks during the walk: a few
    # misses of their own at most, never the walk's.
    assert w.own_dtlb < PAGES, f"{w.own_dtlb} of {w.all_dtlb} misses taken for the tracer's"
    assert w.own_buffer == 0 and w.own_faults == 0 and w.own_itlb == 0, w


def test_mapped_buffer_misses_are_counted(runs):
    row = runs["none"]
    w = row["window"]
    assert not row["physical"]
    assert row["calls"] == ITERS and row["records"] == row["fired"] > 0
    assert w.own_buffer >= ITERS // 2, \
        f"{w.own_buffer} misses on the buffer in {ITERS} walks of {PAGES} pages"
    assert w.own_dtlb >= w.own_buffer
    assert w.own_faults == 0


def test_physical_buffer_takes_no_miss_and_the_host_cannot_tell(runs):
    row, mapped = runs["buffer_physical"], runs["none"]
    w = row["window"]
    assert row["physical"]
    assert w.own_buffer == 0, f"{w.own_buffer} buffer misses with physical stores"
    assert w.all_dtlb >= PAGES * ITERS
    assert (row["records"], row["bytes"], row["instructions"]) == \
        (mapped["records"], mapped["bytes"], mapped["instructions"])


def test_execute_only_code_faults_is_served_or_read_physically(runs):
    fault, served, phys = runs["xo_fault"], runs["xo_served"], runs["xo_physical"]
    assert fault["window"].own_faults == 2 * fault["fired"] > 0, fault["window"]
    # Catching each fault takes the tracer's calls deep: window traps of
    # its own, counted as such; the untraced walk's drain takes a few.
    assert fault["window"].own_window > fault["fired"], fault["window"]
    assert runs["untraced"]["window"].own_window < ITERS, runs["untraced"]["window"]
    assert fault["slot_errors"] == fault["records"]
    assert served["window"].own_faults == 0 and served["window"].own_served >= ITERS // 2, \
        served["window"]
    assert phys["window"].own_faults == 0 and phys["window"].own_served == 0, phys["window"]
    for row in (served, phys):
        assert row["slot_errors"] == 0 and row["calls"] == ITERS
        assert row["bytes"] == fault["bytes"]


def test_itlb_misses_of_tracer_code_are_counted_apart(runs):
    # Since boot: the tracer's pages were fetched for the first time (this
    # very command's among them), and so were the kernel's.
    own = int(re.search(r"cpu0 itlb=(\d+)", runs["boot"]).group(1))
    every = int(re.search(r"all: itlb=(\d+)", runs["boot"]).group(1))
    assert 0 < own < every, runs["boot"]


def test_window_traps_of_other_code_are_not_the_tracers(runs):
    m = re.search(r"window=(\d+)", runs["fib"])
    assert m and int(m.group(1)) < 20, runs["fib"]


def test_counts_shown_per_cpu_and_bad_switch_refused(runs):
    assert runs["stats"].startswith("cpu0 itlb="), runs["stats"]
    assert not runs["refusal"].ok and "usage" in runs["refusal"].message


def _branch(pc, target, taken, annulled=False):
    from bench.wire import records
    flags = (records.BRANCH_BITS.TAKEN if taken else 0) | \
        (records.BRANCH_BITS.ANNULLED if annulled else 0)
    words = [0] * 3
    words[records.BRANCH.PC], words[records.BRANCH.TARGET] = pc, target
    words[records.BRANCH.FLAGS] = flags
    return records.Event(0, 1, 0, records.K_BRANCH, 0, tuple(words))


def test_rebuild_counts_instructions_and_catches_a_lost_or_reordered_record():
    from bench.trace.image import Function
    fn = Function("f", 0x1000, 0x40)
    sites = {0x1010, 0x1020}
    loop = _branch(0x1010, 0x1004, True)           # bne back, slot runs
    out = _branch(0x1010, 0x1004, False, True)     # bne,a untaken: slot annulled
    ret = _branch(0x1020, 0x5000, True)            # retl, slot runs
    # 0x1000..0x1010 + slot, 0x1004..0x1010 + slot, again without the
    # annulled slot, 0x1018..0x1020 + slot
    assert avoid.rebuild([loop, loop, out, ret], fn, sites) == (1, 6 + 5 + 4 + 4)
    with pytest.raises(avoid.AvoidError, match="0x1010 left no record"):
        avoid.rebuild([loop, ret], fn, sites)          # `out` dropped
    with pytest.raises(avoid.AvoidError, match="cannot follow"):
        avoid.rebuild([out, loop, ret], fn, sites)     # reordered
