"""Check mode over i386's out-of-line sites: the guest records the state
before and after a slot's copy (tracer/arch/i386/ool_check.c), the host
re-runs the site's own bytes in unicorn (bench/check/i386_ool.py).

Host: check mode's operand decoder (insn.c's i386_insn_operand, compiled
for the host) gives, for every instruction of the whole i386 kernel it
does not refuse, the memory operand capstone gives (base, index, scale,
displacement; none where capstone has none), and refuses what the record
cannot carry, naming it. Synthetic records computed by hand (push %ebx, a
store through ESP, addl $1 to a counter) give no mismatch, and each
corrupted field is reported by name.

Guest (one i386 boot): every instruction of fib probed at once in check
mode — the out-of-line ones (3,000 of the 4,000 records of fib n=10)
among them, memory operands read and written — 0 mismatches and one CHECK
record per firing; a site reading %fs:0 refused in check mode, naming
why, its bytes unchanged (read through the stub). Then the broken variant: ool_check_broken set through
QEMU's GDB stub makes checked slots flip CF after the copy; the addl at
fib+0x12 is probed again, and every one of its records must be reported
as an eflags mismatch of exactly CF.
"""

import random
import subprocess
from dataclasses import dataclass

import pytest
from capstone import CS_ARCH_X86, CS_MODE_32, Cs
from capstone import x86_const as CX

from bench import arches
from bench.check import hostc
from bench.check import i386 as C
from bench.check import i386_ool as O
from bench.debug import rsp
from bench.guest.qemu import Guest
from bench.trace import sites
from bench.trace.sites import Site
from bench.trace.image import load_image
from bench.trace.session import open_session

M32 = 0xffffffff
RUNNER = ("i386_insn_run", ["bench/check/c/i386_insn_run.c", "tracer/arch/i386/insn.c"],
          ("include", "tracer/arch/i386"))
GPR = ("eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi")


@pytest.fixture(scope="module")
def runner():
    return hostc.build(*RUNNER)


def _operands(exe, code: bytes, offsets, tmp_path):
    path = tmp_path / "code.bin"
    path.write_bytes(code)
    out = subprocess.run([str(exe), str(path), "operand"], input="\n".join(map(str, offsets)),
                         capture_output=True, text=True, check=True).stdout
    return [line.split(" ", 1) for line in out.splitlines()]


def _capstone_operand(cs, raw: bytes):
    """(base, index, scale_shift, disp, segment) of the memory operand, or None."""
    insn = next(cs.disasm(raw, 0))
    for op in insn.operands:
        if op.type == CX.X86_OP_MEM:
            m = op.mem
            name = lambda r: insn.reg_name(r) if r else None      # noqa: E731
            return (name(m.base), name(m.index), m.scale.bit_length() - 1,
                    m.disp & M32, name(m.segment))
    return None


def test_operand_decoder_agrees_with_capstone_on_the_kernel(built, runner, tmp_path):
    built("i386")
    img = load_image(arches.get("i386").elf())
    insns = [i for f in img.functions.values() for i in f.insns]
    got = _operands(runner, img.text, [i.addr - img.text_addr for i in insns], tmp_path)
    cs = Cs(CS_ARCH_X86, CS_MODE_32)
    cs.detail = True
    bad, checked, mem = [], 0, 0
    for i, (verdict, rest) in zip(insns, got):
        if verdict == "no":
            continue                    # refused: the next test says why
        checked += 1
        ours_mem, base, index, scale, disp = (int(x) for x in rest.split())
        want = _capstone_operand(cs, bytes(i.raw))
        ours = None
        if ours_mem:
            mem += 1
            ours = (GPR[base] if base >= 0 else None, GPR[index] if index >= 0 else None,
                    scale if index >= 0 else 0, disp & M32, None)
        if want is not None and want[1] is None:
            want = want[:2] + (0,) + want[3:]
        if want is not None and want[4] in ("ds", "ss", "es", "cs"):
            want = want[:4] + (None,)
        if ours != want:
            bad.append(f"{i.addr:#x} `{i.text}` {i.raw.hex()}: capstone {want}, ours {ours}")
    assert checked > 20000 and mem > 5000, (checked, mem)
    assert not bad, f"{len(bad)} operands differ:\n" + "\n".join(bad[:20])


