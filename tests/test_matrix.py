"""The correctness matrix's runner (bench/suite/matrix.py) and its data
(ci/matrix.cfg): the file's keys are checked with the line named, a failing
or hung cell fails the run, expected failures are held to their text, and
the JUnit XML and TAP it writes are well formed. Cells here are tiny Python
commands standing in for `python3 -m bench ...`; no guest boots."""

import re
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET

import pytest

from bench import arches, cli
from bench.suite import matrix
from conftest import REPO

CELL = """
[{name}]
arch = {arch}
kind = trace
groups = g
"""


def parse(text):
    return matrix.parse(textwrap.dedent(text), "m.cfg")


def parse_error(text):
    with pytest.raises(matrix.MatrixError) as e:
        parse(text)
    return str(e.value)


# ---- the project's own matrix ----

def test_the_matrix_file_parses_and_covers_every_axis():
    cells = matrix.load()
    names = arches.available()
    for group in ("quick", "full"):
        sel = matrix.select(cells, group)
        assert {c.arch for c in sel} == set(names), group
        for a in names:
            kinds = {c.kind for c in sel if c.arch == a}
            assert {"trace", "differential", "lossless", "toggle"} <= kinds, (group, a, kinds)
            found = {c.mechanism for c in sel if c.arch == a and c.kind == "lossless"}
            assert found == set(arches.get(a).mechanisms), (group, a, found)
    full = matrix.select(cells, "full")
    assert {"check"} <= {c.kind for c in full if c.arch == "i386"}
    for a in names:     # the emulator fuzz at full size, 10^6 states per class
        assert [c.states for c in full if c.arch == a and c.kind == "fuzz"] == [10 ** 6]
    assert {c.smp for c in full if c.arch == "i386"} >= {1, 2, 4, 8}


# ---- the file format: every mistake names its line ----

def test_a_good_cell_becomes_the_command_a_person_would_type():
    (c,) = parse("""
        [x]
        arch = i386
        smp = 2
        kind = check
        mechanism = ud
        probes = fbt:fib:entry
        workload = fib  n=12
        extra_params = --buffer 65536 --limit '5'
        timeout = 30
        groups = quick, full
        """)
    assert c.argv() == ["run", "--arch", "i386", "--smp", "2", "--mechanism", "ud",
                        "--probes", "fbt:fib:entry", "--run", "fib n=12", "--check",
                        "--buffer", "65536", "--limit", "5"]
    assert c.groups == ("quick", "full") and c.timeout == 30 and c.line == 2


def test_defaults_are_the_archs_first_mechanism_and_one_cpu():
    (c,) = parse(CELL.format(name="x", arch="sparc64"))
    assert (c.smp, c.mechanism) == (1, "emulate")
    assert c.timeout == matrix.KINDS["trace"][2]


@pytest.mark.parametrize("extra, line, words", [
    ("colour = red", 6, ["[x] colour: unknown key", "arch"]),
    ("smp = 9", 6, ["smp: 9 is outside 1..8"]),
    ("smp = two", 6, ["'two' is not a whole number"]),
    ("mechanism = emulate", 6, ["'emulate': i386 has int3, ud, step"]),
    ("timeout = 0", 6, ["must be more than 0"]),
    ("timeout = soon", 6, ["'soon' is not a number"]),
    ("iters = 5", 6, ["iters: does not apply to kind trace"]),
    ("probes = kprobe:fib", 6, ["probes:", "expected fbt:[kernel:]FUNCTION"]),
    ("extra_params = --limit 'x", 6, ["extra_params:", "quotation"]),
    ("extra_params = --no-such-flag", 6, ["unrecognized arguments: --no-such-flag"]),
    ("xfail =", 6, ["xfail: needs the text"]),
])
def test_a_bad_key_or_value_names_the_file_and_line(extra, line, words):
    msg = parse_error(CELL.format(name="x", arch="i386") + extra + "\n")
    assert msg.startswith(f"m.cfg:{line}: "), msg
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("text, line, words", [
    ("[x]\narch = vax\nkind = trace\ngroups = g\n", 2, ["unknown arch 'vax'", "i386"]),
    ("[x]\narch = i386\nkind = soak\ngroups = g\n", 3, ["'soak' is not one of", "lossless"]),
    ("[x]\narch = i386\nkind = fuzz\nsmp = 2\ngroups = g\n", 4,
     ["smp: does not apply to kind fuzz"]),
    ("[x]\narch = i386\nkind = fuzz\nmechanism = ud\ngroups = g\n", 4,
     ["mechanism: does not apply to kind fuzz"]),
    ("[x]\narch = i386\nkind = trace\n", 1, ["missing key 'groups'"]),
    ("[x]\narch = i386\nkind = differential\nmechanism = ud\ngroups = g\n", 4,
     ["mechanism: does not apply to kind differential", "every mechanism"]),
    ("[x]\narch = i386\nkind = trace\ngroups = g\n[x]\narch = i386\n", 5, ["section 'x' already exists"]),
    ("[x]\narch = i386\narch = sparc64\n", 3, ["option 'arch' in section 'x' already exists"]),
    ("arch = i386\n", 1, ["a key before the first [cell] header"]),
    ("[x]\narch = i386\nkind: trace\n", 3, ["cannot read 'kind: trace'", "key = value"]),
    ("[bad name]\narch = i386\nkind = trace\ngroups = g\n", 1, ["a cell name is"]),
    ("[x]\narch = i386\nkind = trace\ngroups = g h!\n", 4, ["bad group name 'h!'"]),
])
def test_structural_mistakes_name_their_line(text, line, words):
    msg = parse_error(text)
    assert msg.startswith(f"m.cfg:{line}: "), msg
    for w in words:
        assert w in msg, msg


