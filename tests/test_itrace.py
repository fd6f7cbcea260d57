"""Instruction tracing (i386 single-step; bench/trace/itrace.py, qemuref.py).

One guest on 4 CPUs carries the small runs: fib(5) traced by both methods
gives the same instructions, and a record dropped or two swapped are each
caught by the replay; calltree's reference run (the command thread) and
one of its 3 workers traced alone (--skip 1 --regions 1) while the other
two run untraced give the same instruction sequence, with every result
right and no step on any other thread; `itrace on` refuses what it cannot
do. fib(5) traced by `next` (the instruction about to run, read ahead)
gives the same instructions, its read-aheads at the probed entry are the
probe's int3, and a lost, reordered or altered record of it is caught.
A second boot under QEMU's -singlestep exec log is the independent
reference: fib(5)'s region equals QEMU's, instruction for instruction,
by previous and by next, and the swapped capture differs from it. The full-size runs (fib(10),
calltree on 2 and 4 CPUs) are the matrix's itrace cells.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest

from bench.guest.qemu import Guest
from bench.trace import itrace, itrace_run, qemuref
from bench.trace.session import open_session

CT = "calltree threads=3 iters=2 depth=1"


def _traced(s, probe, method, line, skip=0, regions=0):
    s.must(f"itrace on {probe} {method} {skip} {regions}")
    r = s.cmd(f"run {line}")
    st = itrace_run._stats(s.must("itrace stats").message)
    s.must("itrace off")
    return r, st


@pytest.fixture(scope="module")
def runs(built):
    built("i386")
    out = {}
    with Guest("i386", smp=4, label="itrace") as g:
        s = open_session(g)
        s.setup("fbt:fib:entry,fbt:ct_thread:entry,fbt:ct_add:return,"
                "fbt:yielder:entry", "int3")
        ids = {(p.function, p.kind): p.id for p in s.probes}
        for p in s.probes:
            s.must(f"probe action {p.id} null")
        s.enable(True, strict=True)
        out["refusals"] = [s.cmd(c) for c in (
            "itrace on 999 previous", f"itrace on {ids['fib', 'entry']} sideways",
            f"itrace on {ids['ct_add', 'return']} previous",
            f"itrace on {ids['fib', 'entry']} previous x")]
        fib = ids["fib", "entry"]
        ct = ids["ct_thread", "entry"]
        out["fib4"] = _traced(s, fib, "previous", "fib n=5")
        out["fib3"] = _traced(s, fib, "address", "fib n=5")
        out["ref"] = _traced(s, ct, "previous", CT, skip=0, regions=1)
        out["one"] = _traced(s, ct, "previous", CT, skip=1, regions=1)
        out["pp"] = _traced(s, ids["yielder", "entry"], "previous",
                            "pingpong threads=2 iters=3")
        out["fib5"] = _traced(s, fib, "next", "fib n=5")
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    evs = [e for e in cap.events if e.kind == itrace.K_ITRACE]
    # The capture's ITRACE records, run by run (each run's regions in order).
    out["image"], out["order"], out["events"] = s.image, g.byte_order, evs
    return out


def _regions(runs, events):
    return itrace.regions(events, runs["image"], runs["order"], 4)


def test_refusals_change_nothing(runs):
    msgs = [r.message for r in runs["refusals"]]
    assert [r.ok for r in runs["refusals"]] == [False] * 4, msgs
    assert "is no probe" in msgs[0] and "address (3), previous (4) or next (5)" in msgs[1]
    assert "entry probe" in msgs[2] and "counts" in msgs[3], msgs


def test_both_methods_trace_fib_alike(runs):
    regs = _regions(runs, runs["events"])
    fib4, fib3 = regs[0], regs[1]
    assert (fib4.method, fib3.method) == (4, 3)
    for r in (fib4, fib3):
        assert r.ended == "return" and not r.problems, r.problems
    # fib(5) calls fib 15 times: 15 entry probe traps, each emulating the
    # fused push %ebp; mov %esp,%ebp.
    assert fib4.emulated == fib3.emulated == 30
    assert fib4.addrs == fib3.addrs
    st = runs["fib4"][1]
    assert st["db_steps"] + st["probe_traps"] * 1 == len(fib4.addrs) - 15, st
    assert st["stray_db"] == 0
    assert runs["fib4"][0].results[0]["value"] == 5


def test_one_thread_stepped_while_others_run(runs):
    regs = _regions(runs, runs["events"])
    ref, one = regs[2], regs[3]
    assert len(regs) == 7, [(r.thread, len(r.addrs)) for r in regs]
    for name in ("ref", "one"):
        reply, st = runs[name]
        assert reply.ok and reply.results[0]["status"] == 0, reply.message
        assert st["regions"] == 1 and st["stray_db"] == 0, st
    # The command thread's reference run and one worker run the same code
    # on the same arguments: the same instructions, and none of the other
    # workers' (they would make the region longer or add a region).
    assert one.thread != ref.thread
    assert one.addrs == ref.addrs and not one.problems and one.ended == "return"


def test_kernel_calls_run_untraced(runs):
    # pingpong's yielder calls thread_yield 3 times in each of 2 threads on
    # one CPU: each call runs at full speed and comes back through the
    # return pad; the switches inside it never carry TF to the other thread.
    a, b = _regions(runs, runs["events"])[4:6]
    reply, st = runs["pp"]
    assert reply.ok and reply.results[0]["status"] == 0, reply.message
    assert a.thread != b.thread and a.addrs == b.addrs
    assert (a.calls_out, b.calls_out) == (3, 3) and not a.problems + b.problems
    assert st["pad_traps"] == 6 and st["stray_db"] == 0 and st["regions"] == 2, st
    image = runs["image"]
    lo, hi = image.symbols["__workload_text_start"], image.symbols["__workload_text_end"]
    assert all(lo <= x < hi for x in a.addrs + b.addrs)


@pytest.mark.parametrize("how", ["drop", "swap"])
def test_lost_or_reordered_record_is_caught(runs, how):
    fib_records = [e for e in runs["events"] if e.thread == runs["events"][0].thread][:3]
    assert len(fib_records) == 3
    events = itrace_run._tamper(runs["events"], f"{how}:1")
    regs = _regions(runs, events)
    problems = [p for r in regs for p in r.problems]
    assert any("expected record 1 (lost, or late)" in p for p in problems), problems
    late = [p for p in problems if "out of order" in p]
    assert late if how == "swap" else not late, problems


def _next_records(runs):
    """Indexes among the ITRACE records of the `next` run's (the last region)."""
    events = runs["events"]
    last = [i for i, e in enumerate(events) if (e.words[itrace.W.INFO] >> 16) & 0xff
            == itrace.METHODS["next"]]
    assert len(last) > 3
    return last


