"""The SPARC V9 probe emulator (tracer/arch/sparc64/emulate.c), compiled for
the host, against python3-unicorn's SPARC64 mode (bench/check/fuzz_sparc64.py
says how the states are drawn): decode accepts exactly the emulated classes
and refuses the rest with a reason; for every class, random states give the
same PC, nPC and 32 registers in both, CCR and FSR untouched, and an
outcome (taken, annulled, target) that implies that PC/nPC; and
deliberately broken emulators are caught.

Besides: a few states worked out by hand from the manual, checked against
both the model and the emulator (so that the two cannot agree on a
mistake), and explicit misaligned JMPLs checking the fault address.

The size here (STATES per class; TRAPBENCH_FUZZ_STATES to change) is many
times what any broken emulator below needs to be caught; the matrix's
full group runs `python3 -m bench fuzz` at 10^6 states per class."""

import os

import pytest

from bench.check import fuzz, ref_sparc64
from bench.check import fuzz_sparc64 as F
from bench.check.fuzz_sparc64 import (I7, O7, U64, bicc, bpcc, bpr, call, fbfcc,
                                      fbpfcc, jmpl)
from bench.check.hostc import OUT, build
from bench.paths import REPO

STATES = int(os.environ.get("TRAPBENCH_FUZZ_STATES", "8000"))
CLASSES = list(F.CLASSES)


@pytest.fixture(scope="module")
def runner():
    return F.runner()


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
    out = F.decode(runner, word)
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
    out = F.decode(runner, word)
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
    res = F.run_c(runner, [state])[0]
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


@pytest.fixture(scope="module")
def model():
    return ref_sparc64.Reference()


@pytest.mark.parametrize("case", HAND)
def test_hand_computed_cases(runner, model, case):
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
    got = model.run(*state)
    if got != want:     # judged again by a fresh model, as the fuzz does
        got = ref_sparc64.Reference.fresh(*state)
    assert got == want
    res = F.run_c(runner, [state])[0]
    assert (res[0], res[4], res[5], tuple(res[6:38])) == want
    assert not F.diffs(state, want, res)


@pytest.mark.parametrize("cls", CLASSES)
def test_emulation_matches_unicorn_on_random_states(runner, cls):
    res = fuzz.fuzz_class(F, runner, cls, STATES, 1000 * CLASSES.index(cls))
    print(f"\n{res.line()}")
    assert not res.mismatches, (f"{len(res.mismatches)}+ mismatches in {res.compared} "
                                "states:\n" + "\n".join(res.mismatches))
    assert res.compared >= STATES


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
    exe = build(f"sparc64_emulate_mutant_{name}", [F.SOURCES[0], str(mutant)], F.INCLUDES)
    bad, stats = F.chunk((exe, cls, 7, 3000, 1))
    assert bad, f"the {name} mutant ({old!r} -> {new!r}) went unnoticed"
    print(f"\n{name}: caught within {stats['compared']} states, first: {bad[0]}")
