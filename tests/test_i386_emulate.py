"""The IA-32 probe emulator (tracer/arch/i386/emulate.c), compiled for the
host, against python3-unicorn: decode accepts exactly the emulated forms
and refuses the rest with a reason; for every form, random states (10^6
per form by default; TRAPBENCH_FUZZ_STATES to change) give identical
registers, EIP, EFLAGS and stack accesses in both; and a deliberately
broken emulator is caught."""

import os
import random
import re
import struct
import subprocess
from concurrent.futures import ProcessPoolExecutor

import pytest

from bench import ref_i386
from bench.ref_i386 import CODE_BASE, REGS, STACK_BASE, STACK_SIZE
from hostc import OUT, REPO, build

SOURCES = ["tests/c/i386_emulate_run.c", "tracer/arch/i386/emulate.c"]
INCLUDES = ("tracer/include", "tracer/arch/i386")
STATES = int(os.environ.get("TRAPBENCH_FUZZ_STATES", "1000000"))
FLAGS_MASK = 0x0cd5            # CF PF AF ZF SF DF OF: no TF/IF games
IN_REC = struct.Struct("<4s10II")
OUT_REC = struct.Struct("<i10I6I")


def _code(form, rnd):
    lo, hi = rnd.getrandbits(8), rnd.getrandbits(8)
    return {
        "PUSH_EBP": bytes([0x55, 0x90, 0x90, 0x90]),
        "PUSH_EBP_MOV": rnd.choice([b"\x55\x89\xe5\x90", b"\x55\x8b\xec\x90"]),
        "POP_EBP": b"\x5d\x90\x90\x90",
        "LEAVE": b"\xc9\x90\x90\x90",
        "RET": b"\xc3\x90\x90\x90",
        "RET_IMM": bytes([0xc2, lo, hi & 0x7f, 0x90]),   # >= 0x8000 is refused
        "ENTER": bytes([0xc8, lo, hi, 0x00]),
        "NOP": b"\x90\x90\x90\x90",
    }[form]


FORMS = ["PUSH_EBP", "PUSH_EBP_MOV", "POP_EBP", "LEAVE", "RET", "RET_IMM",
         "ENTER", "NOP"]
COUNT = {"PUSH_EBP_MOV": 2}    # instructions one site covers


def _state(form, rnd, i):
    regs = {r: rnd.getrandbits(32) for r in REGS}
    # Downwards through the code area, 16 bytes apart (see ref_i386 on
    # unicorn's translation cache), at a random offset within the slot.
    slots = (ref_i386.CODE_SIZE - 0x1000 - 64) // 16
    regs["eip"] = CODE_BASE + 16 * (slots - i % slots) + rnd.randrange(0, 8)
    regs["eflags"] = (rnd.getrandbits(32) & FLAGS_MASK) | 0x2
    mid = STACK_BASE + STACK_SIZE // 2
    regs["esp"] = mid + rnd.randrange(-0x8000, 0x8000)
    if form == "LEAVE":
        regs["ebp"] = mid + rnd.randrange(-0x8000, 0x8000)
    return _code(form, rnd), regs, rnd.getrandbits(32)


def _run_c(exe, states):
    data = b"".join(IN_REC.pack(code, *(regs[r] for r in REGS), word)
                    for code, regs, word in states)
    out = subprocess.run([str(exe)], input=data, capture_output=True, check=True).stdout
    return [OUT_REC.unpack_from(out, i) for i in range(0, len(out), OUT_REC.size)]


def _diffs(want, reads, writes, res):
    """What the emulator's result res got wrong, field by field:
    'expected (unicorn) vs actual (emulator)'."""
    status, got = res[0], dict(zip(REGS, res[1:11]))
    nreads, read_addr, nwrites, waddr, wval, _ = res[11:]
    out = [f"status {status}"] if status != 0 else []
    out += [f"{r}: expected {want[r]:#010x} vs actual {got[r]:#010x}"
            for r in REGS if want[r] != got[r]]
    got_reads, got_writes = [read_addr] * nreads, [(waddr, wval)] * nwrites
    if reads != got_reads:
        out.append(f"reads: expected {[hex(a) for a in reads]} vs actual "
                   f"{[hex(a) for a in got_reads]}")
    if writes != got_writes:
        out.append(f"writes: expected {[(hex(a), hex(v)) for a, v in writes]} vs "
                   f"actual {[(hex(a), hex(v)) for a, v in got_writes]}")
    return out


