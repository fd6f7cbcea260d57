"""Traces people open in their own tools (bench/export/), and arguments by
their C types (bench/trace/types.py).

A traced calltree run is written as CTF and read back by the babeltrace2
CLI, a separate program; every event it prints is compared, field by field,
with the harness's own decode of the same run, on both arches — and for a
run that lost records, the discarded counts babeltrace2 reports equal the
guest's. The comparison catches a trace written from a capture with one
word changed. The metadata is valid TSDL and sink.text.details reads the
trace. A saved run exports to the same events. Typed arguments print as C
would show them (`ho_classify(c=0x…, x=-193)`, enums by name, `?` for a
parameter no record carries), in the text trace and as CTF fields. The
call timeline pairs entries with returns and draws a PNG per CPU."""

import copy
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench import arches, cli
from bench.export import ctf, logs, timeline
from bench.guest.qemu import Guest
from bench.trace.session import open_session
from bench.trace.sites import Probe
from bench.wire.records import (BRANCH, BRANCH_BITS, ENTRY, K_BRANCH, K_CHECK,
                                K_ENTRY, RETURN, Capture, Event)

pytestmark = pytest.mark.skipif(not shutil.which("babeltrace2"),
                                reason="babeltrace2 is not installed (make deps)")

LINE = re.compile(r"^\[(\d+)\] (\S+): \{ cpu_id = (\d+) \}, \{ tid = (\d+) \}, "
                  r"\{ (.*) \}$")


