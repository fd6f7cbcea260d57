"""Call stacks, host side: the PCs a `stack` key stands for, as people read them.

The guest walks a firing's stack and keeps each distinct one in a per-CPU
table (tracer/core/stacks.c); STACKS frames bring the tables home
(Capture.stacks: id -> PCs, innermost first). Here each frame becomes
`kernel\u0060function+0xoff` as DTrace prints it, with its source line from
DWARF where the ELF has one (`file.c:42`; for a return address the line
of the call before it), and a stack is printed as DTrace prints a stack
key: one frame per line, innermost first. `check_frames` is the ground
truth every stack can be held to: each frame must be a call site of the
ELF — just after a call instruction (a return address) or at one (SPARC's
%o7), as the arch says (arches.Arch.frame_address) — but for the PC an
interrupt stopped, which follows the interrupt's trap_dispatch frame (and
the boot path's frames outside .text, which the host does not hold).
settle_leaf_callers decides the frames the walk could not: a sampled PC's
caller still in a register (WIRE_STACK_LEAF_CALLER), kept only if the
PC's function has built no frame before the PC, and the one frame the
walk took past the limit for it (WIRE_STACK_PAST_LIMIT), kept only if
the candidate was not.
"""

from __future__ import annotations

import bisect
from functools import cached_property, lru_cache

from elftools.elf.elffile import ELFFile

from ..wire.frames import WIRE

NO_ROOM = "(a stack that found no room in its CPU's table)"
# The guest keeps a walk that found no frame as the one frame 0.
NO_FRAMES = (0,)
NO_FRAMES_TEXT = "(no frames walked)"
LEAF_CALLER = WIRE.const("WIRE_STACK_LEAF_CALLER")
PAST_LIMIT = WIRE.const("WIRE_STACK_PAST_LIMIT")
MARKS = LEAF_CALLER | PAST_LIMIT


@lru_cache(maxsize=4)
def _line_table(path: str) -> tuple[list[int], list[str]]:
    """Every DWARF line-table row of the ELF: sorted addresses and their
    `file:line`."""
    rows: dict[int, str] = {}
    with open(path, "rb") as f:
        elf = ELFFile(f)
        if not elf.has_dwarf_info():
            return [], []
        dwarf = elf.get_dwarf_info()
        for cu in dwarf.iter_CUs():
            lp = dwarf.line_program_for_CU(cu)
            if lp is None:
                continue
            files = lp["file_entry"]
            base = 1 if lp.header["version"] < 5 else 0
            for e in lp.get_entries():
                st = e.state
                if st is None or st.end_sequence:
                    continue
                i = st.file - base
                name = files[i].name.decode() if 0 <= i < len(files) else "?"
                rows[st.address] = f"{name}:{st.line}"
    addrs = sorted(rows)
    return addrs, [rows[a] for a in addrs]


class Symbolizer:
    """PCs of one guest image as `kernel\u0060function+0xoff [file:line]`."""

    def __init__(self, image):
        self.image = image
        self.after = image.arch.frame_address == "after"

    def function(self, pc: int):
        return self.image.function_at(pc)

    @cached_property
    def _symbols(self) -> tuple[list[int], list[str]]:
        pairs = sorted((a, n) for n, a in self.image.symbols.items()
                       if a and not n.startswith("."))
        return [a for a, _ in pairs], [n for _, n in pairs]

    def nearest(self, pc: int) -> tuple[str, int] | None:
        """The function holding pc, else the nearest symbol below it (code
        outside .text: the boot path's, an assembly label's)."""
        f = self.function(pc)
        if f is not None:
            return f.name, pc - f.addr
        addrs, names = self._symbols
        i = bisect.bisect_right(addrs, pc) - 1
        if i < 0 or pc - addrs[i] > 0x10000:
            return None
        return names[i], pc - addrs[i]

    def name(self, pc: int) -> str:
        near = self.nearest(pc)
        if near is None:
            return f"{pc:#x}"
        name, off = near
        return f"kernel`{name}" + (f"+{off:#x}" if off else "")

    def line(self, pc: int) -> str:
        addrs, lines = _line_table(str(self.image.path))
        at = pc - 1 if self.after else pc          # the call, not what follows
        i = bisect.bisect_right(addrs, at) - 1
        return lines[i] if i >= 0 else ""

    def frame(self, pc: int, with_line: bool = True) -> str:
        where = self.line(pc) if with_line else ""
        return self.name(pc) + (f" [{where}]" if where else "")