def _compare(form, states, results, limit=5):
    """Mismatches between emulator results and the model. A disagreement
    with the long-lived model is judged again against a fresh one (see
    ref_i386 on unicorn's translation cache) before it counts."""
    model = ref_i386.Reference()
    count = COUNT.get(form, 1)
    bad = []
    for (code, regs, word), res in zip(states, results):
        diffs = _diffs(*model.run(code, regs, word, count), res)
        if diffs:
            diffs = _diffs(*ref_i386.Reference.fresh(code, regs, word, count), res)
        if diffs:
            bad.append(f"{form} {code.hex()} from "
                       f"{ {k: hex(v) for k, v in regs.items()} } word {word:#x}: "
                       + "; ".join(diffs))
            if len(bad) >= limit:
                break
    return bad


def _fuzz_chunk(args):
    exe, form, seed, n = args
    rnd = random.Random(seed)
    states = [_state(form, rnd, i) for i in range(n)]
    return _compare(form, states, _run_c(exe, states))


@pytest.fixture(scope="module")
def runner():
    return build("i386_emulate_run", SOURCES, INCLUDES)


def _decode(exe, code):
    return subprocess.run([str(exe), "decode", code.hex()], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize("code,what", [
    (b"\x55\x89\xe5", "push %ebp; mov %esp,%ebp"), (b"\x55\x8b\xec", "push %ebp; mov %esp,%ebp"),
    (b"\x55\x89\xe6", "push %ebp"), (b"\x55", "push %ebp"), (b"\x5d", "pop %ebp"),
    (b"\xc9", "leave"), (b"\xc3", "ret"), (b"\xc2\x08\x00", "ret $imm16"),
    (b"\xc8\x10\x00\x00", "enter $imm16, $0"), (b"\x90", "nop"),
])
def test_decode_accepts_the_emulated_forms(runner, code, what):
    out = _decode(runner, code)
    assert out.startswith("kind ") and out[5:].startswith(what), out


@pytest.mark.parametrize("code,reason", [
    (b"\xcc", "already holds int3"), (b"\xf0\x0f\x0b", "LOCK prefix"),
    (b"\x89\xe5", "not one of the emulated forms"),
    (b"\xc8\x10\x00\x01", "nesting level above 0"),
    (b"\xc2\x00\x80", "32 KiB or more"),
    (b"\xe8\x00\x00\x00\x00", "not one of the emulated forms"),
    (b"\xc2\x08", "cut off"), (b"", "no bytes"),
])
def test_decode_refuses_with_a_reason(runner, code, reason):
    out = _decode(runner, code)
    assert out.startswith("refused ") and reason in out, out


@pytest.mark.parametrize("form", FORMS)
def test_emulation_matches_unicorn_on_random_states(runner, form):
    chunks = 8
    per = -(-STATES // chunks)
    jobs = [(runner, form, 1000 * FORMS.index(form) + i, per) for i in range(chunks)]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        bad = [m for chunk in pool.map(_fuzz_chunk, jobs) for m in chunk]
    assert not bad, f"{len(bad)}+ mismatches in {per * chunks} states:\n" + "\n".join(bad)


MUTANTS = [
    ("LEAVE", "r->esp = r->ebp + 4;", "r->esp = r->ebp + 8;"),
    ("PUSH_EBP", "esp -= 4;", "esp -= 2;"),
    ("PUSH_EBP_MOV", "r->ebp = esp;", "r->ebp = esp + 4;"),
    ("RET_IMM", "r->esp = esp + 4 + s->imm16;", "r->esp = esp + 4;"),
    ("ENTER", "esp -= s->imm16;", "esp -= s->imm16 + 4;"),
    ("POP_EBP", "r->ebp = word;\n\t\tr->esp = esp + 4;", "r->ebp = word ^ 1;\n\t\tr->esp = esp + 4;"),
]


@pytest.mark.parametrize("form,old,new", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_a_broken_emulator_is_caught(form, old, new):
    src = (REPO / "tracer/arch/i386/emulate.c").read_text()
    assert src.count(old) == 1, f"mutation anchor {old!r} not unique"
    mutant = OUT / f"emulate_mutant_{form}.c"
    OUT.mkdir(parents=True, exist_ok=True)
    mutant.write_text(re.sub(re.escape(old), new, src))
    exe = build(f"i386_emulate_mutant_{form}", [SOURCES[0], str(mutant)], INCLUDES)
    bad = _fuzz_chunk((exe, form, 7, 2000))
    assert bad, f"the {form} mutant ({old} -> {new}) went unnoticed"
