"""Check mode, host half, IA-32: re-execute every emulation the guest made.

Theory of operation. In check mode the guest records, for each displaced
instruction a probe emulates, a CHECK record (tracer/arch/i386/check.h):
the registers before, the registers after, and the one stack word touched
(address, value before, value after). verify() runs the ORIGINAL
instruction bytes of the site in python3-unicorn from the "before" state,
at the guest's own addresses, and compares unicorn's result ("expected")
with the guest's "after" state ("actual"), field by field. The register
order and record size come from check.h through cdefs; nothing here
repeats them.

The model's memory is the site's code and the stack pages the instruction
can touch (around ESP and EBP), mapped at their real addresses. Stack
contents are unknown to the host, so the word a pop/leave/ret reads is
supplied by a read hook: whatever address unicorn reads receives the value
the guest recorded as read. The address itself is then compared, so an
emulator that read the wrong word is caught by that field alone. A push or
enter's store is caught by a write hook and compared (address and value);
the value the store overwrote is not knowable and not compared.

Where a run stops: emu_start's `until` is the address the form ends at
(site + length; for a ret, the return address, i.e. the word it reads),
plus an instruction count. Unicorn 2.0.1 turns `until` into a stop at
translation time, before decoding a byte there, so nothing but the site's
own instructions is ever decoded. That matters: stopping by count alone
makes unicorn translate whatever lies at a ret's target, and translating
arbitrary bytes there aborted the whole process ("tcg fatal error",
tcg.c:3073) once in some 10^5 records, and raised fetch errors when the
junk ran into an unmapped page. (A ret to the site itself stops by count.)

Speed: one unicorn instance serves up to RECYCLE records. Every site's
code is written into it before anything runs and never written again, so
unicorn 2.0.1's translation cache (which ignores later code writes, see
ref_i386) cannot go stale for code we run. A record whose stack pages
share a page with site code, and any record that disagrees, is run
(again) on a fresh instance, and only the fresh result is reported.

EFLAGS: all 32 bits are compared, TF aside (x86_unicorn says why).

Should a run still stop with an unmapped access at the address execution
reached (a jump into unmapped memory; see ref_i386), that is the end of
the run; any other unicorn error is reported as a mismatch.

A record of I386_CHECK_OPT_WORDS is an opt probe's (its detour ran copies
of the displaced instructions, no emulation): i386_opt checks it, counted
as the form OPT. One of I386_CHECK_OOL_WORDS is an out-of-line site's (its
slot ran a copy of the instruction): i386_ool checks it, counted as OOL.
"""

from __future__ import annotations

from dataclasses import dataclass

from unicorn import UcError
from unicorn import x86_const as X

from ..wire import cdefs
from . import x86_unicorn
from .x86_unicorn import I_EBP, I_EIP, I_ESP, M32, NREGS, Machine, hx, reg_diffs
from .x86_unicorn import pages as _pages
from . import i386_ool, i386_opt
from .report import CheckReport

CHECK = cdefs.load("tracer/arch/i386/check.h")
_STACK = {e.name: e.value for e in CHECK.table("I386_CHECK_STACK")}
# The state's fields by name and index, for this module's callers.
REGS, I_EFLAGS = x86_unicorn.REGS, x86_unicorn.I_EFLAGS
WORDS = CHECK.const("I386_CHECK_WORDS")
if WORDS != 2 * NREGS + len(_STACK):
    raise cdefs.CdefsError("check.h: a record must be 2*NREGS words and the "
                           "stack words")
W_ADDR, W_BEFORE, W_AFTER = (_STACK["STACK_ADDR"], _STACK["STACK_BEFORE"],
                             _STACK["STACK_AFTER"])

FORMS = ("PUSH_EBP", "PUSH_EBP_MOV", "POP_EBP", "LEAVE", "RET", "RET_IMM",
         "ENTER", "NOP", "JMP_REL", "JCC", "CALL_REL", "CALL_IND", "JMP_IND", "OOL")
# OOL is a site run out of line: its records have a layout of their own,
# checked by i386_ool (tracer/arch/i386/ool_check.c); so do CALL_IND and
# JMP_IND, emulated but touching two places (tracer/arch/i386/check.c).
# The emulated forms, then opt's detour (i386_opt).
CLASSES = FORMS + (i386_opt.FORM,)
_WRITES = {"PUSH_EBP", "PUSH_EBP_MOV", "ENTER", "CALL_REL"}
_READS = {"POP_EBP", "LEAVE", "RET", "RET_IMM"}
_RETS = {"RET", "RET_IMM"}

# Runs per shared instance: a bound on what one instance accumulates
# (mapped stack pages, translations). 10^6-record stress runs pass with
# and without it; a new instance every RECYCLE runs costs under 1%.
RECYCLE = 10000


