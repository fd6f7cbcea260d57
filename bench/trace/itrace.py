"""Instruction traces: ITRACE records back into the instructions each
thread executed, region by region.

A region is one thread's run of a function from its entry probe to the
matching return (tracer/arch/i386/itrace.c). Its records carry a byte
stream of steps (wire.h WIRE_ITRACE_STEPS), each saying what ran at a
cursor and where the cursor goes next; the first record's CURSOR is the
function's entry and each record's CURSOR is where the one before left
off. This module replays the steps against the ELF:

  previous (method 4): a length is checked against the ELF's instruction
      there; a jump's 15 bytes of code are checked against the ELF's bytes
      (the code that ran is the code the image holds);
  address (method 3): each address must be an instruction of the ELF, which
      resolves it (no memory-map records are needed: the kernel's text is
      the ELF's, loaded once, never moved);
  next (what method 4 is measured against): each step says that the
      instruction described last ran and describes the one about to run
      (its bytes, read ahead by the guest; its address implicit when the
      last fell through); the described bytes are checked against the ELF
      when the step saying they ran comes, and a described instruction that
      a probe's trap then emulated must be that probe's trap byte(s) (what
      a read-ahead finds at a probed site: counted as ahead_traps);
  emulated spans (a probe's trap ran them) are the ELF's instructions from
      the cursor over the span's bytes.

A record lost or out of order shows as a break in a region's SEQ numbers or
CURSOR chain: it is a problem of the region (named, with where), and the
replay resynchronises on the next record's CURSOR. Records of a region come
from whichever CPU ran the thread; the capture's cycle order (one TSC on
every vCPU) puts them in order, SEQ checks it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from ..wire.frames import WIRE

K_ITRACE = WIRE.by_name("WIRE_EVENT_KINDS")["ITRACE"].value
W = SimpleNamespace(**{e.name: e.value for e in WIRE.table("WIRE_ITRACE_WORDS")})
F = SimpleNamespace(**{e.name: e.value for e in WIRE.table("WIRE_ITRACE_FLAGS")})
S = SimpleNamespace(**{e.name: e.value for e in WIRE.table("WIRE_ITRACE_STEPS")})
METHODS = {e.meaning: e.value for e in WIRE.table("WIRE_ITRACE_METHODS")}
METHOD_WORDS = {v: k for k, v in METHODS.items()}
ADDR_BYTES = WIRE.const("WIRE_ITRACE_ADDR_BYTES")
# What a read-ahead finds at a probed site: int3, or ud2 (fbt.c's two traps).
TRAP_BYTES = (b"\xcc", b"\x0f\x0b")
INSN_BYTES = WIRE.const("WIRE_ITRACE_INSN_BYTES")


@dataclass
class Region:
    thread: int
    probe: int
    method: int
    cpus: set = field(default_factory=set)
    addrs: list[int] = field(default_factory=list)     # instructions, in order
    emulated: int = 0                   # of them, run by a probe's emulation
    calls_out: int = 0                  # calls out of the traced text
    outs: set = field(default_factory=set)  # indexes in addrs of those calls
    records: int = 0
    wire_bytes: int = 0                 # records' bytes as sent
    ended: str = ""                     # "return", "left", or "" (still open)
    problems: list[str] = field(default_factory=list)
    cycles: int = 0                     # its first record's
    ahead: tuple | None = None          # next: (address, bytes) described last
    ahead_traps: int = 0                # next: read-aheads that found a probe's trap


class InsnTable:
    """The ELF's instructions by address (bench/trace/image.py)."""

    def __init__(self, image):
        self.image = image
        self.by_addr = {i.addr: i for f in image.functions.values() for i in f.insns}

    def length(self, addr: int) -> int | None:
        i = self.by_addr.get(addr)
        return len(i.raw) if i else None

    def mnemonic(self, addr: int) -> str:
        i = self.by_addr.get(addr)
        return i.mnemonic if i else ""


