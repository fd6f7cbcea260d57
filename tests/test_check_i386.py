"""bench.check.i386 on synthetic CHECK records (host only, no QEMU).

Theory of operation: each record's after-state is computed here by hand
from the SDM's definition of the form (push %ebp: ESP - 4, old EBP stored
there; ret: EIP = the word read, ESP + 4 + imm16; ...), independently of
both the guest emulator and unicorn. verify() must agree with all of them
(0 mismatches, the right count per form), including awkward cases: a stack
word straddling a page, a ret into the site's own code page and one into
unmapped memory, TF and other high EFLAGS bits, a stack page that shares a
page with code. Then single fields of good records are corrupted, and each
must be reported naming that field with unicorn's value as "expected" and
the record's as "actual".
"""

import random
import re
from dataclasses import dataclass

import pytest

from bench.check import i386 as C
from bench.paths import REPO
from bench.trace.sites import Site

M32 = 0xffffffff


@dataclass(frozen=True)
class Rec:
    probe: int
    words: tuple


SITES = {
    1: Site(0x00101000, b"\x55\x89\xe6\x83"),       # push %ebp (then mov %esp,%esi)
    2: Site(0x00101010, b"\x55\x89\xe5\x83"),       # push %ebp; mov %esp,%ebp
    3: Site(0x00101020, b"\x55\x8b\xec\x83"),       # the same, other encoding
    4: Site(0x00101030, b"\x5d\xc3\x90\x90"),
    5: Site(0x00101040, b"\xc9\xc3\x90\x90"),
    6: Site(0x00101050, b"\xc3\x8d\x76\x00"),
    7: Site(0x00101060, b"\xc2\x08\x00\x90"),
    8: Site(0x00101070, b"\xc8\x10\x01\x00"),
    9: Site(0x00101080, b"\x90\x55\x89\xe5"),
    10: Site(0x00101ffe, b"\x55\x89\xe5\x83"),      # code straddles a page
    11: Site(0x00101031, b"\xc3\x90\x90\x90"),      # right after site 4's pop
    12: Site(0x00101090, b"\xeb\x10\x90\x90"),      # jmp .+0x12
    13: Site(0x001010a0, b"\x74\x02\x90\x90"),      # je .+4: taken as ZF says
    14: Site(0x001010b0, b"\xe8\x0b\x00\x00\x00"),  # call .+0x10
}


def _after(form, regs, word, addr):
    """The after-state by the book: (regs, touched address, before, after)."""
    r = dict(regs)
    esp, ebp = regs["esp"], regs["ebp"]
    if form in ("PUSH_EBP", "PUSH_EBP_MOV", "ENTER"):
        esp = (esp - 4) & M32
        touched = (esp, word, ebp)
        if form != "PUSH_EBP":
            r["ebp"] = esp
        if form == "ENTER":
            imm = int.from_bytes(SITE_CODE[form][1:3], "little")
            esp = (esp - imm) & M32
        r["esp"] = esp
        r["eip"] = addr + {"PUSH_EBP": 1, "PUSH_EBP_MOV": 3, "ENTER": 4}[form]
    elif form == "POP_EBP":
        touched = (esp, word, word)
        r["ebp"], r["esp"], r["eip"] = word, (esp + 4) & M32, addr + 1
    elif form == "LEAVE":
        touched = (ebp, word, word)
        r["esp"], r["ebp"], r["eip"] = (ebp + 4) & M32, word, addr + 1
    elif form in ("RET", "RET_IMM"):
        imm = 8 if form == "RET_IMM" else 0
        touched = (esp, word, word)
        r["esp"], r["eip"] = (esp + 4 + imm) & M32, word
    elif form == "JMP_REL":
        touched = (0, 0, 0)
        r["eip"] = addr + 2 + 0x10
    elif form == "JCC":
        touched = (0, 0, 0)
        r["eip"] = addr + 2 + (2 if regs["eflags"] & 0x40 else 0)
    elif form == "CALL_REL":
        esp = (esp - 4) & M32
        touched = (esp, word, addr + 5)
        r["esp"], r["eip"] = esp, addr + 5 + 0x0b
    else:
        touched = (0, 0, 0)
        r["eip"] = addr + 1
    return r, touched


FORM_OF = {1: "PUSH_EBP", 2: "PUSH_EBP_MOV", 3: "PUSH_EBP_MOV", 4: "POP_EBP",
           5: "LEAVE", 6: "RET", 7: "RET_IMM", 8: "ENTER", 9: "NOP",
           10: "PUSH_EBP_MOV", 11: "RET", 12: "JMP_REL", 13: "JCC", 14: "CALL_REL"}
