"""Fuzzing the SPARC V9 probe emulator against unicorn (bench/check/fuzz.py
drives it): the guest's own tracer/arch/sparc64/emulate.c, compiled for
the host (bench/check/c/sparc64_emulate_run.c), and python3-unicorn's
SPARC64 mode (bench/check/ref_sparc64.py) run the same random states, and
PC, nPC and the 32 registers must agree, CCR and FSR stay untouched, and
the outcome (taken, annulled, target) must imply that PC/nPC.

The states: random CCR (icc and xcc), random FSR (fcc0..3 and the rest),
random registers with zero, negative and positive values drawn on purpose
for BPr's register; every condition, annul bit, cc field and prediction
bit; displacements spread over each field (disp30/22/19/16) including
both signs, 0 and the extremes; JMPL with random rs1/rs2/rd (%g0 and
rd == rs1 included, `ret` and `retl` explicitly) and about one target in
twelve misaligned, where both must report the mem_address_not_aligned
trap with nothing changed (unicorn's own rd write there is a QEMU bug the
model corrects; see ref_sparc64). CTIs run at the last word of 8 KiB
pages in a low window and in the top 8 MiB of the address space, so
targets also wrap around 2^64. Each class reports how many states took
which way (slot then target, slot then fall-through, annulled, trap).
"""

from __future__ import annotations

import random
import struct
import subprocess
from collections import Counter

from . import hostc, ref_sparc64

CLASSES = ("CALL", "JMPL", "BICC", "BPCC", "BPR", "FBFCC", "FBPFCC")
SOURCES = ["bench/check/c/sparc64_emulate_run.c", "tracer/arch/sparc64/emulate.c"]
INCLUDES = ("include", "tracer/arch/sparc64")

IN_REC = struct.Struct("<35QIB3x")       # pc npc r[32] fsr, word, ccr
OUT_REC = struct.Struct("<i3Bx37Q")      # status taken annulled ccr, pc npc r[32] fsr target fault
U64 = (1 << 64) - 1
REG_NAMES = [f"%{k}{n}" for k in "goli" for n in range(8)]
U64 = (1 << 64) - 1
O7, I7 = 15, 31
O7, I7 = 15, 31
BATCH = 8192


# Instruction words (V9 manual, "Instruction Formats").
def call(disp30):
    return 1 << 30 | disp30 & 0x3fffffff


def jmpl(rd, rs1, simm13=None, rs2=0):
    w = 2 << 30 | rd << 25 | 0x38 << 19 | rs1 << 14
    return w | (1 << 13 | simm13 & 0x1fff if simm13 is not None else rs2)


def bicc(a, cond, disp22, op2=2):
    return a << 29 | cond << 25 | op2 << 22 | disp22 & 0x3fffff


def fbfcc(a, cond, disp22):
    return bicc(a, cond, disp22, op2=6)


def bpcc(a, cond, cc, p, disp19, op2=1):
    return a << 29 | cond << 25 | op2 << 22 | cc << 20 | p << 19 | disp19 & 0x7ffff


def fbpfcc(a, cond, cc, p, disp19):
    return bpcc(a, cond, cc, p, disp19, op2=5)


def bpr(a, rcond, rs1, p, d16):
    d16 &= 0xffff
    return (a << 29 | rcond << 25 | 3 << 22 | (d16 >> 14) << 20 | p << 19
            | rs1 << 14 | d16 & 0x3fff)


def _field(rnd, bits):
    """A signed field value of `bits` bits: uniform (so the sign bit half
    the time), small of either sign, or at and near both extremes."""
    k = rnd.random()
    top = 1 << (bits - 1)
    if k < 0.5:
        return rnd.randrange(-top, top)
    if k < 0.7:
        return rnd.randint(-64, 64)
    return rnd.choice([-top, top - 1, -top + rnd.randrange(64), top - 1 - rnd.randrange(64),
                       0, -1, 1, top >> 1, -(top >> 1)])


def _value(rnd):
    """A register value: mostly random, often small of either sign or an
    extreme (0, -1, INT64_MIN, INT64_MAX, ...)."""
    k = rnd.random()
    if k < 0.6:
        return rnd.getrandbits(64)
    if k < 0.8:
        return rnd.randint(-8192, 8192) & U64
    return rnd.choice([0, 1, U64, 1 << 63, (1 << 63) - 1, (1 << 63) + 1, 1 << 32,
                       (1 << 32) - 1, 0xfffffffffffff000, 4])