REFUSED = {
    "rep movsl": "string instruction", "rep stosb": "string instruction",
    "xlat": "implicit", "pusha": "pusha/popa", "popa": "pusha/popa",
    "pushf": "pushes IF", "jmp *%eax": "indirect jmp", "jmp *0x10(,%eax,4)": "indirect jmp",
    "mov %fs:(%eax), %ebx": "fs/gs", "mov %gs:0x10, %eax": "fs/gs",
    "fxsave (%eax)": "more memory", "fnstenv (%eax)": "more memory",
    "frstor 4(%ebx)": "more memory", "maskmovq %mm1, %mm0": "implicit",
    "enter $8, $1": "nesting level",
}
TAKEN = ("lock incl (%eax)", "addl $1, 0x2000", "mov 0x11223344, %eax", "push 8(%ebp)",
         "pop 4(%esp)", "fldt (%eax)", "movdqu (%ecx), %xmm0", "cmpxchg8b (%esi)",
         "push %ebx", "mov %fs, %eax", "clflush (%eax)", "lea 0x0(%esi,1), %esi")


def test_check_mode_refuses_what_the_record_cannot_carry(runner, tmp_path):
    forms = list(REFUSED) + list(TAKEN)
    src, obj = tmp_path / "forms.s", tmp_path / "forms.o"
    src.write_text(".text\n" + "\n".join(forms) + "\n")
    subprocess.run(["as", "--32", "-o", str(obj), str(src)], check=True,
                   capture_output=True)
    bin_ = tmp_path / "forms.bin"
    subprocess.run(["objcopy", "-O", "binary", "-j", ".text", str(obj), str(bin_)],
                   capture_output=True, check=True)
    code = bin_.read_bytes()
    cs = Cs(CS_ARCH_X86, CS_MODE_32)
    offsets = [i.address for i in cs.disasm(code, 0)]
    assert len(offsets) == len(forms)
    got = _operands(runner, code, offsets, tmp_path)
    wrong = []
    for form, (verdict, rest) in zip(forms, got):
        want = REFUSED.get(form)
        if want and (verdict != "no" or want not in rest or not rest.startswith("check mode")):
            wrong.append(f"`{form}`: {verdict} {rest}, want refused naming {want!r}")
        if not want and verdict != "ok":
            wrong.append(f"`{form}`: refused: {rest}")
    assert not wrong, "\n".join(wrong)


# ---- synthetic records: after-states by the SDM, not by unicorn ----

@dataclass(frozen=True)
class Rec:
    probe: int
    words: tuple


COUNTER = 0x00250000
SITES = {
    1: Site(0x00138800, bytes.fromhex("53") + b"\x90" * 15),                  # push %ebx
    2: Site(0x00138810, bytes.fromhex("890424") + b"\x90" * 13),              # mov %eax,(%esp)
    3: Site(0x00138820, bytes.fromhex("830500002500" "01") + b"\x90" * 9),     # addl $1,COUNTER
    4: Site(0x00138830, bytes.fromhex("8d7426 00") + b"\x90" * 12),           # lea 0(%esi),%esi
}
REG = C.REGS


