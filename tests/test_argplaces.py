"""Arguments read where the compiler put them (bench/trace/locations.py,
types.py; tracer/core/args.c), held against the values passed.

Theory of operation: workloads/argplaces.c, built -O2 as all the kernel
is, passes call i's arguments as closed forms of i (ap_value: 0x1000 *
(which + 1) + 3 * i + which). gcc passes the static ap_static's in eax,
edx, ecx on i386; clones ap_clone (k always 7, one field of its struct
read) and ap_unused (second parameter never read). The host reads each
parameter's DWARF location at entry.

Host: the signatures say so — ap_static's map names eax, edx, ecx on i386
and is absent on sparc64 (%o0..%o2 are the convention); the clones' k is
the constant 7 and the dropped parameters are `?` with a reason; ap_wide,
external, stays on the stack (i386: a 64-bit w in two words).

Guest, both arches: every traced entry's arguments and every return
value equal what the workload passed and computed, or are `?` with a
reason; none is a stale stack word. A probe program's `arg 0..2` on
ap_static logs a, b and c. Read by the calling convention alone (the map
left out, as before), i386's ap_static would print stack words: the
values check below fails on them (test_the_convention_alone_is_wrong).
"""

import re
import subprocess
import sys

import pytest

from bench import arches
from bench.paths import REPO
from bench.trace.image import load_image
from bench.trace.types import signatures

N = 4
ENTRY = re.compile(r"^cpu\d+ t\d+ -> (\S+)\((.*)\)$")
RETURN = re.compile(r"^cpu\d+ t\d+ <- (\S+) = (\d+)$")


def ap_value(i, which):
    return (0x1000 * (which + 1) + 3 * i + which) & 0xffffffff


def expected_calls():
    """(function prefix, {param: value or '?'}, return) of each call, in order."""
    out = []
    for i in range(N):
        a, b, c = (ap_value(i, k) for k in range(3))
        w = b << 32 | c
        out += [("ap_static", {"a": a, "b": b, "c": c}, (a + 2 * b + 3 * c) & 0xffffffff),
                ("ap_clone", {"x": b, "k": 7, "p": "?"}, (7 * b + c) & 0xffffffff),
                ("ap_unused", {"used": c, "unused": "?"}, c ^ 0x5a5a),
                ("ap_wide", {"a": a, "w": w, "b": b}, w + a + b)]
    return out


def _args(text):
    """{name: int, or '?' (reason required)} from `a=1, k=7 (constant), p=? (why)`."""
    out = {}
    for m in re.finditer(r"(\w+)=(\?|\d+)( \(([^()]*(?:\([^()]*\))?[^()]*)\))?", text):
        name, value, why = m.group(1), m.group(2), m.group(4)
        if value == "?":
            assert why, f"{name}=? without a reason in {text!r}"
            out[name] = "?"
        else:
            out[name] = int(value)
    return out


def check_trace(lines):
    """Differences between the traced calls and expected_calls()."""
    got = []
    for ln in lines:
        m = ENTRY.match(ln)
        if m:
            got.append([m.group(1), _args(m.group(2)), None])
            continue
        m = RETURN.match(ln)
        if m and got and got[-1][0] == m.group(1):
            got[-1][2] = int(m.group(2))
    want = expected_calls()
    diffs = [] if len(got) == len(want) else [f"{len(got)} calls traced, {len(want)} made"]
    for (name, args, ret), (prefix, wargs, wret) in zip(got, want):
        if not name.startswith(prefix):
            diffs.append(f"{name}: expected {prefix}")
        elif args != wargs or ret != wret:
            diffs.append(f"{name}: {args} = {ret}, passed {wargs} = {wret}")
    return diffs


@pytest.fixture
def image(arch, built):
    built(arch)
    return load_image(arches.get(arch).elf())


def _sig(image, prefix):
    (f,) = [f for n, f in image.functions.items() if n.startswith(prefix)]
    return f.signature


def test_the_signatures_place_each_parameter(image, arch):
    static = _sig(image, "ap_static")
    assert static.argmap == ((0x80, 0x82, 0x81) if arch == "i386" else ())
    clone = {p.name: p for p in _sig(image, "ap_clone").params}
    assert clone["k"].const == 7 and clone["x"].word == 0
    assert clone["p"].word is None and clone["p"].why
    unused = {p.name: p for p in _sig(image, "ap_unused").params}
    assert unused["unused"].word is None and unused["unused"].why
    wide = _sig(image, "ap_wide")
    assert wide.argmap == ()
    assert [(p.word, p.words) for p in wide.params] == (
        [(0, 1), (1, 2), (3, 1)] if arch == "i386" else [(0, 1), (1, 1), (2, 1)])


def _run(arch, *extra):
    cmd = [sys.executable, "-m", "bench", "run", "--arch", arch, "--run",
           f"argplaces n={N}", "--timeout", "120", *extra]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    return p.stdout.splitlines()


def test_every_argument_and_return_is_what_was_passed(image, arch):
    lines = _run(arch, "--probes", "fbt:ap_*:entry,fbt:ap_*:return")
    diffs = check_trace(lines)
    assert not diffs, "\n".join(diffs + lines[:12])


def test_a_program_reads_register_passed_arguments(image, arch, tmp_path):
    prog = tmp_path / "args3.rpn"
    prog.write_text("major 1\nminor 7\n    arg 2\n    arg 1\n    arg 0\n"
                    "    log a, 3\n    exit\n")
    lines = _run(arch, "--probes", "fbt:ap_static:entry", "--program", str(prog))
    raw = bytes.fromhex("".join(ln.split("+", 1)[1][9:57].replace(" ", "")
                                for ln in lines if re.match(r"^cpu\d+ t\d+ +\+", ln)))
    wb = arches.get(arch).word_bytes
    order = "little" if arch == "i386" else "big"
    words = [int.from_bytes(raw[k:k + wb], order) for k in range(0, len(raw), wb)]
    want = [ap_value(i, k) for i in range(N) for k in range(3)]
    assert words == want, (words, want)


def test_the_convention_alone_is_wrong(built):
    """The broken variant: i386 without DWARF locations reads ap_static's
    arguments from the stack, which check_trace() must reject."""
    built("i386")
    from elftools.elf.elffile import ELFFile
    arch = arches.get("i386")
    image = load_image(arch.elf())
    with open(arch.elf(), "rb") as f:
        sigs = signatures(ELFFile(f), 4, 0)
    f = next(f for n, f in image.functions.items() if n == "ap_static")
    assert sigs[f.addr].argmap == () and [p.word for p in sigs[f.addr].params] == [0, 1, 2]
    stale = ["cpu0 t0 -> ap_static(a=1193046, b=0, c=2)", "cpu0 t0 <- ap_static = 57352"]
    assert check_trace(stale)
