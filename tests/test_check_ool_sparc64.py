"""Check mode over sparc64's out-of-line sites: the guest records the state
before and after a checked slot's copy (tracer/arch/sparc64/ool_check.c),
the host re-runs the site's own word in unicorn (bench/check/sparc64_ool.py
over ref_sparc64's run_ool).

Host: synthetic records whose "after" is computed here by the V9 manual,
not by unicorn — add, addcc to a carry and to an overflow (CCR), rd %ccr,
wr %y, sethi, stx and ldub through the recorded doublewords — give no
mismatch, and each corrupted field is reported by name; an access outside
the recorded memory is reported, never guessed.

Guest (one sparc64 boot): every instruction of fib and of calltree's
functions probed at once in check mode, the out-of-line ones among them
(loads and stores read and written), 0 mismatches and one CHECK record per
firing; sites the record cannot carry (casx, rd %fprs, flushw) refused in
check mode naming why, their words unchanged. Then the broken variant:
ool_check_broken set through QEMU's GDB stub makes the checked slot's
way back flip %y; fib's `inc %g1` is probed again, and every one of its
records must be reported as a %y mismatch of exactly bit 0.
"""

import random
from dataclasses import dataclass

import pytest

from bench import arches
from bench.check import sparc64 as C
from bench.check import sparc64_ool as O
from bench.debug import rsp
from bench.guest.qemu import Guest
from bench.trace import sites
from bench.trace.sites import Site
from bench.trace.session import open_session

U64 = (1 << 64) - 1
R = {f"{k}{n}": 8 * j + n for j, k in enumerate("goli") for n in range(8)}


def f3(op, rd, op3, rs1, imm=None, rs2=0):
    """A format-3 word: rs1 and simm13 (imm) or rs2."""
    w = op << 30 | R[rd] << 25 | op3 << 19 | R[rs1] << 14
    return w | (1 << 13 | imm & 0x1fff if imm is not None else R[rs2] if isinstance(rs2, str) else rs2)


@dataclass(frozen=True)
class Rec:
    probe: int
    words: tuple


BUF = 0x00200000
WORDS = {
    1: f3(2, "o2", 0x00, "o0", rs2="o1"),               # add %o0, %o1, %o2
    2: f3(2, "o0", 0x10, "o0", imm=1),                  # addcc %o0, 1, %o0
    3: 2 << 30 | R["o3"] << 25 | 0x28 << 19 | 2 << 14,  # rd %ccr, %o3
    4: f3(2, "g0", 0x30, "o0", imm=5),                  # wr %o0, 5, %y
    5: R["g1"] << 25 | 4 << 22 | 0x12345400 >> 10,      # sethi %hi(0x12345400), %g1
    6: f3(3, "o1", 0x0e, "o5", imm=8),                  # stx %o1, [%o5 + 8]
    7: f3(3, "o2", 0x01, "o5", imm=3),                  # ldub [%o5 + 3], %o2
}
SITES = {pid: Site(0x140000 + 0x100 * pid, w.to_bytes(4, "big") + bytes(12))
         for pid, w in WORDS.items()}


