"""Printing a capture: the ctrace-like text trace and the per-function
summary.

    cpu1 t3 -> fib(n=10)               an entry, with its arguments
    cpu1 t3   ~ fib+0x1c -> fib+0x40 taken       a branch (SPARC V9)
    cpu1 t3 <- fib = 55                a return, with its value ('?' unknown)
    cpu1 !! 12 records lost here (...) where a full buffer lost records

Lines are indented by each thread's call depth; the words of each record
are read by wire.h's slot names (bench/wire/records.py), and arguments and
return values by the function's C signature when the ELF has its DWARF
(bench/trace/types.py: `ho_classify(c=0x1a0b2c, x=-193)`); without one,
arguments are the raw words.
"""

from __future__ import annotations

from collections import defaultdict

from ..wire.records import (BRANCH, BRANCH_BITS, ENTRY, INSN, K_BRANCH, K_ENTRY,
                            K_INSN, K_LOG, RETURN, Capture, log_data)
from .image import Image
from .sites import Probe
from .verify import Report


# Functions whose calls are always listed (the scheduler's and the IPI's:
# where a kernel's control flow is not a plain call chain).
CALLS_SHOWN = ("schedule", "sched_irq_exit", "sched_wake", "lapic_send_fixed",
               "arch_send_ipi", "arch_context_switch")


def summary_lines(rep: Report, losses_shown: int = 8) -> list[str]:
    """A row per probed function — its entries, returns and the workload's
    count, and why a count is not checked — then what nesting checked and
    every loss (cpu, how many, where in its stream, whose)."""
    lines = []
    refused = {f for f, _ in rep.refused}
    for f in sorted(rep.entries_probed | rep.returns_probed | refused):
        exp = rep.expected.get(f)
        if exp is None and not rep.entries[f] and not rep.returns[f] \
                and f not in refused:
            continue
        e = rep.entries[f] if f in rep.entries_probed else "-"
        r = rep.returns[f] if f in rep.returns_probed else "-"
        row = (f"  {f:24s} entries {e!s:>9} returns {r!s:>9} "
               f"expected {exp if exp is not None else '?'!s:>9}")
        notes = [f"{what}: {rep.not_checked(f, kind)}"
                 for what, kind in (("entries", "entry"), ("returns", "return"))
                 if (f, kind) in rep.refused]
        lines.append(row + ("   " + "; ".join(notes) if notes else ""))
    lines.append(f"  {rep.nesting_line()}")
    if rep.switches or any(rep.calls.open_at.values()):
        lines += rep.calls_lines(CALLS_SHOWN)
    if rep.nmissed:
        lines.append(f"  missed: {rep.nmissed} probe hits inside a firing (counted, "
                     "not recorded)")
    if rep.insns or rep.insn_probes:
        lines.append(f"  insn: {rep.insn_probes} probes, "
                     f"{sum(rep.insns.values())} firings")
    if rep.program_counts:
        c = rep.program_counts.values()
        runs, faults = sum(x["runs"] for x in c), sum(x["faults"] for x in c)
        over = sum(x["over"] for x in c)
        lines.append(f"  programs: {sum(x['hits'] for x in c)} firings, {runs} runs, "
                     f"{faults} ended by a fault"
                     + (f", {over} past their maximum hit count" if over else ""))
    if rep.losses:
        lines.append(f"  {rep.dropped} records lost in {len(rep.losses)} places "
                     "(counts not checked):")
        lines += [f"    {l.describe()}" for l in rep.losses[:losses_shown]]
        if len(rep.losses) > losses_shown:
            lines.append(f"    ... {len(rep.losses) - losses_shown} more")
    return lines


def nesting_error_lines(rep: Report, shown: int = 3) -> list[str]:
    """Each real break with the thread's last records before it."""
    lines = []
    for err in rep.nesting_errors[:shown]:
        lines.append(f"NESTING BROKEN: {err.message}")
        lines += [f"    {h}" for h in err.history]
    if len(rep.nesting_errors) > shown:
        lines.append(f"... {len(rep.nesting_errors) - shown} more breaks")
    return lines


