"""stack(), func() and the profile/tick probes in D, against ground truth, on
both arches, in one boot per arch (bench/lang/runner.py):

- `fbt::ct_add:entry { @[stack()] = count(); }`: calltree's call paths are
  known (tests/test_stacks.py's expected_paths), so each distinct stack
  must come with exactly the calls made through it, and every frame be a
  call site of the ELF; it prints as DTrace prints a stack, and folds
  into FlameGraph's paths with the same counts, which `trace --folded`
  and `--flamegraph` write (each ct_mid frame as wide as its path's calls);
- `@[probefunc, stack(3)]` on every ct_* entry: each function's rows add up
  to its calls (tests/test_lang_guest.py's truth; ct_thread and
  ct_counts_ok match too, uncounted there), no stack past 3 frames,
  the probed function the leaf of each folded path;
- `profile-997 { @[func(arg0)] = count(); }` on profsplit: ps_heavy takes
  75 % ± 3 points of the samples in the two loops (tests/test_profile.py's
  truth, some 4,000 samples), every sample is counted once, and each CPU
  takes rate × time samples (± 5 %);
- `tick-997hz { @[cpu, probefunc, probename, arg1] = count(); }`: cpu0
  alone, probefunc empty, probename tick-997hz, arg1 (the user PC) 0, as
  DTrace gives them.

The broken variants at the end show the same checks fail on a stack with a
frame skipped, on a profile that misattributes samples and on one that
drops a third of them.
"""

import re
from collections import Counter

import pytest

from bench import arches
from bench.lang import output, stackkeys
from bench.lang.runner import run_scripts
from bench.trace import stacks
from bench.trace.image import load_image
from test_lang_guest import ALL
from test_profile import count_problems, share_problem
from test_stacks import expected_paths, paths_of

THREADS, ITERS, DEPTH = 3, 40, 2
PATHS = ("fbt::ct_add:entry { @[stack()] = count(); }",
         f"calltree threads={THREADS} iters={ITERS} depth={DEPTH} ref=0")
CALLERS = ("fbt::ct_*:entry { @[probefunc, stack(3)] = count(); }",
           "calltree threads=2 iters=20 ref=0")
# Rounds for some 150 ms of samples on an idle host (more on a busy one).
TICK = ("tick-997hz { @[cpu, probefunc, probename, arg1] = count(); }",
        "profsplit threads=2 rounds=900 chunk=20000")


def profile_script(smp: int):
    # Rounds for some 4,000 samples on an idle host, as tests/test_profile.py
    # takes them (a busy host runs the guest slower: more).
    return ("profile-997 { @[func(arg0)] = count(); }",
            f"profsplit threads={2 * smp} rounds={7000 if smp > 1 else 11000} chunk=20000")


@pytest.fixture(scope="module")
def runs(built):
    got = {}

    def run(arch):
        if arch not in got:
            built(arch)
            a = arches.get(arch)
            smp = min(2, a.max_smp)
            outs = run_scripts(a, [PATHS, CALLERS, profile_script(smp), TICK], smp=smp,
                               label=f"dstacks-{arch}")
            got[arch] = dict(zip(("paths", "callers", "profile", "tick"), outs))
        return got[arch]
    return run


def stack_rows(o, name: str = "") -> dict:
    """{PCs: count} of an aggregation keyed by stack() alone."""
    return {r.raw[0]: r.count for r in o.tables[name].values()}


def test_each_path_has_exactly_its_calls_as_d_prints_them(arch, runs):
    o = runs(arch)["paths"]
    image = load_image(arches.get(arch).elf())
    sym = stacks.Symbolizer(image)
    rows = stack_rows(o)
    assert None not in rows, "a stack found no room"
    want = expected_paths(THREADS, ITERS, DEPTH)
    assert paths_of(rows, sym) == want, dict(paths_of(rows, sym))
    bad = [b for pcs in rows for b in stacks.check_frames(pcs, image)]
    assert not bad, bad[:5]
    # DTrace's layout: the frames, one per line, indented, then the count.
    text = output.lines(o.compiled, o.tables)
    frames = [ln for ln in text if ln.startswith("    kernel`")]
    counts = [int(ln) for ln in text if ln.strip().isdigit()]
    assert len(frames) == sum(len(pcs) for pcs in rows), text
    assert sorted(counts) == sorted(rows.values()), text
    assert any(ln.startswith("    kernel`ct_mid+0x") for ln in text), text
    # Folded for --flamegraph: one path a stack, outermost first, its count.
    folded = stackkeys.folded(o.compiled, o.tables, sym)
    assert sum(folded.values()) == sum(want.values())
    assert all(p.split(";")[-1] in ("ct_mid", "ct_rec") for p in folded), folded


