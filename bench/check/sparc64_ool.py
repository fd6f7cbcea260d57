"""Check mode, host half, for sparc64's out-of-line sites (`OOL`).

Theory of operation. An out-of-line firing emulates nothing: the retry
runs a copy of the displaced word from the probe's slot, and check mode's
slot ends the copy with an ILLTRAP whose trap records the state after it
(tracer/arch/sparc64/ool_check.c), in a CHECK record of its own length
(check.h's SPARC64_CHECK_OOL): both register states — PC, nPC, CCR, %y,
%fsr and r1..r31 of the trapped window — and, for a load or store, the
effective address the guest computed, whether it read the doublewords
from it rounded down to 8, and those before and after. verify_one() runs
the site's ORIGINAL word (the ELF's, never the guest's copy) in
python3-unicorn (ref_sparc64.Reference.run_ool) from the "before" state
over the "before" doublewords mapped at the guest's own addresses, and
compares:

  - PC and nPC after: the word's own pc + 4 and + 8, moved from the
    model's page to the site (no word an out-of-line slot runs reads the
    PC: ool.c refuses `rd %pc`);
  - r1..r31, CCR and %y as unicorn left them; %fsr's fcc fields unchanged
    (no word checked here writes them: FP words are refused in the guest);
  - the effective address: the model's own rs1 + simm13|rs2 against the
    record's; the doublewords after;
  - every data access the model made lies inside the recorded doublewords:
    an access elsewhere would read a value the host cannot know, and it is
    reported, never guessed; one to memory the guest found unmapped makes
    the record one not compared ("unrecorded read at ADDR", report.py).

A word that traps in the model (a misaligned access, which the guest
would have stopped on) is reported. Expected values are unicorn's, actual
the record's, as for the emulations (sparc64.py, which dispatches here by
record length). A record that disagrees is run again on a fresh instance,
and only that result is reported.
"""

from __future__ import annotations

from unicorn import UcError

from ..wire import cdefs
from .ref_sparc64 import ModelError, Reference, slot
from .report import unrecorded

CHECK = cdefs.load("tracer/arch/sparc64/check.h")
_TABLE = sorted(CHECK.table("SPARC64_CHECK_REGS"), key=lambda e: e.value)
_OOL = {e.name: e.value for e in CHECK.table("SPARC64_CHECK_OOL")}
NREGS = CHECK.const("SPARC64_CHECK_NREGS")
R0 = CHECK.const("SPARC64_CHECK_R0")
WORDS = CHECK.const("SPARC64_CHECK_OOL_WORDS")
MEM_WORDS = CHECK.const("SPARC64_CHECK_OOL_MEM_WORDS")
W_MEM, W_MEM_STATE = _OOL["OOL_MEM"], _OOL["OOL_MEM_STATE"]
W_MEM_BEFORE, W_MEM_AFTER = _OOL["OOL_MEM_BEFORE"], _OOL["OOL_MEM_AFTER"]
if (W_MEM != 2 * NREGS or W_MEM_STATE != W_MEM + 1 or W_MEM_BEFORE != W_MEM_STATE + 1
        or W_MEM_AFTER != W_MEM_BEFORE + MEM_WORDS or WORDS != W_MEM_AFTER + MEM_WORDS):
    raise cdefs.CdefsError("check.h: an out-of-line record must be both states, "
                           "the address, its state and the doublewords before and after")
MEM_NONE, MEM_READ, MEM_UNMAPPED = 0, 1, 2

NAMES = tuple(e.meaning for e in _TABLE)
I_PC, I_NPC, I_CCR, I_Y, I_FSR = (next(e.value for e in _TABLE if e.name == n)
                                  for n in ("PC", "NPC", "CCR", "Y", "FSR"))
FCC_MASK = 0x3f_0000_0c00          # fcc3..fcc1 (bits 37:32), fcc0 (11:10)
U64 = (1 << 64) - 1
FORM = "OOL"


def effective_address(word: int, regs) -> int | None:
    """A load/store's rs1 + simm13|rs2 on regs (32 values), or None."""
    if word >> 30 != 3:
        return None
    if word >> 13 & 1:
        b = (word & 0x1fff) - ((word & 0x1000) << 1)
    else:
        b = regs[word & 0x1f]
    return (regs[word >> 14 & 0x1f] + b) & U64


