"""Function-boundary tracing, host side: sites, probes, records, checks.

The flow is one way (DESIGN.md):

  ELF ─► functions and their instructions (objdump) ─► probe sites
      ─► `probe add` lines the guest decodes and accepts or refuses
  guest EVENTS/STATS/EXPECT frames ─► records ─► per-thread nesting,
      counts against the workload's own ground truth, drops ─► Report
      ─► a ctrace-like text trace: `cpu1 t3 -> fib(10)`, `cpu1 t3 <- fib = 55`

Sites (fbt), IA-32: a function's entry is its first instruction when that
is a prologue (push %ebp, possibly fused with mov %esp,%ebp; enter). Its
returns are found at every ret: the pop %ebp or leave just before it when
there is one and no branch lands on the ret, else the ret itself. In mode
`ud` (a two-byte ud2) returns are always probed at the ret. SPARC V9: the
entry is the function's `save`, the returns are its `ret`/`retl`. A
function without such an entry (a frameless or leaf function) has no entry
probe, and the reason is reported.

The branch provider (SPARC V9) puts a probe on every control transfer of a
function that does not sit in another's delay slot; its records are
Btrace's btfrec: pc, target, taken, annulled.

Probe patterns are `fbt:FUNCTION:entry|return` and `branch:FUNCTION`,
comma-separated, FUNCTION a glob. A glob matches the user's workload file when one is linked in, else
the built-in workloads (Image.workload_functions); an exact name may be any
function of the kernel, and the guest refuses tracer and trap-path code.

Records are decoded with the guest's word size and byte order (HELLO).
Events of all CPUs are merged by cycle counter: QEMU gives every vCPU the
same TSC, so a thread that migrates keeps its order.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
import struct
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from elftools.elf.elffile import ELFFile

from . import wire

EVENT = wire.WIRE.structs["wire_event"]
EVENTS_HEAD = wire.WIRE.structs["wire_events"]
STATS = wire.WIRE.structs["wire_stats"]
EXPECT = wire.WIRE.structs["wire_expect"]
K_ENTRY = wire.WIRE.by_name("WIRE_EVENT_KINDS")["ENTRY"].value
K_RETURN = wire.WIRE.by_name("WIRE_EVENT_KINDS")["RETURN"].value
K_CHECK = wire.WIRE.by_name("WIRE_EVENT_KINDS")["CHECK"].value
K_BRANCH = wire.WIRE.by_name("WIRE_EVENT_KINDS")["BRANCH"].value

MAX_ARGS = 6


class SpecError(ValueError):
    """A probe pattern that names nothing, or is malformed."""


# ---- the ELF: functions, instructions, arguments ----

@dataclass
class Insn:
    addr: int
    raw: bytes
    text: str          # mnemonic and operands, as objdump prints them


@dataclass
class Function:
    name: str
    addr: int
    size: int
    insns: list[Insn] = field(default_factory=list)
    nargs: int = 0


_INSN = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*(?:\t(.*))?$")
_FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
_TARGET = re.compile(r"^(?:j\w+|call\w*|loop\w*)\s+([0-9a-f]+)\b")


@dataclass
class Image:
    """What the host knows about one guest ELF."""
    path: Path
    functions: dict[str, Function]
    branch_targets: set[int]
    symbols: dict[str, int]
    text: bytes
    text_addr: int
    isa: str             # "i386" or "sparc64", from the ELF header

    @cached_property
    def by_start(self) -> dict[int, Function]:
        return {f.addr: f for f in self.functions.values()}

    @cached_property
    def starts(self) -> list[int]:
        return sorted(self.by_start)

    def code(self, addr: int, n: int = 8) -> bytes:
        off = addr - self.text_addr
        return self.text[off:off + n]

    def workload_functions(self) -> list[Function]:
        """What a glob matches: a user's own file if one is linked in (its
        objects sit in [__user_workload_start, __user_workload_end)), else the
        built-in workloads."""
        lo = self.symbols.get("__user_workload_start", 0)
        hi = self.symbols.get("__user_workload_end", 0)
        if lo == hi:
            lo = self.symbols.get("__workload_text_start", 0)
            hi = self.symbols.get("__workload_text_end", 0)
        return [f for f in self.functions.values() if lo <= f.addr < hi]


def _dwarf_nargs(elf: ELFFile) -> dict[int, int]:
    """Function address -> number of formal parameters, from DWARF."""
    out: dict[int, int] = {}
    if not elf.has_dwarf_info():
        return out
    for cu in elf.get_dwarf_info().iter_CUs():
        for die in cu.iter_DIEs():
            if die.tag != "DW_TAG_subprogram" or "DW_AT_low_pc" not in die.attributes:
                continue
            n = sum(1 for c in die.iter_children() if c.tag == "DW_TAG_formal_parameter")
            out[die.attributes["DW_AT_low_pc"].value] = n
    return out


@lru_cache(maxsize=4)
def _load_image(path: str, mtime: float, objdump: str) -> Image:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        symtab = elf.get_section_by_name(".symtab")
        symbols = {s.name: s["st_value"] for s in symtab.iter_symbols() if s.name}
        sizes = {s.name: s["st_size"] for s in symtab.iter_symbols()
                 if s.name and s["st_info"]["type"] == "STT_FUNC"}
        text = elf.get_section_by_name(".text")
        text_bytes, text_addr = text.data(), text["sh_addr"]
        isa = {"EM_386": "i386", "EM_SPARCV9": "sparc64"}.get(elf["e_machine"],
                                                               elf["e_machine"])
        nargs = _dwarf_nargs(elf)
    try:
        out = subprocess.run([objdump, "-d", "-j", ".text", "-w", path],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError(f"cannot disassemble {path} with {objdump}: {e}") from None
    functions: dict[str, Function] = {}
    targets: set[int] = set()
    cur: Function | None = None
    for line in out.splitlines():
        m = _FUNC.match(line)
        if m:
            name = m.group(2)
            cur = None
            if name in sizes:
                cur = Function(name, int(m.group(1), 16), sizes[name])
                cur.nargs = min(nargs.get(cur.addr, 0), MAX_ARGS)
                functions[name] = cur
            continue
        m = _INSN.match(line)
        if not m:
            continue
        addr, raw, text_ = int(m.group(1), 16), bytes.fromhex(m.group(2)), m.group(3) or ""
        t = _TARGET.match(text_)
        if t:
            targets.add(int(t.group(1), 16))
        if cur and addr < cur.addr + cur.size:
            cur.insns.append(Insn(addr, raw, text_.strip()))
    return Image(Path(path), functions, targets, symbols, text_bytes, text_addr, isa)


def load_image(elf: Path, objdump: str) -> Image:
    return _load_image(str(elf), elf.stat().st_mtime, objdump)


# ---- probe sites ----

@dataclass
class Probe:
    id: int
    function: str
    kind: str            # "entry", "return" or "branch"
    addr: int
    nargs: int = 0
    refused: str = ""    # the guest's reason, if it refused


def _is(insn: Insn, *mnemonics: str) -> bool:
    return insn.text.split()[0] in mnemonics if insn.text else False


def _word(insn: Insn) -> int:
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


def _sparc_save_to_sp(w: int) -> bool:
    return w >> 30 == 2 and (w >> 19) & 0x3f == 0x3c and (w >> 25) & 0x1f == 14


def entry_site(f: Function, isa: str = "i386") -> tuple[int | None, str]:
    if not f.insns:
        return None, "no instructions"
    first = f.insns[0]
    if isa == "sparc64":
        if _sparc_save_to_sp(_word(first)):
            return first.addr, ""
        return None, f"first instruction is `{first.text}`, not save (a leaf function)"
    if _is(first, "push") and first.raw == b"\x55":
        return first.addr, ""
    if _is(first, "enter"):
        return first.addr, ""
    if first.raw == b"\x90":
        return first.addr, ""       # a patchable entry: nop before the prologue
    return None, f"first instruction is `{first.text}`, not a prologue"


def return_sites(f: Function, image: Image, mode: str) -> list[int]:
    sites = []
    for i, insn in enumerate(f.insns):
        if not _is(insn, "ret", "retl") and not (
                image.isa == "sparc64" and _is(insn, "return")
                and insn.text.replace(" ", "") == "return%i7+8"):
            continue
        prev = f.insns[i - 1] if i else None
        if image.isa == "sparc64":
            if prev is None or not sparc_is_cti(_word(prev)):
                sites.append(insn.addr)
        elif (mode != "ud" and prev is not None and prev.raw in (b"\x5d", b"\xc9")
                and insn.addr not in image.branch_targets):
            sites.append(prev.addr)
        else:
            sites.append(insn.addr)
    return sites


def branch_sites(f: Function, image: Image) -> tuple[list[int], str]:
    """Every CTI of f not in another's delay slot (SPARC V9 only)."""
    if image.isa != "sparc64":
        return [], "the branch provider is SPARC V9 only"
    sites, prev = [], 0
    for insn in f.insns:
        w = _word(insn)
        if sparc_is_cti(w) and not sparc_is_cti(prev):
            sites.append(insn.addr)
        prev = w
    return sites, "" if sites else "no control transfer"


