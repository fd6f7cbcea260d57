"""One 32-bit x86 unicorn instance at the guest's own addresses, as both
i386 checkers use it (check mode's emulated forms, bench/check/i386.py;
opt's detours, bench/check/i386_opt.py): the pages an access needs, a
byte map of code written as contiguous runs, and the three access hooks,
which each checker defines for what it records."""

from __future__ import annotations

from unicorn import (UC_ARCH_X86, UC_HOOK_MEM_READ, UC_HOOK_MEM_UNMAPPED,
                     UC_HOOK_MEM_WRITE, UC_MODE_32, Uc)

PAGE = 0x1000
M32 = 0xffffffff


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