def _bpr_value(rnd):
    """Zero, negative and positive a third of the time each."""
    k = rnd.randrange(3)
    if k == 0:
        return 0
    mag = rnd.choice([rnd.randint(1, (1 << 63) - 1), rnd.randint(1, 16), (1 << 63) - 1])
    if k == 1:
        return 1 << 63 if rnd.random() < 0.05 else -mag & U64     # negative
    return mag                                                    # positive


def _reg(rnd):
    """A register number, with %g0, %o7 and %i7 more often."""
    return rnd.choice([0, O7, I7]) if rnd.random() < 0.2 else rnd.randrange(32)


def _jmpl(rnd, regs):
    k = rnd.random()
    if k < 0.1:                                  # ret / retl
        rd, rs1, imm, rs2 = 0, rnd.choice([I7, O7]), 8, 0
        # a random aligned return address, or one just before a CTI slot
        regs[rs1] = (_value(rnd) & ~3 if rnd.random() < 0.5
                     else ref_sparc64.slot(rnd.randrange(64)) - 4)
    else:
        rs1 = _reg(rnd)
        rd = rs1 if k < 0.35 else _reg(rnd)
        imm = _field(rnd, 13) if rnd.random() < 0.6 else None
        rs2 = 0
        if imm is None:
            rs2 = rnd.choice([rs1, rd]) if rnd.random() < 0.2 else _reg(rnd)
        if rnd.random() < 7 / 8:                 # an aligned target
            operand = (imm & U64) if imm is not None else regs[rs2]
            off = (regs[rs1] + operand) & 3
            if off and rs1 and rs1 != rs2:
                regs[rs1] = (regs[rs1] - off) & U64
            elif off and imm is None and rs2 and rs2 != rs1:
                regs[rs2] = (regs[rs2] - off) & U64
            elif off and imm is None:            # rs1 == rs2: 2r is aligned if r is even
                regs[rs1] &= ~1
            elif off:                            # %g0 + simm13
                imm -= off
    return jmpl(rd, rs1, imm, rs2)


def _state(cls, rnd, i):
    regs = list(struct.unpack("<32Q", rnd.randbytes(256)))
    for _ in range(6):
        regs[rnd.randrange(1, 32)] = _value(rnd)
    regs[0] = 0
    a, cond, p = rnd.getrandbits(1), rnd.getrandbits(4), rnd.getrandbits(1)
    if cls == "CALL":
        word = call(_field(rnd, 30))
    elif cls == "JMPL":
        word = _jmpl(rnd, regs)
    elif cls == "BICC":
        word = bicc(a, cond, _field(rnd, 22))
    elif cls == "FBFCC":
        word = fbfcc(a, cond, _field(rnd, 22))
    elif cls == "BPCC":
        word = bpcc(a, cond, rnd.choice([0, 2]), p, _field(rnd, 19))
    elif cls == "FBPFCC":
        word = fbpfcc(a, cond, rnd.randrange(4), p, _field(rnd, 19))
    elif cls == "BPR":
        rs1 = rnd.randrange(32)
        if rs1:
            regs[rs1] = _bpr_value(rnd)
        word = bpr(a, rnd.choice([1, 2, 3, 5, 6, 7]), rs1, p, _field(rnd, 16))
    regs[0] = 0
    return word, ref_sparc64.slot(i), regs, rnd.getrandbits(8), rnd.getrandbits(64)


def run_c(exe, states):
    data = b"".join(IN_REC.pack(pc, (pc + 4) & U64, *regs, fsr, word, ccr)
                    for word, pc, regs, ccr, fsr in states)
    out = subprocess.run([str(exe)], input=data, capture_output=True, check=True).stdout
    return [OUT_REC.unpack_from(out, i) for i in range(0, len(out), OUT_REC.size)]


def _implied(pc, res):
    """The (PC, nPC) the emulator's outcome record stands for."""
    taken, annulled, target, npc = res[1], res[2], res[39], pc + 4
    if annulled:
        pair = (target, target + 4) if taken else (npc + 4, npc + 8)
    else:
        pair = (npc, target) if taken else (npc, npc + 4)
    return tuple(v & U64 for v in pair)


