"""Check mode never guesses: a read the record does not hold is reported as
unrecorded and not compared, and i386's opt refuses in check mode the
sites whose displaced instructions make one.

Theory of operation. workloads/shapes.c's shape_load is static, so at
-O2 gcc passes its pointer in eax on i386 and the bytes opt's jmp
displaces are `mov %eax,%edx; mov 0x1c(%eax),%eax`: a load through a
register, far from the stack window an opt record carries.

Host: opt records of those bytes (bench/check/i386_opt.py). With eax
pointing into the recorded window, the load is recorded and the record is
compared like any other: right values agree, a wrong eax after is a
mismatch. With eax pointing elsewhere, whatever the record says eax became
(the guest's true value, or anything), the record is reported as
"unrecorded read at ADDR" and not compared: no mismatch, not counted as
checked. (The checker that compared it over memory it never saw failed
the run with `eax: expected ... vs actual ...`.)

Guest (i386): with check mode on, `probe enable` of an opt entry probe
on shape_load is refused with the reason whole; with check mode off, or
on a prologue whose loads are all in the window (fib), it is armed. A
run of the shapes workload under `--mechanism opt --check` then ends with
0 mismatches, shape_load's entry noted as refused.
"""

import random
import subprocess
import sys
from dataclasses import dataclass

import pytest

from bench import arches
from bench.check import i386 as C
from bench.check import i386_opt as O
from bench.guest.qemu import Guest
from bench.paths import REPO
from bench.trace.image import load_image
from bench.trace.sites import Site

M32 = 0xffffffff
LOAD = bytes.fromhex("89c28b401c8b4a20")     # mov %eax,%edx; mov 0x1c(%eax),%eax; ...
SITES = {7: Site(0x0013f420, LOAD)}
REG = ("eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi")


@dataclass(frozen=True)
class Rec:
    probe: int
    words: tuple


def _record(rnd, eax_at=None, eax_after=None):
    """An opt record of LOAD; eax_at: the window word index eax + 0x1c
    names (None: an address far from the window)."""
    regs = {k: rnd.getrandbits(32) for k in REG}
    regs["esp"] = 0x001c0000 + rnd.randrange(0x100, 0xf00) * 4
    regs["eflags"] = 0x202
    regs["eip"] = SITES[7].addr
    base = (regs["esp"] - 4 * O.BELOW) & M32
    mem = [rnd.getrandbits(32) for _ in range(O.WINDOW)]
    regs["eax"] = (base + 4 * eax_at - 0x1c) & M32 if eax_at is not None else 0x00356e44
    after = dict(regs, edx=regs["eax"], eip=SITES[7].addr + 5)
    after["eax"] = mem[eax_at] if eax_at is not None else 0
    if eax_after is not None:
        after["eax"] = eax_after
    w = [regs[k] for k in C.REGS] + [after[k] for k in C.REGS]
    w += [5, base] + mem + mem
    assert len(w) == O.WORDS
    return Rec(7, tuple(w))


def test_a_load_the_window_holds_is_compared():
    rnd = random.Random(1)
    good = _record(rnd, eax_at=9)
    rep = C.verify([good], SITES)
    assert rep.mismatches == [] and rep.checked == 1 and not rep.not_compared
    bad = _record(random.Random(1), eax_at=9, eax_after=0x1234)
    (msg,) = C.verify([bad], SITES).mismatches
    assert "eax: expected" in msg and "vs actual 0x00001234" in msg, msg


@pytest.mark.parametrize("eax_after", [None, 0x00356e60])
def test_an_unrecorded_load_is_reported_and_never_compared(eax_after):
    recs = [_record(random.Random(s), eax_after=eax_after) for s in range(10)]
    rep = C.verify(recs, SITES)
    assert rep.mismatches == [], rep.mismatches[:2]
    assert rep.checked == 0 and len(rep.not_compared) == 10
    msg = rep.not_compared[0]
    assert msg.startswith("probe 7 at 0x13f420 OPT: unrecorded read at 0x00356e60 "
                          "(4 bytes): outside the recorded window"), msg
    assert "expected" not in msg, msg
    assert "10 not compared" in rep.summary()


# ---- the guest ----

@pytest.fixture(scope="module")
def i386_image(built):
    built("i386")
    return load_image(arches.get("i386").elf())


def test_check_mode_refuses_an_opt_site_that_loads_through_a_register(i386_image):
    load = i386_image.functions["shape_load"]
    assert bytes(load.insns[1].raw) == bytes.fromhex("8b401c"), load.insns[:3]
    fib = i386_image.functions["fib"]
    with Guest(arches.get("i386"), label="unrecorded") as g:
        assert g.command("probe mechanism opt").ok
        assert g.command(f"probe add 0 {load.addr:#x} entry 0").ok
        assert g.command(f"probe add 1 {fib.addr:#x} entry 0").ok
        assert g.command("probe enable 0").ok           # check mode off: armed
        assert g.command("probe disable 0").ok
        assert g.command("probe check on").ok
        r = g.command("probe enable 0")
        assert g.command("probe enable 1").ok           # fib's loads are the window's
    assert not r.ok
    assert r.message == (
        f"refused: probe 0 at {load.addr:#x}, mechanism opt: check mode: the displaced "
        "instruction at +2 (opcode 0x8b) touches memory through eax (disp 28); the "
        "opt record carries only the stack window, ESP-24..ESP+40 (int3 records the "
        "operand)"), r.message


def test_an_opt_check_run_of_real_shapes_has_no_mismatch(i386_image):
    cmd = [sys.executable, "-m", "bench", "run", "--arch", "i386", "--mechanism", "opt",
           "--check", "--probes", "fbt:shape_*:entry,fbt:shape_*:return",
           "--run", "shapes n=200", "--timeout", "120"]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert ", 0 mismatches" in out and "not compared" not in out, out[-3000:]
    assert "shape_load" in out and "touches memory through eax (disp 28)" in out, out[-3000:]
