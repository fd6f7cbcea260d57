"""Check mode, host half, for i386's jump-optimized probes (`opt`).

Theory of operation. An opt firing emulates nothing: the detour runs copies
of the displaced instructions natively, away from the site, and check mode's
detour records the state before and after them (tracer/arch/i386/opt_check.c)
in a CHECK record of its own layout (check.h's I386_CHECK_OPT): both
register sets, the bytes displaced, and a window of the stack around ESP,
its words before and after. verify_one() runs the site's ORIGINAL bytes
(the ELF's, never the guest's copy) in python3-unicorn at the guest's own
addresses, from the "before" registers over the "before" window, until the
end of the displaced run, and compares:

  - the bytes displaced: whole instructions from the site until at least
    five bytes (the jmp's), decoded here by capstone, against the
    record's length;
  - every register after, EIP included (site + length), EFLAGS as the
    int3 records' (TF cleared for the model and put back, see i386.py);
  - every window word at or above ESP after: the stack the copies leave
    live (below it the detour's own calls wrote, dead stack);
  - every memory access the model made lies inside the window: the guest
    recorded nothing else, so a read elsewhere would be a value the host
    cannot know: the record is reported as not compared ("unrecorded read
    at ADDR", report.py), never guessed, and nothing else of it is
    compared. (The guest refuses such sites in check mode:
    opt_checkable in tracer/arch/i386/opt_check.c.)

Expected values are unicorn's, actual the record's, as for the int3 forms.
One unicorn instance serves up to SiteChecker.RECYCLE records (x86_unicorn.py); every site's code is
written into it once, before anything runs (unicorn 2.0.1 ignores later
code writes, see ref_i386); a record whose window shares a page with site
code, and any record that disagrees, is run again on a fresh instance and
only the fresh result is reported.
"""

from __future__ import annotations

from ..wire import cdefs
from .report import unrecorded
from .x86_unicorn import (I_ESP, M32, NREGS, SiteChecker, SiteModel, disasm,
                          guesses_dropped, hx, reg_diffs)
from .x86_unicorn import pages as _pages

CHECK = cdefs.load("tracer/arch/i386/check.h")
_OPT = {e.name: e.value for e in CHECK.table("I386_CHECK_OPT")}
WORDS = CHECK.const("I386_CHECK_OPT_WORDS")
WINDOW = CHECK.const("I386_CHECK_OPT_WINDOW")
BELOW = CHECK.const("I386_CHECK_OPT_BELOW")
W_LEN, W_WIN = _OPT["OPT_LEN"], _OPT["OPT_WIN"]
W_BEFORE, W_AFTER = _OPT["OPT_BEFORE"], _OPT["OPT_AFTER"]
if (W_LEN != 2 * NREGS or W_AFTER != W_BEFORE + WINDOW
        or WORDS != W_AFTER + WINDOW):
    raise cdefs.CdefsError("check.h: an opt record must be both register sets, "
                           "len, the window's address and its words before "
                           "and after")
MAX_COPY = cdefs.load("tracer/arch/i386/opt.h").const("OPT_MAX_COPY")
JMP_BYTES = 5

FORM = "OPT"


def form_of(code: bytes) -> str:
    """The form a record of this layout checks: an opt detour's, whatever
    the bytes (i386_ool.form_of's twin)."""
    return FORM


def displaced(code: bytes) -> int | str:
    """Bytes the jmp displaces at a site with these bytes: whole
    instructions until at least five; or why there are none."""
    n = 0
    for insn in disasm(code):
        if insn.address != n:
            break
        n += insn.size
        if n >= JMP_BYTES:
            return n if n <= MAX_COPY else (f"{n} bytes of whole instructions, "
                                            f"more than opt displaces ({MAX_COPY})")
    return f"{bytes(code).hex()} holds no {JMP_BYTES} bytes of whole instructions"


def window_pages(w) -> set[int]:
    return _pages(w[W_WIN], 4 * WINDOW)



class Model(SiteModel):
    """One unicorn instance at the guest's addresses: the sites' code,
    and the stack windows written before each run."""

    def run(self, w, site: int, length: int, code_after=None):
        """Registers after, the window's words after, accesses, error."""
        window = b"".join((v & M32).to_bytes(4, "little")
                          for v in w[W_BEFORE:W_BEFORE + WINDOW])
        after, (raw,), accesses, err = self.run_over(
            w, [(w[W_WIN], window)], site, (site + length) & M32, length, code_after)
        win = [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(WINDOW)]
        return after, win, accesses, err


def diffs(w, result) -> list[str]:
    """What differs between unicorn's result and the record."""
    after, win, accesses, err = result
    out = [f"unicorn: {err}"] if err else []
    out += reg_diffs(after, w)
    base, lo, hi = w[W_WIN], w[W_WIN], (w[W_WIN] + 4 * WINDOW) & M32
    outside = [unrecorded(kind, address, size, f"outside the recorded window "
                          f"{hx(lo)}..{hx(hi)}")
               for kind, address, size in accesses
               if not (lo <= address and address + size <= hi)]
    if outside:
        return guesses_dropped(out, outside)
    esp = after[I_ESP]
    for i in range(WINDOW):
        a = (base + 4 * i) & M32
        got = w[W_AFTER + i]
        if a >= esp and win[i] != got:
            out.append(f"stack word at {hx(a)} (esp{a - esp:+#x}): expected "
                       f"{hx(win[i])} vs actual {hx(got)}")
    return out


class Checker(SiteChecker):
    """verify()'s state for opt records (x86_unicorn.SiteChecker)."""

    Model = Model
    LENGTH_WORD = W_LEN
    LENGTH_NAME = "displaced bytes"
    measure = staticmethod(displaced)
    touched = staticmethod(window_pages)
    diffs = staticmethod(diffs)