def test_an_empty_file_is_refused():
    assert "no [cell] sections" in parse_error("# nothing\n")


def test_selecting_an_unknown_group_or_cell_is_refused():
    cells = parse(CELL.format(name="a", arch="i386") + CELL.format(name="b", arch="sparc64"))
    with pytest.raises(matrix.MatrixError, match="no cell is in group 'nightly'; groups: g"):
        matrix.select(cells, "nightly")
    with pytest.raises(matrix.MatrixError, match="matches 'zz"):
        matrix.select(cells, "g", patterns=["zz*"])
    assert [c.name for c in matrix.select(cells, "g", ["sparc64"])] == ["b"]
    assert [c.name for c in matrix.select(cells, "g", patterns=["a"])] == ["a"]


def test_the_cli_refuses_a_bad_file_with_status_2(tmp_path, capsys):
    bad = tmp_path / "m.cfg"
    bad.write_text(CELL.format(name="x", arch="i386") + "smp = 0\n")
    assert cli.main(["matrix", "--file", str(bad)]) == 2
    assert f"{bad}:6: [x] smp: 0 is outside" in capsys.readouterr().err
    good = tmp_path / "ok.cfg"
    good.write_text(CELL.format(name="x", arch="i386"))
    assert cli.main(["matrix", "--file", str(good), "--group", "quick"]) == 2
    assert "no cell is in group 'quick'" in capsys.readouterr().err
    assert cli.main(["matrix", "--file", str(good), "--group", "g", "--list"]) == 0
    assert "python3 -m bench run --arch i386 --smp 1 --mechanism int3" in capsys.readouterr().out


# ---- running: fake cells ----

def fake(script: str, **kw) -> matrix.Cell:
    c = matrix.Cell(name=kw.pop("name"), arch="i386", kind="trace", groups=("t",),
                    **kw)
    c.script = textwrap.dedent(script)
    return c


def run_fakes(cells, tmp_path, jobs=2):
    lines = []
    res = matrix.run(cells, "t", jobs=jobs, out_dir=tmp_path,
                     argv_of=lambda c: [sys.executable, "-c", c.script],
                     echo=lines.append, grace=2)
    return res, lines


def verdicts(res):
    return {o.cell.name: o.verdict for o in res.outcomes}


def test_a_failing_cell_fails_the_run_and_is_reported(tmp_path):
    cells = [fake("print('all good')", name="good"),
             fake("import sys; print('missed=3 dropped=0'); sys.exit(1)", name="bad")]
    res, lines = run_fakes(cells, tmp_path)
    assert not res.ok
    assert verdicts(res) == {"good": "PASS", "bad": "FAIL"}
    assert len(lines) == 3                     # the header, a line per cell
    assert any("FAIL" in l and "bad" in l and "missed=3" in l for l in lines), lines
    assert (tmp_path / "logs" / "bad.log").read_text().endswith("missed=3 dropped=0\n")
    table = "\n".join(matrix.summary_lines(res))
    assert "matrix t: 1 passed, 1 failed, 0 expected failures" in table
    assert "rerun: python3 -m bench run --arch i386 --smp 1" in table


def test_all_passing_cells_pass_the_run(tmp_path):
    res, _ = run_fakes([fake("pass", name=f"c{i}") for i in range(3)], tmp_path)
    assert res.ok and res.count("PASS") == 3


