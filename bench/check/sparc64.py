"""Check mode, host half, SPARC V9: re-execute every emulation the guest made,
and every out-of-line copy it ran in check mode (by record length:
sparc64_ool.py).

Theory of operation. In check mode the guest records, for each instruction
a probe emulates, a CHECK record (tracer/arch/sparc64/check.h): the state
before (PC, nPC, CCR, Y, FSR, %g1-%g7 and the window's %o/%l/%i), the state
after as the trap's way back will resume with it, and, for a `return`, the
caller's %l/%i. verify() runs the site's ORIGINAL word in python3-unicorn's
SPARC64 mode from the "before" state (bench/check/ref_sparc64.Reference: run()
for the CTIs, run_window() for `save` and `return`) and compares unicorn's
result ("expected") with the guest's "after" ("actual"), field by field.
A return site's out-of-line-sized record is its delay slot's (sparc64's
tramp checks the copy it runs after the CTI): the word after the site,
run as an out-of-line word, counted in report.delay_slots. A `restore` in
that delay slot (`ret; restore %o0, 0, %o0`) has an emulation-sized
record whose PC before is the site + 4, with the caller's window it goes
back to: class RESTORE, run as `return` is (run_window), every register
of that window compared; counted in report.delay_slots too.
Field order and record size come from check.h through cdefs.

Addresses. The model runs an instruction only at the last word of one of
its own pages (ref_sparc64 says why), not at the guest's address. So every
record runs twice, at two model addresses S1 and S2: a result equal in both
runs is absolute (a register a JMPL jumps through, a value left alone); a
result that moved with the address (v1 - S1 == v2 - S2) is relative to the
PC (a branch target, pc+4, the %o7 of a CALL) and is moved to the guest's
site: v1 - S1 + pc. A result that is neither is reported. This needs no
knowledge of which class computes what, so the model stays independent of
the emulator it checks.

What is compared: PC, nPC, %g1-%g7 and every window register the
instruction defines — after a `save`, the new window's %i (the old %o) and
%sp, not its %l or other %o, which V9 leaves undefined (the guest records 0
there); after a `return`, the caller's whole window. None of these
instructions writes CCR, Y or FSR: the model leaves them as they were, so
"after" must equal "before" (FSR in its fcc0-fcc3 fields). A record that
disagrees is run again on a fresh unicorn instance, and only that result
is reported.
"""

from __future__ import annotations

from ..wire import cdefs
from . import sparc64_ool as ool
from .ref_sparc64 import Reference, slot
from .report import CheckReport

CHECK = cdefs.load("tracer/arch/sparc64/check.h")
_TABLE = sorted(CHECK.table("SPARC64_CHECK_REGS"), key=lambda e: e.value)
NREGS = CHECK.const("SPARC64_CHECK_NREGS")
R0 = CHECK.const("SPARC64_CHECK_R0")
CALLER = CHECK.const("SPARC64_CHECK_CALLER")
WORDS = CHECK.const("SPARC64_CHECK_WORDS")
if ([e.value for e in _TABLE] != list(range(NREGS)) or NREGS != R0 + 32
        or WORDS != 2 * NREGS + CALLER):
    raise cdefs.CdefsError("check.h: SPARC64_CHECK_REGS must number 0..NREGS-1 "
                           "with r1..r31 last, and a record be 2*NREGS+CALLER words")
NAMES = tuple(e.meaning for e in _TABLE)
I_PC, I_NPC, I_CCR, I_Y, I_FSR = (next(e.value for e in _TABLE if e.name == n)
                                  for n in ("PC", "NPC", "CCR", "Y", "FSR"))
FCC_MASK = 0x3f_0000_0c00          # fcc3..fcc1 (bits 37:32), fcc0 (11:10)
U64 = (1 << 64) - 1

CLASSES = ("CALL", "JMPL", "BICC", "BPCC", "BPR", "FBFCC", "FBPFCC",
           "SAVE", "RETURN")
# A return's delay slot, never a site's word: tramp's checked slot only.
RESTORE = "RESTORE"
_WINDOW_CLASSES = {"SAVE", "RETURN", RESTORE}
_RETURN_CLASSES = {"JMPL", "RETURN"}
_BRANCH_OP2 = {2: "BICC", 1: "BPCC", 3: "BPR", 6: "FBFCC", 5: "FBPFCC"}


def classify(word: int) -> str | None:
    """The emulated class of an instruction word (V9 encodings), or None."""
    op = word >> 30
    if op == 1:
        return "CALL"
    if op == 0:
        return _BRANCH_OP2.get((word >> 22) & 7)
    if op == 2:
        return {0x38: "JMPL", 0x39: "RETURN", 0x3c: "SAVE"}.get((word >> 19) & 0x3f)
    return None


def _is_restore(word: int) -> bool:
    return word >> 30 == 2 and (word >> 19) & 0x3f == 0x3d


def _compared(cls: str) -> list[int]:
    """Indexes of the result registers (r1..r31) the class defines."""
    if cls == "SAVE":
        return [*range(1, 8), 14, *range(24, 32)]       # globals, %sp, %i
    return list(range(1, 32))


