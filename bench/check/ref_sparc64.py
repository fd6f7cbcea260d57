"""python3-unicorn (SPARC64 mode) as an independent model of the SPARC V9
control-transfer instructions that probes emulate, and of the words their
out-of-line slots run.

Reference.run() executes one real CTI from a given state (registers, CCR,
FSR) and returns what it left: the new PC and nPC and the 32 registers,
or the mem_address_not_aligned trap of a JMPL to a misaligned address.
The guest's emulator (tracer/arch/sparc64/emulate.c) is checked against it
in tests/test_sparc64_emulate.py.

How a state is run: the CTI sits in the last word of an 8 KiB page,
after `wr %g0, ccr, %ccr` and `ldx [%g0 + FSR_AT], %fsr`; the registers
are stored first, and emu_start(prologue, count=3) runs those three
instructions and stops before executing anything at the new PC. A
translation block never crosses a page, so the CTI ends one, and its exit
stores both PC and nPC in the CPU state, where the model reads them.
Nothing after the CTI executes: neither the delay slot nor the target
matters, and targets may be anywhere in the 64-bit space (a new PC in
unmapped memory stops with a fetch error once the jump is complete; that
is taken as the normal end). The CTI pages lie in two windows, one low
and one at the very top of the address space, so targets also wrap
around 2^64.

Reference.run_window() runs the two window-moving instructions the probes
emulate besides CTIs, `save` and `return`, the same way, from a callee
window at CWP 3 whose caller (where `return` goes) is CWP 2; and a
`restore`, which tramp runs from a copy in a return's delay slot. Its prologue
also sets CWP, CANSAVE 5, CANRESTORE 1, OTHERWIN 0 and CLEANWIN 7 with
`wrpr`, which needs PSTATE.PRIV: set, for those runs only, in the same CPU
state word as PEF (below). Where each window's registers live is measured
once per instance (wrpr %cwp, then the window pointer); in unicorn's
register file, CWP n+1's %i are CWP n's %o, as V9 has it.

Reference.run_ool() runs any other word an out-of-line slot may run (an
ALU word, a load or store, rd/wr %y and %ccr; sparc64_ool.py's checker
refuses nothing else: ool_check.c refuses it in the guest) the same way,
at the last word of a page of the top window only (the low window lies in
the guest's RAM, which the word's memory may share), over memory pages
mapped at the guest's own addresses and filled with what the guest
recorded. Around it: %y is set by a setup run (`ldx [%g0 + Y_AT], %g1;
wr %g1, 0, %y`) before the registers are stored, and CCR and %y are read
back by another (`rd %ccr, %g1; rd %y, %g2`) after the registers are
read; every data access at PAGE and above is recorded (hooks), so the
checker can report one outside what the guest recorded.

What unicorn 2.0.1 does not give, and how the model gets it (each seen
here, with the SPARC64 big-endian mode):
- nPC: there is no register for it, emu_start and reg_write(PC) set
  nPC = PC + 4, and a count-limited stop inside a translation block (say
  in a delay slot) leaves a stale nPC in the CPU state (only PC is synced
  for the code hooks) — hence the page-end placement above;
- CCR and FSR: UC_SPARC_REG_ICC, _XCC, _FCC0..3 (and _Y) read as 0 and
  ignore writes, so the prologue above sets them. `rd %ccr` before
  anything wrote CCR kills the process (the lazy condition codes start
  uninitialised);
- the FPU: the CPU is never reset, PSTATE is 0 (unprivileged, PEF off):
  FBfcc, FBPfcc and `ldx %fsr` trap fp_disabled (0x20), `wrpr %pstate`
  traps privileged_opcode (0x11), and traps are only reported to hooks,
  never delivered, so no instruction sequence can turn the FPU on; and
  context_save() holds nothing for SPARC64 (0 bytes of CPU state). So the
  model finds the CPU state in its own memory (/proc/self/mem, for a
  register pattern written with reg_write, then checked with reg_write of
  the window registers, PC and %g1 again), finds %asi in it by writing
  %asi twice with `wr` (and xcc in the word before, by `wr %ccr`), sets
  PSTATE.PEF in the word after (CPUSPARCState has xcc, asi, pstate in a row),
  runs `wr %g0, 4, %fprs`, and checks that an FSR loaded with `ldx %fsr`
  stores back with `stx %fsr`. It then stores and loads the registers
  there too (the fields reg_write/reg_read use, checked as said; faster);
- fresh code: translations are cached by address and later writes are
  not noticed (as for IA-32, see ref_i386). The cache key holds %asi
  (set directly in the CPU state; no CTI uses it), so every reuse of a CTI
  page runs under a new %asi value (0..255; then a new instance). A jump
  that lands on a prologue address leaves a translation made from the old
  code under that address and the current %asi: that key is retired;
- fetches: the mapping check uses the virtual address, but the bytes are
  read at the address truncated to 41 bits (MMU off), and if that is not
  mapped the process aborts. The top window is therefore mapped at both
  addresses and its code written at the truncated one;
- emu_start's `until`: it stopped one instruction early with a count,
  never returned without one, and a run whose new PC was `until` (0, after
  a CALL from the last word of the address space) spun forever even with
  count=3; the model passes 1, an address no PC can equal;
- emu_start's `timeout` starts a watchdog thread per call: ~0.1 ms, more
  than a whole state costs without it; the model gives `count` only,
  which bounds the run;
- a JMPL to a misaligned address writes rd before it raises
  mem_address_not_aligned (0x34), although V9 traps are precise: the
  model reports the trap with the registers as they were;
- mem_map needs 8 KiB-aligned addresses and sizes; Uc objects stay in a
  reference cycle through their hooks until the garbage collector runs,
  each with its mapped memory, so the model releases its instance itself.
"""