def test_next_traces_fib_as_previous(runs):
    regs = _regions(runs, runs["events"])
    fib4, fib5 = regs[0], regs[6]
    assert fib5.method == itrace.METHODS["next"] == 5
    assert fib5.ended == "return" and not fib5.problems, fib5.problems
    assert fib5.addrs == fib4.addrs and fib5.emulated == 30
    # Read ahead, the 14 recursive calls' targets are fib's entry, where the
    # probe's int3 stands: what the tracer read there is the trap, not the
    # code (the host puts the code back from the ELF).
    assert fib5.ahead_traps == 14
    reply, st = runs["fib5"]
    assert reply.ok and reply.results[0]["value"] == 5 and st["stray_db"] == 0
    # It costs bytes: every instruction's code is on the wire.
    assert fib5.wire_bytes > 1.3 * fib4.wire_bytes, (fib5.wire_bytes, fib4.wire_bytes)


@pytest.mark.parametrize("how", ["drop", "swap", "alter"])
def test_next_record_lost_reordered_or_altered_is_caught(runs, how):
    idx = _next_records(runs)
    events = list(runs["events"])
    k = idx[1]
    if how == "alter":
        # One byte of code read ahead changed in the second record: what a
        # tracer reading at the wrong address would send.
        e = events[k]
        w = list(e.words)
        w[itrace.W.DATA + 1] ^= 0x40
        events[k] = dataclasses.replace(e, words=tuple(w))
    else:
        events = itrace_run._tamper(events, f"{how}:{k}")   # all are ITRACE records
    problems = _regions(runs, events)[6].problems
    assert problems, f"{how}: nothing caught"
    if how == "alter":
        assert any("read ahead" in p or "step" in p for p in problems), problems
    else:
        assert any("expected record 1 (lost, or late)" in p for p in problems), problems


def test_qemu_reference_equals_trace(runs, built):
    image = runs["image"]
    f = image.functions["fib"]
    insns = itrace.InsnTable(image)
    with tempfile.TemporaryDirectory(prefix="itrace-test-") as d:
        log, qmp = Path(d) / "exec.log", Path(d) / "qmp.sock"
        with Guest("i386", label="itrace-ref", boot_timeout=120,
                   extra_args=qemuref.qemu_args(log, qmp)) as g:
            mon = qemuref.Monitor(qmp)
            mon.hmp("log exec,nochain")
            r = g.command("run fib n=5")
            mon.hmp("log nochain")
            mon.close()
            g.exit(0)
        assert r.ok
        lo, hi = image.symbols["__workload_text_start"], image.symbols["__workload_text_end"]
        refs, _ = qemuref.regions(qemuref.exec_pcs(log), f.addr, lo, hi, insns,
                               image.symbols["arch_context_switch"])
    fib4 = _regions(runs, runs["events"])[:1]
    good = qemuref.compare(fib4, refs, lambda a: "")
    assert len(refs) == 1 and good.differences == 0, good.lines
    assert good.compared == len(fib4[0].addrs) > 300
    swapped = _regions(runs, itrace_run._tamper(runs["events"], "swap:1"))[:1]
    bad = qemuref.compare(swapped, refs, lambda a: "")
    assert bad.differences > 0, bad.lines
    fib5 = _regions(runs, runs["events"])[6:7]
    nxt = qemuref.compare(fib5, refs, lambda a: "")
    assert nxt.differences == 0 and nxt.compared == good.compared, nxt.lines