@dataclass(frozen=True)
class Form:
    name: str
    length: int         # bytes of the site the emulation covers
    count: int          # instructions in it


def classify(code: bytes) -> Form | str:
    """The emulated form the site's original bytes make, or why none."""
    c = bytes(code)
    if not c:
        return "no code bytes"
    if c[0] == 0x55:
        if c[1:3] in (b"\x89\xe5", b"\x8b\xec"):
            return Form("PUSH_EBP_MOV", 3, 2)
        return Form("PUSH_EBP", 1, 1)
    one = {0x5d: "POP_EBP", 0xc9: "LEAVE", 0xc3: "RET", 0x90: "NOP"}
    if c[0] in one:
        return Form(one[c[0]], 1, 1)
    if c[0] == 0xc2 and len(c) >= 3:
        if c[2] & 0x80:
            return "ret imm16 >= 0x8000 is refused by the guest"
        return Form("RET_IMM", 3, 1)
    if c[0] == 0xc8 and len(c) >= 4:
        if c[3]:
            return "enter with a nesting level is refused by the guest"
        return Form("ENTER", 4, 1)
    # The relative CTIs: the run stops by count at the target, or at the
    # next instruction (until) when not taken; the target is real code.
    if (c[0] == 0xeb or 0x70 <= c[0] <= 0x7f) and len(c) >= 2:
        return Form("JMP_REL" if c[0] == 0xeb else "JCC", 2, 1)
    if c[0] in (0xe9, 0xe8) and len(c) >= 5:
        return Form("JMP_REL" if c[0] == 0xe9 else "CALL_REL", 5, 1)
    if c[0] == 0x0f and len(c) >= 6 and 0x80 <= c[1] <= 0x8f:
        return Form("JCC", 6, 1)
    return f"{c[:4].hex()} is not an emulated form"


def _stack_pages(w) -> set[int]:
    esp, ebp = w[I_ESP], w[I_EBP]
    return _pages(esp - 4, 8) | _pages(ebp, 4)


class _Model(Machine):
    """One unicorn instance at the guest's addresses, with access hooks."""

    @staticmethod
    def _piece_of(spans, address, size):
        # An unaligned access across a page is reported whole, then again
        # as its pieces (see ref_i386); the pieces are not accesses.
        return any(a < address + size and address < a + s for a, s in spans)

    def _on_read(self, uc, access, address, size, value, user):
        if self._piece_of(self._rspans, address, size):
            return
        self._rspans.append((address, size))
        self.reads.append(address)
        try:
            uc.mem_write(address, (self.word & ((1 << (8 * size)) - 1))
                         .to_bytes(size, "little"))
        except UcError:
            pass                        # unmapped: the unmapped hook stops it

    def _on_write(self, uc, access, address, size, value, user):
        if self._piece_of(self._wspans, address, size):
            return
        self._wspans.append((address, size))
        self.writes.append((address, value & ((1 << (8 * size)) - 1)))

    def _on_unmapped(self, uc, access, address, size, value, user):
        self.unmapped.append(address & M32)     # a jcc's may come sign-extended
        return False

    def run(self, w, form: Form):
        """Registers after, reads, writes, error text (or None)."""
        self.reads, self.writes, self.unmapped = [], [], []
        self._rspans, self._wspans = [], []
        self.word = w[W_BEFORE]
        self.set_regs(w)
        eip = w[I_EIP]
        until = (eip + form.length) & M32
        if form.name in _RETS and w[W_BEFORE] != eip:
            until = w[W_BEFORE]         # where the ret goes: the word it reads
        err = None
        try:
            self.uc.emu_start(eip, until, count=form.count)
        except UcError as e:
            pc = self.uc.reg_read(X.UC_X86_REG_EIP)
            if not self.unmapped or any(a != pc for a in self.unmapped):
                err = str(e)
        return self.get_regs(w), list(self.reads), list(self.writes), err





