"""The SPARC V9 probe emulator (tracer/arch/sparc64/emulate.c), compiled for
the host, against python3-unicorn's SPARC64 mode (bench/ref_sparc64):
decode accepts exactly the emulated classes and refuses the rest with a
reason; for every class, random states (10^6 per class by default;
TRAPBENCH_FUZZ_STATES to change) give the same PC, nPC and 32 registers in
both, CCR and FSR untouched, and an outcome (taken, annulled, target) that
implies that PC/nPC; and deliberately broken emulators are caught.

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

Besides: a few states worked out by hand from the manual, checked against
both the model and the emulator (so that the two cannot agree on a
mistake), and explicit misaligned JMPLs checking the fault address."""

import os
import random
import struct
import subprocess
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import pytest

from bench import ref_sparc64
from hostc import OUT, REPO, build

SOURCES = ["tests/c/sparc64_emulate_run.c", "tracer/arch/sparc64/emulate.c"]
INCLUDES = ("tracer/include", "tracer/arch/sparc64")
STATES = int(os.environ.get("TRAPBENCH_FUZZ_STATES", "1000000"))
IN_REC = struct.Struct("<35QIB3x")       # pc npc r[32] fsr, word, ccr
OUT_REC = struct.Struct("<i3Bx37Q")      # status taken annulled ccr, pc npc r[32] fsr target fault
U64 = (1 << 64) - 1
CLASSES = ["CALL", "JMPL", "BICC", "BPCC", "BPR", "FBFCC", "FBPFCC"]
REG_NAMES = [f"%{k}{n}" for k in "goli" for n in range(8)]
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


def _run_c(exe, states):
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


def _diffs(state, want, res):
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
        diffs = _diffs(state, want, res)
        if diffs:
            stats["rechecked"] += 1
            want = ref_sparc64.Reference.fresh(*state)
            diffs = _diffs(state, want, res)
        stats["compared"] += 1
        stats[_path(state, want)] += 1
        if diffs:
            bad.append(_describe(cls, state) + ":\n    " + "\n    ".join(diffs))
            if len(bad) >= limit:
                break
    return bad


def _fuzz_chunk(args):
    exe, cls, seed, n = args
    rnd = random.Random(seed)
    model = ref_sparc64.Reference()
    stats = Counter()
    bad = []
    for start in range(0, n, BATCH):
        states = [_state(cls, rnd, i) for i in range(start, min(n, start + BATCH))]
        bad += _compare(cls, states, _run_c(exe, states), model, stats, limit=5 - len(bad))
        if len(bad) >= 5:
            break
    stats["instances"] += model.instances
    return bad, dict(stats)


@pytest.fixture(scope="module")
def runner():
    return build("sparc64_emulate_run", SOURCES, INCLUDES)