@dataclass(frozen=True)
class Site:
    """What check mode needs of a probe's site: where, and the original
    bytes there (bench/check_i386.py)."""
    addr: int
    code: bytes


def sites_of(image: Image, probes: list[Probe]) -> dict[int, Site]:
    return {p.id: Site(p.addr, image.code(p.addr, 8)) for p in probes}


def parse_spec(spec: str) -> list[tuple[str, str, str]]:
    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        bits = part.split(":")
        if bits[0] == "branch":
            if len(bits) not in (2, 3) or (len(bits) == 3 and bits[2] not in ("", "*")):
                raise SpecError(f"probe {part!r}: expected branch:FUNCTION")
            kinds = ("branch",)
        elif len(bits) != 3 or bits[0] != "fbt" or bits[2] not in ("entry", "return", "*", ""):
            raise SpecError(f"probe {part!r}: expected fbt:FUNCTION:entry|return "
                            "or branch:FUNCTION")
        else:
            kinds = ("entry", "return") if bits[2] in ("*", "") else (bits[2],)
        if not bits[1]:
            raise SpecError(f"probe {part!r}: no function")
        out += [(bits[0], bits[1], k) for k in kinds]
    if not out:
        raise SpecError("no probes given")
    return out


def plan(spec: str, image: Image, mode: str) -> tuple[list[Probe], list[str]]:
    """Probes for a pattern list, numbered from 0, and notes on functions
    that matched but have no site of a kind. A site wanted twice (a ret is
    a return and a branch) keeps its first probe."""
    probes: list[Probe] = []
    notes: list[str] = []
    seen = set()
    for provider, pattern, kind in parse_spec(spec):
        if any(c in pattern for c in "*?["):
            pool = image.workload_functions()
            matched = [f for f in pool if fnmatch.fnmatchcase(f.name, pattern)]
        else:
            matched = [image.functions[pattern]] if pattern in image.functions else []
        if not matched:
            raise SpecError(f"{provider}:{pattern}:{kind} matches no function"
                            + ("" if "*" in pattern else " (unknown symbol)"))
        for f in sorted(matched, key=lambda f: f.addr):
            if kind == "entry":
                addr, why = entry_site(f, image.isa)
                addrs = [addr] if addr is not None else []
                if why:
                    notes.append(f"{f.name}: no entry probe: {why}")
            elif kind == "branch":
                addrs, why = branch_sites(f, image)
                if why:
                    notes.append(f"{f.name}: no branch probes: {why}")
            else:
                addrs = return_sites(f, image, mode)
                if not addrs:
                    notes.append(f"{f.name}: no return probe: no ret instruction")
            for a in addrs:
                if a in seen:
                    continue
                seen.add(a)
                probes.append(Probe(len(probes), f.name, kind, a,
                                    f.nargs if kind == "entry" else 0))
    return probes, notes