def _diffs(w, form: Form, result) -> list[str]:
    after, reads, writes, err = result
    out = [f"unicorn: {err}"] if err else []
    out += reg_diffs(after, w)
    addr, before, written = w[W_ADDR], w[W_BEFORE], w[W_AFTER]
    if form.name in _WRITES:
        if len(writes) != 1:
            out.append(f"stack writes: unicorn made {len(writes)}, the guest "
                       f"recorded 1")
        if writes:
            wa, wv = writes[0]
            if wa != addr:
                out.append(f"stack address: expected {hx(wa)} vs actual {hx(addr)}")
            if wv != written:
                out.append(f"stack word written: expected {hx(wv)} vs actual "
                           f"{hx(written)}")
    elif form.name in _READS:
        if len(reads) != 1 or writes:
            out.append(f"stack accesses: unicorn made {len(reads)} reads and "
                       f"{len(writes)} writes, the guest recorded 1 read")
        if reads and reads[0] != addr:
            out.append(f"stack address: expected {hx(reads[0])} vs actual {hx(addr)}")
        if written != before:
            out.append(f"stack word after a read: expected {hx(before)} vs "
                       f"actual {hx(written)}")
    else:
        if reads or writes:
            out.append(f"stack accesses: unicorn made {len(reads)} reads and "
                       f"{len(writes)} writes, the guest recorded none")
        for what, v in (("stack address", addr), ("stack word before", before),
                        ("stack word after", written)):
            if v:
                out.append(f"{what}: expected {hx(0)} vs actual {hx(v)}")
    return out


def _code_pages(addr: int, code: bytes) -> set[int]:
    # One byte past the code too: the run stops there (emu_start's until),
    # and unicorn translates that address, to a stop, before stopping.
    return _pages(addr, len(code) + 1)


def _fresh(site, w, form: Form):
    own = {(site.addr + i) & M32: b for i, b in enumerate(bytes(site.code))}
    m = _Model(own, _code_pages(site.addr, site.code))
    m.map(_stack_pages(w))
    return m.run(w, form)


def verify(checks, sites) -> CheckReport:
    """Re-execute each CHECK record's site in unicorn; see the docstring."""
    report = CheckReport(order=CLASSES)
    forms: dict[int, Form | str] = {}
    code: dict[int, int] = {}          # every site's bytes, by address
    conflicts: set[int] = set()        # sites whose bytes disagree with another's
    addrs = {s.addr for s in sites.values()}
    for pid, s in sites.items():
        forms[pid] = classify(s.code)
        # A fused prologue whose mov is another probe's site emulates its
        # push alone (tracer/arch/i386/tracer_site.h).
        if isinstance(forms[pid], Form) and forms[pid].name == "PUSH_EBP_MOV" \
                and (s.addr + 1) & M32 in addrs:
            forms[pid] = Form("PUSH_EBP", 1, 1)
        for i, b in enumerate(bytes(s.code)):
            a = (s.addr + i) & M32
            if code.setdefault(a, b) != b:
                conflicts.add(pid)
    code_pages = set().union(set(), *(_code_pages(s.addr, s.code)
                                      for s in sites.values()))
    shared, runs = None, 0
    # opt's detours and out-of-line slots: records of their own lengths.
    by_length = {m.WORDS: m for m in (i386_opt, i386_ool)}
    checkers = {}

    for rec in checks:
        pid, w = rec.probe, tuple(rec.words)
        site = report.site_of(rec, sites)
        if site is None:
            continue
        kind = by_length.get(len(w))
        if kind is not None:            # a record that re-runs the site's bytes
            name = kind.form_of(site.code)
            head = f"probe {pid} at {site.addr:#x} {name}"
            report.checked += 1
            report.by_form[name] = report.by_form.get(name, 0) + 1
            if w[I_EIP] != site.addr:
                report.mismatches.append(f"{head}: eip before: expected "
                                         f"{hx(site.addr)} vs actual {hx(w[I_EIP])}")
                continue
            if kind not in checkers:
                checkers[kind] = kind.Checker(sites)
            report.add(head, name, checkers[kind].verify_one(pid, site, w))
            continue
        form = forms[pid]
        head = f"probe {pid} at {site.addr:#x}"
        if isinstance(form, str):
            report.mismatches.append(f"{head}: {form}")
            continue
        head += f" {form.name}"
        if len(w) != WORDS:
            report.mismatches.append(f"{head}: record has {len(w)} words, "
                                     f"not {WORDS}")
            continue
        report.checked += 1
        report.by_form[form.name] = report.by_form.get(form.name, 0) + 1
        if w[I_EIP] != site.addr:
            report.mismatches.append(f"{head}: eip before: expected "
                                     f"{hx(site.addr)} vs actual {hx(w[I_EIP])}")
            continue
        pages = _stack_pages(w)
        if pid in conflicts or pages & code_pages:
            diffs = _diffs(w, form, _fresh(site, w, form))
        else:
            if shared is None or runs >= RECYCLE:
                shared, runs = _Model(code, code_pages), 0
            runs += 1
            shared.map(pages)
            diffs = _diffs(w, form, shared.run(w, form))
            if diffs:                   # confirm on an instance with no past
                diffs = _diffs(w, form, _fresh(site, w, form))
        if diffs:
            report.mismatches.append(f"{head}: " + "; ".join(diffs))
    return report
