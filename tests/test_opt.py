"""i386's jump-optimized probes (`opt`), the host's half: which entry
sites the jmp may displace (bench/trace/rules.py). The guest's half — the
detour's state against the CPU's, the int3 stage, the proof that no thread
is inside the tail — is in `selftest --area probes`
(tracer/arch/i386/selftest_probes.c); traces and stresses are matrix cells
(ci/matrix.cfg, `*opt*`)."""

from types import SimpleNamespace

import pytest

from bench import arches
from bench.trace.image import Function, Insn, load_image
from bench.trace.rules import I386Rules
from bench.trace.sites import plan

BASE = 0x100000


def _function(*insns):
    """A function of (bytes, text) instructions at BASE."""
    out, addr = [], BASE
    for raw, text in insns:
        out.append(Insn(addr, bytes(raw), text))
        addr += len(raw)
    return Function("f", BASE, addr - BASE, out)


PROLOGUE = ((b"\x55", "push   %ebp"), (b"\x89\xe5", "mov    %esp,%ebp"),
            (b"\x83\xec\x18", "sub    $0x18,%esp"), (b"\xc9", "leave"),
            (b"\xc3", "ret"))


def _refusal(f, targets=(), mechanism="opt"):
    image = SimpleNamespace(branch_targets=set(targets))
    return I386Rules().entry_refusal(f, image, f.addr, mechanism)


def test_a_clean_prologue_is_taken():
    assert _refusal(_function(*PROLOGUE)) == ""


@pytest.mark.parametrize("offset", [1, 3, 5])
def test_a_jump_into_the_displaced_bytes_is_refused(offset):
    # The jmp displaces push, mov, sub: six bytes; a target at +1..+5 is inside.
    why = _refusal(_function(*PROLOGUE), targets=[BASE + offset])
    assert f"lands on byte +{offset} of the 6 bytes" in why, why


def test_jumps_to_byte_0_or_past_the_tail_are_fine():
    assert _refusal(_function(*PROLOGUE), targets=[BASE, BASE + 6]) == ""


def test_an_indirect_jump_is_refused():
    f = _function(*PROLOGUE[:3], (b"\xff\x24\x85\x00\x00\x00\x00",
                                  "jmp    *0x0(,%eax,4)"), *PROLOGUE[3:])
    why = _refusal(f)
    assert "indirect jump" in why and "jmp    *0x0(,%eax,4)" in why, why


def test_other_mechanisms_are_not_asked():
    assert _refusal(_function(*PROLOGUE), targets=[BASE + 1], mechanism="int3") == ""


@pytest.fixture(scope="module")
def image(built):
    built("i386")
    return load_image(arches.get("i386").elf())


def test_no_planned_opt_entry_has_a_jump_into_its_tail(image):
    """Over the whole kernel: every opt entry the host plans has no branch
    target inside the bytes its jmp displaces, and the functions it drops
    say why."""
    probes, notes = plan("fbt:kernel:*:entry", image, "opt")
    int3, _ = plan("fbt:kernel:*:entry", image, "int3")
    assert probes and len(probes) <= len(int3)
    for p in probes:
        f = image.functions[p.function]
        n = 0
        for insn in f.insns:
            if insn.addr >= p.addr and n < 5:
                n += len(insn.raw)
        inside = [t for t in image.branch_targets if p.addr < t < p.addr + n]
        assert not inside, f"{p.function}: jump to {inside} inside {n} bytes"
    dropped = {p.function for p in int3} - {p.function for p in probes}
    opt_notes = [n for n in notes if ": opt: " in n]
    assert len(opt_notes) == len(dropped), (len(opt_notes), len(dropped))
