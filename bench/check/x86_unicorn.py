"""One 32-bit x86 unicorn instance at the guest's own addresses, as the
i386 checkers use it (check mode's emulated forms, bench/check/i386.py;
opt's detours, i386_opt.py; out-of-line slots, i386_ool.py): the pages an
access needs, a byte map of code written as contiguous runs, the
registers of a record's state written and read back, and the three access
hooks, which each checker defines for what it records (SiteModel: the one
both site checkers share). And SiteChecker, the state both record kinds
that re-run a site's own bytes (opt's and out-of-line's) keep across a
verify(): one instance shared by many records, a fresh one to confirm a
mismatch.

Registers: a record's state is check.h's I386_CHECK_REGS, in that order
(REGS names them, I_* index them). EFLAGS is compared whole, with one
adjustment measured on unicorn 2.0.1: with TF (bit 8) set, unicorn raises
a #DB exception after the instruction (UC_ERR_EXCEPTION) instead of
completing it. No instruction a checker runs reads or writes TF, so the
model runs with TF clear and puts the recorded TF back into its result
(set_regs, get_regs). Unicorn also forces bit 1 (reserved, always 1 on a
real CPU) on; a record with bit 1 clear is a real mismatch and is
reported."""

from __future__ import annotations

from capstone import CS_ARCH_X86, CS_MODE_32, Cs
from unicorn import (UC_ARCH_X86, UC_HOOK_MEM_READ, UC_HOOK_MEM_UNMAPPED,
                     UC_HOOK_MEM_WRITE, UC_MODE_32, Uc, UcError)
from unicorn import x86_const as X
from unicorn.unicorn_const import UC_MEM_READ_UNMAPPED, UC_MEM_WRITE_UNMAPPED

from ..wire import cdefs

# An unmapped data access is a read or a write like any other (a fetch
# stays what it is): memory the record does not hold either way.
_UNMAPPED = {UC_MEM_READ_UNMAPPED: "read", UC_MEM_WRITE_UNMAPPED: "write"}

PAGE = 0x1000
M32 = 0xffffffff
TF = 0x100

CHECK = cdefs.load("tracer/arch/i386/check.h")
_TABLE = sorted(CHECK.table("I386_CHECK_REGS"), key=lambda e: e.value)
NREGS = CHECK.const("I386_CHECK_NREGS")
if [e.value for e in _TABLE] != list(range(NREGS)):
    raise cdefs.CdefsError("check.h: I386_CHECK_REGS must number 0..NREGS-1")
REGS = tuple(e.meaning for e in _TABLE)           # field names: eax ... eflags
UC_REGS = tuple(getattr(X, f"UC_X86_REG_{e.name}") for e in _TABLE)
I_EIP, I_ESP, I_EBP, I_EFLAGS = (next(e.value for e in _TABLE if e.name == n)
                                 for n in ("EIP", "ESP", "EBP", "EFLAGS"))


def hx(v: int) -> str:
    return f"{v:#010x}"


def reg_diffs(after, w) -> list[str]:
    """The model's registers after against the record's "after" state."""
    return [f"{name}: expected {hx(want)} vs actual {hx(got)}"
            for name, want, got in zip(REGS, after, w[NREGS:2 * NREGS]) if want != got]


_CS = None


def disasm(code: bytes):
    """capstone's 32-bit x86 decoding of code from offset 0."""
    global _CS
    if _CS is None:
        _CS = Cs(CS_ARCH_X86, CS_MODE_32)
    return _CS.disasm(bytes(code), 0)


def pages(addr: int, size: int) -> set[int]:
    """Every page [addr, addr + size) touches, in the 32-bit space."""
    first = addr & M32 & ~(PAGE - 1)
    last = (addr + size - 1) & M32 & ~(PAGE - 1)
    return set(range(first, last + PAGE, PAGE))


def runs(code: dict[int, int]):
    """Byte map -> contiguous (address, bytes) runs."""
    out, start, buf, prev = [], None, bytearray(), None
    for a in sorted(code):
        if prev is not None and a == prev + 1:
            buf.append(code[a])
        else:
            if buf:
                out.append((start, bytes(buf)))
            start, buf = a, bytearray([code[a]])
        prev = a
    if buf:
        out.append((start, bytes(buf)))
    return out


class Machine:
    """code mapped and written; _on_read, _on_write and _on_unmapped are
    the subclass's (unicorn's hook signatures)."""

    def __init__(self, code: dict[int, int], need: set[int]):
        self.uc = Uc(UC_ARCH_X86, UC_MODE_32)
        self.mapped: set[int] = set()
        self.map(need)
        for a, b in runs(code):
            self.uc.mem_write(a, b)
        self.uc.hook_add(UC_HOOK_MEM_READ, self._on_read)
        self.uc.hook_add(UC_HOOK_MEM_WRITE, self._on_write)
        self.uc.hook_add(UC_HOOK_MEM_UNMAPPED, self._on_unmapped)

    def map(self, need):
        for p in sorted(set(need) - self.mapped):
            self.uc.mem_map(p, PAGE)
            self.mapped.add(p)

    def set_regs(self, w):
        """The record's "before" registers, TF clear (above)."""
        before = list(w[:NREGS])
        before[I_EFLAGS] &= ~TF & M32
        for reg, v in zip(UC_REGS, before):
            self.uc.reg_write(reg, v & M32)

    def get_regs(self, w) -> list[int]:
        """The registers now, with the record's TF put back."""
        after = [self.uc.reg_read(reg) & M32 for reg in UC_REGS]
        after[I_EFLAGS] |= w[I_EFLAGS] & TF
        return after


