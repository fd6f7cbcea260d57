"""Instruction traces rebuilt from branch records (SPARC V9: no single-step).

Seed 003's taken-branch method (Figs. 5E/5F) with method 3's offline
resolution: the guest records only control transfers — a branch probe on
every CTI of the traced functions (the branch provider, `branch:GLOB`:
pc, target, taken, annulled) — plus the function's entry probe, which
opens a region. Everything between two transfers is straight-line code,
so the host walks the ELF from the entry: an instruction that is no CTI
falls through to pc + 4; at a CTI it takes the thread's next BRANCH
record, which must name this pc, runs the delay slot unless the record
says annulled, and goes to the target if taken, else to pc + 8.

Calls and returns keep the call depth: a CALL (or JMPL writing %o7) into
a traced function is one deeper; one to a function outside the traced
set runs untraced (no records come from it) and the walk goes on at its
return address, pc + 8; `ret`, `retl` and `return` are one shallower, and
the one that goes below the entry's depth ends the region after its delay
slot. The ENTRY records of nested entries of the function are passed
over. A record that does not name the walk's pc, a walk that leaves the
traced functions, or records that end inside a region is a problem of the
region, named with where: a lost, reordered or altered record cannot pass
unseen, since every record is checked against the walk.
"""

from __future__ import annotations

import fnmatch

from ..wire import records
from .itrace import Region

OP_CALL, OP3_JMPL, OP3_RETURN = 1, 0x38, 0x39
O7, I7, G0 = 15, 31, 0
WALK_LIMIT = 10_000_000


def _word(image, pc: int) -> int:
    return int.from_bytes(image.code(pc, 4), "big")


def classify(w: int) -> str:
    """'call', 'return', 'jump' (any other transfer), 'trap' (Tcc,
    done/retry: not walked) or '' (no transfer)."""
    op = w >> 30
    if op == OP_CALL:
        return "call"
    if op == 0:
        return "jump" if (w >> 22) & 7 in (1, 2, 3, 5, 6) else ""
    if op != 2:
        return ""
    op3 = (w >> 19) & 0x3f
    if op3 == OP3_RETURN:
        return "return"
    if op3 == OP3_JMPL:
        rd, rs1, i, simm = (w >> 25) & 31, (w >> 14) & 31, (w >> 13) & 1, w & 0x1fff
        if rd == O7:
            return "call"
        if rd == G0 and rs1 in (O7, I7) and i and simm == 8:
            return "return"
        return "jump"
    if op3 in (0x3a, 0x3e):
        return "trap"
    return ""


def follows(image, addrs: list[int]) -> set[int] | None:
    """Where a thread whose last instructions were addrs goes next, for
    QEMU's log (qemuref.regions): pc + 4 after an instruction that is no
    transfer; unknown after a transfer (its slot, or past it when
    annulled, or its target for `ba,a`) and after a delay slot."""
    if classify(_word(image, addrs[-1])):
        return None
    if len(addrs) >= 2 and classify(_word(image, addrs[-2])) \
            and addrs[-1] == addrs[-2] + 4:
        return None
    return {addrs[-1] + 4}


def traced_ranges(image, globs: str) -> list[tuple[int, int, str]]:
    """The functions whose transfers are probed (a comma list of globs):
    (start, end, name)."""
    pats = globs.split(",")
    return sorted((f.addr, f.addr + f.size, f.name) for f in image.functions.values()
                  if any(fnmatch.fnmatchcase(f.name, p) for p in pats) and f.size)


def _inside(ranges, pc: int) -> bool:
    return any(lo <= pc < hi for lo, hi, _ in ranges)


def _walk(r: Region, entry: int, recs: list, k: int, image, ranges,
          entry_probe: int) -> int:
    """Walk one region from entry, taking BRANCH records from recs[k:]."""
    pc, depth = entry, 0
    for _ in range(WALK_LIMIT):
        if not _inside(ranges, pc):
            r.problems.append(f"thread {r.thread}: the walk left the traced "
                              f"functions at {pc:#x}")
            return k
        r.addrs.append(pc)
        w = _word(image, pc)
        kind = classify(w)
        if not kind:
            pc += 4
            continue
        if kind == "trap":
            r.problems.append(f"thread {r.thread}: a trap instruction at {pc:#x}")
            return k
        while k < len(recs) and recs[k].kind == records.K_ENTRY:
            k += 1                      # a nested entry of the function
        if k >= len(recs):
            r.problems.append(f"thread {r.thread}: its records end inside the "
                              f"region, at the transfer at {pc:#x}")
            return k
        rec = recs[k]
        k += 1
        r.records += 1
        if rec.kind != records.K_BRANCH or rec.words[records.BRANCH.PC] != pc:
            got = rec.words[0] if rec.words else 0
            r.problems.append(f"thread {r.thread}: the transfer at {pc:#x} has "
                              f"no record: the next one is for {got:#x} (lost, "
                              "reordered or altered)")
            return k
        flags = rec.words[records.BRANCH.FLAGS]
        taken = bool(flags & records.BRANCH_BITS.TAKEN)
        annulled = bool(flags & records.BRANCH_BITS.ANNULLED)
        target = rec.words[records.BRANCH.TARGET]
        if not annulled:
            if classify(_word(image, pc + 4)):
                r.problems.append(f"thread {r.thread}: a transfer in the delay "
                                  f"slot at {pc + 4:#x}: not walked")
                return k
            r.addrs.append(pc + 4)
        if kind == "call":
            if _inside(ranges, target):
                depth += 1
                pc = target
            else:
                r.calls_out += 1
                r.outs.add(len(r.addrs) - 1)
                pc += 8
        elif kind == "return":
            depth -= 1
            if depth < 0:
                r.ended = "return"
                return k
            pc = target
        else:
            pc = target if taken else pc + 8
    r.problems.append(f"thread {r.thread}: the walk ran {WALK_LIMIT} instructions")
    return k


def regions(events, image, entry_probe: int, entry: int,
            glob: str) -> tuple[list[Region], int]:
    """Every region of the capture, rebuilt (see the top), and how many
    branch records came from outside any region (the traced functions
    called from elsewhere: not walked)."""
    ranges = traced_ranges(image, glob)
    per_thread: dict[int, list] = {}
    for ev in events:
        if ev.kind == records.K_BRANCH or (ev.kind == records.K_ENTRY
                                           and ev.probe == entry_probe):
            per_thread.setdefault(ev.thread, []).append(ev)
    out: list[Region] = []
    outside = 0
    for thread, recs in sorted(per_thread.items(), key=lambda kv: kv[1][0].cycles):
        k = 0
        while k < len(recs):
            ev = recs[k]
            k += 1
            if ev.kind != records.K_ENTRY:
                outside += 1
                continue
            r = Region(thread, ev.probe, 0, cycles=ev.cycles)
            r.cpus.add(ev.cpu)
            out.append(r)
            k = _walk(r, entry, recs, k, image, ranges, entry_probe)
    out.sort(key=lambda r: r.cycles)
    return out, outside