def _record(pid, rnd, **over):
    r = {k: rnd.getrandbits(32) for k in REG}
    r["esp"] = 0x001c0000 + rnd.randrange(0x100, 0xf00) * 4
    r["eflags"] = 0x202 | (rnd.getrandbits(32) & 0x8d5)
    r.update(over)
    r["eip"] = SITES[pid].addr
    stack = (r["esp"] - 8) & M32
    mem = {stack + 4 * i: rnd.getrandbits(32) for i in range(O.STACK_WORDS)}
    ea, state = 0, O.MEM_NONE
    if pid == 2:
        ea, state = r["esp"], O.MEM_READ
    elif pid == 3:
        ea, state = COUNTER, O.MEM_READ
    elif pid == 4:
        ea, state = r["esi"], O.MEM_OUTSIDE
    if state == O.MEM_READ:
        for i in range(O.MEM_WORDS):
            mem.setdefault(ea + 4 * i, rnd.getrandbits(32))
    a, m = dict(r), dict(mem)
    if pid == 1:
        a["esp"] = (r["esp"] - 4) & M32
        m[a["esp"]] = r["ebx"]
    elif pid == 2:
        m[r["esp"]] = r["eax"]
    elif pid == 3:
        old = m[COUNTER]
        new = (old + 1) & M32
        m[COUNTER] = new
        f = a["eflags"] & ~0x8d5
        f |= 0x001 if new == 0 else 0                               # CF
        f |= 0x004 if bin(new & 0xff).count("1") % 2 == 0 else 0    # PF
        f |= 0x010 if (old ^ 1 ^ new) & 0x10 else 0                 # AF
        f |= 0x040 if new == 0 else 0                               # ZF
        f |= 0x080 if new & 0x80000000 else 0                       # SF
        f |= 0x800 if old == 0x7fffffff else 0                      # OF
        a["eflags"] = f
    n = {1: 1, 2: 3, 3: 7, 4: 4}[pid]
    a["eip"] = SITES[pid].addr + n
    w = [r[k] for k in REG] + [a[k] for k in REG] + [n, stack]
    w += [mem[stack + 4 * i] for i in range(O.STACK_WORDS)]
    w += [m[stack + 4 * i] for i in range(O.STACK_WORDS)]
    w += [ea, state]
    w += [mem[ea + 4 * i] if state == O.MEM_READ else 0 for i in range(O.MEM_WORDS)]
    w += [m[ea + 4 * i] if state == O.MEM_READ else 0 for i in range(O.MEM_WORDS)]
    assert len(w) == O.WORDS
    return Rec(pid, tuple(w))


def test_header_layout():
    assert (O.WORDS, O.W_LEN, O.W_STACK, O.W_MEM, O.W_MEM_STATE) == (40, 20, 21, 30, 31)
    assert (O.STACK_WORDS, O.MEM_WORDS) == (4, 4)


def test_correct_records_give_no_mismatches():
    rnd = random.Random(11)
    recs = [_record(pid, rnd) for pid in SITES for _ in range(15)]
    recs += [_record(3, rnd, eflags=0x302)]            # TF set
    rep = C.verify(recs, SITES)
    assert rep.mismatches == [], rep.mismatches[:3]
    assert rep.by_form == {"OOL": len(recs)}


AFTER = {name: C.NREGS + i for i, name in enumerate(C.REGS)}


@pytest.mark.parametrize("pid,index,want", [
    (1, AFTER["esp"], "esp: expected"),                 # the push skipped
    (1, O.W_STACK_AFTER + 1, "stack word at"),          # ebx pushed wrong
    (2, O.W_MEM_AFTER, "memory word at"),               # the store lost
    (3, O.W_MEM_AFTER, "memory word at"),               # the add lost
    (3, AFTER["eflags"], "eflags: expected"),           # a flag not given back
    (3, AFTER["ecx"], "ecx: expected"),                 # a register not given back
    (3, AFTER["eip"], "eip: expected"),                 # the resume one byte off
    (3, O.W_LEN, "length: expected 7 vs actual 8"),     # a copy of the wrong length
])
def test_a_changed_record_is_reported_by_field(pid, index, want):
    good = _record(pid, random.Random(pid))
    w = list(good.words)
    w[index] = (w[index] + 1) & M32
    rep = C.verify([good, Rec(pid, tuple(w))], SITES)
    assert rep.checked == 2 and len(rep.mismatches) == 1, rep.mismatches
    msg = rep.mismatches[0]
    assert msg.startswith(f"probe {pid} at {SITES[pid].addr:#x} OOL: "), msg
    assert want in msg, msg


def test_lea_touches_no_memory_whatever_the_record_says():
    good = _record(4, random.Random(4))
    w = list(good.words)
    w[O.W_MEM], w[O.W_MEM_STATE] = (w[O.W_STACK] + 0x100) & M32, O.MEM_READ
    rep = C.verify([good, Rec(4, tuple(w))], SITES)
    assert rep.mismatches == [] and rep.checked == 2, rep.mismatches


