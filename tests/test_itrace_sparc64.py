"""sparc64 instruction traces rebuilt from branch records
(bench/trace/itrace_branches.py), at a small size: the forms workload
(every CTI class, annulled slots taken and not, fcc0-3) from
arch_forms_run's entry probe, with a branch probe on each transfer of it
and of the fm_* functions, is walked through the ELF with every record
consumed; a dropped or swapped record stops the
walk with a named problem; the walk equals QEMU's -singlestep exec log of
an unprobed boot instruction for instruction (delay slots, annulled slots,
window fill traps retried); the guest refuses `itrace on` with the way it
traces instead. fib(10) and calltree are the matrix's sparc64 itrace cells.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench.guest.qemu import Guest
from bench.trace import itrace, itrace_branches, itrace_run, qemuref
from bench.trace.session import open_session
from bench.wire import records

ENTRY, WITHIN, RUN, N = "arch_forms_run", "arch_forms_run,fm_*", "forms n=2", 2


@pytest.fixture(scope="module")
def run(built):
    built("sparc64")
    with Guest("sparc64", label="itrace") as g:
        s = open_session(g)
        s.setup(f"fbt:{ENTRY}:entry,branch:{ENTRY},branch:fm_*", "emulate")
        s.enable(True, strict=True)
        refusal = s.cmd(f"itrace on {s.probes[0].id} previous")
        reply = s.cmd(f"run {RUN}")
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    return {"image": s.image, "events": cap.events, "entry": s.probes[0].id,
            "reply": reply, "refusal": refusal}


def _walk(run, events):
    f = run["image"].functions[ENTRY]
    return itrace_branches.regions(events, run["image"], run["entry"], f.addr, WITHIN)


def test_walk_consumes_every_record(run):
    assert run["reply"].ok and run["reply"].results[0]["status"] == 0
    assert not run["refusal"].ok and "no single-step" in run["refusal"].message
    regs, outside = _walk(run, run["events"])
    branches = [e for e in run["events"] if e.kind == records.K_BRANCH]
    assert len(regs) == 1 and outside == 0
    r = regs[0]
    assert r.ended == "return" and not r.problems, r.problems
    assert r.records == len(branches) > 10
    # The workload counts the calls of its fm_ functions: each is a walk
    # through a first instruction; and annulled slots were passed both ways.
    fms = [f for f in run["image"].functions.values() if f.name.startswith("fm_")]
    walked = sum(r.addrs.count(f.addr) for f in fms)
    assert walked == run["reply"].results[0]["value"] >= len(fms) * N
    flags = [e.words[records.BRANCH.FLAGS] for e in branches]
    annulled = records.BRANCH_BITS.ANNULLED
    assert any(x & annulled for x in flags) and any(not x & annulled for x in flags)


@pytest.mark.parametrize("how", ["drop:3", "swap:3"])
def test_lost_or_reordered_record_is_caught(run, how):
    events = itrace_run._tamper(run["events"], how, steps=False)
    regs, _ = _walk(run, events)
    problems = [p for r in regs for p in r.problems]
    assert any("has no record" in p for p in problems), problems


def test_walk_equals_qemu(run):
    image = run["image"]
    f = image.functions[ENTRY]
    with tempfile.TemporaryDirectory(prefix="itrace-test-") as d:
        log, qmp = Path(d) / "exec.log", Path(d) / "qmp.sock"
        with Guest("sparc64", label="itrace-ref", boot_timeout=120,
                   extra_args=qemuref.qemu_args(log, qmp)) as g:
            mon = qemuref.Monitor(qmp)
            mon.hmp("log exec,nochain")
            r = g.command(f"run {RUN}")
            mon.hmp("log nochain")
            mon.close()
            g.exit(0)
        assert r.ok
        lo, hi = image.symbols["__workload_text_start"], image.symbols["__workload_text_end"]
        refs, _ = qemuref.regions(qemuref.exec_pcs(log), f.addr, lo, hi,
                                  itrace.InsnTable(image),
                                  image.symbols["arch_context_switch"], True,
                                  lambda a: itrace_branches.follows(image, a))
    regs, _ = _walk(run, run["events"])
    cmp = qemuref.compare(regs, refs, lambda a: "")
    assert len(refs) == 1 and cmp.differences == 0, cmp.lines
    assert cmp.compared == len(regs[0].addrs) > 150
