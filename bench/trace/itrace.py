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
    return _Replay(region, cursor, data, insns, order, where).run()


class _Replay:
    """One record's steps replayed against the ELF: a method per kind of
    step byte (STEPS, in wire.h's WIRE_ITRACE_STEPS order), each moving the
    cursor and the read position past its step."""

    def __init__(self, region: Region, cursor: int, data: bytes, insns: InsnTable,
                 order: str, where: str):
        self.region, self.cursor, self.data = region, cursor, data
        self.insns, self.where = insns, where
        self.bo = "little" if order == "<" else "big"
        self.i = 0

    def run(self) -> int:
        while self.i < len(self.data):
            b = self.data[self.i]
            step = next((f for lo, hi, f in self.STEPS if lo <= b < hi), None)
            if step is None:
                self.problem(f"unknown step byte {b:#04x}; the rest "
                             "of the record is skipped")
                break
            step(self, b)
        return self.cursor

    # ---- what the steps share ----

    def problem(self, what: str) -> None:
        self.region.problems.append(f"{self.where}: {what}")

    def addr_at(self, k: int) -> int:
        return int.from_bytes(self.data[k:k + ADDR_BYTES], self.bo)

    def one(self, at: int, what: str) -> None:
        if self.insns.length(at) is None:
            self.problem(f"{what} at {at:#x}, which is no instruction of the ELF")
        self.region.addrs.append(at)

    def ran_ahead(self, what: str) -> int:
        """next: the instruction described last ran at the cursor; its length."""
        region, cursor = self.region, self.cursor
        elf_n = self.insns.length(cursor)
        if region.ahead is None or region.ahead[0] != cursor:
            self.problem(f"{what} with no instruction described at {cursor:#x}")
            self.one(cursor, what)
            return elf_n or 1
        code = region.ahead[1]
        self.one(cursor, what)
        elf = self.insns.image.code(cursor, elf_n) if elf_n else b""
        if code != elf:
            self.problem(f"the code read ahead at {cursor:#x} "
                         f"({code.hex()}) is not the ELF's ({elf.hex()})")
        region.ahead = None
        return len(code)

    def emulated_here(self) -> None:
        """A probe's trap emulated at the cursor: what was read ahead there
        is its trap, not the code."""
        region = self.region
        if region.ahead is None:
            return
        if region.ahead[0] == self.cursor and region.ahead[1] in TRAP_BYTES:
            region.ahead_traps += 1
        else:
            self.problem(f"a probe emulated at {self.cursor:#x}, the "
                         f"read-ahead described {region.ahead[1].hex()} "
                         f"at {region.ahead[0]:#x}")
        region.ahead = None

    # ---- the steps ----

    def next_seq(self, b: int) -> None:
        """next: the described instruction ran and fell through; the next
        one's bytes follow."""
        n = b - S.NEXT_SEQ
        self.cursor += self.ran_ahead("a step")
        self.region.ahead = (self.cursor, self.data[self.i + 1:self.i + 1 + n])
        self.i += 1 + n

    def next_jump(self, b: int) -> None:
        n = b - S.NEXT_JUMP
        self.ran_ahead("a jump")
        self.cursor = self.addr_at(self.i + 1)
        k = self.i + 1 + ADDR_BYTES
        self.region.ahead = (self.cursor, self.data[k:k + n]) if n else None
        self.i = k + n

    def next_at(self, b: int) -> None:
        n = b - S.NEXT_AT
        region = self.region
        if region.ahead is not None:
            self.problem(f"an instruction described at {self.cursor:#x} before "
                         f"the one at {region.ahead[0]:#x} ran")
        region.ahead = (self.cursor, self.data[self.i + 1:self.i + 1 + n])
        self.i += 1 + n

    def seq(self, b: int) -> None:
        """previous: an instruction of n bytes ran and fell through."""
        n = b - S.SEQ + 1
        cursor = self.cursor
        self.one(cursor, "a step")
        if self.insns.length(cursor) not in (None, n):
            self.problem(f"step of {n} bytes at {cursor:#x}, "
                         f"the ELF's instruction is {self.insns.length(cursor)}")
        self.cursor += n
        self.i += 1

    def jump(self, b: int) -> None:
        """previous: a transfer, its code and where it went."""
        i, cursor = self.i, self.cursor
        code = self.data[i + 1:i + 1 + INSN_BYTES]
        nxt = self.addr_at(i + 1 + INSN_BYTES)
        self.one(cursor, "a jump")
        n = self.insns.length(cursor) or 1
        elf = self.insns.image.code(cursor, n)
        if code[:n] != elf:
            self.problem(f"the code that ran at {cursor:#x} "
                         f"({code[:n].hex()}) is not the ELF's ({elf.hex()})")
        self.cursor = nxt
        self.i += 1 + INSN_BYTES + ADDR_BYTES

    def emulated(self, b: int) -> None:
        """A span a probe's trap emulated: the ELF's instructions over it."""
        self.emulated_here()
        end = self.cursor + (b - S.EMUL)
        while self.cursor < end:
            self.one(self.cursor, "an emulated instruction")
            self.region.emulated += 1
            self.cursor += self.insns.length(self.cursor) or (end - self.cursor)
        if self.cursor != end:
            self.problem(f"an emulated span ends inside an instruction at {end:#x}")
        self.cursor = end
        self.i += 1

    def emulated_jump(self, b: int) -> None:
        self.emulated_here()
        self.one(self.cursor, "an emulated jump")
        self.region.emulated += 1
        self.cursor = self.addr_at(self.i + 1)
        self.i += 1 + ADDR_BYTES

    def out(self, b: int) -> None:
        """A call out of the traced code, back at the address given."""
        self.region.calls_out += 1
        self.region.outs.add(len(self.region.addrs) - 1)
        self.cursor = self.addr_at(self.i + 1)
        self.i += 1 + ADDR_BYTES

    def far(self, b: int) -> None:
        """address: an instruction, then a far move of the cursor."""
        self.one(self.cursor, "an address")
        self.cursor = self.addr_at(self.i + 1)
        self.i += 1 + ADDR_BYTES

    def near(self, b: int) -> None:
        self.one(self.cursor, "an address")
        self.cursor += b - S.NEAR - 16
        self.i += 1

    # (first byte, last byte + 1, step), tried in this order
    STEPS = ((S.NEXT_SEQ + 1, S.NEXT_SEQ + 16, next_seq),
             (S.NEXT_JUMP, S.NEXT_JUMP + 16, next_jump),
             (S.NEXT_AT + 1, S.NEXT_AT + 16, next_at),
             (S.SEQ, S.SEQ + INSN_BYTES, seq),
             (S.JUMP, S.JUMP + 1, jump),
             (S.EMUL + 1, S.EMUL + 16, emulated),
             (S.EMUL_JUMP, S.EMUL_JUMP + 1, emulated_jump),
             (S.OUT, S.OUT + 1, out),
             (S.FAR, S.FAR + 1, far),
             (S.NEAR, S.NEAR + 64, near))


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