def test_an_access_the_record_does_not_hold_is_reported():
    good = _record(3, random.Random(5))
    w = list(good.words)
    w[O.W_MEM] += 16                    # the counter lies outside the words kept
    (msg,) = C.verify([Rec(3, tuple(w))], SITES).mismatches
    assert "outside the recorded memory" in msg, msg
    w[O.W_MEM_STATE] = O.MEM_OUTSIDE    # and an operand the guest did not read:
    w[O.W_MEM] = COUNTER                # reported, never compared
    rep = C.verify([Rec(3, tuple(w))], SITES)
    assert rep.mismatches == [] and rep.checked == 0, rep.mismatches
    (msg,) = rep.not_compared
    assert "unrecorded" in msg and "outside the RAM the guest reads" in msg, msg


# ---- the guest ----

def _fs_offset(image) -> int:
    """run_firepath's first %fs operand (mov %fs:0x0,%eax: this_cpu())."""
    f = image.functions["run_firepath"]
    return next(i.addr - f.addr for i in f.insns if "%fs" in i.text)


def _run(s, g, spec, line):
    since = len(g.trace_frames)
    s.must("probe clear")
    s.setup(spec, "int3", check=True)
    s.enable(True, strict=True)
    r = s.cmd(f"run {line}")      # the broken slot's fib miscounts its calls
    s.enable(False)
    s.must("trace flush", timeout=120)
    cap = g.capture(since)
    ids = {p.id for p in s.probes}
    firings = sum(e.probe in ids for e in cap.events)
    return r, cap, firings, C.verify(cap.checks, sites.sites_of(s.image, s.probes))


def test_guest_out_of_line_sites_checked_and_a_broken_slot_caught(built):
    built("i386")
    a = arches.get("i386")
    with Guest(a, label="check-ool", gdbstub=True) as g:
        s = open_session(g)
        r, cap, firings, rep = _run(s, g, "insn:fib+*", "fib n=10")
        ool = [c for c in cap.checks if len(c.words) == O.WORDS]
        # the addl/adcl of fib's call counter: memory read and written
        counted = [c for c in ool if c.words[O.W_MEM_STATE] == O.MEM_READ
                   and c.words[O.W_MEM_AFTER] != c.words[O.W_MEM_BEFORE]]
        # A site the record cannot carry (%fs:0, the per-CPU area) is
        # refused in check mode, naming why, and its code stays as it was.
        s.must("probe clear")
        fs_off = _fs_offset(s.image)
        s.setup(f"insn:run_firepath+{fs_off:#x}", "int3", check=True)
        s.enable(True)
        refused = [p.refused for p in s.refused]
        fs_addr = s.image.functions["run_firepath"].addr + fs_off
        flag = s.image.symbols["ool_check_broken"]
        with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
            stub.halt()
            fs_code = stub.read_memory(fs_addr, 6)
            stub.write_memory(flag, (1).to_bytes(4, "little"))
            stub.detach()
        r2, cap2, firings2, rep2 = _run(s, g, "insn:fib+0x12", "fib n=6")
        g.exit(0)
    assert r.ok and rep.mismatches == [], rep.mismatches[:5]
    assert len(refused) == 1 and "check mode: an fs/gs operand" in refused[0], refused
    assert fs_code == s.image.code(fs_addr, 6) and fs_code.startswith(b"\x64"), fs_code.hex()
    assert rep.by_form.get("OOL", 0) > 2000 and len(counted) >= 177, rep.summary()
    assert firings == len(cap.checks) == rep.checked, (firings, len(cap.checks))
    # The broken slot: every record of the addl reported, naming CF alone
    # (the flipped CF reaches the adcl after it: fib's call count is off).
    assert firings2 == len(cap2.checks) == rep2.checked == 25, (firings2, rep2.summary())
    assert len(rep2.mismatches) == 25, rep2.mismatches[:3]
    for m in rep2.mismatches:
        assert " OOL: eflags: expected " in m and m.count(": expected ") == 1, m
        want, got = (int(x, 16) for x in m.split("expected ")[1].split(" vs actual "))
        assert want ^ got == 0x001, m