def _record(pid, rnd, **over):
    """A record of pid's word from a random state, after computed here."""
    b = {name: rnd.getrandbits(64) for name in R if name != "g0"}
    b["o5"] = BUF + 8 * rnd.randrange(0x100)
    ccr, y = rnd.getrandbits(8), rnd.getrandbits(32)
    b.update(over)
    ccr, y = over.get("ccr", ccr), over.get("y", y)
    mem = [rnd.getrandbits(64) for _ in range(O.MEM_WORDS)]
    a, a_ccr, a_y, a_mem = dict(b), ccr, y, list(mem)
    ea, state = 0, O.MEM_NONE
    if pid == 1:
        a["o2"] = (b["o0"] + b["o1"]) & U64
    elif pid == 2:
        old, new = b["o0"], (b["o0"] + 1) & U64
        a["o0"] = new

        def cc(bits):           # N Z V C of old + 1 in `bits` bits
            m = (1 << bits) - 1
            o, r = old & m, new & m
            sign = 1 << (bits - 1)
            return (8 if r & sign else 0) | (4 if r == 0 else 0) | \
                   (2 if not o & sign and r & sign else 0) | (1 if o == m else 0)
        a_ccr = cc(64) << 4 | cc(32)
    elif pid == 3:
        a["o3"] = ccr
    elif pid == 4:
        a_y = (b["o0"] ^ 5) & 0xffffffff
    elif pid == 5:
        a["g1"] = 0x12345400
    elif pid == 6:
        ea, state = b["o5"] + 8, O.MEM_READ
        a_mem[0] = b["o1"]
    elif pid == 7:
        ea, state = b["o5"] + 3, O.MEM_READ
        a["o2"] = mem[0] >> 32 & 0xff
    pc = SITES[pid].addr

    def state_words(regs, c, yy, pc_, npc):
        w = [0] * O.NREGS
        w[O.I_PC], w[O.I_NPC], w[O.I_CCR], w[O.I_Y], w[O.I_FSR] = pc_, npc, c, yy, 0
        for name, n in R.items():
            if n:
                w[O.R0 + n] = regs[name]
        return w
    w = state_words(b, ccr, y, pc, pc + 4) + state_words(a, a_ccr, a_y, pc + 4, pc + 8)
    w += [ea, state] + (mem if state else [0, 0]) + (a_mem if state else [0, 0])
    assert len(w) == O.WORDS
    return Rec(pid, tuple(w))


def test_header_layout():
    assert (O.WORDS, O.W_MEM, O.W_MEM_STATE, O.MEM_WORDS) == (78, 72, 73, 2)
    assert O.WORDS != C.WORDS


def test_correct_records_give_no_mismatches():
    rnd = random.Random(23)
    recs = [_record(pid, rnd) for pid in SITES for _ in range(12)]
    recs += [_record(2, rnd, o0=0x7fffffff), _record(2, rnd, o0=U64),
             _record(2, rnd, o0=0x7fffffffffffffff), _record(3, rnd, ccr=0x5a)]
    rep = C.verify(recs, SITES)
    assert rep.mismatches == [], rep.mismatches[:3]
    assert rep.by_form == {"OOL": len(recs)}


AFTER = {name: O.NREGS + i for i, name in enumerate(O.NAMES)}


@pytest.mark.parametrize("pid,index,want", [
    (1, AFTER["o2"], "o2: expected"),                   # the result lost
    (1, AFTER["o4"], "o4: expected"),                   # a register not given back
    (2, AFTER["ccr"], "ccr: expected"),                 # CCR not given back
    (4, AFTER["y"], "y: expected"),                     # %y not given back
    (5, AFTER["pc"], "pc: expected"),                   # the resume one word off
    (5, AFTER["npc"], "npc: expected"),
    (6, O.W_MEM_AFTER, "memory at"),                    # the store lost
    (6, O.W_MEM, "address: expected"),                  # the address miscomputed
    (7, AFTER["o2"], "o2: expected"),                   # the load wrong
])
def test_a_changed_record_is_reported_by_field(pid, index, want):
    good = _record(pid, random.Random(pid))
    w = list(good.words)
    w[index] = (w[index] + 4) & U64
    rep = C.verify([good, Rec(pid, tuple(w))], SITES)
    assert rep.checked == 2 and len(rep.mismatches) == 1, rep.mismatches
    msg = rep.mismatches[0]
    assert msg.startswith(f"probe {pid} at {SITES[pid].addr:#x} OOL: "), msg
    assert want in msg, msg


def test_an_access_outside_the_recorded_memory_is_reported():
    good = _record(6, random.Random(6))
    w = list(good.words)
    w[O.W_MEM] += 16                    # the doublewords kept lie above the store
    (msg,) = C.verify([Rec(6, tuple(w))], SITES).mismatches
    assert "address: expected" in msg and "outside the recorded memory" in msg, msg
    w = list(good.words)
    w[O.W_MEM_STATE] = O.MEM_UNMAPPED   # the guest found the store's page unmapped:
    rep = C.verify([Rec(6, tuple(w))], SITES)   # reported, never compared
    assert rep.mismatches == [] and rep.checked == 0, rep.mismatches
    (msg,) = rep.not_compared
    assert "unrecorded" in msg and "the guest found unmapped" in msg, msg


