"""A clause's probe descriptions, matched against the image's functions.

    provider:module:function:name     DTrace's four fields; here
      fbt:[kernel]:FUNC:entry|return  (name empty or * for both; FUNC a glob)
      insn::FUNC+OFF                  an instruction probe
      branch::FUNC                    sparc64's branch records
      profile:::profile-N, tick-N     sampling (N: 997, 997hz, 1s, 100ms, ...)
      BEGIN, END                      before the workload runs, after it ends

Three fields (`fbt:FUNC:entry`) leave the module out. As bench/trace/sites.py
has it, a glob matches the workload's functions, or every kernel function
with the module `kernel`; an exact name may be any function. Each
description becomes a probe spec of sites.py (`spec`), and `matches` says
whether a planned probe is one of its own, so that the clauses of each
probe are known. A description that matches nothing is an error naming
the nearest functions. A sampling probe (`profile-N` on every CPU,
`tick-N` on cpu0, the provider `profile` optional, N read as DTrace reads
it by bench/trace/sites.py's sample_hz) is no site: it becomes one
SampleProbe, which the compiler groups like a planned probe and the
guest's `profile` command runs; its probefunc is "" and its probename
`profile-997`, as DTrace's.
"""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass

from ..trace import sites
from ..wire.frames import WIRE
from .parser import Script

SPECIAL = ("BEGIN", "END")
SAMPLING = tuple(sites.SAMPLERS)           # profile, tick


@dataclass(frozen=True)
class SampleProbe:
    """A profile-N or tick-N probe as the compiler groups it: the samples
    run the program with no probe of the table (WIRE_NO_PROBE)."""
    kind: str                    # DTrace's probename: profile-997, tick-10
    every: str                   # the guest's word: all (profile) or one (tick)
    hz: int
    id: int = WIRE.const("WIRE_NO_PROBE")
    function: str = ""
    sample: bool = True

    @property
    def spec(self) -> str:
        return self.kind


@dataclass(frozen=True)
class Desc:
    provider: str        # fbt insn branch BEGIN END
    module: str          # kernel or workload
    function: str        # a glob (insn: FUNC+OFF)
    kinds: tuple         # entry/return, insn, branch
    pos: int
    text: str
    sampler: SampleProbe | None = None      # profile: the probe it names

    @property
    def spec(self) -> str:
        if self.provider == "profile":
            return self.kinds[0]
        mod = "kernel:" if self.module == "kernel" else ""
        if self.provider == "insn":
            return f"insn:{mod}{self.function}"
        if self.provider == "branch":
            return f"branch:{mod}{self.function}"
        return ",".join(f"fbt:{mod}{self.function}:{k}" for k in self.kinds)

    def matches(self, probe, image) -> bool:
        if probe.kind not in self.kinds:
            return False
        if self.provider == "profile":
            return getattr(probe, "sample", False)
        pattern = self.function.rsplit("+", 1)[0] if self.provider == "insn" \
            else self.function
        if not any(c in pattern for c in "*?["):
            if self.provider == "insn":
                off = self.function.rsplit("+", 1)[1]
                return probe.function == pattern and (off == "*" or
                                                      int(off, 0) == probe.offset)
            return probe.function == pattern
        if not fnmatch.fnmatchcase(probe.function, pattern):
            return False
        return self.module == "kernel" or probe.function in _workload(image)


def _workload(image) -> set:
    return {f.name for f in image.workload_functions()}


