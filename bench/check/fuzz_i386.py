"""Fuzzing the IA-32 probe emulator against unicorn (bench/check/fuzz.py
drives it): the guest's own tracer/arch/i386/emulate.c, compiled for the
host (bench/check/c/i386_emulate_run.c), and python3-unicorn
(bench/check/ref_i386.py) run the same random states, and every register,
EIP, EFLAGS and stack access must agree.

A state is one site's bytes (each emulated form; the fused prologue in both
encodings, ret imm16 and enter with random immediates; the indirect call
and jmp with every ModRM/SIB shape, random displacements, now and then a
notrack/ds prefix), random registers, the arithmetic flags at random (no
TF/IF games), ESP and (for leave) EBP anywhere in a 64 KiB window, and the
word any read returns (a stack word, or the target an indirect form loads
through its operand, wherever that lies: the model maps its page for the
one run, operand_address). Sites move downwards through the code area 16
bytes apart, because unicorn 2.0.1's translation cache ignores code
rewritten in place (ref_i386).
"""

from __future__ import annotations

import random
import struct
import subprocess

from . import hostc, ref_i386
from .ref_i386 import CODE_BASE, REGS, STACK_BASE, STACK_SIZE

CLASSES = ("PUSH_EBP", "PUSH_EBP_MOV", "POP_EBP", "LEAVE", "RET", "RET_IMM",
           "ENTER", "NOP", "JMP_REL", "JCC", "CALL_REL", "CALL_IND", "JMP_IND")
# The runner, the emulator, and insn.c (its ModRM/SIB operand decoding).
SOURCES = ["bench/check/c/i386_emulate_run.c", "tracer/arch/i386/emulate.c",
           "tracer/arch/i386/insn.c"]
INCLUDES = ("include", "tracer/arch/i386")

FLAGS_MASK = 0x0cd5            # CF PF AF ZF SF DF OF: no TF/IF games
IN_REC = struct.Struct("<8s10II")
OUT_REC = struct.Struct("<i10I6I")


def _indirect(form, rnd):
    """FF /2 or /4 with a random ModRM (every mod and rm), SIB and
    displacement, a 3e prefix one time in five: at most 8 bytes."""
    mod, rm = rnd.randrange(4), rnd.randrange(8)
    code = bytes([0xff, mod << 6 | (2 if form == "CALL_IND" else 4) << 3 | rm])
    base = rm
    if mod != 3 and rm == 4:
        code += bytes([rnd.getrandbits(8)])
        base = code[2] & 7
    disp = 1 if mod == 1 else 4 if mod == 2 or (mod == 0 and base == 5) else 0
    code += rnd.getrandbits(8 * disp).to_bytes(disp, "little") if disp else b""
    if rnd.randrange(5) == 0:
        code = b"\x3e" + code
    return code + b"\x90" * (8 - len(code))


def operand_address(code: bytes, regs: dict) -> list[int]:
    """Where an indirect form's operand lies, computed here apart from the
    C (which unicorn judges): [address], or [] for a register operand or
    any other form. Only tells the model which page to map."""
    c = code[1:] if code[0] == 0x3e else code
    if c[0] != 0xff or c[1] >> 6 == 3:
        return []
    mod, rm, at = c[1] >> 6, c[1] & 7, 2
    gpr = [regs[r] for r in REGS[:8]]
    a = 0
    if rm == 4:
        sib, at = c[2], 3
        if (sib >> 3) & 7 != 4:
            a += gpr[(sib >> 3) & 7] << (sib >> 6)
        if mod == 0 and sib & 7 == 5:
            mod = 2
        else:
            a += gpr[sib & 7]
    elif mod == 0 and rm == 5:
        mod = 2
    else:
        a += gpr[rm]
    if mod == 1:
        a += int.from_bytes(c[at:at + 1], "little", signed=True)
    elif mod == 2:
        a += int.from_bytes(c[at:at + 4], "little", signed=True)
    return [a & 0xffffffff]


def _code(form, rnd):
    if form in ("CALL_IND", "JMP_IND"):
        return _indirect(form, rnd)
    lo, hi = rnd.getrandbits(8), rnd.getrandbits(8)
    rel32 = rnd.getrandbits(32).to_bytes(4, "little")
    if form in ("JMP_REL", "JCC", "CALL_REL"):
        short = form != "CALL_REL" and rnd.getrandbits(1)
        op = {"JMP_REL": (b"\xeb", b"\xe9"), "CALL_REL": (b"", b"\xe8"),
              "JCC": (bytes([0x70 | lo & 15]), bytes([0x0f, 0x80 | lo & 15]))}[form]
        code = op[0] + bytes([hi]) if short else op[1] + rel32
        return code + b"\x90" * (8 - len(code))
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


def run_c(exe, states):
    data = b"".join(IN_REC.pack(code, *(regs[r] for r in REGS), word)
                    for code, regs, word in states)
    out = subprocess.run([str(exe)], input=data, capture_output=True, check=True).stdout
    return [OUT_REC.unpack_from(out, i) for i in range(0, len(out), OUT_REC.size)]


def diffs(want, reads, writes, res):
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
    """(mismatches, states compared) between emulator results and the
    model. A disagreement with the long-lived model is judged again against
    a fresh one (see ref_i386 on unicorn's translation cache) before it
    counts; the walk stops at `limit` mismatches."""
    model = ref_i386.Reference()
    count = COUNT.get(form, 1)
    bad, compared = [], 0
    for (code, regs, word), res in zip(states, results):
        compared += 1
        data = operand_address(code, regs)
        found = diffs(*model.run(code, regs, word, count, data), res)
        if found:
            found = diffs(*ref_i386.Reference.fresh(code, regs, word, count, data), res)
        if found:
            bad.append(f"{form} {code.hex()} from "
                       f"{ {k: hex(v) for k, v in regs.items()} } word {word:#x}: "
                       + "; ".join(found))
            if len(bad) >= limit:
                break
    return bad, compared


def chunk(args) -> tuple[list[str], dict]:
    """n random states of one form from one seed, through the emulator and
    the model: (mismatches, counts). A worker of bench/check/fuzz.py."""
    exe, form, seed, n = args
    rnd = random.Random(seed)
    states = [_state(form, rnd, i) for i in range(n)]
    bad, compared = _compare(form, states, run_c(exe, states))
    return bad, {"compared": compared, "instances": 1}


def runner():
    """The emulator as a host program (built if needed)."""
    return hostc.build("i386_emulate_run", SOURCES, INCLUDES)


def decode(exe, code: bytes) -> str:
    """decode's verdict on the bytes: 'kind ...' or 'refused ...'."""
    return subprocess.run([str(exe), "decode", code.hex()], capture_output=True,
                          text=True, check=True).stdout.strip()