def test_cells_run_at_the_same_time_up_to_jobs(tmp_path):
    # Each waits until the other has started: both pass only in parallel.
    meet = """
        import pathlib, sys, time
        d = pathlib.Path({d!r}); (d / {me!r}).touch()
        for _ in range(300):
            if (d / {other!r}).exists(): sys.exit(0)
            time.sleep(0.1)
        sys.exit(1)
        """
    cells = [fake(meet.format(d=str(tmp_path), me="a", other="b"), name="a"),
             fake(meet.format(d=str(tmp_path), me="b", other="a"), name="b")]
    res, _ = run_fakes(cells, tmp_path, jobs=2)
    assert verdicts(res) == {"a": "PASS", "b": "PASS"}


def test_a_hung_cell_is_killed_with_what_it_started(tmp_path):
    # Like the harness with QEMU: a child in its own session, which the
    # cell's process group would not reach.
    hang = """
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],
                             start_new_session=True)
        print('child', p.pid, flush=True)
        while True:
            try:
                time.sleep(600)
            except KeyboardInterrupt:
                pass                 # ignores SIGINT: must be killed
        """
    # 5 s: time enough to print the child's pid on a loaded host.
    res, _ = run_fakes([fake(hang, name="hang", timeout=5)], tmp_path)
    assert verdicts(res) == {"hang": "TIMEOUT"} and not res.ok
    child = int(re.search(r"child (\d+)",
                          (tmp_path / "logs" / "hang.log").read_text()).group(1))
    assert not alive(child), f"pid {child} outlived its cell"


def alive(pid: int) -> bool:
    """Running, after a moment for the kill to land (a zombie is dead)."""
    for _ in range(50):
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        if state == "Z":
            return False
        time.sleep(0.1)
    return True


def test_expected_failures_are_held_to_their_text(tmp_path):
    fails = "import sys; print('error: refused: no check mode here'); sys.exit(1)"
    cells = [fake(fails, name="known", xfail="no check mode"),
             fake(fails, name="other", xfail="something else"),
             fake("print('fine')", name="fixed", xfail="no check mode")]
    res, _ = run_fakes(cells, tmp_path, jobs=3)
    assert verdicts(res) == {"known": "XFAIL", "other": "FAIL", "fixed": "XPASS"}
    known = next(o for o in res.outcomes if o.cell.name == "known")
    assert known.last_line == "error: refused: no check mode here"
    assert not res.ok
    res, _ = run_fakes(cells[:1], tmp_path)
    assert res.ok                                # an expected failure alone passes


def test_junit_and_tap_are_well_formed(tmp_path):
    cells = [fake("print('ok')", name="p"),
             fake("import sys; print('bad\\x01 byte # and a hash'); sys.exit(3)", name="f"),
             fake("import sys; print('no check mode'); sys.exit(1)", name="x",
                  xfail="no check mode")]
    res, _ = run_fakes(cells, tmp_path, jobs=3)

    root = ET.parse(res.junit).getroot()
    assert root.tag == "testsuite" and root.get("name") == "matrix.t"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "1", "1")
    cases = {c.get("name").split()[0]: c for c in root.iter("testcase")}
    assert cases["f"].find("failure") is not None
    assert "exit status 3" in cases["f"].find("failure").text
    assert cases["x"].find("skipped") is not None and cases["p"].find("*") is None

    tap = res.tap.read_text().splitlines()
    assert tap[:2] == ["TAP version 13", "1..3"]
    points = [l for l in tap if re.match(r"(not )?ok \d+ ", l)]
    assert [int(re.match(r"(?:not )?ok (\d+)", l).group(1)) for l in points] == [1, 2, 3]
    assert points[0] == "ok 1 - p"
    assert points[1] == "not ok 2 - f"
    assert points[2] == "not ok 3 - x # TODO expected failure: no check mode"
    # YAML blocks open with --- and close with ..., indented under their point
    opened = [i for i, l in enumerate(tap) if l == "  ---"]
    closed = [i for i, l in enumerate(tap) if l == "  ..."]
    assert len(opened) == len(closed) == 3
    for a, b in zip(opened, closed):
        assert all(l.startswith("  ") for l in tap[a:b + 1])


def test_make_matrix_with_a_bad_group_is_a_usage_error():
    p = subprocess.run(["make", "--no-print-directory", "matrix", "GROUP=no-such"],
                       cwd=REPO, capture_output=True, text=True)
    assert p.returncode != 0
    assert "no cell is in group 'no-such'" in p.stderr
