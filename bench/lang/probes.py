"""A clause's probe descriptions, matched against the image's functions.

    provider:module:function:name     DTrace's four fields; here
      fbt:[kernel]:FUNC:entry|return  (name empty or * for both; FUNC a glob)
      insn::FUNC+OFF                  an instruction probe
      branch::FUNC                    sparc64's branch records
      BEGIN, END                      before the workload runs, after it ends

Three fields (`fbt:FUNC:entry`) leave the module out. As bench/trace/sites.py
has it, a glob matches the workload's functions, or every kernel function
with the module `kernel`; an exact name may be any function. Each
description becomes a probe spec of sites.py (`spec`), and `matches` says
whether a planned probe is one of its own, so that the clauses of each
probe are known. A description that matches nothing is an error naming
the nearest functions.
"""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass

from .parser import Script

SPECIAL = ("BEGIN", "END")


@dataclass(frozen=True)
class Desc:
    provider: str        # fbt insn branch BEGIN END
    module: str          # kernel or workload
    function: str        # a glob (insn: FUNC+OFF)
    kinds: tuple         # entry/return, insn, branch
    pos: int
    text: str

    @property
    def spec(self) -> str:
        mod = "kernel:" if self.module == "kernel" else ""
        if self.provider == "insn":
            return f"insn:{mod}{self.function}"
        if self.provider == "branch":
            return f"branch:{mod}{self.function}"
        return ",".join(f"fbt:{mod}{self.function}:{k}" for k in self.kinds)

    def matches(self, probe, image) -> bool:
        if probe.kind not in self.kinds:
            return False
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
                       "branch, BEGIN and END")


def check_matches(script: Script, desc: Desc, image) -> None:
    """An error at desc if it matches no function, naming the nearest."""
    if desc.provider in SPECIAL:
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
