"""bench.check.i386's opt records (bench/check/i386_opt.py) on synthetic
CHECK records (host only, no QEMU).

Theory of operation: each record's after-state is computed here by hand
from the SDM's definitions of the instructions opt displaces (push: ESP - 4
and the register stored there; mov; a load through EBP; sub $imm with the
six flags it defines), independently of both the guest and unicorn, over a
16-word window of a random stack. verify() must agree (0 mismatches, each
counted as OPT), beside int3 records of the same run. Then single fields
of good records are changed — as a detour that skipped or altered one
displaced instruction, or a head that gave a register back wrong, would
change them — and each must be reported naming that field, unicorn's
value as "expected" and the record's as "actual"; a change below ESP after
(dead stack) must not be; a load the window does not hold is reported as
outside it, not compared (tests/test_check_unrecorded.py). The guest's
half runs in the matrix (i386-check-opt*).
"""

import random
from dataclasses import dataclass

import pytest

from bench.check import i386 as C
from bench.check import i386_opt as O
from bench.trace.sites import Site

M32 = 0xffffffff


@dataclass(frozen=True)
class Rec:
    probe: int
    words: tuple


# (code as the ELF has it, with the bytes after the run; instructions)
SITES = {
    1: Site(0x00116850, bytes.fromhex("5589e583ec28895df4")),    # push; mov; sub $0x28
    2: Site(0x00115250, bytes.fromhex("5589e58b45088b550c")),    # push; mov; mov 8(%ebp),%eax
    3: Site(0x001153c0, bytes.fromhex("5589e557565383ec")),      # push; mov; push edi; push esi
    4: Site(0x00115290, bytes.fromhex("55b8010000008989e5")),    # push; mov $1,%eax
    5: Site(0x00115400, bytes.fromhex("5589e55383ec14c3")),      # push; mov; push ebx; sub $0x14
}
LENGTH = {1: 6, 2: 6, 3: 5, 4: 6, 5: 7}
REG = ("eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi")


def _parity(b):
    return bin(b & 0xff).count("1") % 2 == 0


def _sub_flags(eflags, a, b):
    r = (a - b) & M32
    f = eflags & ~0x8d5
    f |= 0x001 if a < b else 0                              # CF
    f |= 0x004 if _parity(r) else 0                         # PF
    f |= 0x010 if (a ^ b ^ r) & 0x10 else 0                 # AF
    f |= 0x040 if r == 0 else 0                             # ZF
    f |= 0x080 if r & 0x80000000 else 0                     # SF
    f |= 0x800 if ((a ^ b) & (a ^ r)) & 0x80000000 else 0   # OF
    return r, f


def _by_hand(pid, regs, mem):
    """The displaced instructions of site pid by the book."""
    r, m = dict(regs), dict(mem)

    def push(v):
        r["esp"] = (r["esp"] - 4) & M32
        m[r["esp"]] = v

    push(r["ebp"])
    if pid == 4:
        r["eax"] = 1
    else:
        r["ebp"] = r["esp"]
    if pid == 1:
        r["esp"], r["eflags"] = _sub_flags(r["eflags"], r["esp"], 0x28)
    elif pid == 2:
        r["eax"] = m[(r["ebp"] + 8) & M32]
    elif pid == 3:
        push(r["edi"])
        push(r["esi"])
    elif pid == 5:
        push(r["ebx"])
        r["esp"], r["eflags"] = _sub_flags(r["eflags"], r["esp"], 0x14)
    r["eip"] = SITES[pid].addr + LENGTH[pid]
    return r, m


def _record(pid, rnd, **over):
    regs = {k: rnd.getrandbits(32) for k in REG}
    regs["esp"] = 0x001c0000 + rnd.randrange(0x100, 0xf00) * 4
    regs["eflags"] = (rnd.getrandbits(32) & 0x00000cd5) | 0x202
    regs.update(over)
    regs["eip"] = SITES[pid].addr
    base = (regs["esp"] - 4 * O.BELOW) & M32
    mem = {(base + 4 * i) & M32: rnd.getrandbits(32) for i in range(O.WINDOW)}
    after, m2 = _by_hand(pid, regs, mem)
    w = [regs[k] for k in C.REGS] + [after[k] for k in C.REGS]
    w += [LENGTH[pid], base]
    w += [mem[(base + 4 * i) & M32] for i in range(O.WINDOW)]
    w += [m2[(base + 4 * i) & M32] for i in range(O.WINDOW)]
    assert len(w) == O.WORDS
    return Rec(pid, tuple(w))


def _records(n_each=20, seed=7):
    rnd = random.Random(seed)
    recs = [_record(pid, rnd) for pid in SITES for _ in range(n_each)]
    recs += [_record(1, rnd, esp=0x2c),                    # sub to zero: ZF
             _record(1, rnd, esp=0x20),                    # below zero: CF, SF
             _record(5, rnd, eflags=0x00000302),           # TF set
             _record(1, rnd, esp=0x001c1010)]              # window across a page
    rnd.shuffle(recs)
    return recs


def test_header_layout():
    assert (O.WORDS, O.WINDOW, O.BELOW, O.W_LEN, O.W_WIN) == (54, 16, 6, 20, 21)
    assert O.W_BEFORE == 22 and O.W_AFTER == 38 and O.MAX_COPY == 12


@pytest.mark.parametrize("pid", sorted(SITES))
def test_displaced_length_is_whole_instructions_to_five_bytes(pid):
    assert O.displaced(SITES[pid].code) == LENGTH[pid]


