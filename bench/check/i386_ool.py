"""Check mode, host half, for i386's out-of-line sites (`OOL`).

Theory of operation. An out-of-line firing emulates nothing: the probe's
slot runs a copy of the displaced instruction natively, and check mode's
slot ends the copy with an int3 whose trap records the state after it
(tracer/arch/i386/ool_check.c), in a CHECK record of its own layout
(check.h's I386_CHECK_OOL): both register sets, the instruction's length,
a window of stack words around ESP before, and the instruction's memory
operand — the address the guest computed, whether it read the words there,
and those words before and after. verify_one() runs the site's ORIGINAL
bytes (the ELF's, never the guest's copy) in python3-unicorn at the guest's
own addresses, from the "before" registers over the "before" memory, for
one instruction, and compares:

  - the length: capstone's decoding of the site's bytes against the
    record's (a copy of the wrong length would resume elsewhere);
  - every register after, EIP included (site + length), EFLAGS as the
    int3 records' (TF cleared for the model and put back, see i386.py);
  - the stack window's words and the operand's words that lie at or
    above ESP after (below it the int3's frame wrote: dead stack);
  - every memory access the model made lies inside what the guest
    recorded: an access elsewhere would read a value the host cannot
    know, and it is reported, never guessed; an access to an operand the
    guest did not read (outside RAM) makes the record one not compared
    ("unrecorded read at ADDR", report.py).

Expected values are unicorn's, actual the record's, as for the int3 forms.

The guest's emulated indirect call and jmp (`call *table(,%eax,4)`, `jmp
*%eax`) write this layout too (tracer/arch/i386/check.c): they touch the
word their operand names and, a call, the stack word it pushes. Their
records are counted as CALL_IND and JMP_IND (form_of), and every run stops
where the guest says the instruction went (the record's EIP after: site +
length for a copy, the target for a transfer): unicorn stops there at
translation time (i386.py), and a guest that went elsewhere is stopped by
the count of one instruction and shows in EIP.

One unicorn instance serves up to SiteChecker.RECYCLE records (x86_unicorn.py); every site's code is
written into it once, before anything runs (unicorn 2.0.1 ignores later
code writes, see ref_i386); a record whose memory shares a page with site
code, and any record that disagrees, is run again on a fresh instance and
only the fresh result is reported.
"""

from __future__ import annotations

from ..wire import cdefs
from .report import unrecorded
from .x86_unicorn import (I_EIP, I_ESP, M32, NREGS, SiteChecker, SiteModel, disasm,
                          guesses_dropped, hx, reg_diffs)
from .x86_unicorn import pages as _pages

CHECK = cdefs.load("tracer/arch/i386/check.h")
_OOL = {e.name: e.value for e in CHECK.table("I386_CHECK_OOL")}
WORDS = CHECK.const("I386_CHECK_OOL_WORDS")
STACK_WORDS = CHECK.const("I386_CHECK_OOL_STACK_WORDS")
MEM_WORDS = CHECK.const("I386_CHECK_OOL_MEM_WORDS")
W_LEN, W_STACK = _OOL["OOL_LEN"], _OOL["OOL_STACK"]
W_STACK_BEFORE, W_STACK_AFTER = _OOL["OOL_STACK_BEFORE"], _OOL["OOL_STACK_AFTER"]
W_MEM, W_MEM_STATE = _OOL["OOL_MEM"], _OOL["OOL_MEM_STATE"]
W_MEM_BEFORE, W_MEM_AFTER = _OOL["OOL_MEM_BEFORE"], _OOL["OOL_MEM_AFTER"]
if (W_LEN != 2 * NREGS or W_STACK_AFTER != W_STACK_BEFORE + STACK_WORDS
        or W_MEM_AFTER != W_MEM_BEFORE + MEM_WORDS or WORDS != W_MEM_AFTER + MEM_WORDS):
    raise cdefs.CdefsError("check.h: an out-of-line record must be both register "
                           "sets, len, the stack window and the operand's words "
                           "before and after")
MEM_NONE, MEM_READ, MEM_OUTSIDE = 0, 1, 2

