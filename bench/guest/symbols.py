"""Addresses to names, from the guest ELF's symbol table (python3-pyelftools).

Used to annotate program counters in trap dumps ("EIP 0x00102ad0" gains
"crash_ud+0x0") so a failure names the code without a manual addr2line.
Function and object symbols with a size are used; an address between
symbols resolves to the nearest symbol below it, marked with '?'.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache
from pathlib import Path

from elftools.elf.elffile import ELFFile


class Symbols:
    def __init__(self, elf_path: Path):
        entries = []
        with open(elf_path, "rb") as f:
            elf = ELFFile(f)
            symtab = elf.get_section_by_name(".symtab")
            for sym in symtab.iter_symbols() if symtab else ():
                if sym["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT", "STT_NOTYPE") \
                        and sym.name and not sym.name.startswith(".L") \
                        and sym["st_shndx"] != "SHN_UNDEF":
                    entries.append((sym["st_value"], sym["st_size"], sym.name))
        entries.sort()
        self._addrs = [e[0] for e in entries]
        self._entries = entries

    def lookup(self, addr: int) -> str | None:
        i = bisect.bisect_right(self._addrs, addr) - 1
        if i < 0:
            return None
        start, size, name = self._entries[i]
        # Prefer a sized symbol that covers addr over a label at the same spot.
        j = i
        while j >= 0 and self._entries[j][0] == start:
            if self._entries[j][1] and addr < start + self._entries[j][1]:
                return f"{self._entries[j][2]}+{addr - start:#x}"
            j -= 1
        return f"{name}+{addr - start:#x}?"

    def lookup_or(self, addr: int) -> str:
        return self.lookup(addr) or "?"


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> Symbols:
    return Symbols(Path(path))


def for_elf(path: Path) -> Symbols | None:
    try:
        return _load(str(path), path.stat().st_mtime)
    except (OSError, Exception):      # no ELF, or not one pyelftools reads
        return None


def annotate(line: str, registers: tuple[str, ...], syms: Symbols | None) -> str:
    """Append ' <sym+off>' after each 'REG 0xADDR' of the named registers."""
    if not syms or not registers:
        return line
    pattern = r"\b(" + "|".join(map(re.escape, registers)) + r")\s+0x([0-9a-fA-F]+)"
    return re.sub(pattern,
                  lambda m: f"{m.group(0)} <{syms.lookup_or(int(m.group(2), 16))}>",
                  line)
