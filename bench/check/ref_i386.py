"""python3-unicorn as an independent model of the IA-32 instructions that
probes emulate.

Reference.run() executes real machine code from a given register state and
returns the state after it, with every data read and write it made. The
guest's emulator (tracer/arch/i386/emulate.c) is checked against it: in
host fuzz tests now, and in check mode, from recorded pre-states, later.

Data reads see one chosen 32-bit value: the read hook stores it at the
address about to be read, whatever that address is, so the model needs no
knowledge of which address an instruction reads. It needs the address
mapped: the stack area is, and a load through an operand anywhere (an
indirect call's or jmp's target) has its pages mapped for that run alone
(run's `data`), then unmapped, so a wrong address still meets nothing.

Three things about unicorn 2.0 the model has to handle:
- it caches translated code by address and notices neither later writes
  to those bytes nor unmapping them; dropping the cache with
  ctl_remove_cache crashes 2.0.1 after some thousands of calls. So the
  model ends the code it writes with `jmp .` (which ends a translation, so
  none covers more than the code and those two bytes), remembers every
  range it has run, and starts a fresh instance before writing code over
  one. Callers that never reuse an address pay nothing for it. Even so,
  an instance that ran many states was seen (once in 10^6) to execute
  something else than the code in memory, probably a translation made at a
  random jump target before code was written there; so an unexplained
  error is retried once on a fresh instance, and fresh() gives callers a
  single-use instance to confirm any disagreement before reporting it;
- an unaligned access that crosses a page is reported once whole and again
  as its aligned pieces; the pieces overlap the first report and are not
  accesses of their own;
- a run limited to its count still translates the block at the address
  execution reached before it stops there, and translating some byte
  sequences aborts the whole process ("tcg fatal error": FF D8, a far
  call through a register, is one, unicorn issue #1716). A relative
  jump's target is random, and it often lands inside an earlier state's
  random rel32; so the model overwrites the code of every state it has
  run with hlt (F4, which translates to one instruction), and a target in
  the code area reads hlt, zeros or the current state's own bytes;
- a jump to unmapped memory stops with an error although the jump itself
  completed — sometimes called a fetch error, sometimes a read error at
  the target: an unmapped access at the address execution reached is that
  stop, and the state is read as it stands; any other is a real error.
"""

from __future__ import annotations

from unicorn import (UC_ARCH_X86, UC_HOOK_MEM_READ, UC_HOOK_MEM_UNMAPPED,
                     UC_HOOK_MEM_WRITE, UC_MODE_32, Uc, UcError)
from unicorn import x86_const as X

REGS = ("eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi", "eip", "eflags")
_UC = {name: getattr(X, f"UC_X86_REG_{name.upper()}") for name in REGS}

CODE_BASE = 0x00400000
CODE_SIZE = 0x10000
STACK_BASE = 0x00800000
STACK_SIZE = 0x20000
HLT = b"\xf4"


class Reference:
    def __init__(self):
        self.reads: list[int] = []
        self.writes: list[tuple[int, int]] = []
        self.word = 0
        self.instances = 0
        self._fresh()

    def _fresh(self):
        self.instances += 1
        self._translated: list[tuple[int, int]] = []
        self.uc = Uc(UC_ARCH_X86, UC_MODE_32)
        self.uc.mem_map(CODE_BASE, CODE_SIZE)
        self.uc.mem_map(STACK_BASE, STACK_SIZE)
        self.uc.hook_add(UC_HOOK_MEM_READ, self._on_read)
        self.uc.hook_add(UC_HOOK_MEM_WRITE, self._on_write)
        self.uc.hook_add(UC_HOOK_MEM_UNMAPPED, self._on_unmapped)

    @staticmethod
    def _piece_of(spans, address, size):
        return any(a < address + size and address < a + s for a, s in spans)

    def _on_read(self, uc, access, address, size, value, user):
        if self._piece_of(self._read_spans, address, size):
            return
        self._read_spans.append((address, size))
        self.reads.append(address)
        uc.mem_write(address, (self.word & ((1 << (8 * size)) - 1))
                     .to_bytes(size, "little"))

    def _on_unmapped(self, uc, access, address, size, value, user):
        # A jcc rel32's target above 2 GiB arrives sign-extended to 64 bits.
        self._unmapped.append(address & 0xffffffff)
        return False

    def _on_write(self, uc, access, address, size, value, user):
        if self._piece_of(self._write_spans, address, size):
            return
        self._write_spans.append((address, size))
        self.writes.append((address, value & ((1 << (8 * size)) - 1)))

    def run(self, code: bytes, regs: dict, word: int, count: int, data=()):
        """Execute count instructions of code at regs['eip'] (which must
        lie in the code area), with the 4 bytes at each address of data
        mapped. Returns (regs after, reads, writes)."""
        try:
            return self._run(code, regs, word, count, data)
        except UcError:
            self._fresh()
            return self._run(code, regs, word, count, data)

    @classmethod
    def fresh(cls, code: bytes, regs: dict, word: int, count: int, data=()):
        """run() on an instance that has run nothing before."""
        return cls()._run(code, regs, word, count, data)

    @staticmethod
    def _data_pages(data) -> list[int]:
        """The pages of data's words outside the code and stack areas."""
        out = set()
        for a in data:
            for p in {a & 0xfffff000, (a + 3) & 0xfffff000}:     # 32-bit wrap
                if not (CODE_BASE <= p < CODE_BASE + CODE_SIZE
                        or STACK_BASE <= p < STACK_BASE + STACK_SIZE):
                    out.add(p)
        return sorted(out)

    def _run(self, code: bytes, regs: dict, word: int, count: int, data=()):
        pages = self._data_pages(data)
        for p in pages:
            self.uc.mem_map(p, 0x1000)
        try:
            return self._run_mapped(code, regs, word, count)
        finally:
            for p in pages:
                self.uc.mem_unmap(p, 0x1000)

    def _run_mapped(self, code: bytes, regs: dict, word: int, count: int):
        self.reads, self.writes, self.word = [], [], word
        self._read_spans, self._write_spans, self._unmapped = [], [], []
        eip = regs["eip"]
        code = bytes(code) + b"\xeb\xfe"          # jmp .: ends translation
        if not CODE_BASE <= eip <= CODE_BASE + CODE_SIZE - len(code):
            raise ValueError(f"eip {eip:#x} outside the model's code area")
        if any(a < eip + len(code) and eip < b for a, b in self._translated):
            self._fresh()
        self._translated.append((eip, eip + len(code)))
        self.uc.mem_write(eip, code)
        for name in REGS:
            self.uc.reg_write(_UC[name], regs[name])
        try:
            self.uc.emu_start(eip, CODE_BASE + CODE_SIZE, count=count)
        except UcError:
            pc = self.uc.reg_read(_UC["eip"])
            if not self._unmapped or any(a != pc for a in self._unmapped):
                raise
        after = {name: self.uc.reg_read(_UC[name]) for name in REGS}
        self.uc.mem_write(eip, HLT * len(code))     # no later target reads it
        return after, list(self.reads), list(self.writes)