def _decode(exe, word):
    return subprocess.run([str(exe), "decode", f"{word:08x}"], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize("word,cls", [
    (call(0), "CALL"), (call(-1), "CALL"), (call(1 << 29), "CALL"),
    (jmpl(0, I7, 8), "JMPL"), (jmpl(0, O7, 8), "JMPL"),          # ret, retl
    (jmpl(O7, 1, rs2=2), "JMPL"), (jmpl(1, 1, -4), "JMPL"),
    (bicc(0, 8, 16), "BICC"), (bicc(1, 8, -16), "BICC"), (bicc(1, 0, 1), "BICC"),
    (bicc(0, 9, 0x3fffff), "BICC"),
    (bpcc(0, 1, 0, 1, 4), "BPCC"), (bpcc(1, 15, 2, 0, -4), "BPCC"),
    (bpr(0, 1, 8, 1, 4), "BPR"), (bpr(1, 7, 31, 0, -1), "BPR"), (bpr(0, 3, 0, 1, 0x8000), "BPR"),
    (fbfcc(0, 8, 4), "FBFCC"), (fbfcc(1, 0, -4), "FBFCC"),
    (fbpfcc(0, 6, 0, 1, 4), "FBPFCC"), (fbpfcc(1, 9, 3, 0, -4), "FBPFCC"),
])
def test_decode_accepts_the_emulated_classes(runner, word, cls):
    out = _decode(runner, word)
    assert out.split()[:2] == ["class", cls], out


@pytest.mark.parametrize("word,reason", [
    (0x00000000, "an ILLTRAP/unimp word is already there"),        # illtrap 0
    (0x0000beef, "an ILLTRAP/unimp word is already there"),
    (0x01000000, "sethi/nop, not a control-transfer instruction"),  # nop
    (0x03000040, "sethi/nop, not a control-transfer instruction"),  # sethi %hi(0x10000), %g1
    (0x86004002, "not a control-transfer instruction (probes sit on"),  # add %g1, %g2, %g3
    (0x9de3bf50, "not a control-transfer instruction (probes sit on"),  # save %sp, -176, %sp
    (0xc4586000, "a load or store, not a control-transfer instruction"),  # ldx [%g1], %g2
    (0x81cfe008, "return restores a register window"),              # return %i7 + 8
    (0x91d02010, "Tcc is a trap instruction"),                      # ta 0x10
    (0x81f00000, "done/retry return from a trap"),                  # done
    (0x83f00000, "done/retry return from a trap"),                  # retry
    (bpcc(0, 8, 1, 1, 4), "BPcc with a reserved cc field"),
    (bpcc(0, 8, 3, 1, 4), "BPcc with a reserved cc field"),
    (bpr(0, 0, 8, 1, 4), "BPr with a reserved rcond (0 or 4)"),
    (bpr(0, 4, 8, 1, 4), "BPr with a reserved rcond (0 or 4)"),
    (bpr(0, 1, 8, 1, 4) | 1 << 28, "BPr with bit 28 set (reserved)"),
    (7 << 22, "a reserved op2"),
])
def test_decode_refuses_with_a_reason(runner, word, reason):
    out = _decode(runner, word)
    assert out.startswith("refused ") and reason in out, out


@pytest.mark.parametrize("rd,rs1,imm,rs2,r1,r2", [
    (0, 1, 1, 0, 0x1000, 0), (O7, 1, 2, 0, 0x1000, 0),          # rd not written
    (1, 1, -1, 0, 0x1000, 0),                                    # rd == rs1
    (I7, 1, None, 2, 0x1001, 0x2000), (0, 0, 3, 0, 0, 0),
    (5, 1, None, 1, 0x8000000000000001, 0),                      # 2 * rs1, wraps
])
def test_misaligned_jmpl_faults_and_changes_nothing(runner, rd, rs1, imm, rs2, r1, r2):
    regs = [0, r1, r2] + [0x1111 * n for n in range(3, 32)]
    pc = ref_sparc64.slot(3)
    word = jmpl(rd, rs1, imm, rs2)
    state = (word, pc, regs, 0x5a, 0)
    res = _run_c(runner, [state])[0]
    target = (regs[rs1] + (imm & U64 if imm is not None else regs[rs2])) & U64
    assert target & 3
    assert res[0] == -1 and res[40] == target, res
    assert (res[4], res[5], list(res[6:38])) == (pc, (pc + 4) & U64, regs)
    assert ref_sparc64.Reference.fresh(*state) == (-1, pc, (pc + 4) & U64, tuple(regs))


PC = ref_sparc64.slot(0)                  # 0x1001ffc
TOP = ref_sparc64.slot(2 * 1023 + 1)      # 0xfffffffffffffffc: pc + 4 wraps to 0
FCC2_U = 3 << 34                          # fcc2 = unordered


# (word, pc, {reg: value}, ccr, fsr, new pc, new npc, {reg: value after}),
# worked out by hand from the V9 manual's CTI table.
HAND = {
    "call +0x40": (call(0x10), PC, {}, 0, 0, PC + 4, PC + 0x40, {O7: PC}),
    "call -4": (call(-1), PC, {}, 0, 0, PC + 4, PC - 4, {O7: PC}),
    "call wraps": (call(2), TOP, {}, 0, 0, 0, 4, {O7: TOP}),
    "ba": (bicc(0, 8, 4), PC, {}, 0, 0, PC + 4, PC + 16, {}),
    "ba,a": (bicc(1, 8, 4), PC, {}, 0, 0, PC + 16, PC + 20, {}),
    "bn": (bicc(0, 0, 4), PC, {}, 0xff, 0, PC + 4, PC + 8, {}),
    "bn,a": (bicc(1, 0, 4), PC, {}, 0xff, 0, PC + 8, PC + 12, {}),
    "be icc.z": (bicc(0, 1, -2), PC, {}, 0x04, 0, PC + 4, PC - 8, {}),
    "be,a only xcc.z": (bicc(1, 1, -2), PC, {}, 0x40, 0, PC + 8, PC + 12, {}),
    "be %xcc": (bpcc(0, 1, 2, 1, 3), PC, {}, 0x40, 0, PC + 4, PC + 12, {}),
    "be %icc only xcc.z": (bpcc(0, 1, 0, 1, 3), PC, {}, 0x40, 0, PC + 4, PC + 8, {}),
    "bl n!=v": (bicc(0, 3, 5), PC, {}, 0x08, 0, PC + 4, PC + 20, {}),
    "bge,a n!=v": (bicc(1, 11, 5), PC, {}, 0x08, 0, PC + 8, PC + 12, {}),
    "brz 0": (bpr(0, 1, 8, 1, 6), PC, {8: 0}, 0, 0, PC + 4, PC + 24, {}),
    "brlz INT64_MIN": (bpr(0, 3, 9, 0, 6), PC, {9: 1 << 63}, 0, 0, PC + 4, PC + 24, {}),
    "brgz INT64_MIN": (bpr(0, 6, 9, 0, 6), PC, {9: 1 << 63}, 0, 0, PC + 4, PC + 8, {}),
    "brlez 0": (bpr(0, 2, 20, 0, -6), PC, {20: 0}, 0, 0, PC + 4, PC - 24, {}),
    "brnz,a 0": (bpr(1, 5, 31, 0, 6), PC, {31: 0}, 0, 0, PC + 8, PC + 12, {}),
    "brgez %g0": (bpr(0, 7, 0, 0, 6), PC, {}, 0, 0, PC + 4, PC + 24, {}),
    "fbe fcc0=E": (fbfcc(0, 9, 3), PC, {}, 0, FCC2_U, PC + 4, PC + 12, {}),
    "fbu fcc0=E": (fbfcc(0, 7, 3), PC, {}, 0, FCC2_U, PC + 4, PC + 8, {}),
    "fbu %fcc2=U": (fbpfcc(0, 7, 2, 1, 3), PC, {}, 0, FCC2_U, PC + 4, PC + 12, {}),
    "fbu,a %fcc1=E": (fbpfcc(1, 7, 1, 1, 3), PC, {}, 0, FCC2_U, PC + 8, PC + 12, {}),
    "fbl %fcc0=L": (fbpfcc(0, 4, 0, 1, 7), PC, {}, 0, 1 << 10, PC + 4, PC + 28, {}),
    "retl": (jmpl(0, O7, 8), PC, {O7: 0x2000}, 0, 0, PC + 4, 0x2008, {}),
    "ret": (jmpl(0, I7, 8), PC, {I7: 0x2000}, 0, 0, PC + 4, 0x2008, {}),
    "jmpl %g1+%g1,%g1": (jmpl(1, 1, rs2=1), PC, {1: 0x100}, 0, 0, PC + 4, 0x200, {1: PC}),
    "jmpl %g0-4,%o7": (jmpl(O7, 0, -4), PC, {}, 0, 0, PC + 4, (-4) & U64, {O7: PC}),
}


@pytest.mark.parametrize("case", HAND)
def test_hand_computed_cases(runner, case):
    """A few states whose outcome is worked out here from the manual, for
    the model and the emulator alike (so they cannot agree on a mistake)."""
    word, pc, given, ccr, fsr, new_pc, new_npc, written = HAND[case]
    regs = [0] + [0x1111 * n for n in range(1, 32)]
    for n, v in given.items():
        regs[n] = v
    after = list(regs)
    for n, v in written.items():
        after[n] = v
    want = (0, new_pc & U64, new_npc & U64, tuple(after))
    state = (word, pc, regs, ccr, fsr)
    assert ref_sparc64.Reference.fresh(*state) == want
    res = _run_c(runner, [state])[0]
    assert (res[0], res[4], res[5], tuple(res[6:38])) == want
    assert not _diffs(state, want, res)


def _fuzz(exe, cls, states, seed_base):
    chunks = 8
    per = -(-states // chunks)
    jobs = [(exe, cls, seed_base + i, per) for i in range(chunks)]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(_fuzz_chunk, jobs))
    bad = [m for chunk, _ in results for m in chunk]
    stats = Counter()
    for _, s in results:
        stats.update(s)
    return bad, stats


@pytest.mark.parametrize("cls", CLASSES)
def test_emulation_matches_unicorn_on_random_states(runner, cls):
    bad, stats = _fuzz(runner, cls, STATES, 1000 * CLASSES.index(cls))
    paths = ", ".join(f"{k} {v}" for k, v in sorted(stats.items())
                      if k not in ("compared", "rechecked", "instances"))
    print(f"\n{cls}: {stats['compared']} states compared with unicorn, {len(bad)} with "
          f"differences ({stats['rechecked']} rechecked on a fresh instance); {paths}")
    assert not bad, f"{len(bad)}+ mismatches in {stats['compared']} states:\n" + "\n".join(bad)
    assert stats["compared"] >= STATES


MUTANTS = [
    ("annul_inverted_untaken", "BICC", "} else if (c->annul) {", "} else if (!c->annul) {"),
    ("icc_for_xcc", "BPCC", "c->cc == 2 ? r->ccr >> 4 : r->ccr & 0xf", "r->ccr & 0xf"),
    ("fcc123_shift", "FBPFCC", "(fsr >> (30 + 2 * n))", "(fsr >> (32 + 2 * n))"),
    ("call_no_o7", "CALL", "r->r[SPARC_O7] = pc;", ""),
    ("call_o7_pc4", "CALL", "r->r[SPARC_O7] = pc;", "r->r[SPARC_O7] = pc + 4;"),
    ("jmpl_rd_first", "JMPL",
     "o->target = reg(r, c->rs1) +",
     "if (c->rd)\n\t\t\tr->r[c->rd] = pc;\n\t\to->target = reg(r, c->rs1) +"),
    ("jmpl_writes_g0", "JMPL", "if (c->rd)\n\t\t\tr->r[c->rd] = pc;", "r->r[c->rd] = pc;"),
    ("bpr_unsigned", "BPR", "int64_t v = (int64_t)reg(r, c->rs1);",
     "uint64_t v = reg(r, c->rs1);"),
    ("bpr_lez_as_ltz", "BPR", "case 2: return v <= 0;", "case 2: return v < 0;"),
    ("ba_a_not_annulling", "BICC", "bool always = c->cls != SPARC_BPR && c->cond == 8;",
     "bool always = false;"),
    ("fba_a_not_annulling", "FBFCC", "bool always = c->cls != SPARC_BPR && c->cond == 8;",
     "bool always = c->cls == SPARC_BICC && c->cond == 8;"),
    ("disp22_unsigned", "BICC", "c->disp = sext(w, 22) * 4;\n\t\treturn 0;\n\tcase OP2_FBFCC:",
     "c->disp = (w & 0x3fffff) * 4;\n\t\treturn 0;\n\tcase OP2_FBFCC:"),
    ("disp16_sign", "BPR", "(w & 0x3fff), 16)", "(w & 0x3fff), 17)"),
    ("jmpl_misaligned_writes_rd", "JMPL",
     "\t\tif (o->target & 3) {\n\t\t\t*fault = o->target;",
     "\t\tif (o->target & 3) {\n\t\t\tr->r[c->rd] = pc;\n\t\t\t*fault = o->target;"),
]


@pytest.mark.parametrize("name,cls,old,new", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_a_broken_emulator_is_caught(name, cls, old, new):
    src = (REPO / "tracer/arch/sparc64/emulate.c").read_text()
    assert src.count(old) == 1, f"mutation anchor {old!r} not unique"
    mutant = OUT / f"sparc64_emulate_mutant_{name}.c"
    OUT.mkdir(parents=True, exist_ok=True)
    mutant.write_text(src.replace(old, new))
    exe = build(f"sparc64_emulate_mutant_{name}", [SOURCES[0], str(mutant)], INCLUDES)
    bad, stats = _fuzz_chunk((exe, cls, 7, 3000))
    assert bad, f"the {name} mutant ({old!r} -> {new!r}) went unnoticed"
    print(f"\n{name}: caught within {stats['compared']} states, first: {bad[0]}")