# ---- records ----

@dataclass
class Event:
    cpu: int
    thread: int
    probe: int
    kind: int
    cycles: int
    words: tuple


@dataclass
class Capture:
    events: list[Event]
    checks: list[Event]
    stats: dict[int, dict]
    expects: dict[str, int]
    frames: int
    bytes: int           # EVENTS payload bytes


def decode(frames, order: str, word_bytes: int) -> Capture:
    events: list[Event] = []
    checks: list[Event] = []
    stats: dict[int, dict] = {}
    expects: dict[str, int] = {}
    wfmt = {4: "I", 8: "Q"}[word_bytes]
    nbytes = nframes = 0
    for fr in frames:
        p = fr.payload
        if fr.type == wire.T_STATS:
            s = STATS.unpack(p, order)
            stats[s["cpu"]] = s
        elif fr.type == wire.T_EXPECT:
            e = EXPECT.unpack(p, order)
            name = p[EXPECT.size:].decode("utf-8", "replace")
            expects[name] = expects.get(name, 0) + e["calls"]
        elif fr.type == wire.T_EVENTS:
            nframes += 1
            nbytes += len(p)
            head = EVENTS_HEAD.unpack(p, order)
            off = EVENTS_HEAD.size
            for _ in range(head["count"]):
                e = EVENT.unpack(p[off:off + EVENT.size], order)
                off += EVENT.size
                n = e["nwords"]
                words = struct.unpack_from(f"{order}{n}{wfmt}", p, off)
                off += n * word_bytes
                ev = Event(head["cpu"], e["thread"], e["probe"], e["kind"],
                           e["cycles"], words)
                (checks if e["kind"] == K_CHECK else events).append(ev)
            if off != len(p):
                raise ValueError(f"EVENTS frame seq {fr.seq}: {len(p) - off} bytes "
                                 "left over after its records")
    events.sort(key=lambda e: e.cycles)
    return Capture(events, checks, stats, expects, nframes, nbytes)