def _span(w):
    """The recorded doublewords: (address, bytes before, bytes after), or None."""
    if w[W_MEM_STATE] != MEM_READ:
        return None
    base = w[W_MEM] & ~7
    pack = lambda ws: b"".join((v & U64).to_bytes(8, "big") for v in ws)   # noqa: E731
    return (base, pack(w[W_MEM_BEFORE:W_MEM_BEFORE + MEM_WORDS]),
            pack(w[W_MEM_AFTER:W_MEM_AFTER + MEM_WORDS]))


class Model:
    """Reference.run_ool at the top window's slots, one after another."""

    def __init__(self):
        self.ref = Reference()
        self.n = 0

    def close(self):
        self.ref.close()

    def diffs(self, word: int, site: int, w, ref=None) -> list[str]:
        ref = ref or self.ref
        at = slot(2 * self.n + 1)                   # odd: the top window
        self.n += 1
        before = w[:NREGS]
        regs = (0, *before[R0 + 1:R0 + 32])
        out = []
        ea = effective_address(word, regs)
        if (ea or 0) != w[W_MEM]:
            out.append(f"address: expected {ea or 0:#x} vs actual {w[W_MEM]:#x}")
        if (w[W_MEM_STATE] == MEM_NONE) != (ea is None):
            out.append(f"memory state {w[W_MEM_STATE]} for a word that is "
                       f"{'no' if ea is None else 'a'} load or store")
        address_ok = not out            # the guest's own address and state agree
        span = _span(w)
        memory = [(span[0], span[1])] if span else []
        try:
            pc, npc, got, ccr, y, mem, accesses = ref.run_ool(
                word, at, regs, before[I_CCR], before[I_FSR], before[I_Y], memory)
        except ModelError as e:
            return out + [f"unicorn: {e}, which the guest would have stopped on"]
        except UcError as e:
            if w[W_MEM_STATE] == MEM_UNMAPPED and address_ok:
                return [unrecorded("access", w[W_MEM], 8, f"memory the guest found "
                                   f"unmapped ({e})")]
            return out + [f"unicorn: {e}: an access outside the memory the guest "
                          f"recorded ({w[W_MEM_STATE] == MEM_UNMAPPED and 'unmapped' or 'none'})"]
        after = w[NREGS:2 * NREGS]
        want = {I_PC: (pc - at + site) & U64, I_NPC: (npc - at + site) & U64,
                I_CCR: ccr, I_Y: y}
        want.update({R0 + r: got[r] for r in range(1, 32)})
        for f, v in want.items():
            if v != after[f]:
                out.append(f"{NAMES[f]}: expected {v:#x} vs actual {after[f]:#x}")
        if (after[I_FSR] ^ before[I_FSR]) & FCC_MASK:
            out.append(f"fsr fcc: expected {before[I_FSR] & FCC_MASK:#x} (unchanged) "
                       f"vs actual {after[I_FSR] & FCC_MASK:#x}")
        not_held = []
        for kind, address, size in accesses:
            if span and span[0] <= address and address + size <= span[0] + len(span[1]):
                continue
            if w[W_MEM_STATE] == MEM_UNMAPPED:
                not_held.append(unrecorded(kind, address, size, "memory the guest "
                                           "found unmapped"))
            else:
                out.append(f"{kind} of {size} bytes at {address:#x}, outside the "
                           f"recorded memory")
        if not_held and address_ok:
            return not_held             # every value after is a guess: not compared
        out += not_held
        if span:
            for i in range(0, len(span[2]), 8):
                e = int.from_bytes(mem[0][i:i + 8], "big")
                g = int.from_bytes(span[2][i:i + 8], "big")
                if e != g:
                    out.append(f"memory at {span[0] + i:#x}: expected {e:#018x} "
                               f"vs actual {g:#018x}")
        return out

    def verify_one(self, word: int, site: int, w) -> list[str]:
        """The differences, confirmed on a fresh instance if any."""
        out = self.diffs(word, site, w)
        if out:
            fresh = Reference()
            try:
                out = self.diffs(word, site, w, fresh)
            finally:
                fresh.close()
        return out
