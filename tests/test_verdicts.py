"""Verdicts that tell a refusal or a loss from a fault (bench/trace/verify.py).

`nesting broken` must mean exactly that the call chain a thread's records
describe is impossible. Synthetic captures pin each rule: a real break (a
record whose kind is flipped) is caught and shown with the thread's last
records; a refused return site leaves entries open, a refused entry site
leaves returns without entries, and lost records restart the stacks of the
threads that lost them — none of which is a break, each counted with its
reason. Then the two runs that once ended in a false `nesting broken`: a
user workload whose middle `ret` the ud mechanism must refuse, and a run
whose buffers overflow (every loss placed by the guest's DROPS records)."""

import pytest

from bench import cli
from bench.trace.sites import Probe
from bench.trace.callstacks import LOST, NO_ENTRY
from bench.trace.verify import verify
from bench.wire.records import K_ENTRY, K_RETURN, Capture, Event, Loss

PROBES = [Probe(0, "outer", "entry", 0x100), Probe(1, "outer", "return", 0x110),
          Probe(2, "inner", "entry", 0x200), Probe(3, "inner", "return", 0x210)]
ID = {(p.function, p.kind): p.id for p in PROBES}


def _events(script, thread=1, cpu=0, start=100):
    """Events from 'outer> inner> <inner <outer' (> entry, < return)."""
    out = []
    for i, tok in enumerate(script.split()):
        kind = "entry" if tok.endswith(">") else "return"
        fn = tok.strip("<>")
        out.append(Event(cpu, thread, ID[(fn, kind)],
                         K_ENTRY if kind == "entry" else K_RETURN,
                         start + 10 * i, (0, 0, 0)))
    return out


def _capture(events, marked=(), dropped=0, expects=None):
    events = sorted(events, key=lambda e: e.cycles)
    stats = {0: {"cpu": 0, "fired": len(events) + dropped, "recorded": len(events),
                 "dropped": dropped, "sent": len(events) + len(marked),
                 "buffer_bytes": 4096}}
    ends = {0: (len(events), events[-1].cycles if events else 0)}
    return Capture(events, [], stats, dict(expects or {}), 1, 0, list(marked), ends)


def test_a_clean_trace_has_no_problem():
    cap = _capture(_events("outer> inner> <inner inner> <inner <outer"),
                   expects={"outer": 1, "inner": 2})
    rep = verify(cap, PROBES)
    assert rep.ok, rep.problems
    assert (rep.nesting_checked, rep.nesting_errors, rep.unchecked) == (3, [], {})


def test_a_flipped_record_is_a_real_break_shown_with_its_history():
    evs = _events("outer> inner> <inner inner> <inner <outer")
    bad = evs[3]                         # the second `inner>` becomes a return
    evs[3] = Event(bad.cpu, bad.thread, ID[("inner", "return")], K_RETURN,
                   bad.cycles, bad.words)
    rep = verify(_capture(evs), PROBES)
    assert any(p.startswith("nesting broken: ") for p in rep.problems), rep.problems
    err = rep.nesting_errors[0]
    assert "t1 cpu0: return from inner" in err.message, err.message
    assert err.history[-1].endswith("<- inner") and len(err.history) >= 4, err.history
    assert rep.unchecked == {}


def test_an_entry_left_by_a_refused_return_site_is_not_a_break():
    refused = [Probe(9, "inner", "return", 0x220,
                     refused="refused: probe 9 at 0x220, mechanism ud: ud2 is two bytes")]
    # inner's second call left through the refused site: no `<inner`.
    cap = _capture(_events("outer> inner> <inner inner> <outer"),
                   expects={"outer": 1, "inner": 2})
    rep = verify(cap, PROBES, refused=refused)
    assert rep.ok and not rep.nesting_errors, rep.problems
    assert rep.left_open == 1 and rep.nesting_checked == 2
    assert rep.not_checked("inner", "return") == \
        "not checked, 1 of 2 return sites refused (ud2 is two bytes)"
    assert rep.not_checked("inner", "entry") == ""
    # Without being told of the refusal, the same records are a break.
    assert verify(cap, PROBES).nesting_errors


def test_a_return_with_its_entry_site_refused_is_not_checked():
    refused = [Probe(8, "inner", "entry", 0x200, refused="refused: not a prologue")]
    probes = [p for p in PROBES if p.id != ID[("inner", "entry")]] + \
        [Probe(2, "inner", "entry", 0x204)]
    cap = _capture([e for e in _events("outer> inner> <inner <outer")
                    if e.kind == K_RETURN or e.probe != ID[("inner", "entry")]])
    rep = verify(cap, probes, refused=refused)
    assert not rep.nesting_errors and rep.unchecked == {NO_ENTRY: 1}, rep.unchecked


