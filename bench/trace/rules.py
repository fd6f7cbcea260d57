"""Where each arch's probes go: the site rules behind arches.Arch.sites.

fbt entry: a function's first instruction, whatever it is: the guest
emulates the forms it knows (IA-32: push %ebp, possibly fused with mov
%esp,%ebp, enter, nop; SPARC V9: `save ..., %sp` and the CTIs) and runs
any other from a copy in the probe's out-of-line slot; it refuses, with
the reason, what neither can run (an EIP-relative jump or call, an
instruction that traps by design, privileged state; sparc64's rd %pc).
A frameless leaf function has its entry probe like any other.

fbt return: IA-32, every ret — or the pop %ebp / leave just before it when
there is one and no branch lands on the ret, except under the ud
mechanism, whose two-byte ud2 fits a ret followed by padding but not a
one-byte pop. SPARC V9: every ret, retl and `return %i7+8` not in another
instruction's delay slot.

Under i386's `opt` (tracer/arch/i386/opt.c) an entry site's first
instructions, five bytes or more, become a jmp: the site is refused here if
any direct jump or call in the image lands inside those bytes (after byte
0), or if its function has an indirect jump (a jump table's targets are not
in the ELF's instructions) — the guest cannot see a whole function, so this
check is the host's, as optprobes decodes the whole function.

insn: any instruction boundary (decoded from the function's start), as
the guest emulates or runs it out of line; SPARC V9 leaves out delay
slots.

branch (SPARC V9 only): every control transfer of a function that does not
sit in another's delay slot; its records are Btrace's btfrec.

The guest decodes each site again and has the last word (it refuses what
it cannot emulate, with a reason); these rules only choose candidates. The
functions read Function/Insn objects of bench/trace/image.py.
"""

from __future__ import annotations


class SiteRules:
    """An arch with no probes of a kind says why."""
    def entry(self, f) -> tuple[int | None, str]:
        return None, "this arch has no entry probes"

    def returns(self, f, image, mechanism: str) -> list[int]:
        return []

    def branches(self, f, image) -> tuple[list[int], str]:
        return [], "the branch provider is SPARC V9 only"

    def entry_refusal(self, f, image, addr: int, mechanism: str) -> str:
        """Why the mechanism cannot take this entry site, or ""."""
        return ""

    def insns(self, f, image) -> tuple[list[int], str]:
        """Every instruction boundary of f an insn probe may take, and a
        note on those left out ("" if none)."""
        return [i.addr for i in f.insns], ""


OPT_JMP_BYTES = 5      # jmp rel32


class I386Rules(SiteRules):
    def entry(self, f):
        if not f.insns:
            return None, "no instructions"
        return f.insns[0].addr, ""      # emulated, or run out of line

    def entry_refusal(self, f, image, addr, mechanism):
        if mechanism != "opt":
            return ""
        n = 0
        for insn in f.insns:
            if insn.addr >= addr and n < OPT_JMP_BYTES:
                n += len(insn.raw)
        inside = sorted(t for t in image.branch_targets if addr < t < addr + n)
        if inside:
            return (f"opt: a jump lands on byte +{inside[0] - addr} of the {n} "
                    "bytes its jmp displaces")
        for insn in f.insns:
            if insn.mnemonic.startswith("j") and "*" in insn.text:
                return (f"opt: the indirect jump at {insn.addr:#x} (`{insn.text}`) "
                        "may land in the bytes its jmp displaces")
        return ""

    def returns(self, f, image, mechanism):
        sites = []
        for i, insn in enumerate(f.insns):
            if insn.mnemonic != "ret":
                continue
            prev = f.insns[i - 1] if i else None
            if (mechanism != "ud" and prev is not None
                    and prev.raw in (b"\x5d", b"\xc9")
                    and insn.addr not in image.branch_targets):
                sites.append(prev.addr)
            else:
                sites.append(insn.addr)
        return sites


def _word(insn) -> int:
    return int.from_bytes(insn.raw[:4], "big") if len(insn.raw) >= 4 else 0


def sparc_is_cti(w: int) -> bool:
    """Any SPARC V9 control transfer (as tracer/arch/sparc64/emulate.c's
    sparc_is_cti): Bicc BPcc BPr FBfcc FBPfcc, CALL, JMPL RETURN Tcc
    DONE/RETRY."""
    op = w >> 30
    if op == 0:
        return (w >> 22) & 7 in (1, 2, 3, 5, 6)
    if op == 1:
        return True
    return op == 2 and (w >> 19) & 0x3f in (0x38, 0x39, 0x3a, 0x3e)


class Sparc64Rules(SiteRules):
    def entry(self, f):
        if not f.insns:
            return None, "no instructions"
        return f.insns[0].addr, ""      # save emulated, a leaf's word out of line

    def returns(self, f, image, mechanism):
        sites = []
        for i, insn in enumerate(f.insns):
            if insn.mnemonic not in ("ret", "retl") and not (
                    insn.mnemonic == "return"
                    and insn.text.replace(" ", "") == "return%i7+8"):
                continue
            prev = f.insns[i - 1] if i else None
            if prev is None or not sparc_is_cti(_word(prev)):
                sites.append(insn.addr)
        return sites

    def insns(self, f, image):
        sites, slots, prev = [], 0, 0
        for insn in f.insns:
            w = _word(insn)
            if sparc_is_cti(prev):
                slots += 1
            else:
                sites.append(insn.addr)
            prev = w
        why = (f"{slots} delay slots have no insn probe (their PC/nPC pair "
               "belongs to the CTI before them)" if slots else "")
        return sites, why

    def branches(self, f, image):
        sites, prev = [], 0
        for insn in f.insns:
            w = _word(insn)
            if sparc_is_cti(w) and not sparc_is_cti(prev):
                sites.append(insn.addr)
            prev = w
        return sites, "" if sites else "no control transfer"