def test_stack_beside_probefunc_counts_each_function_and_keeps_n_frames(arch, runs):
    o = runs(arch)["callers"]
    by_function = Counter()
    for r in o.tables[""].values():
        by_function[r.keys[0]] += r.count
        assert r.raw[1] is not None and 1 <= len(r.raw[1]) <= 3, r.raw
    assert {f: n for f, n in by_function.items() if f in ALL} == ALL
    sym = stacks.Symbolizer(load_image(arches.get(arch).elf()))
    leaves = Counter()
    for path, n in stackkeys.folded(o.compiled, o.tables, sym).items():
        leaves[path.split(";")[-1]] += n
    assert {f: n for f, n in leaves.items() if f in ALL} == ALL


def test_profile_997_by_func_arg0_gives_the_known_split(arch, runs):
    o = runs(arch)["profile"]
    by = Counter()
    for r in o.tables[""].values():
        by[r.keys[0].split("`")[-1]] += r.count
    assert not share_problem(by), by.most_common(6)
    samples = sum(int(x) for x in o.samples.split("samples=")[1].split()[0].split(","))
    faults = int(o.samples.split("faults=")[1].split()[0]) if "faults=" in o.samples else 0
    assert sum(by.values()) == samples - faults, (o.samples, sum(by.values()))
    assert samples > 3000, o.samples
    per_cpu = [int(x) for x in o.samples.split("samples=")[1].split()[0].split(",")]
    cycles = int(o.samples.split("cycles=")[1].split()[0])
    assert len(per_cpu) == min(2, arches.get(arch).max_smp)
    assert not count_problems(per_cpu, cycles, o.cycles_hz), (o.samples, o.cycles_hz)


def test_tick_samples_cpu0_with_dtrace_names(arch, runs):
    o = runs(arch)["tick"]
    keys = o.values()
    assert keys and all(k == ("cpu0", "", "tick-997hz", "0") for k in keys), keys
    assert sum(keys.values()) > 50, keys


def test_the_checks_catch_a_skipped_frame_and_a_misattributed_sample(arch, runs):
    got = runs(arch)
    sym = stacks.Symbolizer(load_image(arches.get(arch).elf()))
    rows = stack_rows(got["paths"])
    skipped = {pcs[:1] + pcs[2:]: n for pcs, n in rows.items()}
    assert paths_of(skipped, sym) != expected_paths(THREADS, ITERS, DEPTH)
    by = Counter()
    for r in got["profile"].tables[""].values():
        by[r.keys[0].split("`")[-1]] += r.count
    assert share_problem(Counter(ps_heavy=by["ps_heavy"], ps_light=2 * by["ps_light"]))
    o = got["profile"]
    per_cpu = [int(x) for x in o.samples.split("samples=")[1].split()[0].split(",")]
    cycles = int(o.samples.split("cycles=")[1].split()[0])
    assert count_problems([n * 2 // 3 for n in per_cpu], cycles, o.cycles_hz)


def test_trace_writes_folded_stacks_and_a_flame_graph(arch, runs, tmp_path):
    """`bench trace --folded F --flamegraph G` on a stack() aggregation."""
    from types import SimpleNamespace as NS
    from bench.commands import dtrace
    o = runs(arch)["paths"]
    sym = stacks.Symbolizer(load_image(arches.get(arch).elf()))
    args = NS(folded=str(tmp_path / "ct.folded"), flamegraph=str(tmp_path / "ct.svg"))
    dtrace._write_flames(args, o.compiled, o.tables, sym, PATHS[1])
    lines = (tmp_path / "ct.folded").read_text().splitlines()
    counts = Counter()
    for ln in lines:
        path, n = ln.rsplit(" ", 1)
        counts[path.split(";")[-1]] += int(n)
    want = expected_paths(THREADS, ITERS, DEPTH)
    assert sum(counts.values()) == sum(want.values()), lines
    callers = Counter()
    for names, n in want.items():
        callers[names[0]] += n
    assert counts == callers, (counts, callers)
    # ct_mid's frames in the picture: one per path through it, as wide as
    # that path's calls.
    svg = (tmp_path / "ct.svg").read_text()
    mids = [int(n) for n in re.findall(r"<title>ct_mid \((\d+) samples", svg)]
    assert sorted(mids) == sorted(n for names, n in want.items() if names[0] == "ct_mid")


@pytest.mark.parametrize("name", ["stack", "profile"])
def test_the_stack_examples_compile_to_their_rpn_namesakes(built, name):
    """bench/scripts/stack.d and profile.d are bench/programs/stack.rpn and
    profile.rpn in D: the same operations on the same operands."""
    from bench.lang.runner import compile_text
    from bench.paths import PROGRAMS
    from bench.program import asm
    built("i386")
    a = arches.get("i386")
    d = compile_text((PROGRAMS.parent / "scripts" / f"{name}.d").read_text(), a, "int3")
    rpn = asm.assemble((PROGRAMS / f"{name}.rpn").read_text(), a, name)
    assert [(i.op, i.a, i.b) for i in d.groups[0].program.insns] == \
        [(i.op, i.a, i.b) for i in rpn.insns]
    assert [x.kind for x in d.groups[0].program.aggs] == [x.kind for x in rpn.aggs]
