"""The tracer's own faults on i386, by instruction-tracing method
(bench/trace/avoid_step.py; guest-kernel/workloads/demand.c, mm.h's
mm_demand, miss_account.h's kinds).

One boot on one CPU, `demand` with 5 calls of demand_call per run, each
method (previous, next, address) with demand_step's page resident and
evicted before every call, every run's trace checked (a region per call,
each ended by its return, nothing lost, the ELF agreeing with every step,
the same listing by every method):
- evicted, the kernel serves one #PF per call whoever touches the page;
  reading the next instruction ahead, the tracer touches it first and
  every one of those #PF is the tracer's (counted as #PF, not #GP or
  other); by the previous instruction or by addresses the tracer takes
  none. demand_step's loop has a short forward jump that moves as far as
  a longer instruction would: a `previous` that took the address
  difference for the length without decoding would list it wrongly, and
  the replay names it;
- resident, no method faults, and untraced runs count nothing for the
  tracer (a counter taking the workload's faults for the tracer's would).
The full table is `python3 -m bench avoid --arch i386` (docs/itrace.md).
"""

import pytest

from bench import arches
from bench.guest.qemu import Guest
from bench.trace import avoid_step

ITERS = 5


@pytest.fixture(scope="module")
def rows(built):
    built("i386")
    arch = arches.get("i386")
    with Guest(arch, label="test-avoid-i386") as g:
        reps = avoid_step.measure(g, arch, ITERS, 1, on_line=lambda line: None)
        g.exit(0)
    return reps[0]


def _row(rows, method, evict):
    return next(r for r in rows if r["method"] == method and r["evict"] == evict)


def test_every_run_checks_out(rows):
    assert avoid_step.problems(rows, ITERS) == []
    prev = _row(rows, "previous", 0)
    assert prev["regions"] == ITERS and prev["instructions"] > 40 * ITERS
    for r in rows:
        if r["method"]:
            assert r["addrs"] == prev["addrs"], r["method"]


def test_only_a_read_ahead_faults_in_the_tracer(rows):
    nxt = _row(rows, "next", 1)
    assert (nxt["own_pf"], nxt["own_gp"], nxt["own_faults"]) == (ITERS, 0, ITERS)
    assert nxt["served"] == ITERS
    for method in ("previous", "address"):
        r = _row(rows, method, 1)
        assert r["own_faults"] == 0 and r["served"] == ITERS, (method, r["own_faults"])
    for r in rows:
        if not r["evict"] or not r["method"]:
            assert r["own_faults"] == 0, (r["method"], r["evict"], r["own_faults"])
    untraced = [r for r in rows if not r["method"] and r["evict"]]
    assert untraced and untraced[0]["served"] == ITERS


def test_bytes_per_instruction_order(rows):
    # Addresses only is the cheapest on the wire, the read-ahead's bytes
    # the dearest: every instruction's code goes out.
    b = {m: _row(rows, m, 0)["bytes_per_insn"] for m in avoid_step.METHODS}
    assert b["address"] < b["previous"] < b["next"], b


def test_table_says_what_ia32_lacks(rows):
    lines = avoid_step.table_lines(rows)
    assert len(lines) == 2 + len(rows) + 2
    assert "no IA-32 equivalent" in lines[-2] and "no interrupt" in lines[-1]