def _split(text):
    """Top-level `a, b, c` of a babeltrace2 field list."""
    out, depth, cur, quoted = [], 0, "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if not quoted and ch in "[(":
            depth += 1
        if not quoted and ch in "])":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def _value(text):
    m = re.match(r'^\( "(.*)" : container = (-?\d+) \)$', text)
    if m:
        return (m.group(1), int(m.group(2)))
    if text.startswith("["):
        return [_value(v.split(" = ", 1)[1]) for v in _split(text[1:-1].strip())]
    return int(text, 0)


def babeltrace(path) -> tuple[list[tuple], str]:
    """(cycles, name, cpu, tid, {field: value}) per event, and stderr."""
    p = subprocess.run(["babeltrace2", "--clock-cycles", "--no-delta", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = []
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        assert m, f"unexpected babeltrace2 line: {line}"
        fields = dict(f.split(" = ", 1) for f in _split(m.group(5)))
        out.append((int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4)),
                    {k: _value(v) for k, v in fields.items()}))
    return out, p.stderr


def expected(cap: Capture, probes, image) -> list[tuple]:
    """The same tuples from the harness's own decode (see ctf.py's top)."""
    by_id = {p.id: p for p in probes}
    wb = image.word_bytes
    out = []
    for ev in (*cap.events, *cap.checks):
        p = by_id[ev.probe]
        w = ev.words
        f = {"probe": ev.probe}
        sig = image.signature_of(p.function)
        if ev.kind == K_CHECK:
            name = "check"
            f.update(nwords=len(w), words=list(w))
        elif ev.kind == K_BRANCH:
            name = f"branch:{p.function}"
            f.update(pc=w[BRANCH.PC], target=w[BRANCH.TARGET],
                     taken=int(bool(w[BRANCH.FLAGS] & BRANCH_BITS.TAKEN)),
                     annulled=int(bool(w[BRANCH.FLAGS] & BRANCH_BITS.ANNULLED)))
        elif ev.kind == K_ENTRY:
            name = f"fbt:{p.function}:entry"
            f.update(pc=w[ENTRY.PC], sp=w[ENTRY.SP])
            for prm in sig.params:
                if prm.word is None or prm.type.kind in ("aggregate", "float"):
                    continue
                raw = 0
                for i in range(prm.words):
                    raw |= w[ENTRY.ARG0 + prm.word + i] << (8 * wb * i)
                v = prm.type.value(raw) if prm.type.kind != "pointer" else raw
                if prm.type.kind == "enum":
                    v = (dict(prm.type.enumerators)[v], v)
                f[prm.name] = v
        else:
            name = f"fbt:{p.function}:return"
            f.update(pc=w[RETURN.PC], sp=w[RETURN.SP])
            if sig.ret.kind != "void":
                known = len(w) > RETURN.VALUE
                f.update(value_known=int(known),
                         value=sig.ret.value(w[RETURN.VALUE]) if known else 0)
        out.append((ev.cycles, name, ev.cpu, ev.thread, f))
    return sorted(out, key=lambda t: (t[0], t[2], t[1]))


def differences(got, want) -> list[str]:
    got = sorted(got, key=lambda t: (t[0], t[2], t[1]))
    if len(got) != len(want):
        return [f"babeltrace2 printed {len(got)} events, the harness decoded {len(want)}"]
    out = []
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            diff = {k: (w[4].get(k), g[4].get(k)) for k in set(g[4]) | set(w[4])
                    if g[4].get(k) != w[4].get(k)}
            out.append(f"event {i} {w[1]} at {w[0]}: expected vs got {g[:4]} {diff}")
    return out


def _run(arch, spec, line, buffer_bytes, check=False, kick="on"):
    a = arches.get(arch)
    with Guest(a, label=f"ctf-{arch}", smp=min(2, a.max_smp)) as g:
        s = open_session(g)
        s.setup(spec, a.default_mechanism, check=check, buffer_bytes=buffer_bytes)
        s.must(f"trace kick {kick}")
        s.enable(True)
        assert s.cmd(f"run {line}").ok
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    return cap, s.probes, s.image, g


@pytest.fixture(scope="module", params=["i386", "sparc64"])
def traced(request, built, tmp_path_factory):
    arch = request.param
    built(arch)
    a = arches.get(arch)
    spec = "fbt:ct_*:entry,fbt:ct_*:return" + (",branch:ct_*" if a.branch_provider else "")
    cap, probes, image, g = _run(arch, spec, "calltree threads=2 iters=8", 4 << 20,
                                 check=True)
    out = tmp_path_factory.mktemp(f"ctf-{arch}") / "trace"
    written = ctf.write(out, cap, probes, image, g.hello, {"mechanism": "x"})
    return arch, cap, probes, image, g, written


def test_babeltrace2_reads_back_every_event_and_field(traced):
    arch, cap, probes, image, g, written = traced
    got, err = babeltrace(written.path)
    assert len(got) == len(cap.events) + len(cap.checks) == written.events > 100
    assert not differences(got, expected(cap, probes, image)), \
        differences(got, expected(cap, probes, image))[:5]
    names = {n for _, n, _, _, _ in got}
    assert {"fbt:ct_root:entry", "fbt:ct_root:return", "check"} <= names
    assert ("branch:ct_root" in names) == arches.get(arch).branch_provider
    assert "discarded" not in err


def test_a_changed_word_is_caught_by_the_comparison(traced, tmp_path):
    arch, cap, probes, image, g, written = traced
    bad = copy.deepcopy(cap)
    i = next(i for i, ev in enumerate(bad.events) if ev.kind == K_ENTRY
             and len(ev.words) > ENTRY.ARG0 + 1)
    ev = bad.events[i]
    words = list(ev.words)
    words[ENTRY.ARG0 + 1] ^= 1
    bad.events[i] = Event(ev.cpu, ev.thread, ev.probe, ev.kind, ev.cycles,
                          tuple(words), ev.index)
    w = ctf.write(tmp_path / "bad", bad, probes, image, g.hello)
    diffs = differences(babeltrace(w.path)[0], expected(cap, probes, image))
    assert len(diffs) == 1 and f"at {ev.cycles}" in diffs[0], diffs


def test_the_metadata_is_tsdl_and_details_read_it(traced):
    arch, cap, probes, image, g, written = traced
    meta = subprocess.run(["babeltrace2", "--output-format=ctf-metadata",
                           str(written.path)], capture_output=True, text=True)
    assert meta.returncode == 0, meta.stderr
    text = meta.stdout
    assert "/* CTF 1.8 */" in text and "clock {" in text and \
        f"freq = {g.hello['cycles_hz']};" in text
    assert 'name = "fbt:ct_root:entry";' in text and 'tracer_name = "trapbench";' in text
    assert f'arch = "{arch}";' in text and "expect_ct_root" in text
    details = subprocess.run(["babeltrace2", "-c", "sink.text.details",
                              str(written.path)], capture_output=True, text=True)
    assert details.returncode == 0 and "Event `fbt:ct_root:entry`" in details.stdout


def test_lost_records_are_discarded_events(built, tmp_path):
    built("i386")
    cap, probes, image, g = _run("i386", "fbt:ct_*:entry,fbt:ct_*:return",
                                 # long enough for ticks to come during it: a
                                 # drain at ticks only, then more records
                                 # after each loss (their DROPS marks)
                                 "calltree threads=4 iters=600", 4096, kick="off")
    lost = sum(s["dropped"] for s in cap.stats.values())
    assert lost > 0 and cap.marked, "the buffer was meant to overflow"
    w = ctf.write(tmp_path / "lossy", cap, probes, image, g.hello)
    got, err = babeltrace(w.path)
    # babeltrace2 says "1 event" for a loss of one (seen: a DROPS mark of 1
    # beside one of 10,235): the plural alone missed those.
    reported = [int(n) for n in re.findall(r"Tracer discarded (\d+) events?\b", err)]
    assert sum(reported) == lost == w.discarded, (reported, lost, err[-500:])
    assert len(reported) == len(cap.losses())
    assert not differences(got, expected(cap, probes, image))


def test_a_saved_run_exports_to_the_same_trace(built, tmp_path):
    built("sparc64")
    cap, probes, image, g = _run("sparc64", "fbt:ct_*:entry,fbt:ct_*:return",
                                 "calltree threads=2 iters=4", 1 << 20)
    assert cli.main(["export", "--ctf", str(tmp_path / "again"),
                     str(g.log_path)]) == 0
    again, _ = babeltrace(tmp_path / "again")
    assert not differences(again, expected(cap, probes, image))
    run = logs.load(g.serial_path)
    assert [(p.id, p.function, p.kind) for p in run.probes] == \
        [(p.id, p.function, p.kind) for p in probes]


def test_export_refuses_a_log_it_cannot_read(tmp_path, capsys):
    (tmp_path / "x.log").write_text(">> echo hi\n")
    assert cli.main(["export", "--ctf", str(tmp_path / "o"), str(tmp_path / "x.log")]) == 2
    assert "no x.serial beside it" in capsys.readouterr().err


# ---- typed arguments ----

TY_ALL = {"i386": "b=? (past the 6 words recorded)", "sparc64": "b=? (passed on the stack)"}


def test_arguments_print_by_their_c_types(arch, built, capsys, tmp_path):
    built(arch)
    assert cli.main(["run", "--arch", arch, "--workload", "tests/workloads/typed.c",
                     "--probes", "fbt:ty_all:entry,fbt:ty_all:return,"
                     "fbt:ty_wide:entry,fbt:ty_wide:return",
                     "--ctf", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"-> ty_all\(box=0x[0-9a-f]+, s=-193, u=4000000000, color=TY_BLUE, "
                     r"name=0x[0-9a-f]+ \(const char \*\), h=-7, "
                     + re.escape(TY_ALL[arch]) + r"\)", out), out
    assert "<- ty_all = -200" in out
    assert "-> ty_wide(v=-1, w=5000000001, neg=true)" in out
    assert "<- ty_wide = -5000000002" in out
    (entry,) = [e for e in babeltrace(tmp_path / "t")[0] if e[1] == "fbt:ty_all:entry"]
    f = entry[4]
    assert (f["s"], f["u"], f["color"], f["h"]) == (-193, 4000000000, ("TY_BLUE", -2), -7)
    assert "b" not in f, "a parameter no record carries is not a field"
    (ret,) = [e for e in babeltrace(tmp_path / "t")[0] if e[1] == "fbt:ty_wide:return"]
    assert ret[4]["value"] == -5000000002 and ret[4]["value_known"] == 1


def test_the_issues_line_reads_as_c(arch, built, capsys):
    built(arch)
    assert cli.main(["run", "--arch", arch, "--workload", "tests/workloads/classify.c",
                     "--run", "classify threads=1 values=3", "--probes",
                     "fbt:ho_classify:entry", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"-> ho_classify\(c=0x[0-9a-f]+, x=-193\)", out), out


# ---- the timeline ----

def test_the_timeline_pairs_calls_and_draws_each_cpu(tmp_path):
    probes = [Probe(0, "f", "entry", 1), Probe(1, "f", "return", 2),
              Probe(2, "g", "entry", 3), Probe(3, "g", "return", 4)]
    ev = lambda cpu, t, p, kind, c: Event(cpu, t, p, kind, c, (0, 0, 0))
    cap = Capture([ev(0, 1, 0, 1, 10), ev(0, 1, 2, 1, 20), ev(1, 1, 3, 2, 30),
                   ev(1, 1, 1, 2, 40), ev(1, 2, 0, 1, 50), ev(1, 2, 2, 1, 60)],
                  [], {}, {}, 1, 0)
    calls = timeline.calls(cap, probes)
    got = sorted((c.thread, c.function, c.start, c.end, c.depth, c.closed, c.cpu)
                 for c in calls)
    assert got == [(1, "f", 10, 40, 0, True, 0), (1, "g", 20, 30, 1, True, 0),
                   (2, "f", 50, 60, 0, False, 1), (2, "g", 60, 60, 1, False, 1)]
    made = timeline.draw(cap, probes, tmp_path, 1e9, "test ")
    assert [p.name for p in made] == ["timeline-cpu0.png", "timeline-cpu1.png"]
    assert all(p.stat().st_size > 5000 for p in made)
    assert Path(made[0]).read_bytes()[:4] == b"\x89PNG"
