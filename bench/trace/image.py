"""The guest ELF as the tracer's host side sees it: functions, their
instructions, their argument counts, the text bytes.

Symbols and sizes come from .symtab (python3-pyelftools), instructions from
the arch's objdump (arches.Arch.objdump), signatures from DWARF (types.py:
the parameters' names and types, and which record words hold them). An
Image knows its arch from the ELF header (arches.by_elf_machine), so
whatever reads it asks the arch, never the ELF, about arch rules.

Which functions a probe glob may match: a user's own workload file when
one is linked in (its objects sit between __user_workload_start and
__user_workload_end), else the built-in workloads (__workload_text_start
.. __workload_text_end); an exact name may be any function of the kernel.
A name the ELF has that no probe may take (a function outside .text, the
firmware's; an assembly label without a function type and size) is in
Image.unprobeable with the reason, for the refusal to give.
"""

from __future__ import annotations

import bisect
import re
import subprocess
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from elftools.elf.elffile import ELFFile

from .. import arches
from ..errors import BenchError
from .types import Signature, signatures


@dataclass
class Insn:
    addr: int
    raw: bytes
    text: str          # mnemonic and operands, as objdump prints them

    @property
    def mnemonic(self) -> str:
        return self.text.split()[0] if self.text else ""


@dataclass
class Function:
    name: str
    addr: int
    size: int
    insns: list[Insn] = field(default_factory=list)
    signature: Signature | None = None

    @property
    def nargs(self) -> int:
        """Argument words an entry probe should record."""
        return self.signature.nwords if self.signature else 0


_INSN = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*(?:\t(.*))?$")
_FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
_TARGET = re.compile(r"^(?:j\w+|call\w*|loop\w*)\s+([0-9a-f]+)\b")


@dataclass
class Image:
    """What the host knows about one guest ELF."""
    path: Path
    functions: dict[str, Function]
    branch_targets: set[int]
    symbols: dict[str, int]
    text: bytes
    text_addr: int
    arch: arches.Arch
    word_bytes: int = 4          # the ELF's class: 4 (i386) or 8 (sparc64)
    objects: dict = field(default_factory=dict)   # data symbol: (addr, size)
    unprobeable: dict = field(default_factory=dict)   # name: why no probe may take it
    code_functions: frozenset = frozenset()   # every STT_FUNC, wherever it lives

    @cached_property
    def by_start(self) -> dict[int, Function]:
        return {f.addr: f for f in self.functions.values()}

    @cached_property
    def starts(self) -> list[int]:
        return sorted(self.by_start)

    def code(self, addr: int, n: int = 8) -> bytes:
        off = addr - self.text_addr
        return self.text[off:off + n]

    def function_at(self, addr: int) -> Function | None:
        """The function whose bytes hold addr, if any."""
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0:
            f = self.by_start[self.starts[i]]
            if addr < f.addr + max(f.size, 1):
                return f
        return None

    def signature_of(self, name: str) -> Signature | None:
        f = self.functions.get(name)
        return f.signature if f is not None else None

    def workload_functions(self) -> list[Function]:
        """What a glob matches (see the top of this file)."""
        lo = self.symbols.get("__user_workload_start", 0)
        hi = self.symbols.get("__user_workload_end", 0)
        if lo == hi:
            lo = self.symbols.get("__workload_text_start", 0)
            hi = self.symbols.get("__workload_text_end", 0)
        return [f for f in self.functions.values() if lo <= f.addr < hi]


@lru_cache(maxsize=4)
def _load_image(path: str, mtime: float) -> Image:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        arch = arches.by_elf_machine(elf["e_machine"])
        symtab = elf.get_section_by_name(".symtab")
        symbols = {s.name: s["st_value"] for s in symtab.iter_symbols() if s.name}
        sizes = {s.name: s["st_size"] for s in symtab.iter_symbols()
                 if s.name and s["st_info"]["type"] == "STT_FUNC"}
        objects = {s.name: (s["st_value"], s["st_size"]) for s in symtab.iter_symbols()
                   if s.name and s["st_info"]["type"] == "STT_OBJECT"}
        homes = {s.name: elf.get_section(s["st_shndx"]).name
                 for s in symtab.iter_symbols() if s.name
                 and s["st_info"]["type"] == "STT_FUNC"
                 and isinstance(s["st_shndx"], int)}
        text = elf.get_section_by_name(".text")
        text_bytes, text_addr = text.data(), text["sh_addr"]
        word_bytes = elf.elfclass // 8
        sigs = signatures(elf, word_bytes, arch.arg_registers, arch.arg_location)
    try:
        out = subprocess.run([arch.objdump, "-d", "-j", ".text", "-w", path],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise BenchError(f"cannot disassemble {path} with {arch.objdump}: {e}") from None
    functions: dict[str, Function] = {}
    labels: set[str] = set()
    targets: set[int] = set()
    cur: Function | None = None
    for line in out.splitlines():
        m = _FUNC.match(line)
        if m:
            name = m.group(2)
            cur = None
            if name in sizes:
                cur = Function(name, int(m.group(1), 16), sizes[name])
                cur.signature = sigs.get(cur.addr)
                functions[name] = cur
            else:
                labels.add(name)
            continue
        m = _INSN.match(line)
        if not m:
            continue
        addr, raw, text_ = int(m.group(1), 16), bytes.fromhex(m.group(2)), m.group(3) or ""
        t = _TARGET.match(text_)
        if t:
            targets.add(int(t.group(1), 16))
        if cur and addr < cur.addr + cur.size:
            cur.insns.append(Insn(addr, raw, text_.strip()))
    unprobeable = _unprobeable(functions, labels, homes)
    return Image(Path(path), functions, targets, symbols, text_bytes, text_addr, arch,
                 word_bytes, objects, unprobeable, frozenset(homes))


def _unprobeable(functions: dict, labels: set, homes: dict) -> dict[str, str]:
    """Why each code symbol that is no Function cannot be probed."""
    why = {name: (f"a function in {home}, outside the kernel's .text: the tracer "
                  "patches kernel text only (the firmware's code runs before it "
                  "and under it)")
           for name, home in homes.items() if name not in functions and home != ".text"}
    for name in labels - functions.keys():
        if not name.startswith("."):
            why[name] = ("a label in .text without a function type and size in the "
                         "symbol table (an assembly entry point): where it ends, and so "
                         "its returns, is unknown")
    return why


def load_image(elf: Path) -> Image:
    try:
        mtime = Path(elf).stat().st_mtime
    except OSError as e:
        raise BenchError(f"no guest ELF at {elf}: {e}") from None
    return _load_image(str(elf), mtime)