SITE_CODE = {"ENTER": SITES[8].code}


def _record(pid, rnd, **over):
    form, addr = FORM_OF[pid], SITES[pid].addr
    regs = {r: rnd.getrandbits(32) for r in C.REGS}
    regs["eip"] = addr
    regs["eflags"] = (rnd.getrandbits(32) & 0x00000cd5) | 0x202
    regs["esp"] = 0x00200000 + rnd.randrange(0x100, 0x7f00) & ~3
    regs["ebp"] = 0x00208000 + rnd.randrange(0x100, 0x7f00) & ~3
    word = rnd.choice([rnd.getrandbits(32), addr + 0x40, 0x00101004,
                       rnd.choice(list(SITES.values())).addr, regs["esp"] + 0x10])
    regs.update({k: v for k, v in over.items() if k in regs})
    word = over.get("word", word)
    after, touched = _after(form, regs, word, addr)
    words = tuple(regs[r] for r in C.REGS) + tuple(after[r] for r in C.REGS) + touched
    return Rec(pid, words)


def _good_records(n_each=25, seed=1):
    rnd = random.Random(seed)
    recs = [_record(pid, rnd) for pid in SITES for _ in range(n_each)]
    recs += [
        _record(1, rnd, esp=0x00203002),                  # push across a page
        _record(4, rnd, esp=0x00203ffe),                  # pop across a page
        _record(5, rnd, ebp=0x00204ffd),                  # leave across a page
        _record(6, rnd, word=0x00101051),                 # ret into its own page
        _record(6, rnd, word=0x7ffff000),                 # ret into unmapped memory
        _record(7, rnd, word=0x00101060),                 # ret $8 back to itself
        _record(2, rnd, eflags=0x00247fd7),               # TF, NT, IOPL, RF, AC, ID
        _record(8, rnd, eflags=0x00000302),               # TF + IF
        _record(2, rnd, esp=0x00101800),                  # stack in the code page
        _record(5, rnd, ebp=0x00101804, word=0x1234),
        _record(9, rnd, esp=0, ebp=M32),                  # nop: no memory at all
        _record(1, rnd, esp=0),                           # push wraps to 0xfffffffc
        _record(4, rnd, esp=0xfffffffc),                  # pop wraps ESP to 0
        _record(6, rnd, word=SITES[6].addr),              # ret to itself
    ]
    rnd.shuffle(recs)                                     # sites interleaved
    return recs


def test_correct_records_give_no_mismatches_and_count_every_form():
    recs = _good_records()
    rep = C.verify(recs, SITES)
    assert rep.mismatches == []
    assert rep.checked == len(recs)
    # Every form of this record layout: OOL, CALL_IND and JMP_IND write the
    # out-of-line layout (tests/test_check_ool.py, tests/test_indirect.py).
    assert set(rep.by_form) == set(C.FORMS) - {"OOL", "CALL_IND", "JMP_IND"}
    want = {}
    for r in recs:
        want[FORM_OF[r.probe]] = want.get(FORM_OF[r.probe], 0) + 1
    assert rep.by_form == want
    s = rep.summary()
    assert s.startswith(f"check: {len(recs)} emulations checked (PUSH_EBP ")
    assert s.endswith(", 0 mismatches") and "RET_IMM " in s


def test_form_names_are_the_guest_emulators():
    text = (REPO / "tracer/arch/i386/emulate.h").read_text()
    assert tuple(re.findall(r"X\(([A-Z][A-Z0-9_]*),", text)) == C.FORMS


def test_register_order_comes_from_the_header():
    assert C.REGS == ("eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
                      "eip", "eflags")
    assert C.WORDS == 23 and C.W_ADDR == 20


@pytest.mark.parametrize("code,form", [
    (b"\x55\x89\xe5\x00", "PUSH_EBP_MOV"), (b"\x55\x8b\xec\x00", "PUSH_EBP_MOV"),
    (b"\x55\x89\xe6\x00", "PUSH_EBP"), (b"\x5d\x00\x00\x00", "POP_EBP"),
    (b"\xc9\x00\x00\x00", "LEAVE"), (b"\xc3\x00\x00\x00", "RET"),
    (b"\xc2\x04\x00\x00", "RET_IMM"), (b"\xc8\x08\x00\x00", "ENTER"),
    (b"\x90\x00\x00\x00", "NOP"), (b"\xeb\xfe", "JMP_REL"),
    (b"\xe9\x00\x00\x00\x00", "JMP_REL"), (b"\x74\x02", "JCC"),
    (b"\x0f\x85\x10\x00\x00\x00", "JCC"), (b"\xe8\x00\x00\x00\x00", "CALL_REL"),
])
def test_classify(code, form):
    assert C.classify(code).name == form