def stack_lines(pcs, sym: Symbolizer | None, indent: str = "    ") -> list[str]:
    """A stack as DTrace prints a stack key: a frame per line, innermost first."""
    if pcs is None:
        return [indent + NO_ROOM]
    if tuple(pcs) == NO_FRAMES:
        return [indent + NO_FRAMES_TEXT]
    return [indent + (sym.frame(pc) if sym else f"{pc:#x}") for pc in pcs]


def folded_names(pcs, sym: Symbolizer | None) -> list[str]:
    """A stack's function names, outermost first (FlameGraph's order)."""
    if tuple(pcs or ()) == NO_FRAMES:
        return [NO_FRAMES_TEXT]
    out = []
    for pc in reversed(pcs or ()):
        near = sym.nearest(pc) if sym else None
        out.append(near[0] if near else f"{pc:#x}")
    return out


def interrupted(pcs, image) -> list[int]:
    """Indexes of the frames that are an interrupted PC: each right after
    the frame of the arch's interrupt_frame (trap_dispatch), from which the
    guest's walk hopped to the code the interrupt stopped."""
    hop = image.functions.get(image.arch.interrupt_frame)
    if hop is None:
        return []
    return [i + 1 for i, pc in enumerate(pcs[:-1])
            if hop.addr <= pc < hop.addr + hop.size]


def check_frames(pcs, image) -> list[str]:
    """What is wrong with a stack's frames: each must be a call site of the
    ELF (see the top), but for an interrupted PC, which must lie in a
    function. Empty if every frame is right."""
    after = image.arch.frame_address == "after"
    stopped = set(interrupted(pcs, image))
    bad = []
    for i, pc in enumerate(pcs):
        if i in stopped:
            if image.function_at(pc) is None and Symbolizer(image).nearest(pc) is None:
                bad.append(f"{pc:#x}: an interrupted PC in no function")
            continue
        if not image.text_addr <= pc < image.text_addr + len(image.text):
            continue          # the boot path's code, outside .text
        f = image.function_at(pc - 1 if after else pc)
        ok = False
        if f is None and image.arch.call_site:       # an assembly label's code
            ok = image.arch.call_site(image.code(pc - 8 if after else pc, 8))
        elif f is not None:
            for ins in f.insns:
                end = ins.addr + len(ins.raw)
                if (end == pc if after else ins.addr == pc):
                    ok = ins.mnemonic.startswith("call")
                    break
        if not ok:
            bad.append(f"{pc:#x} ({Symbolizer(image).name(pc)}) is not "
                       + ("just after a call" if after else "a call"))
    return bad


def built_frame(pc: int, image) -> bool:
    """Whether pc's function ran one of the arch's frame_builders (a SPARC
    `save`) before pc: its caller is in its frame, not in a register. Code
    in no known function counts as framed (its register is not trusted)."""
    f = image.function_at(pc)
    if f is None:
        return True
    return any(ins.addr < pc and ins.mnemonic in image.arch.frame_builders
               for ins in f.insns)


def settle_leaf_callers(stacks: dict, image, keep=None) -> dict:
    """Capture.stacks with each candidate caller (a frame marked
    LEAF_CALLER, after an interrupted PC) kept unmarked where the PC before
    it has built no frame, dropped where it has (as illumos tells a leaf),
    and a frame marked PAST_LIMIT (the walk went one further for the first
    candidate, which takes none of the frames asked for) kept only where
    that candidate was dropped. keep(pc, image) decides instead of
    built_frame's negation (the tests' broken variants). An arch without
    frame_builders marks nothing: its frames may be odd addresses (i386's
    return addresses)."""
    if not image.arch.frame_builders:
        return stacks
    keep = keep or (lambda pc, img: not built_frame(pc, img))
    out = {}
    for sid, pcs in stacks.items():
        if pcs is None or not any(pc & MARKS for pc in pcs):
            out[sid] = pcs
            continue
        settled, first_dropped = [], None
        for i, pc in enumerate(pcs):
            if pc & LEAF_CALLER:
                kept = bool(i) and keep(pcs[i - 1] & ~MARKS, image)
                first_dropped = (not kept) if first_dropped is None else first_dropped
                if not kept:
                    continue
            if pc & PAST_LIMIT and not first_dropped:
                continue
            settled.append(pc & ~MARKS)
        out[sid] = tuple(settled)
    return out
