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
    cannot know, and it is reported, never guessed.

Expected values are unicorn's, actual the record's, as for the int3 forms.
One unicorn instance serves up to SiteChecker.RECYCLE records (x86_unicorn.py); every site's code is
written into it once, before anything runs (unicorn 2.0.1 ignores later
code writes, see ref_i386); a record whose window shares a page with site
code, and any record that disagrees, is run again on a fresh instance and
only the fresh result is reported.
"""

from __future__ import annotations

from capstone import CS_ARCH_X86, CS_MODE_32, Cs
from unicorn import UcError
from unicorn import x86_const as X

from ..wire import cdefs
from .x86_unicorn import M32, Machine, SiteChecker
from .x86_unicorn import pages as _pages
from .x86_unicorn import runs as _runs

CHECK = cdefs.load("tracer/arch/i386/check.h")
_TABLE = sorted(CHECK.table("I386_CHECK_REGS"), key=lambda e: e.value)
_OPT = {e.name: e.value for e in CHECK.table("I386_CHECK_OPT")}
NREGS = CHECK.const("I386_CHECK_NREGS")
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

REGS = tuple(e.meaning for e in _TABLE)
_UC = tuple(getattr(X, f"UC_X86_REG_{e.name}") for e in _TABLE)
I_EIP = next(e.value for e in _TABLE if e.name == "EIP")
I_ESP = next(e.value for e in _TABLE if e.name == "ESP")
I_EFLAGS = next(e.value for e in _TABLE if e.name == "EFLAGS")

FORM = "OPT"
TF = 0x100


def _hx(v: int) -> str:
    return f"{v:#010x}"


_CS = None


def displaced(code: bytes) -> int | str:
    """Bytes the jmp displaces at a site with these bytes: whole
    instructions until at least five; or why there are none."""
    global _CS
    if _CS is None:
        _CS = Cs(CS_ARCH_X86, CS_MODE_32)
    n = 0
    for insn in _CS.disasm(bytes(code), 0):
        if insn.address != n:
            break
        n += insn.size
        if n >= JMP_BYTES:
            return n if n <= MAX_COPY else (f"{n} bytes of whole instructions, "
                                            f"more than opt displaces ({MAX_COPY})")
    return f"{bytes(code).hex()} holds no {JMP_BYTES} bytes of whole instructions"


def window_pages(w) -> set[int]:
    return _pages(w[W_WIN], 4 * WINDOW)



class Model(Machine):
    """One unicorn instance at the guest's addresses: the sites' code,
    and the stack windows written before each run."""

    def _on_read(self, uc, access, address, size, value, user):
        self.accesses.append(("read", address, size))

    def _on_write(self, uc, access, address, size, value, user):
        self.accesses.append(("write", address, size))

    def _on_unmapped(self, uc, access, address, size, value, user):
        self.accesses.append(("unmapped access", address, size))
        return False

    def run(self, w, site: int, length: int, code_after=None):
        """Registers after, the window's words after, accesses, error."""
        self.accesses = []
        base = w[W_WIN]
        self.map(window_pages(w))
        self.uc.mem_write(base, b"".join((v & M32).to_bytes(4, "little")
                                         for v in w[W_BEFORE:W_BEFORE + WINDOW]))
        for a, b in _runs(code_after or {}):
            self.uc.mem_write(a, b)
        before = list(w[:NREGS])
        before[I_EFLAGS] &= ~TF & M32
        for reg, v in zip(_UC, before):
            self.uc.reg_write(reg, v & M32)
        err = None
        try:
            self.uc.emu_start(site, (site + length) & M32, count=length)
        except UcError as e:
            err = str(e)
        after = [self.uc.reg_read(reg) & M32 for reg in _UC]
        after[I_EFLAGS] |= w[I_EFLAGS] & TF
        raw = bytes(self.uc.mem_read(base, 4 * WINDOW))
        win = [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(WINDOW)]
        return after, win, list(self.accesses), err


def diffs(w, result) -> list[str]:
    """What differs between unicorn's result and the record."""
    after, win, accesses, err = result
    out = [f"unicorn: {err}"] if err else []
    out += [f"{name}: expected {_hx(want)} vs actual {_hx(got)}"
            for name, want, got in zip(REGS, after, w[NREGS:2 * NREGS])
            if want != got]
    base, lo, hi = w[W_WIN], w[W_WIN], (w[W_WIN] + 4 * WINDOW) & M32
    for kind, address, size in accesses:
        if not (lo <= address and address + size <= hi):
            out.append(f"{kind} of {size} bytes at {_hx(address)}, outside the "
                       f"recorded window {_hx(lo)}..{_hx(hi)}")
    esp = after[I_ESP]
    for i in range(WINDOW):
        a = (base + 4 * i) & M32
        got = w[W_AFTER + i]
        if a >= esp and win[i] != got:
            out.append(f"stack word at {_hx(a)} (esp{a - esp:+#x}): expected "
                       f"{_hx(win[i])} vs actual {_hx(got)}")
    return out


class Checker(SiteChecker):
    """verify()'s state for opt records (x86_unicorn.SiteChecker)."""

    Model = Model
    LENGTH_WORD = W_LEN
    LENGTH_NAME = "displaced bytes"
    measure = staticmethod(displaced)
    touched = staticmethod(window_pages)
    diffs = staticmethod(diffs)