def test_a_record_of_the_wrong_length_is_reported():
    good = _record(1, random.Random(1))
    (msg,) = C.verify([Rec(1, good.words + (0,) * 10)], SITES).mismatches
    assert msg.endswith(f"record has {O.WORDS + 10} words, not {O.WORDS}"), msg


# ---- the guest ----

def _first(image, function, mnemonic):
    f = image.functions[function]
    return next(i.addr for i in f.insns if i.mnemonic == mnemonic and
                (mnemonic != "rd" or "%fprs" in i.text)) - f.addr


# What the record cannot carry, one site each, refused naming why.
REFUSED = (("atomic_adder", "casx", "alternate-space"),
           ("fm_fp", "rd", "%fprs"),
           ("dt_call", "flushw", "register windows"))


def _run(s, g, spec, line):
    since = len(g.trace_frames)
    s.must("probe clear")
    s.setup(spec, "emulate", check=True)
    s.enable(True, strict=True)
    r = s.cmd(f"run {line}")
    s.enable(False)
    s.must("trace flush", timeout=120)
    cap = g.capture(since)
    ids = {p.id for p in s.probes}
    firings = sum(e.probe in ids for e in cap.events)
    return r, cap, firings, C.verify(cap.checks, sites.sites_of(s.image, s.probes))


def test_guest_out_of_line_sites_checked_and_a_broken_slot_caught(built):
    built("sparc64")
    a = arches.get("sparc64")
    with Guest(a, label="check-ool-sparc64", gdbstub=True) as g:
        s = open_session(g)
        r, cap, firings, rep = _run(s, g, "insn:fib+*,insn:ct_*+*",
                                    "calltree threads=2 iters=2")
        ool = [c for c in cap.checks if len(c.words) == O.WORDS]
        read = [c for c in ool if c.words[O.W_MEM_STATE] == O.MEM_READ]
        stored = [c for c in read if c.words[O.W_MEM_AFTER:] != c.words[O.W_MEM_BEFORE:O.W_MEM_AFTER]]
        refused, words = [], []
        for fn, mnemonic, _ in REFUSED:
            s.must("probe clear")
            off = _first(s.image, fn, mnemonic)
            s.setup(f"insn:{fn}+{off:#x}", "emulate", check=True)
            s.enable(True)
            refused.append([p.refused for p in s.refused])
            words.append((s.image.functions[fn].addr + off))
        flag = s.image.symbols["ool_check_broken"]
        with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
            stub.halt()
            # Kernel memory, identity-mapped: read and written physically
            # where the stub's TLB-only translation fails (rsp.py).
            live = [stub.read_identity(addr, 4) for addr in words]
            stub.write_identity(flag, (1).to_bytes(4, "big"))
            stub.detach()
        inc = _first(s.image, "fib", "inc")
        r2, cap2, firings2, rep2 = _run(s, g, f"insn:fib+{inc:#x}", "fib n=6")
        g.exit(0)
    assert r.ok and rep.mismatches == [], rep.mismatches[:5]
    assert firings == len(cap.checks) == rep.checked, (firings, len(cap.checks), rep.summary())
    assert rep.by_form.get("OOL", 0) > 500 and len(read) > 100 and len(stored) > 20, \
        (rep.summary(), len(read), len(stored))
    for (fn, mnemonic, why), got, addr, code in zip(REFUSED, refused, words, live):
        assert len(got) == 1 and "mechanism emulate: check mode: " in got[0] and why in got[0], \
            (fn, mnemonic, got)
        assert code == s.image.code(addr, 4), (fn, code.hex())
    # The broken way back: every record of the inc reported, naming %y alone.
    assert firings2 == len(cap2.checks) == rep2.checked == 25, (firings2, rep2.summary())
    assert len(rep2.mismatches) == 25, rep2.mismatches[:3]
    for m in rep2.mismatches:
        assert " OOL: y: expected " in m and m.count(": expected ") == 1, m
        want, got = (int(x, 16) for x in m.split("expected ")[1].split(" vs actual "))
        assert want ^ got == 1, m