def diffs(state, want, res):
    """What the emulator's result res got wrong, field by field:
    'expected (unicorn) vs actual (emulator)'."""
    word, pc, regs, ccr, fsr = state
    wstatus, wpc, wnpc, wregs = want
    if (res[0] == wstatus and res[4:38] == (wpc, wnpc, *wregs) and res[3] == ccr
            and res[38] == fsr and (wstatus or _implied(pc, res) == (wpc, wnpc))):
        return []
    status, rccr, rpc, rnpc, rregs, rfsr = res[0], res[3], res[4], res[5], res[6:38], res[38]
    out = []
    if status != wstatus:
        out.append(f"status: expected {wstatus} vs actual {status}")
    if rpc != wpc:
        out.append(f"pc: expected {wpc:#x} vs actual {rpc:#x}")
    if rnpc != wnpc:
        out.append(f"npc: expected {wnpc:#x} vs actual {rnpc:#x}")
    out += [f"{REG_NAMES[n]}: expected {wregs[n]:#x} vs actual {rregs[n]:#x}"
            for n in range(32) if wregs[n] != rregs[n]]
    if rccr != ccr:
        out.append(f"ccr: expected {ccr:#04x} (unchanged) vs actual {rccr:#04x}")
    if rfsr != fsr:
        out.append(f"fsr: expected {fsr:#x} (unchanged) vs actual {rfsr:#x}")
    if status == 0 and wstatus == 0 and _implied(pc, res) != (wpc, wnpc):
        ipc, inpc = _implied(pc, res)
        out.append(f"outcome (taken {res[1]}, annulled {res[2]}, target {res[39]:#x}): "
                   f"expected pc/npc {wpc:#x}/{wnpc:#x} vs implied {ipc:#x}/{inpc:#x}")
    return out


def _describe(cls, state):
    word, pc, regs, ccr, fsr = state
    named = " ".join(f"{REG_NAMES[n]}={v:#x}" for n, v in enumerate(regs) if n)
    return f"{cls} word {word:#010x} at pc {pc:#x} ccr {ccr:#04x} fsr {fsr:#x} {named}"


def _path(state, want):
    """Which way the CTI went (as unicorn saw it), for the coverage count."""
    status, wpc, wnpc, _ = want
    pc4, pc8 = (state[1] + 4) & U64, (state[1] + 8) & U64
    if status:
        return "misaligned"
    if wpc == pc4:
        return "slot+target" if wnpc != pc8 else "slot+fallthrough"
    return "annulled+fallthrough" if wpc == pc8 else "annulled+target"


def _compare(cls, states, results, model, stats, limit=5):
    """Mismatches between emulator results and the model. A disagreement
    with the long-lived model is judged again against a fresh one (see
    ref_sparc64 on unicorn's translation cache) before it counts."""
    bad = []
    for state, res in zip(states, results):
        want = model.run(*state)
        found = diffs(state, want, res)
        if found:
            stats["rechecked"] += 1
            want = ref_sparc64.Reference.fresh(*state)
            found = diffs(state, want, res)
        stats["compared"] += 1
        stats[_path(state, want)] += 1
        if found:
            bad.append(_describe(cls, state) + ":\n    " + "\n    ".join(found))
            if len(bad) >= limit:
                break
    return bad


def chunk(args) -> tuple[list[str], dict]:
    """n random states of one class from one seed, through the emulator and
    the model: (mismatches, counts by path), stopping at `enough` mismatches
    (5 unless a fifth argument says; a test that only needs to know a broken
    emulator is caught asks for 1: each mismatch is judged again by a fresh
    model, which costs a quarter of a second). A worker of
    bench/check/fuzz.py."""
    exe, cls, seed, n, *rest = args
    enough = rest[0] if rest else 5
    rnd = random.Random(seed)
    model = ref_sparc64.Reference()
    stats = Counter()
    bad = []
    for start in range(0, n, BATCH):
        states = [_state(cls, rnd, i) for i in range(start, min(n, start + BATCH))]
        bad += _compare(cls, states, run_c(exe, states), model, stats,
                        limit=enough - len(bad))
        if len(bad) >= enough:
            break
    stats["instances"] += model.instances
    return bad, dict(stats)


def runner():
    """The emulator as a host program (built if needed)."""
    return hostc.build("sparc64_emulate_run", SOURCES, INCLUDES)


def decode(exe, word: int) -> str:
    """decode's verdict on the word: 'class NAME ...' or 'refused ...'."""
    return subprocess.run([str(exe), "decode", f"{word:08x}"], capture_output=True,
                          text=True, check=True).stdout.strip()