from __future__ import annotations

import ctypes
import random
import struct

from unicorn import (UC_ARCH_SPARC, UC_ERR_FETCH_UNMAPPED, UC_ERR_READ_UNMAPPED,
                     UC_HOOK_INTR, UC_HOOK_MEM_READ, UC_HOOK_MEM_UNMAPPED,
                     UC_HOOK_MEM_WRITE, UC_MODE_BIG_ENDIAN, UC_MODE_SPARC64, Uc,
                     UcError)
from unicorn import sparc_const as S

PAGE = 0x2000                    # unicorn's SPARC64 page: mem_map needs 8 KiB
# (address, size) of the windows holding CTIs: low, and the top 8 MiB.
WINDOWS = ((0x0000000001000000, 0x800000), (0xffffffffff800000, 0x800000))
SLOTS = sum(size // PAGE for _, size in WINDOWS)
PHYS_MASK = (1 << 41) - 1        # fetches read physical address = this & virtual
FSR_AT = 0x800                   # in page 0, reachable as [%g0 + simm13]
SETUP_AT = 0x1000
TT_UNALIGNED = 0x34              # mem_address_not_aligned
ROUNDS = 256                     # %asi values
NEVER = 1                        # emu_start `until`: no PC is unaligned

_U64 = (1 << 64) - 1
_GREGS_PC_NPC = struct.Struct("<8QQQQ")   # gregs[8], regwptr, pc, npc
_WINDOW = struct.Struct("<24Q")           # %o0-7 %l0-7 %i0-7
_SEVEN = struct.Struct("<7Q")
_WINDOW_IDS = [getattr(S, f"UC_SPARC_REG_{k}{n}") for k in "OLI" for n in range(8)]
_CODE = struct.Struct(">3I")


def _f3(op, rd, op3, rs1, simm13):
    return op << 30 | rd << 25 | op3 << 19 | rs1 << 14 | 1 << 13 | simm13 & 0x1fff


def wr_ccr(ccr):        # wr %g0, ccr, %ccr
    return _f3(2, 2, 0x30, 0, ccr)


def _wr_asi(asi):       # wr %g0, asi, %asi
    return _f3(2, 3, 0x30, 0, asi)


def _wr_fprs(v):        # wr %g0, v, %fprs
    return _f3(2, 6, 0x30, 0, v)


def ldx_fsr(addr):      # ldx [%g0 + addr], %fsr
    return _f3(3, 1, 0x21, 0, addr)


def _stx_fsr(addr):     # stx %fsr, [%g0 + addr]
    return _f3(3, 1, 0x25, 0, addr)


def _wrpr(reg, v):      # wrpr %g0, v, <privileged register reg>
    return _f3(2, reg, 0x32, 0, v)


PR_CWP, PR_CANSAVE, PR_CANRESTORE, PR_CLEANWIN, PR_OTHERWIN = 9, 10, 11, 12, 13
PSTATE_PRIV, PSTATE_PEF = 0x4, 0x10
CALLEE_CWP = 3
WINDOW_PROLOGUE = (_wrpr(PR_CWP, CALLEE_CWP), _wrpr(PR_CANSAVE, 5),
                   _wrpr(PR_CANRESTORE, 1), _wrpr(PR_OTHERWIN, 0),
                   _wrpr(PR_CLEANWIN, 7))
CWP_AT = 0x1100                  # setup code measuring each window's registers
Y_AT = 0x810                     # run_ool's %y, loaded by Y_SETUP_AT's code
Y_SETUP_AT = 0x1200
READBACK_AT = 0x1300             # run_ool's CCR and %y, read into %g1, %g2


def _rd(rd, asr):       # rd %asr, %rd (i = 0)
    return 2 << 30 | rd << 25 | 0x28 << 19 | asr << 14


Y_SETUP = (_f3(3, 1, 0x0b, 0, Y_AT), _f3(2, 0, 0x30, 1, 0))   # ldx [Y_AT], %g1; wr %g1, 0, %y
READBACK = (_rd(1, 2), _rd(2, 0))                             # rd %ccr, %g1; rd %y, %g2


def slot(i: int) -> int:
    """The address the i-th state's CTI is run at: the last word of one
    of the SLOTS pages, both windows in turn."""
    base, size = WINDOWS[i % len(WINDOWS)]
    return base + (i // len(WINDOWS)) % (size // PAGE) * PAGE + PAGE - 4


def _page_of(pc: int):
    """(window index, page index) of a slot address, or None."""
    for w, (base, size) in enumerate(WINDOWS):
        if base <= pc < base + size and pc % PAGE == PAGE - 4:
            return w, (pc - base) // PAGE
    return None


class ModelError(RuntimeError):
    pass


class Reference:
    def __init__(self):
        self.instances = 0
        self._fresh()

    def _fresh(self):
        self.close()
        self.instances += 1
        self.uc = uc = Uc(UC_ARCH_SPARC, UC_MODE_SPARC64 | UC_MODE_BIG_ENDIAN)
        uc.mem_map(0, PAGE)
        self._traps: list[int] = []
        self._unmapped: list[int] = []
        # The hooks hold the lists, not self: no cycle keeps an instance alive.
        traps, unmapped = self._traps, self._unmapped

        def on_trap(uc, intno, user):
            traps.append(intno)
            uc.emu_stop()

        def on_unmapped(uc, access, address, size, value, user):
            unmapped.append(address)
            return False
        self._accesses: list[tuple[str, int, int]] = []
        accesses = self._accesses

        def on_read(uc, access, address, size, value, user):
            accesses.append(("read", address, size))

        def on_write(uc, access, address, size, value, user):
            accesses.append(("write", address, size))
        uc.hook_add(UC_HOOK_INTR, on_trap)
        uc.hook_add(UC_HOOK_MEM_UNMAPPED, on_unmapped)
        # Data accesses above page 0 (the prologue's and setups' are in it).
        uc.hook_add(UC_HOOK_MEM_READ, on_read, begin=PAGE, end=_U64)
        uc.hook_add(UC_HOOK_MEM_WRITE, on_write, begin=PAGE, end=_U64)
        self._data_pages: set[int] = set()
        self._next_round: dict = {}
        self._retired: set = set()
        self._window_at = None
        self._locate_cpu()              # before the windows: less memory to search
        self._enable_fpu()
        for base, size in WINDOWS:
            uc.mem_map(base, size)               # checked before a fetch
            if base & PHYS_MASK != base:
                uc.mem_map(base & PHYS_MASK, size)   # read by the fetch

    def close(self):
        """Release the unicorn instance now. (The binding's own Uc keeps
        itself alive in a reference cycle through its hooks until the
        garbage collector runs, and every instance has 24 MiB mapped that
        the next _locate_cpu would search.)"""
        uc = getattr(self, "uc", None)
        if uc is not None and uc._uch:
            Uc.release_handle(uc._uch)
            uc._uch.value = None        # the binding's finalizer skips it
        self.uc = None

    def _setup_run(self, *words, count=None, at=SETUP_AT):
        self.uc.mem_write(at, struct.pack(f">{len(words)}I", *words))
        self._traps.clear()
        self.uc.emu_start(at, NEVER, count=count or len(words))
        if self._traps:
            raise ModelError(f"setup code trapped: {[hex(t) for t in self._traps]}")

    def _locate_cpu(self):
        """Find CPUSPARCState: gregs[8], regwptr, pc, npc come first."""
        uc, rnd = self.uc, random.Random()
        greg = [rnd.getrandbits(64) | 1 << 63 for _ in range(7)]
        for n, v in enumerate(greg):
            uc.reg_write(S.UC_SPARC_REG_G1 + n, v)
        window = [rnd.getrandbits(64) for _ in range(24)]
        for n, v in enumerate(window):
            uc.reg_write(_WINDOW_IDS[n], v)
        pc = 0x123456789abc0
        uc.reg_write(S.UC_SPARC_REG_PC, pc)
        pattern = _SEVEN.pack(*greg)
        found = []
        with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
            for line in maps:
                fields = line.split()
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                if not fields[1].startswith("rw") or "x" in fields[1]:
                    continue
                try:
                    mem.seek(lo)
                    data = mem.read(hi - lo)
                except (OSError, ValueError, OverflowError):
                    continue
                at = data.find(pattern)
                while at >= 0:
                    if at >= 8:
                        found.append(lo + at - 8)
                    at = data.find(pattern, at + 1)
        for env in found:
            regs = _GREGS_PC_NPC.unpack(ctypes.string_at(env, _GREGS_PC_NPC.size))
            if list(regs[1:8]) != greg or regs[9:11] != (pc, pc + 4):
                continue
            if list(_WINDOW.unpack(ctypes.string_at(regs[8], _WINDOW.size))) != window:
                continue
            mark = rnd.getrandbits(64)           # not a stale copy: it follows reg_write
            uc.reg_write(S.UC_SPARC_REG_G1, mark)
            if struct.unpack("<Q", ctypes.string_at(env + 8, 8))[0] != mark:
                continue
            self.env = env
            break
        else:
            raise ModelError("CPU state not found in process memory")
        # %asi, then PSTATE after it (xcc, asi, pstate in CPUSPARCState).
        span = 0x10000
        before = ctypes.string_at(self.env, span)
        self._setup_run(_wr_asi(0x5a), wr_ccr(0xa5))
        mid = ctypes.string_at(self.env, span)
        self._setup_run(_wr_asi(0xa5))
        after = ctypes.string_at(self.env, span)
        hits = [o for o in range(4, span, 4)
                if struct.unpack_from("<I", before, o)[0] == 0
                and struct.unpack_from("<I", mid, o)[0] == 0x5a
                and struct.unpack_from("<I", after, o)[0] == 0xa5
                and struct.unpack_from("<I", mid, o - 4)[0] == 0xa << 20]   # xcc
        if len(hits) != 1:
            raise ModelError("%asi not found in the CPU state "
                             f"(candidates at {[hex(h) for h in hits]})")
        self.asi_at = self.env + hits[0]
        self.pstate_at = self.asi_at + 4

    def _enable_fpu(self):
        pstate = struct.unpack("<I", ctypes.string_at(self.pstate_at, 4))[0]
        if pstate & ~0x10:
            raise ModelError(f"unexpected PSTATE {pstate:#x} next to %asi")
        ctypes.memmove(self.pstate_at, struct.pack("<I", pstate | 0x10), 4)   # PEF
        probe = 0x0000003a_00000c00                # fcc3..1 = 3 2 2, fcc0 = 3
        self.uc.mem_write(FSR_AT, struct.pack(">Q", probe))
        self._setup_run(_wr_fprs(4), ldx_fsr(FSR_AT), _stx_fsr(FSR_AT + 8))
        back = struct.unpack(">Q", self.uc.mem_read(FSR_AT + 8, 8))[0]
        if back & 0x3f00000c00 != probe & 0x3f00000c00:
            raise ModelError(f"FSR did not load: wrote {probe:#x}, read {back:#x}")

    def _set_priv(self, on: bool):
        pstate = struct.unpack("<I", ctypes.string_at(self.pstate_at, 4))[0]
        pstate = pstate | PSTATE_PRIV if on else pstate & ~PSTATE_PRIV
        ctypes.memmove(self.pstate_at, struct.pack("<I", pstate), 4)

    def _windows(self) -> dict[int, int]:
        """Where the registers of CWP 2, 3 and 4 live (each wrpr %cwp at its
        own setup address, so no translation is reused)."""
        if getattr(self, "_window_at", None) is None:
            self._set_priv(True)
            try:
                at = {}
                for n, cwp in enumerate((CALLEE_CWP - 1, CALLEE_CWP, CALLEE_CWP + 1)):
                    self._setup_run(_wrpr(PR_CWP, cwp), at=CWP_AT + 16 * n)
                    at[cwp] = _GREGS_PC_NPC.unpack(
                        ctypes.string_at(self.env, _GREGS_PC_NPC.size))[8]
            finally:
                self._set_priv(False)
            self._window_at = at
        return self._window_at

    def _round(self, key):
        """A %asi value under which key's page has no translation yet."""
        r = self._next_round.get(key, 0)
        while (key, r) in self._retired:
            r += 1
        if r >= ROUNDS:
            return None
        self._next_round[key] = r + 1
        return r

    def run(self, word: int, pc: int, regs, ccr: int, fsr: int):
        """Execute the CTI `word` at pc (a slot() address) with registers
        regs (32 values; regs[0] is ignored), CCR ccr (xcc << 4 | icc) and
        FSR fsr. Returns (status, pc, npc, regs): status 0, or -1 for the
        mem_address_not_aligned trap of a JMPL (pc, npc, regs unchanged)."""
        return self._execute(word, pc, regs, ccr, fsr)

    def run_window(self, word: int, pc: int, regs, ccr: int, fsr: int, caller):
        """Execute `save`, `return` or `restore` (`word`) at pc (a slot() address) with
        the globals and window registers regs (32 values, the window being
        CWP 3), caller (16 values: %l0-7, %i0-7 of CWP 2, the window
        `return` goes back to), CCR and FSR. Returns (status, pc, npc, regs)
        as run() does, regs being the globals and the window current after
        the instruction: after a save, %l and %o other than %sp are
        whatever unicorn's register file held."""
        return self._execute(word, pc, regs, ccr, fsr, caller)

    def run_ool(self, word: int, pc: int, regs, ccr: int, fsr: int, y: int, memory):
        """Execute the non-CTI `word` at pc (a slot() address of the top
        window) with registers regs (32 values), CCR, FSR and %y, over
        memory: (address, bytes) spans mapped at those addresses for the
        run. Returns (pc, npc, regs, ccr, y, the spans' bytes after, the
        data accesses made as (kind, address, size)); a trap the word
        takes raises ModelError."""
        if pc < WINDOWS[1][0]:
            raise ValueError(f"pc {pc:#x}: run_ool runs in the top window")
        for a, b in memory:
            if a < PAGE or any(a < base + size and base < a + len(b)
                               for base, size in WINDOWS[1:]):
                raise ValueError(f"memory at {a:#x} overlaps the model's own pages")
            for page in range(a & ~(PAGE - 1), a + len(b), PAGE):
                if page in self._data_pages:
                    continue
                lo, size = WINDOWS[0]
                if not lo <= page < lo + size:      # the low window is mapped
                    self.uc.mem_map(page, PAGE)
                self._data_pages.add(page)
            self.uc.mem_write(a, bytes(b))
        self.uc.mem_write(Y_AT, struct.pack(">Q", y & 0xffffffff))
        self._setup_run(*Y_SETUP, at=Y_SETUP_AT)
        self._accesses.clear()
        status, new_pc, new_npc, out = self._execute(word, pc, regs, ccr, fsr)
        accesses = list(self._accesses)
        if status:
            raise ModelError(f"{word:#010x} trapped: mem_address_not_aligned")
        self._setup_run(*READBACK, at=READBACK_AT)
        g1, g2 = _SEVEN.unpack(ctypes.string_at(self.env + 8, _SEVEN.size))[:2]
        after = [bytes(self.uc.mem_read(a, len(b))) for a, b in memory]
        return new_pc, new_npc, out, g1 & 0xff, g2 & 0xffffffff, after, accesses

    def _execute(self, word, pc, regs, ccr, fsr, caller=None):
        key = _page_of(pc)
        if key is None:
            raise ValueError(f"pc {pc:#x} is not one of the model's slots")
        asi = self._round(key)
        if asi is None:
            self._fresh()
            asi = self._round(key)
        windowed = caller is not None
        uc, env = self.uc, self.env
        ctypes.memmove(self.asi_at, struct.pack("<I", asi), 4)
        uc.mem_write(FSR_AT, struct.pack(">Q", fsr))
        code = (wr_ccr(ccr), ldx_fsr(FSR_AT), *(WINDOW_PROLOGUE if windowed else ()), word)
        start = pc - 4 * (len(code) - 1)
        uc.mem_write(start & PHYS_MASK, struct.pack(f">{len(code)}I", *code))
        ctypes.memmove(env + 8, _SEVEN.pack(*regs[1:8]), _SEVEN.size)
        if windowed:
            windows = self._windows()
            ctypes.memmove(windows[CALLEE_CWP - 1] + 64, struct.pack("<16Q", *caller), 128)
            window_at = windows[CALLEE_CWP]
        else:
            window_at = _GREGS_PC_NPC.unpack(ctypes.string_at(env, _GREGS_PC_NPC.size))[8]
        ctypes.memmove(window_at, _WINDOW.pack(*regs[8:32]), _WINDOW.size)
        self._traps.clear()
        self._unmapped.clear()
        self._set_priv(windowed)
        try:
            uc.emu_start(start, NEVER, count=len(code))
        except UcError as e:
            if e.errno not in (UC_ERR_FETCH_UNMAPPED, UC_ERR_READ_UNMAPPED):
                raise
            stop = _GREGS_PC_NPC.unpack(ctypes.string_at(env, _GREGS_PC_NPC.size))[9]
            if not self._unmapped or any(a != stop for a in self._unmapped):
                raise
        finally:
            self._set_priv(False)
        state = _GREGS_PC_NPC.unpack(ctypes.string_at(env, _GREGS_PC_NPC.size))
        new_pc, new_npc = state[9], state[10]
        if self._traps:
            if self._traps == [TT_UNALIGNED] and (new_pc, new_npc) == (pc, (pc + 4) & _U64):
                return -1, pc, (pc + 4) & _U64, (0, *regs[1:32])
            raise ModelError(f"{word:#010x} at {pc:#x} trapped: "
                             f"{[hex(t) for t in self._traps]}")
        for landed in (new_pc, new_npc):
            # A translation made inside a prologue under this %asi: retire it.
            page = _page_of((landed | (PAGE - 4)) & _U64)
            if page is not None and landed % PAGE >= PAGE - 4 * len(code):
                self._retired.add((page, asi))
        out = (0, *state[1:8], *_WINDOW.unpack(ctypes.string_at(state[8], _WINDOW.size)))
        return 0, new_pc, new_npc, out

    @classmethod
    def fresh(cls, word: int, pc: int, regs, ccr: int, fsr: int):
        """run() on an instance that has run nothing before."""
        model = cls()
        try:
            return model.run(word, pc, regs, ccr, fsr)
        finally:
            model.close()
