"""The matrix across libvirt hosts (bench/suite/matrix.py, bench/suite/hosts.py)
with stand-in cells and hosts: no daemon, no guest, a few seconds.

A host's slots are its CPU count; no host ever runs more cells at once than
its slots and the longest cell starts first; a cell whose host failed (it
exited with EXIT_HOST, or the host stopped answering) runs once more on
another host and the summary, JUnit and TAP say where each ran and why one
ran twice; a cell that fails while its host answers is a failure and is not
run again; a host that stops answering gets no more cells; with no host
left, the cell fails saying so. The same machinery against real daemons is
tests/test_remote.py."""

import json
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

from bench.errors import EXIT_HOST
from bench.suite import hosts, matrix

CELLS = "".join(f"""
[c{i}]
arch = i386
kind = trace
timeout = 60
groups = g
""" for i in range(6))


def _cells(n=6):
    return matrix.parse(CELLS, "m.cfg")[:n]


def _place(tmp_path, behaviour):
    """place(cell, host): a Python command that records (cell, host, start,
    end) in tmp_path/runs.jsonl, sleeps, and exits with
    behaviour(cell, host) -> (seconds, status)."""
    def place(cell, host):
        secs, status = behaviour(cell, host)
        code = textwrap.dedent(f"""
            import json, time
            t0 = time.time()
            print("running {cell.name} on {host.label if host else 'here'}")
            time.sleep({secs})
            with open({str(tmp_path / 'runs.jsonl')!r}, "a") as f:
                f.write(json.dumps(["{cell.name}", "{host.label if host else ''}",
                                    t0, time.time()]) + "\\n")
            if {status} == {EXIT_HOST}:
                print("error: lost the libvirt connection to {host.uri if host else ''}")
            raise SystemExit({status})
            """)
        return [sys.executable, "-c", code]
    return place


def _runs(tmp_path):
    p = tmp_path / "runs.jsonl"
    return [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []


def _hosts(*spec):
    return [hosts.Host(f"qemu+tcp://h{i}:1/session", f"h{i}", slots=s, cpus=s)
            for i, s in enumerate(spec)]


def _overlap(runs, label):
    """The most cells a host ran at once."""
    edges = sorted([(r[2], 1) for r in runs if r[1] == label] +
                   [(r[3], -1) for r in runs if r[1] == label])
    most = cur = 0
    for _, d in edges:
        cur += d
        most = max(most, cur)
    return most


def test_slots_come_from_the_hosts_cpu_count_and_unreachable_hosts_are_marked():
    cpus = {"qemu+tcp://a:1/session": 4, "qemu+tcp://b:1/session": 1}

    def ask(uri, timeout):
        if uri not in cpus:
            raise ConnectionError("Connection refused")
        return cpus[uri]
    hs = hosts.connect([*cpus, "qemu+tcp://c:1/session"], ask=ask)
    assert [(h.label, h.slots, h.down) for h in hs] == [
        ("a:1", 4, None), ("b:1", 1, None),
        ("c:1", 0, "unreachable at the start: Connection refused")]
    assert hosts.labels(["qemu+tcp://a:1/session", "qemu+tcp://a:1/system"]) == \
        ["qemu+tcp://a:1/session", "qemu+tcp://a:1/system"]


def test_cells_fill_each_hosts_slots_longest_first(tmp_path):
    hs = _hosts(2, 1)
    cells = _cells()
    res = matrix.run(cells, "g", out_dir=tmp_path, echo=lambda l: None, hosts=hs,
                     place=_place(tmp_path, lambda c, h: (1.0, 0)),
                     host_check=lambda h: None)
    runs = _runs(tmp_path)
    assert res.ok and len(runs) == 6, runs
    assert _overlap(runs, "h0") <= 2 and _overlap(runs, "h1") == 1, runs
    assert len(hs[0].ran) > len(hs[1].ran), (hs[0].ran, hs[1].ran)
    assert {o.cell.name: o.host for o in res.outcomes} == {r[0]: r[1] for r in runs}
    table = "\n".join(matrix.summary_lines(res))
    assert "host" in table.splitlines()[0]
    assert "host h0 (qemu+tcp://h0:1/session): 2 slots" in table
    assert "(2 hosts)" in table.splitlines()[-1]
    # One slot: the order cells start in is the order they ran.
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "durations.json").write_text(json.dumps(
        {"c3": 9.0, "c0": 1.0, "c1": 3.0, "c2": 1.0}))
    one = _hosts(1)
    matrix.run(_cells(4), "g", out_dir=tmp_path / "one", echo=lambda l: None,
               hosts=one, place=_place(tmp_path / "one", lambda c, h: (0, 0)),
               host_check=lambda h: None)
    assert one[0].ran[:2] == ["c3", "c1"], one[0].ran