class _Model:
    def __init__(self):
        self.ref = Reference()
        self.n = 0

    def close(self):
        self.ref.close()

    def _run(self, ref, cls, word, at, before, caller):
        regs = (0, *before[R0 + 1:R0 + 32])
        ccr, fsr = before[I_CCR], before[I_FSR]
        if cls in _WINDOW_CLASSES:
            return ref.run_window(word, at, regs, ccr, fsr, caller)
        return ref.run(word, at, regs, ccr, fsr)

    def expected(self, cls, word, pc, before, caller, ref=None):
        """(values by field index, or None where unknown; problems)."""
        ref = ref or self.ref
        s1, s2 = slot(self.n), slot(self.n + 1)
        self.n += 2
        r1 = self._run(ref, cls, word, s1, before, caller)
        r2 = self._run(ref, cls, word, s2, before, caller)
        problems = []
        if r1[0] or r2[0]:
            problems.append("unicorn: mem_address_not_aligned, which the guest "
                            "would have stopped on")
        v1 = (r1[1], r1[2], *r1[3][1:])
        v2 = (r2[1], r2[2], *r2[3][1:])
        fields = (I_PC, I_NPC, *range(R0 + 1, R0 + 32))
        out: dict[int, int] = {}
        for f, a, b in zip(fields, v1, v2):
            if a == b:
                out[f] = a
            elif (a - s1) & U64 == (b - s2) & U64:
                out[f] = (a - s1 + pc) & U64
            else:
                problems.append(f"{NAMES[f]}: unicorn gave {a:#x} at {s1:#x} and "
                                f"{b:#x} at {s2:#x}, neither fixed nor PC-relative")
        return out, problems


def _diffs(cls, w, expected, problems) -> list[str]:
    before, after = w[:NREGS], w[NREGS:2 * NREGS]
    out = list(problems)
    want = {I_PC: None, I_NPC: None}
    want.update({R0 + r: None for r in _compared(cls)})
    for f in want:
        if f in expected and expected[f] != after[f]:
            out.append(f"{NAMES[f]}: expected {expected[f]:#x} vs actual {after[f]:#x}")
    for f in (I_CCR, I_Y):
        if after[f] != before[f]:
            out.append(f"{NAMES[f]}: expected {before[f]:#x} (unchanged) vs "
                       f"actual {after[f]:#x}")
    if (after[I_FSR] ^ before[I_FSR]) & FCC_MASK:
        out.append(f"fsr fcc: expected {before[I_FSR] & FCC_MASK:#x} (unchanged) "
                   f"vs actual {after[I_FSR] & FCC_MASK:#x}")
    return out


def verify(checks, sites) -> CheckReport:
    """Re-execute each CHECK record's site in unicorn; see the docstring."""
    report = CheckReport(order=(*CLASSES, RESTORE, ool.FORM))
    model, ool_model = _Model(), None
    try:
        for rec in checks:
            pid, w = rec.probe, tuple(rec.words)
            site = report.site_of(rec, sites)
            if site is None:
                continue
            head = f"probe {pid} at {site.addr:#x}"
            word = int.from_bytes(bytes(site.code[:4]), "big")
            cls = classify(word)
            addr = site.addr
            slot_word = int.from_bytes(bytes(site.code[4:8]), "big")
            if cls in _RETURN_CLASSES and (len(w) == ool.WORDS or (
                    len(w) == WORDS and w[I_PC] == site.addr + 4
                    and _is_restore(slot_word))):
                # A trampoline's return also checks its delay slot's
                # word, run from a copy (tramp_check.c): a second record
                # for the word after the site, the out-of-line one, or an
                # emulation's for a restore.
                word, addr = slot_word, site.addr + 4
                cls = RESTORE if len(w) == WORDS else None
                report.delay_slots += 1
                head = f"probe {pid} at {addr:#x} (delay slot)"
            # A word no mechanism emulates ran out of line: its record
            # is the out-of-line one (check.h), of another length.
            size = ool.WORDS if cls is None else WORDS
            cls = cls or ool.FORM
            head += f" {cls}"
            if len(w) != size:
                report.mismatches.append(f"{head}: record has {len(w)} words, "
                                         f"not {size}")
                continue
            report.checked += 1
            report.by_form[cls] = report.by_form.get(cls, 0) + 1
            if w[I_PC] != addr:
                report.mismatches.append(f"{head}: pc before: expected "
                                         f"{addr:#x} vs actual {w[I_PC]:#x}")
                continue
            if cls == ool.FORM:
                ool_model = ool_model or ool.Model()
                diffs = ool_model.verify_one(word, addr, w)
            else:
                before, caller = w[:NREGS], w[2 * NREGS:]
                diffs = _diffs(cls, w, *model.expected(cls, word, addr, before, caller))
                if diffs:                   # confirm on an instance with no past
                    fresh = Reference()
                    try:
                        diffs = _diffs(cls, w, *model.expected(cls, word, addr,
                                                               before, caller, fresh))
                    finally:
                        fresh.close()
            report.add(head, cls, diffs)
    finally:
        model.close()
        if ool_model:
            ool_model.close()
    return report