def _record_bytes(ev, order: str, word_bytes: int) -> bytes:
    info = ev.words[W.INFO]
    n = info & 0xffff
    bo = "little" if order == "<" else "big"
    data = b"".join(w.to_bytes(word_bytes, bo) for w in ev.words[W.DATA:])
    return data[:n]


def _replay(region: Region, cursor: int, data: bytes, insns: InsnTable,
            order: str, where: str) -> int:
    """Apply one record's steps from cursor; returns the cursor after them."""
    bo = "little" if order == "<" else "big"
    i = 0

    def addr_at(k: int) -> int:
        return int.from_bytes(data[k:k + ADDR_BYTES], bo)

    def one(at: int, what: str) -> None:
        if insns.length(at) is None:
            region.problems.append(f"{where}: {what} at {at:#x}, which is no "
                                   "instruction of the ELF")
        region.addrs.append(at)

    def ran_ahead(what: str) -> int:
        """next: the instruction described last ran at the cursor; its length."""
        elf_n = insns.length(cursor)
        if region.ahead is None or region.ahead[0] != cursor:
            region.problems.append(f"{where}: {what} with no instruction described "
                                   f"at {cursor:#x}")
            one(cursor, what)
            return elf_n or 1
        code = region.ahead[1]
        one(cursor, what)
        elf = insns.image.code(cursor, elf_n) if elf_n else b""
        if code != elf:
            region.problems.append(f"{where}: the code read ahead at {cursor:#x} "
                                   f"({code.hex()}) is not the ELF's ({elf.hex()})")
        region.ahead = None
        return len(code)

    def emulated_here() -> None:
        """A probe's trap emulated at the cursor: what was read ahead there
        is its trap, not the code."""
        if region.ahead is None:
            return
        if region.ahead[0] == cursor and region.ahead[1] in TRAP_BYTES:
            region.ahead_traps += 1
        else:
            region.problems.append(f"{where}: a probe emulated at {cursor:#x}, the "
                                   f"read-ahead described {region.ahead[1].hex()} "
                                   f"at {region.ahead[0]:#x}")
        region.ahead = None

    while i < len(data):
        b = data[i]
        if S.NEXT_SEQ < b < S.NEXT_SEQ + 16:
            n = b - S.NEXT_SEQ
            cursor += ran_ahead("a step")
            region.ahead = (cursor, data[i + 1:i + 1 + n])
            i += 1 + n
        elif S.NEXT_JUMP <= b < S.NEXT_JUMP + 16:
            n = b - S.NEXT_JUMP
            ran_ahead("a jump")
            cursor = addr_at(i + 1)
            k = i + 1 + ADDR_BYTES
            region.ahead = (cursor, data[k:k + n]) if n else None
            i = k + n
        elif S.NEXT_AT < b < S.NEXT_AT + 16:
            n = b - S.NEXT_AT
            if region.ahead is not None:
                region.problems.append(f"{where}: an instruction described at "
                                       f"{cursor:#x} before the one at "
                                       f"{region.ahead[0]:#x} ran")
            region.ahead = (cursor, data[i + 1:i + 1 + n])
            i += 1 + n
        elif S.SEQ <= b < S.SEQ + INSN_BYTES:
            n = b - S.SEQ + 1
            one(cursor, "a step")
            if insns.length(cursor) not in (None, n):
                region.problems.append(f"{where}: step of {n} bytes at {cursor:#x}, "
                                       f"the ELF's instruction is {insns.length(cursor)}")
            cursor += n
            i += 1
        elif b == S.JUMP:
            code = data[i + 1:i + 1 + INSN_BYTES]
            nxt = addr_at(i + 1 + INSN_BYTES)
            one(cursor, "a jump")
            n = insns.length(cursor) or 1
            elf = insns.image.code(cursor, n)
            if code[:n] != elf:
                region.problems.append(f"{where}: the code that ran at {cursor:#x} "
                                       f"({code[:n].hex()}) is not the ELF's ({elf.hex()})")
            cursor = nxt
            i += 1 + INSN_BYTES + ADDR_BYTES
        elif S.EMUL < b < S.EMUL + 16:
            emulated_here()
            end = cursor + (b - S.EMUL)
            while cursor < end:
                one(cursor, "an emulated instruction")
                region.emulated += 1
                cursor += insns.length(cursor) or (end - cursor)
            if cursor != end:
                region.problems.append(f"{where}: an emulated span ends inside an "
                                       f"instruction at {end:#x}")
            cursor = end
            i += 1
        elif b == S.EMUL_JUMP:
            emulated_here()
            one(cursor, "an emulated jump")
            region.emulated += 1
            cursor = addr_at(i + 1)
            i += 1 + ADDR_BYTES
        elif b == S.OUT:
            region.calls_out += 1
            region.outs.add(len(region.addrs) - 1)
            cursor = addr_at(i + 1)
            i += 1 + ADDR_BYTES
        elif b == S.FAR:
            one(cursor, "an address")
            cursor = addr_at(i + 1)
            i += 1 + ADDR_BYTES
        elif S.NEAR <= b < S.NEAR + 64:
            one(cursor, "an address")
            cursor += b - S.NEAR - 16
            i += 1
        else:
            region.problems.append(f"{where}: unknown step byte {b:#04x}; the rest "
                                   "of the record is skipped")
            break
    return cursor