@pytest.mark.parametrize("code", [b"\xc2\x00\x80\x00", b"\xc8\x08\x00\x01",
                                  b"\x89\xe5\x00\x00", b"\xcc\x00\x00\x00", b""])
def test_classify_refuses_what_the_guest_refuses(code):
    assert isinstance(C.classify(code), str)


def _corrupt(rec, index, delta=None, value=None):
    w = list(rec.words)
    w[index] = value if value is not None else (w[index] + delta) & M32
    return Rec(rec.probe, tuple(w))


AFTER = {name: C.NREGS + i for i, name in enumerate(C.REGS)}


@pytest.mark.parametrize("pid,index,delta,field", [
    (1, AFTER["esp"], 4, "esp"),
    (2, AFTER["ebp"], -4, "ebp"),
    (2, C.W_AFTER, 1, "stack word written"),
    (8, C.W_ADDR, 4, "stack address"),
    (8, AFTER["esp"], 4, "esp"),
    (4, AFTER["ebp"], 1, "ebp"),
    (5, C.W_ADDR, 4, "stack address"),
    (5, AFTER["esp"], 4, "esp"),
    (6, AFTER["eip"], 1, "eip"),
    (7, AFTER["esp"], -8, "esp"),
    (6, C.W_AFTER, 1, "stack word after a read"),
    (9, AFTER["eflags"], 0x1, "eflags"),
    (3, AFTER["eflags"], 0x800, "eflags"),
    (9, AFTER["eax"], 1, "eax"),
    (9, C.W_ADDR, 0x1000, "stack address"),
])
def test_a_corrupted_record_is_reported_by_field(pid, index, delta, field):
    rnd = random.Random(pid * 100 + index)
    good = _record(pid, rnd)
    bad = _corrupt(good, index, delta)
    rep = C.verify([good, bad], SITES)
    assert rep.checked == 2 and len(rep.mismatches) == 1, rep.mismatches
    msg = rep.mismatches[0]
    head = f"probe {pid} at {SITES[pid].addr:#x} {FORM_OF[pid]}: "
    assert msg.startswith(head), msg
    want = f"{field}: expected {good.words[index]:#010x} vs actual {bad.words[index]:#010x}"
    if index == C.W_ADDR and FORM_OF[pid] == "NOP":
        want = f"{field}: expected {0:#010x} vs actual {bad.words[index]:#010x}"
    assert want in msg, msg
    assert msg.count(": expected ") == 1, msg        # that field and no other
    assert rep.summary().endswith(", 1 mismatches")


def test_several_wrong_fields_are_all_named():
    good = _record(2, random.Random(5))
    bad = _corrupt(_corrupt(good, AFTER["esp"], 4), AFTER["eflags"], 0x40)
    bad = _corrupt(bad, C.W_AFTER, 2)
    (msg,) = C.verify([bad], SITES).mismatches
    for f in ("esp:", "eflags:", "stack word written:"):
        assert f in msg, msg


def test_reserved_eflags_bit_1_clear_is_a_mismatch():
    good = _record(9, random.Random(2))
    bad = _corrupt(_corrupt(good, C.I_EFLAGS, value=good.words[C.I_EFLAGS] & ~2),
                   AFTER["eflags"], value=good.words[AFTER["eflags"]] & ~2)
    (msg,) = C.verify([bad], SITES).mismatches
    assert "eflags: expected" in msg


def test_records_that_cannot_be_checked_are_reported():
    good = _record(1, random.Random(3))
    sites = dict(SITES)
    sites[50] = Site(0x00102000, b"\xc2\x00\x80\x90")
    recs = [Rec(99, good.words), Rec(50, good.words), Rec(1, good.words[:20]),
            _corrupt(good, C.I_EIP, 1)]
    rep = C.verify(recs, sites)
    assert len(rep.mismatches) == 4
    assert "no known site" in rep.mismatches[0]
    assert "refused" in rep.mismatches[1]
    assert "20 words" in rep.mismatches[2]
    assert "eip before: expected" in rep.mismatches[3]


def test_empty():
    rep = C.verify([], {})
    assert (rep.checked, rep.by_form, rep.mismatches) == (0, {}, [])
    assert rep.summary() == "check: 0 emulations checked, 0 mismatches"
