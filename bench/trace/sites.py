"""Probe specs into numbered probes on the sites the arch's rules choose.

A spec is a comma list of `fbt:FUNCTION:entry|return` (`fbt:FUNCTION:*`
or `fbt:FUNCTION:` for both), `branch:FUNCTION` and `insn:FUNCTION+OFF`
(OFF a byte offset, decimal or 0x-hex, or `*` for every instruction of the
function), FUNCTION a glob. An insn offset must be an instruction boundary
found by decoding from the symbol's start (the image's disassembly); one
that is not is a SpecError naming the instruction it falls inside. Where a
boundary takes no probe on the arch (sparc64: a delay slot, whose PC/nPC
pair belongs to the CTI before it) `+*` leaves it out with a note. A glob
matches the workload functions (image.Image.workload_functions); an exact
name may be any function of the kernel. With the module `kernel` before the
function, as DTrace names fbt probes (`fbt:kernel:*:entry`,
`branch:kernel:FUNCTION`), a glob matches every function of the kernel.
The guest refuses tracer and trap-path code, each with its reason. A spec that names nothing, or is malformed, is a SpecError
(bad usage) before anything is sent to a guest.

plan() numbers the probes from 0, in spec order and then by address, and
notes every function that matched but has no site of a kind (a function
with no ret has no return probe, say). A site wanted twice (a ret is a
return and a branch; a one-instruction function's `ret` is its entry and
its return) keeps its first probe, since the guest holds one probe per
site; the second is noted with the probe that holds the site, never
dropped silently (taken()). The probe kinds' words
come from wire.h (WIRE_PROBE_KINDS), the same words `probe add` takes.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from ..errors import UsageError
from ..wire.records import PROBE_KINDS
from .image import Image

PROVIDERS = ("fbt", "branch", "insn")


class SpecError(UsageError):
    """A probe pattern that names nothing, or is malformed."""


@dataclass
class Probe:
    id: int
    function: str
    kind: str            # a word of WIRE_PROBE_KINDS: entry, return, branch
    addr: int
    nargs: int = 0
    refused: str = ""    # the guest's reason, if it refused
    program: str = ""    # the program it runs instead of recording, if any
    offset: int = 0      # insn probes: bytes from the function's start
    argmap: str = ""     # entry probes: where each word is, hex (types.py), if not
                         # where the calling convention puts it

    @property
    def spec(self) -> str:
        """How a spec names this probe's kind of site."""
        if self.kind == "branch":
            return f"branch:{self.function}"
        if self.kind == "insn":
            return f"insn:{self.function}+{self.offset:#x}"
        return f"fbt:{self.function}:{self.kind}"


@dataclass(frozen=True)
class Site:
    """What check mode needs of a probe's site: where, and the original
    bytes there (bench/check/)."""
    addr: int
    code: bytes


def sites_of(image: Image, probes: list[Probe]) -> dict[int, Site]:
    # 16: the longest run an i386 opt probe displaces (opt.h, 12) and more.
    return {p.id: Site(p.addr, image.code(p.addr, 16)) for p in probes}


MODULES = ("workload", "kernel")


SAMPLERS = {"profile": "all", "tick": "one"}    # profile-HZ: every CPU; tick-HZ: one
SAMPLE_HZ_MAX = 20000
# DTrace's suffixes of profile-N and tick-N (none: hertz): a rate, or a
# period whose inverse is the rate. The guest's timer takes whole hertz.
RATE_SUFFIXES = {"hz": None, "ns": 10**9, "nsec": 10**9, "us": 10**6, "usec": 10**6,
                 "ms": 10**3, "msec": 10**3, "s": 1, "sec": 1}
