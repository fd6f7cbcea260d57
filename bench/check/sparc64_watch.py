"""Check mode for sparc64 watches: every load or store the guest emulated
on a watched page (tracer/arch/sparc64/watch.c, its CHECK records with
check.h's SPARC64_WCHECK words), run again in python3-unicorn's SPARC64
mode from the state before, rd and the memory compared with the after.

A record's instruction runs once, alone (`count`), at the code page of
its (word, %asi) pair: unicorn caches translations by address and never
notices a rewrite (ref_sparc64.py), so a word keeps its address, and an
ASI form that takes %asi from the register (i = 1) is preceded by `wr
%g0, asi, %asi` at its own address. The memory it touches is an 8 KiB
page mapped at the guest's own effective address, written with the
before value; rs1, rs2 and rd are written with reg_write. unicorn runs
unprivileged, so an ASI_N (0x04) form would trap privileged_action: such
records are counted apart as not re-executed, never as passing.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field

from unicorn import (UC_ARCH_SPARC, UC_HOOK_INTR, UC_MODE_BIG_ENDIAN,
                     UC_MODE_SPARC64, Uc, UcError)
from unicorn import sparc_const as S

from ..wire import cdefs

CHECK = cdefs.load("tracer/arch/sparc64/check.h")
W = {e.name: e.value for e in CHECK.table("SPARC64_WCHECK")}
NWORDS = len(W)
PAGE = 0x2000
CODE = 0x1000000                  # one 8 KiB page per (word, asi)
_REGS = [getattr(S, f"UC_SPARC_REG_{k}{n}") for k in "GOLI" for n in range(8)]

NAMES = {0x00: "lduw", 0x01: "ldub", 0x02: "lduh", 0x04: "stw", 0x05: "stb",
         0x06: "sth", 0x08: "ldsw", 0x09: "ldsb", 0x0a: "ldsh", 0x0b: "ldx",
         0x0d: "ldstub", 0x0e: "stx", 0x0f: "swap", 0x3c: "casa", 0x3e: "casxa"}
SIZES = {0x00: 4, 0x01: 1, 0x02: 2, 0x04: 4, 0x05: 1, 0x06: 2, 0x08: 4, 0x09: 1,
         0x0a: 2, 0x0b: 8, 0x0d: 1, 0x0e: 8, 0x0f: 4, 0x3c: 4, 0x3e: 8}


def op3(word: int) -> int:
    return word >> 19 & 0x3f


def name(word: int) -> str:
    o = op3(word)
    base = o if o >= 0x3c else o & 0x2f
    return NAMES.get(base, f"op3 {o:#x}") + ("a" if 0x10 <= o < 0x20 else "")


def size(word: int) -> int:
    o = op3(word)
    return SIZES[o if o >= 0x3c else o & 0x2f]


def uses_asi_register(word: int) -> bool:
    o = op3(word)
    return (0x10 <= o < 0x20 or o >= 0x3c) and bool(word >> 13 & 1)


def asi_of(word: int, asi_register: int) -> int | None:
    o = op3(word)
    if not (0x10 <= o < 0x20 or o >= 0x3c):
        return None
    return asi_register if word >> 13 & 1 else word >> 5 & 0xff


def _wr_asi(asi: int) -> int:          # wr %g0, asi, %asi
    return 2 << 30 | 3 << 25 | 0x30 << 19 | 1 << 13 | asi & 0x1fff


@dataclass
class Report:
    checked: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)

    def summary(self) -> str:
        n = sum(self.checked.values())
        classes = ", ".join(f"{k} {v}" for k, v in sorted(self.checked.items()))
        s = (f"check: {n} watched accesses re-executed in unicorn ({classes}), "
             f"{len(self.mismatches)} mismatches")
        if self.skipped:
            s += "; not re-executed: " + ", ".join(f"{k} {v}" for k, v in
                                                   sorted(self.skipped.items()))
        return s


class Model:
    def __init__(self):
        self.uc = Uc(UC_ARCH_SPARC, UC_MODE_SPARC64 | UC_MODE_BIG_ENDIAN)
        self.code: dict = {}
        self.pages: set[int] = set()
        self.traps: list[int] = []
        traps = self.traps
        self.uc.hook_add(UC_HOOK_INTR, lambda uc, intno, user: (traps.append(intno),
                                                               uc.emu_stop()))

    def _code_at(self, word: int, asi: int | None) -> tuple[int, int]:
        key = (word, asi)
        if key not in self.code:
            at = CODE + len(self.code) * PAGE
            self.uc.mem_map(at, PAGE)
            words = ([_wr_asi(asi)] if asi is not None else []) + [word]
            self.uc.mem_write(at, struct.pack(f">{len(words)}I", *words))
            self.code[key] = (at, len(words))
        return self.code[key]

    def run(self, w) -> tuple[int, int]:
        """(rd, memory) after the instruction, from the record's before."""
        word, ea, sz = w[W["INSN"]], w[W["EA"]], size(w[W["INSN"]])
        page = ea & ~(PAGE - 1)
        if page not in self.pages:
            self.uc.mem_map(page, PAGE)
            self.pages.add(page)
        fmt = {1: ">B", 2: ">H", 4: ">I", 8: ">Q"}[sz]
        self.uc.mem_write(ea, struct.pack(fmt, w[W["MEM_BEFORE"]]))
        rs1, rs2, rd = word >> 14 & 31, word & 31, word >> 25 & 31
        imm = bool(word >> 13 & 1) and op3(word) < 0x3c     # casa's rs2 is a register
        regs = [(rs1, w[W["RS1"]])] + ([] if imm else [(rs2, w[W["RS2"]])]) + \
            [(rd, w[W["RD_BEFORE"]])]
        for r, v in regs:
            if r:
                self.uc.reg_write(_REGS[r], v)
        at, n = self._code_at(word, w[W["ASI"]] if uses_asi_register(word) else None)
        self.traps.clear()
        self.uc.emu_start(at, 1, count=n)
        if self.traps:
            raise UcError(0)
        got_rd = self.uc.reg_read(_REGS[rd]) if rd else 0
        got_mem = struct.unpack(fmt, self.uc.mem_read(ea, sz))[0]
        return got_rd, got_mem


def verify(checks, watch_ids: set[int]) -> Report:
    rep = Report()
    model = None
    for ev in checks:
        if ev.probe not in watch_ids:
            continue
        w = ev.words
        if len(w) != NWORDS:
            rep.mismatches.append(f"watch {ev.probe}: a CHECK record of {len(w)} words, "
                                  f"not {NWORDS}")
            continue
        word = w[W["INSN"]]
        cls = name(word)
        asi = asi_of(word, w[W["ASI"]])
        if asi is not None and asi < 0x80:
            rep.skipped[f"{cls} ASI {asi:#x} (privileged in unicorn)"] += 1
            continue
        model = model or Model()
        try:
            rd, mem = model.run(w)
        except UcError as e:
            rep.mismatches.append(f"watch {ev.probe} {cls} {word:#010x} at ea "
                                  f"{w[W['EA']]:#x}: unicorn stopped ({e}, traps "
                                  f"{model.traps})")
            continue
        rep.checked[cls] += 1
        for field_, want, got in (("rd", rd, w[W["RD_AFTER"]]),
                                  ("memory", mem, w[W["MEM_AFTER"]])):
            if want != got:
                rep.mismatches.append(f"watch {ev.probe} {cls} {word:#010x} at ea "
                                      f"{w[W['EA']]:#x}: {field_}: expected {want:#x} "
                                      f"vs actual {got:#x}")
    return rep