def _loss(cycles_first, at, threads, count=5, bits=32):
    mask = 0
    for t in threads:
        mask |= 1 << (t % bits)
    return Loss(0, count, cycles_first, at, 3, mask, bits)


def test_lost_records_restart_the_stacks_of_the_threads_that_lost_them():
    # Thread 1 loses its `inner>` (cycle 110); thread 2 runs alongside.
    t1 = [e for e in _events("outer> inner> <inner <outer", thread=1, start=100)
          if e.cycles != 110]
    loss = _loss(105, 115, {1}, count=1)
    rep = verify(_capture(t1, [loss], dropped=1), PROBES)
    assert not rep.nesting_errors, [str(e) for e in rep.nesting_errors]
    assert rep.unchecked == {LOST: 2}, rep.unchecked
    assert rep.dropped == 1 and any("records lost" in p for p in rep.problems)
    assert rep.losses == [loss]
    # Not told of the loss, the same records are a break.
    assert verify(_capture(t1), PROBES).nesting_errors
    # A break on a thread the loss did not touch is still a break.
    t2 = _events("outer> inner> <outer", thread=2, start=101)
    rep = verify(_capture(t1 + t2, [loss], dropped=1), PROBES)
    assert [e.message.split(":")[1].strip() for e in rep.nesting_errors] == ["t2 cpu0"]


def test_entries_inside_a_loss_window_are_uncertain():
    evs = _events("outer> inner> <outer", thread=3, start=100)   # `<inner` lost
    rep = verify(_capture(evs, [_loss(105, 115, {3}, count=1)], dropped=1), PROBES)
    assert not rep.nesting_errors and rep.unchecked == {LOST: 1}, rep.unchecked
    assert "1 not checked (1 because records were lost)" in rep.nesting_line()


def test_a_loss_at_the_end_of_a_stream_counts_and_touches_every_thread():
    evs = _events("outer> inner> <inner", thread=4) + \
        _events("<outer", thread=4, start=500)
    cap = _capture(evs, [], dropped=7)
    cap.ends[0] = (3, 125)               # the CPU's last record before the loss
    rep = verify(cap, PROBES)
    (loss,) = rep.losses
    assert (loss.count, loss.at, loss.mask) == (7, None, None)
    assert "at the end of its stream" in loss.describe()
    assert not rep.nesting_errors


# ---- the two runs of the issue, in a guest ----

def test_refused_ud_sites_are_a_note_not_a_break(built, capsys):
    built("i386")
    rc = cli.main(["run", "--arch", "i386", "--smp", "2", "--workload",
                   "tests/workloads/classify.c", "--run", "classify threads=2 values=60",
                   "--probes", "fbt:ho_*:entry,fbt:ho_*:return", "--mechanism", "ud",
                   "--limit", "0"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "nesting broken" not in out.lower() and "PROBLEM" not in out, out
    row = next(l for l in out.splitlines() if l.strip().startswith("ho_classify"))
    assert "returns: not checked, 2 of 3 return sites refused (ud2 is two bytes" in row, row
    assert "ho_thread" in out and "entries left by a refused return site" in out


def test_a_tiny_buffer_loses_records_and_says_where_not_nesting_broken(built, capsys):
    built("i386")
    rc = cli.main(["run", "--arch", "i386", "--smp", "2", "--probes",
                   "fbt:ct_*:entry,fbt:ct_*:return", "--run",
                   "calltree threads=4 iters=600", "--buffer", "4096", "--kick", "off",
                   "--limit", "0"])
    out = capsys.readouterr().out
    assert rc == 1, out                  # records were lost: a problem
    assert "nesting broken" not in out.lower(), out
    problems = [l for l in out.splitlines() if l.startswith("PROBLEM")]
    assert len(problems) == 1 and "records lost" in problems[0], problems
    lost = int(problems[0].split()[1])
    assert f"dropped={lost}" in out
    # The guest placed its losses: some are marked between two records,
    # with the threads that lost them; their counts add up to the drops.
    places = [l.strip() for l in out.splitlines() if "records lost between" in l
              or "records lost at the end" in l]
    assert any("records lost between cycles" in p and "threads t" in p for p in places), out
    assert "records were lost" in out    # the returns nesting could not check


@pytest.mark.parametrize("loss_bits", [32, 64])
def test_a_loss_names_threads_modulo_the_word(loss_bits):
    l = _loss(1, 2, {3, 3 + loss_bits}, bits=loss_bits)
    assert l.affects(3) and l.affects(3 + loss_bits) and not l.affects(4)
    assert f"(ids modulo {loss_bits})" in l.describe()
