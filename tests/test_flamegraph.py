"""Pictures people look at, held to what they show:

- folded stacks and the flame graph SVG of calltree's callers (i386, the
  `callers.rpn` program: @[stack(), probefunc] = count() on every ct_*
  entry): the folded counts of each function add up to the workload's own
  call counts; every frame of the SVG has a hover title and is as wide as
  its count, a child never wider than its parent; headless Chromium draws
  it (a screenshot whose frame area is coloured, not blank);
- the Chrome trace-event JSON of calltree's entries and returns, opened as
  that format is read: it loads, every event has ph, ts, pid and tid, and
  the complete events nest on each track;
- broken variants: a flame graph whose child outgrows its parent, and a
  trace whose event overlaps its neighbour, are caught by the same checks."""

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from bench import arches
from bench.export import chrome, flamegraph
from bench.guest.qemu import Guest
from bench.paths import PROGRAMS
from bench.program import aggregate, asm
from bench.trace import stacks
from bench.trace.session import open_session

SVG = "{http://www.w3.org/2000/svg}"
LINE = "calltree threads=2 iters=30 depth=3 spread=1"   # a thread on each CPU


def svg_frames(text: str) -> list[tuple]:
    """(title, x, y, width) of every frame of a flame graph SVG."""
    out = []
    for g in ET.fromstring(text).iter(f"{SVG}g"):
        title, rect = g.find(f"{SVG}title"), g.find(f"{SVG}rect")
        out.append((title.text if title is not None else None, float(rect.get("x")),
                    float(rect.get("y")), float(rect.get("width"))))
    return out


def svg_problems(text: str) -> list[str]:
    """Frames without a title, or wider than the frame below them."""
    frames = svg_frames(text)
    bad = [f"a frame at x={x} has no title" for t, x, y, w in frames if not t]
    for t, x, y, w in frames:
        below = [f for f in frames if f[2] > y and f[2] - y < 30 and f[1] <= x + 0.01
                 and x + w <= f[1] + f[3] + 0.6]
        if y < max(f[2] for f in frames) and not below:
            bad.append(f"{t}: wider than, or outside, the frame below it")
    return bad


def nesting_problems(events: list[dict]) -> list[str]:
    """Chrome JSON as its readers require: ph/ts/pid/tid on every event,
    complete events nested or disjoint on each (pid, tid) track."""
    bad = [f"event {i} lacks {k}" for i, e in enumerate(events)
           for k in ("ph", "ts", "pid", "tid") if k not in e]
    tracks: dict = {}
    for e in events:
        if e.get("ph") == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, evs in tracks.items():
        open_: list = []
        for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            while open_ and open_[-1] <= e["ts"]:
                open_.pop()
            end = e["ts"] + e["dur"]
            if open_ and end > open_[-1] + 1e-6:
                bad.append(f"track {key}: {e['name']} at {e['ts']} ends after its parent")
            open_.append(end)
    return bad


@pytest.fixture(scope="module")
def i386_runs(built):
    built("i386")
    a = arches.get("i386")
    prog = asm.assemble((PROGRAMS / "callers.rpn").read_text(), "i386", "callers.rpn")
    with Guest(a, label="flames", smp=2) as g:
        s = open_session(g)
        s.setup("fbt:ct_*:entry", "int3", buffer_bytes=1 << 20, program=prog)
        s.enable(True)
        assert s.cmd(f"run {LINE} ref=0").ok
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    with Guest(a, label="chrome", smp=2) as g:
        t = open_session(g)
        t.setup("fbt:ct_*:entry,fbt:ct_*:return", "int3", buffer_bytes=4 << 20)
        t.enable(True)
        assert t.cmd(f"run {LINE} ref=0").ok
        t.enable(False)
        traced = t.finish()
        hz = g.hello["cycles_hz"]
        g.exit(0)
    return s, cap, t, traced, hz


def test_folded_stacks_count_each_function_as_often_as_it_ran(i386_runs):
    s, cap, *_ = i386_runs
    names = {p.id: p.function for p in s.probes}
    tables = aggregate.merge(aggregate.resolve(cap.aggs, s.programs, cap.stacks))
    paths = flamegraph.folded(tables, s.programs, stacks.Symbolizer(s.image), names)
    leaves = Counter()
    for path, n in paths.items():
        leaves[path.split(";")[-1]] += n
    want = {f: n for f, n in cap.expects.items() if f in leaves}
    got = {f: n for f, n in leaves.items() if f in cap.expects}   # ct_counts_ok: no EXPECT
    assert len(want) >= 5 and got == want, (dict(leaves), cap.expects)
    assert all(line.rsplit(" ", 1)[1].isdigit() for line in flamegraph.folded_lines(paths))


def test_the_flame_graph_has_titles_widths_and_shows_in_a_browser(i386_runs, tmp_path):
    s, cap, *_ = i386_runs
    names = {p.id: p.function for p in s.probes}
    tables = aggregate.merge(aggregate.resolve(cap.aggs, s.programs, cap.stacks))
    paths = flamegraph.folded(tables, s.programs, stacks.Symbolizer(s.image), names)
    text = flamegraph.svg(paths, f"calltree {LINE}")
    assert not svg_problems(text)
    frames = svg_frames(text)
    total = sum(paths.values())
    (root,) = [f for f in frames if f[0].startswith("all ")]
    for title, x, y, w in frames:
        count = int(title.split("(")[1].split()[0])
        assert abs(w + 0.5 - root[3] * count / total - 0.5) < 1.0, title
    kid = next(f for f in frames if f[0].startswith("thread_start"))
    broken = text.replace(f'width="{kid[3]:.2f}"', f'width="{kid[3] * 1.5:.2f}"', 1)
    assert svg_problems(broken), "a child wider than its parent is caught"

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        pytest.skip("no chromium (ci/packages.txt lists it)")
    svg, png = tmp_path / "calltree.svg", tmp_path / "calltree.png"
    svg.write_text(text)
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--window-size=1200,400",
                    f"--screenshot={png}", svg.as_uri()],
                   capture_output=True, timeout=120, check=True)
    import matplotlib.image
    pixels = matplotlib.image.imread(str(png))
    coloured = ((pixels[..., 0] > 0.7) & (pixels[..., 2] < 0.4)).mean()
    assert coloured > 0.05, f"only {coloured:.1%} of the screenshot is flame"


def test_the_chrome_json_loads_and_its_calls_nest_per_track(i386_runs, tmp_path):
    *_, t, traced, hz = i386_runs
    path = tmp_path / "calltree.json"
    n = chrome.write(path, traced, t.probes, hz)
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    assert n == sum(1 for e in events if e["ph"] == "X") > 0
    assert not nesting_problems(events)
    calls = Counter(e["name"] for e in events if e["ph"] == "X")
    assert {f: c for f, c in calls.items() if f in traced.expects} == \
        {f: c for f, c in traced.expects.items() if f in calls}, calls
    tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}
    named = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    assert tracks <= named and len({p for p, _ in tracks}) == 2
    x = [e for e in events if e["ph"] == "X"]
    parent = next(e for e in x if e["name"] == "ct_root")
    child = next(e for e in x if e["name"] == "ct_mid" and e["pid"] == parent["pid"]
                 and e["tid"] == parent["tid"] and e["ts"] >= parent["ts"])
    child["ts"] = parent["ts"] + parent["dur"] - child["dur"] / 2   # overlaps its end
    assert nesting_problems(events), "an event that outlasts its parent is caught"