class SiteModel(Machine):
    """The site checkers' instance: every access logged as (kind,
    address, size), and a run over memory the record holds."""

    def _on_read(self, uc, access, address, size, value, user):
        self.accesses.append(("read", address, size))

    def _on_write(self, uc, access, address, size, value, user):
        self.accesses.append(("write", address, size))

    def _on_unmapped(self, uc, access, address, size, value, user):
        self.accesses.append((_UNMAPPED.get(access, "unmapped access"), address, size))
        return False

    def run_over(self, w, memory, site: int, until: int, count: int, code_after=None):
        """Run from the record's "before" registers at site, over memory
        ((address, bytes) written first; then code_after's bytes), until
        `until` or count instructions: registers after, each memory
        span's bytes after, the accesses, unicorn's error (or None)."""
        self.accesses = []
        self.map(set().union(set(), *(pages(a, len(b)) for a, b in memory)))
        for a, b in memory:
            self.uc.mem_write(a, b)
        for a, b in runs(code_after or {}):
            self.uc.mem_write(a, b)
        self.set_regs(w)
        err = None
        try:
            self.uc.emu_start(site, until, count=count)
        except UcError as e:
            err = str(e)
        after = self.get_regs(w)
        return after, [bytes(self.uc.mem_read(a, len(b))) for a, b in memory], \
            list(self.accesses), err


def site_pages(addr: int, n: int) -> set[int]:
    """The pages of n code bytes at addr and of the byte a run stops at."""
    return pages(addr, n + 1)


class SiteChecker:
    """verify()'s state for records whose site's own bytes are re-run: the
    sites' code in one byte map, one Model instance shared by up to
    RECYCLE records, and a mismatch confirmed on an instance with no past.
    A record whose memory shares a page with code runs on a fresh instance
    at once (its memory would be written over the code, or the code over
    it). The subclass names Model (a Machine with run(w, site, n,
    code_after)), measure(code) -> the run's length in bytes or why not,
    touched(w) -> the pages of the record's memory, diffs(w, result),
    LENGTH_WORD (the record's index of the length the guest ran) and
    LENGTH_NAME (how a mismatch of it is named)."""

    RECYCLE = 10000
    LENGTH_WORD = 0
    LENGTH_NAME = "length"

    def __init__(self, sites):
        self.code: dict[int, int] = {}
        self.lengths: dict[int, int | str] = {}
        for s in sites.values():
            for i, b in enumerate(bytes(s.code)):
                self.code.setdefault((s.addr + i) & M32, b)
        self.code_pages = set().union(set(), *(site_pages(s.addr, len(s.code))
                                               for s in sites.values()))
        self.shared, self.runs = None, 0

    def length(self, pid, site) -> int | str:
        if pid not in self.lengths:
            self.lengths[pid] = self.measure(site.code)
        return self.lengths[pid]

    def fresh(self, site, w, n: int):
        """A run on an instance with no past, the site's code written after
        the record's memory (it wins should they share bytes)."""
        own = {(site.addr + i) & M32: b for i, b in enumerate(bytes(site.code))}
        return self.Model({}, site_pages(site.addr, len(site.code))).run(w, site.addr, n, own)

    def verify_one(self, pid, site, w) -> list[str]:
        """Mismatches of one record (empty: it agrees)."""
        n = self.length(pid, site)
        if isinstance(n, str):
            return [n]
        out = []
        if w[self.LENGTH_WORD] != n:
            out.append(f"{self.LENGTH_NAME}: expected {n} vs actual {w[self.LENGTH_WORD]}")
        if self.touched(w) & self.code_pages:
            return out + self.diffs(w, self.fresh(site, w, n))
        if self.shared is None or self.runs >= self.RECYCLE:
            self.shared, self.runs = self.Model(self.code, self.code_pages), 0
        self.runs += 1
        d = self.diffs(w, self.shared.run(w, site.addr, n))
        if d:                           # confirm on an instance with no past
            d = self.diffs(w, self.fresh(site, w, n))
        return out + d


def guesses_dropped(out: list[str], unrecorded: list[str]) -> list[str]:
    """A record's diffs when its run touched memory it does not hold
    (unrecorded, report.unrecorded's lines): those alone, since every
    register and word compared after such a read is a guess; else out."""
    return unrecorded or out