# ---- verification ----

def _nesting(events, probes: list[Probe], key, outer_ok: bool) -> tuple[int, list[str]]:
    """Walk events against per-key call stacks (key(ev) is the thread, or
    (window, thread); None skips the event). An entry pushes; a return must
    match the innermost entry. With outer_ok, a return on an empty stack is
    a call that began before the window, not an error. After a mismatch the
    stack is unwound to the returning function if it is on it, so one lost
    record costs one error, not every one after it. Only functions with
    both an entry and a return probe take part. Returns (returns checked,
    errors)."""
    by_id = {p.id: p for p in probes}
    both = {p.function for p in probes if p.kind == "entry"} & \
        {p.function for p in probes if p.kind == "return"}
    stacks: dict = defaultdict(list)
    checked, errors = 0, []
    for ev in events:
        p = by_id.get(ev.probe)
        k = key(ev)
        if (p is None or k is None or p.function not in both
                or ev.kind not in (K_ENTRY, K_RETURN)):
            continue
        st = stacks[k]
        if ev.kind == K_ENTRY:
            st.append(p.function)
            continue
        checked += 1
        if st and st[-1] == p.function:
            st.pop()
        elif st or not outer_ok:
            errors.append(f"{k}: t{ev.thread} cpu{ev.cpu}: return from {p.function} "
                          f"while the innermost entry is {st[-1] if st else 'none'}")
            if p.function in st:
                del st[len(st) - 1 - st[::-1].index(p.function):]
    return checked, errors


@dataclass
class Report:
    entries: Counter
    returns: Counter
    expected: dict[str, int]
    nesting_errors: list[str]
    nesting_checked: int
    dropped: int
    fired: int
    recorded: int
    link_errors: list
    problems: list[str]
    entries_probed: set
    returns_probed: set
    branches: Counter = field(default_factory=Counter)   # per function

    def _per_kind(self):
        return (("entries", self.entries_probed, self.entries),
                ("returns", self.returns_probed, self.returns))

    @property
    def expected_firings(self) -> int:
        return sum(self.expected.get(f, 0) for _, probed, _ in self._per_kind()
                   for f in probed)

    @property
    def traced(self) -> int:
        """Entry and return records (what the ground truth counts)."""
        return sum(self.entries.values()) + sum(self.returns.values())

    @property
    def missed(self) -> int:
        """Firings the ground truth says happened and the trace lacks."""
        return sum(max(0, self.expected[f] - seen[f])
                   for _, probed, seen in self._per_kind()
                   for f in probed if f in self.expected)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(cap: Capture, probes: list[Probe], link_errors=(),
           allow_missing: bool = False) -> Report:
    """Counts, nesting, drops and link errors. allow_missing is for the
    lossy baselines and for toggled probes: nesting and counts are then
    measured but not held against the run."""
    by_id = {p.id: p for p in probes}
    entries, returns, branches = Counter(), Counter(), Counter()
    problems: list[str] = []
    for ev in cap.events:
        p = by_id.get(ev.probe)
        if p is None:
            problems.append(f"record for unknown probe {ev.probe}")
        elif ev.kind == K_ENTRY:
            entries[p.function] += 1
        elif ev.kind == K_RETURN:
            returns[p.function] += 1
        elif ev.kind == K_BRANCH:
            branches[p.function] += 1
    checked, nesting_errors = _nesting(cap.events, probes, lambda ev: ev.thread,
                                       outer_ok=False)
    stats = cap.stats.values()
    rep = Report(entries, returns, dict(cap.expects), nesting_errors, checked,
                 sum(s["dropped"] for s in stats), sum(s["fired"] for s in stats),
                 sum(s["recorded"] for s in stats), list(link_errors), problems,
                 {p.function for p in probes if p.kind == "entry"},
                 {p.function for p in probes if p.kind == "return"}, branches)
    if not cap.stats:
        problems.append("no STATS frames: the guest's counters never arrived")
    if link_errors:
        problems.append(f"{len(link_errors)} link errors (lost or damaged frames): "
                        + "; ".join(str(e) for e in link_errors[:3]))
    if rep.dropped:
        problems.append(f"{rep.dropped} records dropped (a trace buffer was full)")
    sent = sum(s["sent"] for s in stats)
    got = len(cap.events) + len(cap.checks)
    if cap.stats and sent != got:
        problems.append(f"the guest sent {sent} records, the host decoded {got}")
    if not allow_missing:
        if nesting_errors:
            problems.append(f"nesting broken: {nesting_errors[0]}")
        for what, probed, seen in rep._per_kind():
            for f in sorted(probed & rep.expected.keys()):
                if seen[f] != rep.expected[f]:
                    problems.append(f"{f}: {seen[f]} {what} traced, the workload "
                                    f"counted {rep.expected[f]} calls")
    return rep


