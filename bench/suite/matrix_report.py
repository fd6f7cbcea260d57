"""The matrix's outcomes and their reports: the terminal table and
summary lines, JUnit XML and TAP.

A run (bench/suite/matrix_run.py) leaves one Outcome per cell (its
verdict, status, time, log and the host it ran on) in a MatrixResult,
which is told three ways: summary_lines() is the table a person reads
(one row per cell, then each failure with its rerun command and log, each
host's tally, and the closing `matrix GROUP: N passed, ...` line);
write_reports() writes the same outcomes as JUnit XML (an expected
failure is a skipped case, a cell's host and earlier attempts are its
properties) and as TAP (an expected failure is a TODO point) through
bench/suite/junit.py and tap.py.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from . import junit, tap
from .matrix_plan import HERE_KINDS, Cell


@dataclass
class Outcome:
    cell: Cell
    verdict: str = "PENDING"    # PASS FAIL TIMEOUT XFAIL XPASS
    status: int | None = None
    seconds: float = 0.0
    log: Path | None = None
    last_line: str = ""
    tail: str = ""
    host: str = ""              # the label of the host that ran it ("" here)
    attempts: list[str] = field(default_factory=list)   # earlier tries, why

    @property
    def failed(self) -> bool:
        return self.verdict in ("FAIL", "TIMEOUT", "XPASS")


@dataclass
class MatrixResult:
    group: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    junit: Path | None = None
    tap: Path | None = None
    hosts: list = field(default_factory=list)

    def count(self, *verdicts: str) -> int:
        return sum(o.verdict in verdicts for o in self.outcomes)

    @property
    def ok(self) -> bool:
        return not any(o.failed for o in self.outcomes)


def _message(o: Outcome) -> str:
    what = {"FAIL": f"exit status {o.status}",
            "TIMEOUT": f"killed after {o.cell.timeout:g} s",
            "XPASS": f"passed, but marked xfail = {o.cell.xfail}",
            "XFAIL": f"expected failure: {o.cell.xfail}"}.get(o.verdict, "")
    where = f"host: {o.host}\n" if o.host else ""
    tried = "".join(f"earlier: {a}\n" for a in o.attempts)
    return f"{what}\n{where}{tried}command: python3 -m bench " \
           f"{shlex.join(o.cell.argv())}\nlog: {o.log}\n{o.tail}"


def _host_facts(o: Outcome) -> dict[str, str]:
    facts = {"host": o.host} if o.host else {}
    if o.attempts:
        facts["rerun_after"] = "; ".join(o.attempts)
    return facts


def write_reports(res: MatrixResult) -> None:
    cases = []
    for o in res.outcomes:
        c = o.cell
        cases.append(junit.Case(
            f"{c.name} ({c.arch} -smp {c.smp} {c.kind}"
            f"{' ' + c.mechanism if c.mechanism else ''})",
            ok=not o.failed,
            message=_message(o) if o.verdict != "PASS" or o.attempts else "",
            seconds=o.seconds,
            skipped=f"expected failure: {c.xfail}" if o.verdict == "XFAIL" else "",
            properties=_host_facts(o)))
    junit.write(res.junit, f"matrix.{res.group}", cases)
    tap.write(res.tap, [tap.Point(
        o.cell.name, ok=o.verdict == "PASS",
        todo=f"expected failure: {o.cell.xfail}" if o.verdict == "XFAIL" else "",
        detail={"verdict": o.verdict, "arch": o.cell.arch, "smp": str(o.cell.smp),
                "kind": o.cell.kind, "mechanism": o.cell.mechanism or "",
                **_host_facts(o),
                "seconds": f"{o.seconds:.1f}", "log": str(o.log),
                **({"message": _message(o)} if o.verdict != "PASS" else {})})
        for o in res.outcomes])


def summary_lines(res: MatrixResult) -> list[str]:
    on_hosts = bool(res.hosts)
    head = ["cell", "arch", "smp", "mechanism", "kind", "result", "seconds"]
    rows = [tuple(head + (["host"] if on_hosts else []))]
    for o in res.outcomes:
        c = o.cell
        row = [c.name, c.arch, str(c.smp), c.mechanism or "-", c.kind,
               o.verdict, f"{o.seconds:.1f}"]
        if on_hosts:
            row.append((o.host or ("here" if c.kind in HERE_KINDS else "-"))
                       + (" (rerun)" if o.attempts else ""))
        rows.append(tuple(row))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(v.ljust(w) if i != 6 else v.rjust(w)
                     for i, (v, w) in enumerate(zip(r, widths))).rstrip()
           for r in rows]
    out.insert(1, "  ".join("-" * w for w in widths))
    for o in res.outcomes:
        for a in o.attempts:
            out.append(f"rerun {o.cell.name}: first on {a}; then "
                       f"{o.verdict} on {o.host or 'no host'}")
    for o in res.outcomes:
        if o.failed:
            out.append(f"{o.verdict} {o.cell.name}: {o.last_line}")
            out.append(f"  rerun: python3 -m bench {shlex.join(o.cell.argv())}"
                       + (f" --backend libvirt --connect "
                          f"{next(h.uri for h in res.hosts if h.label == o.host)}"
                          if o.host else ""))
            out.append(f"  log:   {o.log}")
    for h in res.hosts:
        ran = [o for o in res.outcomes if o.host == h.label]
        line = (f"host {h.label} ({h.uri}): {h.slots} slots, {len(ran)} cells, "
                f"{sum(o.verdict == 'PASS' for o in ran)} passed")
        if h.down:
            at = f" at {h.down_at:.0f} s" if h.down_at else ""
            line += f"; down{at}: {h.down}"
        out.append(line)
    out.append(f"JUnit XML: {res.junit}  TAP: {res.tap}")
    reruns = sum(bool(o.attempts) for o in res.outcomes)
    out.append(f"matrix {res.group}: {res.count('PASS')} passed, "
               f"{res.count('FAIL', 'TIMEOUT', 'XPASS')} failed, "
               f"{res.count('XFAIL')} expected failures"
               + (f", {reruns} rerun on another host" if reruns else "")
               + (f" ({len(res.hosts)} host{'s' if len(res.hosts) != 1 else ''})"
                  if res.hosts else "")
               + f"; wall {res.seconds:.0f} s")
    return out