def test_displaced_refuses_what_is_too_long_or_undecodable():
    # four nops and a 10-byte mov $imm, mem: 14 bytes to cover five
    assert "more than opt displaces" in O.displaced(bytes.fromhex("90909090c7050000000001000000"))
    assert "holds no 5 bytes" in O.displaced(b"\x55\x89")


def test_correct_records_give_no_mismatches():
    recs = _records()
    rep = C.verify(recs, SITES)
    assert rep.mismatches == [], rep.mismatches[:3]
    assert rep.checked == len(recs) and rep.by_form == {"OPT": len(recs)}
    assert rep.summary() == f"check: {len(recs)} emulations checked (OPT {len(recs)}), 0 mismatches"


NOP_SITE = Site(0x00116900, b"\x90\x55\x89\xe5")


def _nop_record(rnd):
    """An int3 record of a nop (probe 9): only EIP moves."""
    regs = [rnd.getrandbits(32) for _ in C.REGS]
    regs[C.I_EIP] = NOP_SITE.addr
    regs[C.I_EFLAGS] = 0x202
    after = list(regs)
    after[C.I_EIP] += 1
    return Rec(9, tuple(regs + after + [0, 0, 0]))


def test_opt_records_beside_int3_records():
    sites = dict(SITES)
    sites[9] = NOP_SITE
    rnd = random.Random(8)
    opt = _records(n_each=3)
    int3 = [_nop_record(rnd) for _ in range(10)]
    rep = C.verify(int3 + opt, sites)
    assert rep.mismatches == [], rep.mismatches[:3]
    assert rep.by_form == {"NOP": len(int3), "OPT": len(opt)}
    assert rep.summary().index("NOP") < rep.summary().index("OPT")


def _changed(rec, index, delta):
    w = list(rec.words)
    w[index] = (w[index] + delta) & M32
    return Rec(rec.probe, tuple(w))


AFTER = {name: C.NREGS + i for i, name in enumerate(C.REGS)}


def _live(rec, k):
    """Index of the k-th window word at or above ESP after."""
    esp = rec.words[AFTER["esp"]]
    first = (esp - rec.words[O.W_WIN]) // 4
    return O.W_AFTER + first + k


@pytest.mark.parametrize("pid,field,index,delta", [
    (1, "esp", AFTER["esp"], 4),          # sub skipped or altered
    (1, "eflags", AFTER["eflags"], 0x40),  # its flags
    (2, "eax", AFTER["eax"], 1),          # the load skipped or wrong
    (4, "eax", AFTER["eax"], -1),         # mov $imm altered
    (3, "ebp", AFTER["ebp"], 4),          # mov %esp,%ebp skipped
    (5, "ecx", AFTER["ecx"], 0x10),       # a register the head gave back wrong
    (1, "eip", AFTER["eip"], -1),         # the jmp back to the wrong place
    (3, "stack word at", "live0", 1),     # esi pushed wrong
    (3, "stack word at", "live2", 1),     # the saved ebp
    (5, "displaced bytes", O.W_LEN, -1),  # the copy one byte short
])
def test_a_changed_record_is_reported_by_field(pid, field, index, delta):
    rnd = random.Random(pid * 31 + len(field))
    good = _record(pid, rnd)
    if isinstance(index, str):
        index = _live(good, int(index[4:]))
    bad = _changed(good, index, delta)
    rep = C.verify([good, bad], SITES)
    assert rep.checked == 2 and len(rep.mismatches) == 1, rep.mismatches
    msg = rep.mismatches[0]
    assert msg.startswith(f"probe {pid} at {SITES[pid].addr:#x} OPT: "), msg
    if field == "displaced bytes":
        want = f"displaced bytes: expected {LENGTH[pid]} vs actual {LENGTH[pid] - 1}"
    elif field == "stack word at":
        addr = good.words[O.W_WIN] + 4 * (index - O.W_AFTER)
        want = (f"stack word at {addr:#010x} (esp{addr - good.words[AFTER['esp']]:+#x}): "
                f"expected {good.words[index]:#010x} vs actual {bad.words[index]:#010x}")
    else:
        want = (f"{field}: expected {good.words[index]:#010x} vs actual "
                f"{bad.words[index]:#010x}")
    assert want in msg, msg
    assert msg.count(": expected ") == 1, msg


def test_dead_stack_below_esp_after_is_not_compared():
    # three pushes: ESP after is 3 words below ESP before, 3 words above
    # the window's first; the detour's second call writes those.
    good = _record(3, random.Random(3))
    assert _live(good, 0) == O.W_AFTER + 3
    rep = C.verify([_changed(good, O.W_AFTER, 1), _changed(good, _live(good, 0) - 1, 1)],
                   SITES)
    assert rep.mismatches == [] and rep.checked == 2


def test_a_load_outside_the_window_is_reported_not_compared():
    # The window moved up by 9 words: 8(%ebp) lies below it now, and what
    # eax would hold after is a guess: reported, never compared.
    good = _record(2, random.Random(4))
    w = list(good.words)
    w[O.W_WIN] += 4 * 9
    rep = C.verify([Rec(2, tuple(w))], SITES)
    assert rep.mismatches == [] and rep.checked == 0, rep.mismatches
    (msg,) = rep.not_compared
    assert "unrecorded read at" in msg and "outside the recorded window" in msg, msg
    assert "eax" not in msg and "1 not compared" in rep.summary(), msg


def test_eip_before_must_be_the_site():
    good = _record(1, random.Random(5))
    (msg,) = C.verify([_changed(good, C.I_EIP, 1)], SITES).mismatches
    assert "OPT: eip before: expected" in msg