FORM = "OOL"
# Below ESP after, this far, is the stack the second trap's frame and its
# handler's calls wrote: dead, never compared.
DEAD = 0x10000


def length(code: bytes) -> int | str:
    """The length of the first instruction of code, or why there is none."""
    for insn in disasm(code):
        return insn.size
    return f"{bytes(code[:4]).hex()} does not decode"


def form_of(code: bytes) -> str:
    """The form a record of this layout checks at a site of these bytes:
    CALL_IND or JMP_IND for an indirect near call or jmp, else OOL."""
    for insn in disasm(code):
        if insn.mnemonic in ("call", "jmp") and not insn.op_str.startswith("0x"):
            return "CALL_IND" if insn.mnemonic == "call" else "JMP_IND"
        break
    return FORM


def _to_bytes(ws) -> bytes:
    return b"".join((v & M32).to_bytes(4, "little") for v in ws)


def regions(w) -> list[tuple[int, bytes, bytes]]:
    """What the guest recorded: (address, bytes before, bytes after)."""
    out = [(w[W_STACK], _to_bytes(w[W_STACK_BEFORE:W_STACK_BEFORE + STACK_WORDS]),
            _to_bytes(w[W_STACK_AFTER:W_STACK_AFTER + STACK_WORDS]))]
    if w[W_MEM_STATE] == MEM_READ:
        out.append((w[W_MEM], _to_bytes(w[W_MEM_BEFORE:W_MEM_BEFORE + MEM_WORDS]),
                    _to_bytes(w[W_MEM_AFTER:W_MEM_AFTER + MEM_WORDS])))
    return out


def memory_pages(w) -> set[int]:
    return set().union(*(_pages(a, len(b)) for a, b, _ in regions(w)))



class Model(SiteModel):
    """One unicorn instance at the guest's addresses: the sites' code, and
    the recorded memory written before each run."""

    def run(self, w, site: int, n: int, code_after=None):
        """Registers after, each region's bytes after, accesses, error."""
        memory = [(a, b) for a, b, _ in regions(w)]
        until = w[NREGS + I_EIP] & M32      # where the guest went (above)
        return self.run_over(w, memory, site, until, 1, code_after)


def _inside(address, size, spans) -> bool:
    return any(a <= address and address + size <= a + len(b) for a, b in spans)


def diffs(w, result) -> list[str]:
    """What differs between unicorn's result and the record."""
    after, mem, accesses, err = result
    out = [f"unicorn: {err}"] if err else []
    out += reg_diffs(after, w)
    regs = regions(w)
    spans = [(a, b) for a, b, _ in regs]
    not_held, astray = [], []
    for kind, address, size in accesses:
        if _inside(address, size, spans):
            continue
        if w[W_MEM_STATE] == MEM_OUTSIDE and _inside(address, size,
                                                     [(w[W_MEM], bytes(4 * MEM_WORDS))]):
            not_held.append(unrecorded(kind, address, size, "the memory operand, "
                                       "outside the RAM the guest reads"))
        else:       # the guest recorded an operand, and not this one: a mismatch
            astray.append(f"{kind} of {size} bytes at {hx(address)}, outside the "
                          f"recorded memory")
    if not_held and not astray:
        return guesses_dropped(out, not_held)
    out += astray + not_held
    esp = after[I_ESP]
    for what, (base, _, got), want in zip(("stack word", "memory word"), regs, mem):
        for i in range(0, len(got), 4):
            a = (base + i) & M32
            if a < esp and esp - a < DEAD:
                continue                # dead stack: the int3's frame and calls
            g = int.from_bytes(got[i:i + 4], "little")
            e = int.from_bytes(want[i:i + 4], "little")
            if g != e:
                out.append(f"{what} at {hx(a)}: expected {hx(e)} vs actual {hx(g)}")
    return out


class Checker(SiteChecker):
    """verify()'s state for out-of-line records (x86_unicorn.SiteChecker)."""

    Model = Model
    LENGTH_WORD = W_LEN
    LENGTH_NAME = "length"
    measure = staticmethod(length)
    touched = staticmethod(memory_pages)
    diffs = staticmethod(diffs)
