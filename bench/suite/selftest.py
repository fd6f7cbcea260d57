"""Run the guest's self-tests and judge them without trusting any one signal.

A run passes only if all of these agree: every PASS/FAIL line arrived (the
link saw no gap or CRC error), the guest's SUMMARY counts equal the lines
received, no line says FAIL, the REPLY status is OK, and the guest then
exits with status PASS through both the EXIT frame and QEMU's exit code.
Any disagreement is reported as a problem, so a lost or garbled line can
never turn a failure into a pass. Results also go to JUnit XML.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import arches
from ..guest import build
from ..guest.backend import open_guest
from ..guest.conversation import EXIT_STATUS
from ..paths import BUILD
from . import junit

SUMMARY_RE = re.compile(r"^SUMMARY: (\d+) tests, (\d+) failed$")


@dataclass
class SelftestResult:
    arch: str
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed and not self.problems


def judge(arch: str, lines: list[str], reply_ok: bool) -> SelftestResult:
    res = SelftestResult(arch)
    res.passed = [l[6:] for l in lines if l.startswith("PASS: ")]
    res.failed = [l[6:] for l in lines if l.startswith("FAIL: ")]
    summaries = [SUMMARY_RE.match(l) for l in lines if l.startswith("SUMMARY:")]
    if len(summaries) != 1 or not summaries[0]:
        res.problems.append(f"expected one SUMMARY line, got {len(summaries)}")
    else:
        total, nfail = int(summaries[0].group(1)), int(summaries[0].group(2))
        got = len(res.passed) + len(res.failed)
        if (total, nfail) != (got, len(res.failed)):
            res.problems.append(f"SUMMARY says {total} tests, {nfail} failed; "
                                f"received {got} lines, {len(res.failed)} FAIL")
    if reply_ok != (not res.failed):
        res.problems.append(f"reply status {'OK' if reply_ok else 'FAILED'} "
                            f"disagrees with {len(res.failed)} FAIL lines")
    return res


def run(arch_name: str, area: str = "", echo=print, smp: int = 1,
        junit_dir: Path | None = BUILD / "junit") -> SelftestResult:
    arch = arches.get(arch_name)
    build.ensure_image(arch)
    t0 = time.monotonic()
    with open_guest(arch, label=f"selftest-smp{smp}", smp=smp, on_text=echo) as g:
        if g.hello["ncpus"] != smp:
            res = SelftestResult(arch.name)
            res.problems.append(f"started with -smp {smp}, the guest found "
                                f"{g.hello['ncpus']} CPUs")
            return res
        reply = g.command(f"selftest {area}".strip(), timeout=300)
        res = judge(arch.name, reply.text, reply.ok)
        if g.link_errors:
            res.problems.extend(str(e) for e in g.link_errors)
        want = EXIT_STATUS["PASS"] if res.ok else EXIT_STATUS["FAIL"]
        info = g.exit(want)
        if info.status != want:
            res.problems.append(f"guest exited {info.status}, expected {want}")
    res.seconds = time.monotonic() - t0
    if junit_dir:
        cases = [junit.Case(l, True) for l in res.passed]
        cases += [junit.Case(l, False, "FAIL: " + l) for l in res.failed]
        cases += [junit.Case("harness: " + p, False, p) for p in res.problems]
        name = f"selftest.{arch.name}.smp{smp}"
        junit.write(junit_dir / f"{name}.xml", name, cases)
    return res