def test_a_cell_whose_host_fails_runs_again_on_another_host(tmp_path):
    hs = _hosts(1, 1)
    down = set()

    def behaviour(cell, host):
        if host.label == "h1":
            down.add(host.uri)      # the host dies under its first cell
            return 0.3, EXIT_HOST
        return 0.3, 0
    lines = []
    res = matrix.run(_cells(4), "g", out_dir=tmp_path, echo=lines.append, hosts=hs,
                     place=_place(tmp_path, behaviour),
                     host_check=lambda h: "Connection refused" if h.uri in down else None)
    runs = _runs(tmp_path)
    assert res.ok, matrix.summary_lines(res)
    assert [r[1] for r in runs].count("h1") == 1, "a host that is down got more cells"
    (moved,) = [o for o in res.outcomes if o.attempts]
    assert moved.verdict == "PASS" and moved.host == "h0"
    assert "h1: host failed (lost the libvirt connection" in moved.attempts[0]
    assert hs[1].down and "Connection refused" in hs[1].down
    assert any(l.startswith(f"retry   {moved.cell.name}") for l in lines), lines
    assert (tmp_path / "logs" / f"{moved.cell.name}.try1.log").exists()
    text = "\n".join(matrix.summary_lines(res))
    assert f"rerun {moved.cell.name}: first on h1: host failed" in text, text
    assert "then PASS on h0" in text and "h0 (rerun)" in text
    assert "down at" in text and "1 rerun on another host" in text
    case = next(c for c in ET.parse(res.junit).getroot()
                if c.get("name").startswith(moved.cell.name + " "))
    props = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert props["host"] == "h0" and "h1: host failed" in props["rerun_after"]
    tap = res.tap.read_text()
    assert "  host: 'h0'" in tap and "  rerun_after: 'h1: host failed" in tap


def test_a_cell_that_fails_on_a_host_that_answers_is_not_run_again(tmp_path):
    hs = _hosts(1, 1)
    res = matrix.run(_cells(2), "g", out_dir=tmp_path, echo=lambda l: None, hosts=hs,
                     place=_place(tmp_path, lambda c, h: (0.1, 1 if c.name == "c0" else 0)),
                     host_check=lambda h: None)
    runs = _runs(tmp_path)
    assert [r[0] for r in runs].count("c0") == 1, runs
    c0 = next(o for o in res.outcomes if o.cell.name == "c0")
    assert c0.verdict == "FAIL" and not c0.attempts and not res.ok
    assert not any(h.down for h in hs)


def test_exit_host_from_a_host_that_still_answers_moves_the_cell_not_the_host(tmp_path):
    hs = _hosts(1, 1)
    res = matrix.run(_cells(1), "g", out_dir=tmp_path, echo=lambda l: None, hosts=hs,
                     place=_place(tmp_path, lambda c, h: (0.1, EXIT_HOST if h.label == "h0" else 0)),
                     host_check=lambda h: None)
    (o,) = res.outcomes
    assert o.verdict == "PASS" and o.host == "h1" and len(o.attempts) == 1
    assert not any(h.down for h in hs)


def test_with_no_host_left_the_cell_fails_saying_so(tmp_path):
    hs = _hosts(1, 1)
    res = matrix.run(_cells(1), "g", out_dir=tmp_path, echo=lambda l: None, hosts=hs,
                     place=_place(tmp_path, lambda c, h: (0.1, EXIT_HOST)),
                     host_check=lambda h: "gone")
    (o,) = res.outcomes
    assert o.verdict == "FAIL" and len(o.attempts) == 2, o
    assert len(_runs(tmp_path)) == 2, "a cell runs at most twice"
    assert "no other host left" in o.last_line
    hs = _hosts(1)
    hs[0].down = "unreachable at the start: refused"
    res = matrix.run(_cells(1), "g", out_dir=tmp_path / "b", echo=lambda l: None,
                     hosts=hs, place=_place(tmp_path, lambda c, h: (0, 0)))
    assert res.outcomes[0].verdict == "FAIL"
    assert "no host left to run it on: h0 unreachable" in res.outcomes[0].last_line


def test_the_cli_refuses_bad_hosts_before_running_anything(capsys):
    from bench import cli
    assert cli.main(["matrix", "--cell", "i386-trace-int3", "--host", "xen:///system"]) == 2
    assert "runs QEMU domains" in capsys.readouterr().err
    u = "qemu+tcp://127.0.0.1:9/session"
    assert cli.main(["matrix", "--cell", "i386-trace-int3", "--host", u, "--host", u]) == 2
    assert "the same URI twice" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--host", "qemu+tcp://127.0.0.1:1/session"]])
def test_no_reachable_host_is_exit_status_3_with_each_reason(argv, capsys):
    from bench import cli
    assert cli.main(["matrix", "--cell", "i386-trace-int3", *argv]) == EXIT_HOST
    err = capsys.readouterr().err
    assert "no host could be reached" in err and "127.0.0.1:1" in err, err