PERIOD_SECONDS = {"m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def sample_hz(part: str, rate: str) -> int:
    """The whole hertz of profile-N/tick-N's N (`997`, `997hz`, `1s`,
    `100ms`, `250us`), as DTrace reads it; a SpecError for anything else."""
    m = re.fullmatch(r"(\d+)([a-z]*)", rate)
    if not m or (m[2] and m[2] not in RATE_SUFFIXES and m[2] not in PERIOD_SECONDS):
        raise SpecError(f"probe {part!r}: N of profile-N/tick-N is a rate (997, "
                        "997hz) or a period (1s, 100ms, 250us, 1000ns)")
    n, unit = int(m[1]), m[2]
    if unit in PERIOD_SECONDS or n == 0:
        hz = 0.0 if n == 0 else 1 / (n * PERIOD_SECONDS[unit])
    else:
        per_second = RATE_SUFFIXES.get(unit)
        hz = n if per_second is None else per_second / n
    if hz != int(hz) or not 1 <= hz <= SAMPLE_HZ_MAX:
        raise SpecError(f"probe {part!r}: {rate} is {hz:g} Hz; the guest's sampling "
                        f"timer takes a whole rate of 1 to {SAMPLE_HZ_MAX} Hz")
    return int(hz)


def split_samplers(spec: str) -> tuple[str, list[tuple[str, int]]]:
    """The spec without its sampling probes, and those: `profile-N` (every
    CPU) or `tick-N` (cpu0), DTrace's names (N a rate or a period:
    sample_hz), also as `profile:::profile-N`, as (the guest's `profile`
    word, all or one; HZ)."""
    rest, found = [], []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name = part[len("profile:::"):] if part.startswith("profile:::") else part
        kind, _, rate = name.partition("-")
        if kind not in SAMPLERS or not rate:
            rest.append(part)
            continue
        found.append((SAMPLERS[kind], sample_hz(part, rate)))
    if len(found) > 1:
        raise SpecError("one sampling probe (profile-N or tick-N) at a time")
    return ",".join(rest), found


def parse_spec(spec: str) -> list[tuple[str, str, str, str]]:
    """(provider, module, function pattern, kind) per probe the spec asks
    for; its sampling probes (split_samplers) are checked and left out."""
    spec, samplers = split_samplers(spec)
    fbt_kinds = tuple(k for k in PROBE_KINDS if k not in ("branch", "insn"))
    usage = (f"expected fbt:[kernel:]FUNCTION:{'|'.join(fbt_kinds)}, "
             "branch:[kernel:]FUNCTION, insn:[kernel:]FUNCTION+OFF, profile-HZ "
             "or tick-HZ")
    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        bits = part.split(":")
        module = "workload"
        if len(bits) >= 3 and bits[1] == "kernel" and (bits[0] == "fbt" and len(bits) == 4
                                                      or bits[0] in ("branch", "insn")):
            module = "kernel"
            del bits[1]
        if bits[0] == "insn":
            if len(bits) != 2 or "+" not in bits[1]:
                raise SpecError(f"probe {part!r}: {usage}")
            fn, off = bits[1].rsplit("+", 1)
            if not fn:
                raise SpecError(f"probe {part!r}: no function")
            if off != "*":
                try:
                    if int(off, 0) < 0:
                        raise ValueError
                except ValueError:
                    raise SpecError(f"probe {part!r}: the offset {off!r} is not a "
                                    "byte count (decimal, 0x-hex) or *") from None
            out.append(("insn", module, bits[1], "insn"))
            continue
        if bits[0] == "branch":
            if len(bits) not in (2, 3) or (len(bits) == 3 and bits[2] not in ("", "*")):
                raise SpecError(f"probe {part!r}: {usage}")
            kinds = ("branch",)
        elif (len(bits) != 3 or bits[0] != "fbt"
              or bits[2] not in (*fbt_kinds, "*", "")):
            raise SpecError(f"probe {part!r}: {usage}")
        else:
            kinds = fbt_kinds if bits[2] in ("*", "") else (bits[2],)
        if not bits[1]:
            raise SpecError(f"probe {part!r}: no function")
        out += [(bits[0], module, bits[1], k) for k in kinds]
    if not out and not samplers:
        raise SpecError("no probes given")
    return out


def _argmap(f, kind: str) -> str:
    """An entry probe's argument map for `probe add`, hex ('' if none)."""
    sig = f.signature
    if kind != "entry" or sig is None or not sig.argmap:
        return ""
    return bytes(sig.argmap).hex()


def _words(f, kind: str, image: Image) -> int:
    """What `probe add` asks to record: an entry's argument words, a
    return's value words (0: the guest's default of one)."""
    sig = f.signature
    if sig is None:
        return 0
    if kind == "entry":
        return sig.nwords
    if kind == "return" and sig.ret.kind != "void":
        n = sig.value_words(image.word_bytes, image.arch.return_registers)
        return n if n > 1 else 0
    return 0


def plan(spec: str, image: Image, mechanism: str) -> tuple[list[Probe], list[str]]:
    """Probes for a spec, numbered from 0, and notes (see the top)."""
    rules = image.arch.sites
    probes: list[Probe] = []
    notes: list[str] = []
    seen = set()
    for provider, module, pattern, kind in parse_spec(spec):
        off = None
        if kind == "insn":
            pattern, off = pattern.rsplit("+", 1)
        if any(c in pattern for c in "*?["):
            pool = (image.workload_functions() if module == "workload"
                    else list(image.functions.values()))
            matched = [f for f in pool if fnmatch.fnmatchcase(f.name, pattern)]
        else:
            matched = [image.functions[pattern]] if pattern in image.functions else []
        glob = any(c in pattern for c in "*?[")
        if not matched and not glob and pattern in image.unprobeable:
            raise SpecError(f"{provider}:{pattern}:{kind}: refused: {pattern} is "
                            f"{image.unprobeable[pattern]}")
        # A kernel-wide glob names the functions it cannot take (not every
        # assembly label: those are code points, seldom functions).
        refusals = [f"{n}: no {kind} probe: refused: {n} is {why}"
                    for n, why in sorted(image.unprobeable.items())
                    if glob and module == "kernel" and n in image.code_functions
                    and fnmatch.fnmatchcase(n, pattern)]
        if not matched and refusals:
            raise SpecError(f"{provider}:{pattern}:{kind} matches no function a probe "
                            "may take:\n  " + "\n  ".join(refusals))
        notes += refusals
        if not matched:
            raise SpecError(f"{provider}:{pattern}:{kind} matches no function"
                            + ("" if "*" in pattern else " (unknown symbol)"))
        for f in sorted(matched, key=lambda f: f.addr):
            if kind == "insn":
                _insn_probes(f, off, image, probes, notes, seen)
                continue
            if kind == "entry":
                addr, why = rules.entry(f)
                if addr is not None and not why:
                    why = rules.entry_refusal(f, image, addr, mechanism)
                addrs = [addr] if addr is not None and not why else []
                if why:
                    notes.append(f"{f.name}: no entry probe: {why}")
            elif kind == "branch":
                addrs, why = rules.branches(f, image)
                if why:
                    notes.append(f"{f.name}: no branch probes: {why}")
            else:
                addrs = rules.returns(f, image, mechanism)
                if not addrs:
                    notes.append(f"{f.name}: no return probe: no ret instruction")
            for a in addrs:
                if taken(a, f.name, kind, probes, seen, notes):
                    continue
                seen.add(a)
                probes.append(Probe(len(probes), f.name, kind, a,
                                    _words(f, kind, image), argmap=_argmap(f, kind)))
    return probes, notes


def taken(addr: int, function: str, kind: str, probes: list[Probe], seen: set,
          notes: list[str]) -> bool:
    """Whether addr already holds a probe of this plan; if so, a note says
    which, and why the probe of `kind` is not added (one probe per site)."""
    if addr not in seen:
        return False
    holder = next(p for p in probes if p.addr == addr)
    why = (f"{function}: no {kind} probe at {addr:#x}: the site holds probe "
           f"{holder.id} ({holder.function} {holder.kind}) and takes one probe")
    if (holder.function == function, holder.kind, kind) == (True, "entry", "return"):
        why += (f"; {function} is one instruction, so each of its entries is "
                "also a return")
    notes.append(why)
    return True


def _insn_probes(f, off: str, image: Image, probes: list[Probe], notes: list[str],
                 seen: set) -> None:
    """insn:F+OFF: the probe at that boundary, or every boundary the arch
    probes (`*`); an offset inside an instruction is a SpecError."""
    starts = {i.addr - f.addr: i for i in f.insns}
    if off == "*":
        addrs, why = image.arch.sites.insns(f, image)
        if why:
            notes.append(f"{f.name}: {why}")
    else:
        n = int(off, 0)
        if n not in starts:
            inside = [i for i in f.insns if i.addr - f.addr < n < i.addr - f.addr
                      + len(i.raw)]
            where = (f"inside `{inside[0].text}` at +{inside[0].addr - f.addr:#x} "
                     f"({len(inside[0].raw)} bytes)" if inside else
                     f"past the function's {f.size} bytes")
            raise SpecError(f"insn:{f.name}+{off}: offset {n:#x} is not an "
                            f"instruction boundary: it is {where}")
        addrs = [f.addr + n]
    for a in addrs:
        if taken(a, f.name, "insn", probes, seen, notes):
            continue
        seen.add(a)
        probes.append(Probe(len(probes), f.name, "insn", a, offset=a - f.addr))