def symbolize(image: Image | None, addr: int) -> str:
    """FUNCTION+0xOFF for an address in a function of image, else hex."""
    f = image.function_at(addr) if image is not None else None
    if f is None:
        return f"{addr:#x}"
    return f.name if addr == f.addr else f"{f.name}+{addr - f.addr:#x}"


def format_trace(cap: Capture, probes: list[Probe], limit: int | None = None,
                 image: Image | None = None, formatter=None, order: str = "<"):
    """ctrace-like lines, indented by each thread's depth; branch records as
    `~ FROM -> TO taken|not taken[, annulled]`; a program's LOG records as
    `:: desc: formatted` by the formatter's templates (or a dump); where a
    CPU lost records, `cpuN !! K records lost here (...)` at the place its
    stream resumes."""
    by_id = {p.id: p for p in probes}
    depth: dict[int, int] = defaultdict(int)
    marks = sorted((l for l in cap.marked), key=lambda l: l.at)
    m = 0
    for n, ev in enumerate(cap.events):
        if limit is not None and n >= limit:
            yield f"... {len(cap.events) - limit} more records"
            return
        while m < len(marks) and marks[m].at <= ev.cycles:
            loss = marks[m]
            m += 1
            yield (f"cpu{loss.cpu} !! {loss.count} records lost here "
                   f"(since cycle {loss.first}; {loss.describe().split('; ')[-1]})")
        p = by_id.get(ev.probe)
        name = p.function if p else f"probe{ev.probe}"
        pad = "  " * depth[ev.thread]
        w = ev.words
        sig = image.signature_of(name) if image is not None else None
        if ev.kind == K_LOG:
            word = image.word_bytes if image is not None else 4
            major, minor, data = log_data(ev, order, word)
            text = (formatter.lines(major, minor, data, order, word) if formatter
                    else [f"log major {major} minor {minor}, {len(data)} bytes"])
            yield f"cpu{ev.cpu} t{ev.thread} {pad}:: {text[0]}"
            for more in text[1:]:
                yield f"cpu{ev.cpu} t{ev.thread} {pad}   {more.strip()}"
            continue
        if ev.kind == K_ENTRY:
            if sig is not None:
                args = sig.format_args(w[ENTRY.ARG0:], image.word_bytes)
            else:
                args = ", ".join(str(a) for a in w[ENTRY.ARG0:])
            yield f"cpu{ev.cpu} t{ev.thread} {pad}-> {name}({args})"
            depth[ev.thread] += 1
        elif ev.kind == K_INSN and len(w) > INSN.SP:
            yield (f"cpu{ev.cpu} t{ev.thread} {pad}. {symbolize(image, w[INSN.PC])} "
                   f"sp={w[INSN.SP]:#x}")
        elif ev.kind == K_BRANCH and len(w) > BRANCH.FLAGS:
            flags = w[BRANCH.FLAGS]
            how = ("taken" if flags & BRANCH_BITS.TAKEN else "not taken") + \
                (", annulled" if flags & BRANCH_BITS.ANNULLED else "")
            yield (f"cpu{ev.cpu} t{ev.thread} {pad}~ {symbolize(image, w[BRANCH.PC])} "
                   f"-> {symbolize(image, w[BRANCH.TARGET])} {how}")
        else:
            depth[ev.thread] = max(0, depth[ev.thread] - 1)
            if sig is not None:
                value = sig.format_return(w[RETURN.VALUE:], image.word_bytes)
            else:
                value = f" = {w[RETURN.VALUE] if len(w) > RETURN.VALUE else '?'}"
            yield f"cpu{ev.cpu} t{ev.thread} {'  ' * depth[ev.thread]}<- {name}{value}"