def describe(script: Script, tok, arch) -> Desc:
    """A description's fields, or an error at its place."""
    text, pos = tok.text, tok.pos
    if text in SPECIAL:
        return Desc(text, "", "", (), pos, text)
    bits = text.split(":")
    sampler = sampler_of(script, tok, bits)
    if sampler is not None:
        return Desc("profile", "", "", (sampler.kind,), pos, text, sampler)
    if bits[0] in ("insn", "branch") and len(bits) in (2, 3):
        bits = [bits[0], bits[1] if len(bits) == 3 else "", bits[-1], ""]
    elif len(bits) == 3:
        bits.insert(1, "")
    if len(bits) != 4:
        raise script.error(pos, f"probe {text!r}: provider:module:function:name "
                           "(fbt::FUNC:entry, insn::FUNC+OFF, branch::FUNC), BEGIN or END")
    provider, module, function, name = bits
    if module not in ("", "kernel"):
        raise script.error(pos + len(provider) + 1, f"module {module!r}: the guest "
                           "has one, `kernel` (or leave it empty)")
    if not function:
        raise script.error(pos, f"probe {text!r}: no function")
    module = module or "workload"
    if provider == "fbt":
        if name not in ("entry", "return", "", "*"):
            raise script.error(pos + text.rfind(":") + 1, f"probe name {name!r}: "
                               "fbt has entry and return")
        kinds = ("entry", "return") if name in ("", "*") else (name,)
        return Desc("fbt", module, function, kinds, pos, text)
    if provider == "insn":
        if "+" not in function:
            raise script.error(pos, f"probe {text!r}: insn::FUNC+OFF")
        off = function.rsplit("+", 1)[1]
        if off != "*":
            try:
                int(off, 0)
            except ValueError:
                raise script.error(pos, f"probe {text!r}: the offset {off!r} is not "
                                   "a byte count") from None
        return Desc("insn", module, function, ("insn",), pos, text)
    if provider == "branch":
        if "branch" not in arch.probe_kinds():
            raise script.error(pos, f"probe {text!r}: {arch.name} has no branch "
                               "provider")
        return Desc("branch", module, function, ("branch",), pos, text)
    raise script.error(pos, f"provider {provider!r}: the providers are fbt, insn, "
                       "branch, profile (profile-N, tick-N), BEGIN and END")


def sampler_of(script: Script, tok, bits: list[str]) -> SampleProbe | None:
    """`profile-N`, `tick-N` or `profile:::NAME-N` as its SampleProbe; None
    for any other description; an error at tok for a bad rate."""
    if len(bits) == 4 and bits[0] == "profile" and not bits[1] and not bits[2]:
        name = bits[3]
    elif len(bits) == 1:
        name = bits[0]
    else:
        if bits[0] == "profile":
            raise script.error(tok.pos, f"probe {tok.text!r}: profile:::profile-N or "
                               "profile:::tick-N")
        return None
    kind, _, rate = name.partition("-")
    if kind not in SAMPLING or not rate:
        if len(bits) == 4:
            raise script.error(tok.pos, f"probe {tok.text!r}: the profile provider has "
                               "profile-N and tick-N")
        return None
    try:
        hz = sites.sample_hz(tok.text, rate)
    except sites.SpecError as e:
        raise script.error(tok.pos, str(e)) from None
    return SampleProbe(f"{kind}-{rate}", sites.SAMPLERS[kind], hz)


def check_matches(script: Script, desc: Desc, image) -> None:
    """An error at desc if it matches no function, naming the nearest."""
    if desc.provider in SPECIAL or desc.provider == "profile":
        return
    pattern = desc.function.rsplit("+", 1)[0] if desc.provider == "insn" else desc.function
    if any(c in pattern for c in "*?["):
        pool = image.functions if desc.module == "kernel" else _workload(image)
        if any(fnmatch.fnmatchcase(f, pattern) for f in pool):
            return
        where = "kernel function" if desc.module == "kernel" else \
            "workload function (fbt:kernel:GLOB:... for the kernel's)"
        raise script.error(desc.pos, f"probe {desc.text!r} matches no {where}")
    if pattern in image.functions:
        return
    near = difflib.get_close_matches(pattern, list(image.functions), n=3)
    raise script.error(desc.pos, f"probe {desc.text!r}: no function {pattern!r}"
                       + (f"; nearest: {', '.join(near)}" if near else ""))