def summary_lines(rep: Report) -> list[str]:
    lines = []
    for f in sorted(rep.entries_probed | rep.returns_probed):
        exp = rep.expected.get(f)
        if exp is None and not rep.entries[f] and not rep.returns[f]:
            continue
        e = rep.entries[f] if f in rep.entries_probed else "-"
        r = rep.returns[f] if f in rep.returns_probed else "-"
        lines.append(f"  {f:24s} entries {e!s:>9} returns {r!s:>9} "
                     f"expected {exp if exp is not None else '?'!s:>9}")
    return lines


# ---- printing ----

def symbolize(image: Image | None, addr: int) -> str:
    """FUNCTION+0xOFF for an address in a function of image, else hex."""
    if image is not None:
        starts = image.starts
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0:
            f = image.by_start[starts[i]]
            if addr < f.addr + max(f.size, 1):
                return f.name if addr == f.addr else f"{f.name}+{addr - f.addr:#x}"
    return f"{addr:#x}"


def format_trace(cap: Capture, probes: list[Probe], limit: int | None = None,
                 image: Image | None = None):
    """ctrace-like lines, indented by each thread's depth; branch records as
    `~ FROM -> TO taken|not taken[, annulled]`."""
    by_id = {p.id: p for p in probes}
    depth: dict[int, int] = defaultdict(int)
    for n, ev in enumerate(cap.events):
        if limit is not None and n >= limit:
            yield f"... {len(cap.events) - limit} more records"
            return
        p = by_id.get(ev.probe)
        name = p.function if p else f"probe{ev.probe}"
        pad = "  " * depth[ev.thread]
        if ev.kind == K_ENTRY:
            args = ", ".join(str(w) for w in ev.words[2:])
            yield f"cpu{ev.cpu} t{ev.thread} {pad}-> {name}({args})"
            depth[ev.thread] += 1
        elif ev.kind == K_BRANCH and len(ev.words) >= 3:
            pc, target, flags = ev.words[:3]
            how = ("taken" if flags & 1 else "not taken") + \
                (", annulled" if flags & 2 else "")
            yield (f"cpu{ev.cpu} t{ev.thread} {pad}~ {symbolize(image, pc)} -> "
                   f"{symbolize(image, target)} {how}")
        else:
            depth[ev.thread] = max(0, depth[ev.thread] - 1)
            yield (f"cpu{ev.cpu} t{ev.thread} {'  ' * depth[ev.thread]}<- {name} = "
                   f"{ev.words[2] if len(ev.words) > 2 else '?'}")


def check_windows(cap: Capture, probes: list[Probe],
                  windows: list[tuple[int, int]]) -> tuple[int, list[str]]:
    """Nesting inside windows of guest time in which every probe was armed
    (start, end in cycles); a return may belong to a call that began before
    its window. Returns (returns checked, errors)."""
    starts = [w[0] for w in windows]

    def window_of(ev):
        i = bisect.bisect_right(starts, ev.cycles) - 1
        if i < 0 or ev.cycles > windows[i][1]:
            return None
        return (f"window {i}", ev.thread)
    return _nesting(cap.events, probes, window_of, outer_ok=True)