def regions(events, image, order: str, word_bytes: int,
            insns: InsnTable | None = None) -> list[Region]:
    """Every region in the capture's ITRACE records, in order of their start."""
    insns = insns or InsnTable(image)
    open_: dict[int, tuple[Region, int, int]] = {}     # thread: region, seq, cursor
    out: list[Region] = []
    for ev in events:
        if ev.kind != K_ITRACE:
            continue
        info = ev.words[W.INFO]
        flags = info >> 24
        seq, cur = ev.words[W.SEQ], ev.words[W.CURSOR]
        size = 16 + len(ev.words) * word_bytes
        if flags & F.START:
            if ev.thread in open_:
                r0 = open_[ev.thread][0]
                r0.problems.append(f"thread {ev.thread}: a region started before "
                                   "this one ended (its last record was lost)")
            r = Region(ev.thread, ev.probe, (info >> 16) & 0xff, cycles=ev.cycles)
            out.append(r)
            want_seq, cursor = 0, cur
        elif ev.thread in open_:
            r, want_seq, cursor = open_[ev.thread]
        else:
            r = Region(ev.thread, ev.probe, (info >> 16) & 0xff, cycles=ev.cycles)
            r.problems.append(f"thread {ev.thread}: records with no START record "
                              f"(record {seq} first): lost")
            out.append(r)
            want_seq, cursor = seq, cur
        where = f"thread {ev.thread} record {seq}"
        if seq != want_seq:
            r.problems.append(f"{where}: expected record {want_seq} "
                              f"({'lost, or late' if seq > want_seq else 'out of order: it came late'})")
        if cur != cursor:
            r.problems.append(f"{where}: starts at {cur:#x}, the last one left "
                              f"off at {cursor:#x}")
            r.ahead = None          # what was described went with the lost record
        r.records += 1
        r.wire_bytes += size
        r.cpus.add(ev.cpu)
        cursor = _replay(r, cur, _record_bytes(ev, order, word_bytes), insns,
                         order, where)
        if flags & (F.END | F.LEFT):
            r.ended = "return" if flags & F.END else "left"
            open_.pop(ev.thread, None)
        else:
            open_[ev.thread] = (r, seq + 1, cursor)
    for r, _, _ in open_.values():
        r.problems.append(f"thread {r.thread}: the region has no last record "
                          "(lost, or it never returned)")
    return out
