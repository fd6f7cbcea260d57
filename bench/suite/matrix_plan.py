"""The matrix's plan: ci/matrix.cfg read into cells, and a run's selection.

The matrix is data. Each `[cell]` section of the file names one guest run
by its axes — arch, CPUs, probe mechanism, kind (trace, check,
differential, lossless, toggle, fuzz, itrace, avoid, libfuzz,
fuzz-guest, hosts) — plus a timeout and
the groups it belongs to; the keys are documented at the top of
ci/matrix.cfg and in KEYS below, and anything else is refused with the
file and line (MatrixError, a usage error: nothing runs). A cell is read
step by step: its keys (known, present, applicable to its kind), its axes
(each against the arch's facts and the probe-spec grammar), its limits
(timeout, xfail) and last its whole command line, which must pass the
very parser a person's `python3 -m bench` meets (bench/parser.py).
select() picks a group's cells, by arch and name glob.
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import fnmatch
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from .. import arches
from ..errors import UsageError
from ..parser import build_parser
from ..paths import REPO
from ..trace import sites

MATRIX_FILE = REPO / "ci" / "matrix.cfg"

# kind -> (bench subcommand, keys it takes beyond the common ones,
#          default timeout in seconds)
KINDS: dict[str, tuple[str, tuple[str, ...], float]] = {
    "trace":        ("run",      ("mechanism", "probes", "workload"), 300),
    "check":        ("run",      ("mechanism", "probes", "workload"), 300),
    "differential": ("selftest", (), 300),
    "lossless":     ("lossless", ("mechanism", "iters"), 1800),
    "toggle":       ("toggle",   ("mechanism", "iters"), 900),
    "fuzz":         ("fuzz",     ("states",), 1800),
    "itrace":       ("itrace",   ("mechanism", "workload"), 600),
    "avoid":        ("avoid",    ("iters",), 600),
    "libfuzz":      ("libfuzz",  (), 3600),
    "fuzz-guest":   ("fuzz-guest", (), 1800),
    "hosts":        ("matrix",   (), 3600),
}
# Kinds that always run on this machine, never on a --host: they boot no
# guest (fuzz, libfuzz) or make their own hosts (hosts: `bench matrix
# --spawn-hosts`); and they take no --smp.
HERE_KINDS = ("fuzz", "libfuzz", "hosts")
COMMON_KEYS = ("arch", "smp", "kind", "extra_params", "timeout", "groups", "xfail")
KEYS = {
    "arch": "i386 or sparc64 (required)",
    "smp": "guest CPUs, 1 to the arch's maximum (default 1)",
    "kind": "trace | check | differential | lossless | toggle | fuzz | itrace | avoid "
            "| libfuzz | fuzz-guest | hosts (required)",
    "mechanism": "the probe mechanism: i386 int3|ud|step|opt, sparc64 emulate|shellgame|tramp "
                 "(default: the arch's first; not for differential)",
    "probes": "probe spec for trace/check (default fbt:*:entry,fbt:*:return)",
    "workload": "the run command's arguments for trace/check (default 'fib n=10') "
                "and itrace",
    "iters": "iterations per thread for lossless/toggle, walks for avoid (default: "
             "the subcommand's)",
    "states": "random states per emulated class for fuzz (default 10^6)",
    "extra_params": "more arguments for the subcommand, shell-quoted",
    "timeout": "seconds before the cell is killed and failed",
    "groups": "space-separated group names (required; quick, full, ...)",
    "xfail": "text the output of a cell known to fail must contain",
}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class MatrixError(UsageError):
    """The matrix file, or the selection asked of it, is wrong (usage)."""


@dataclass
class Cell:
    name: str
    arch: str
    kind: str
    groups: tuple[str, ...]
    smp: int = 1
    mechanism: str | None = None
    probes: str | None = None
    workload: str | None = None
    iters: int | None = None
    states: int | None = None
    extra_params: tuple[str, ...] = ()
    timeout: float = 300
    xfail: str | None = None
    line: int = 0

    def argv(self) -> list[str]:
        """The `python3 -m bench` arguments this cell runs."""
        sub = KINDS[self.kind][0]
        a = [sub, "--arch", self.arch]
        if self.kind not in HERE_KINDS:
            a += ["--smp", str(self.smp)]
        if self.kind == "differential":
            a += ["--area", "probes"]
        if self.mechanism:
            a += ["--mechanism", self.mechanism]
        if self.probes:
            a += ["--probes", self.probes]
        if self.workload:
            a += ["--run", self.workload]
        if self.kind == "check":
            a.append("--check")
        if self.iters is not None:
            a += ["--iters", str(self.iters)]
        if self.states is not None:
            a += ["--states", str(self.states)]
        return a + list(self.extra_params)


def _key_lines(text: str) -> dict[tuple[str, str | None], int]:
    """(section, key) -> line number, and (section, None) for the header;
    configparser keeps no line numbers, so the file is scanned once more."""
    where: dict[tuple[str, str | None], int] = {}
    section = None
    for n, raw in enumerate(text.splitlines(), 1):
        m = re.match(r"^\[([^\]]*)\]", raw)
        if m:
            section = m.group(1).strip()
            where.setdefault((section, None), n)
            continue
        m = re.match(r"^([^\s#;=:][^=:]*?)\s*[=:]", raw)
        if m and section is not None:
            where.setdefault((section, m.group(1).strip().lower()), n)
    return where


def parse(text: str, path: str = "matrix.cfg") -> list[Cell]:
    """The cells of a matrix file; MatrixError names the line of the first
    thing wrong."""
    cp = configparser.ConfigParser(interpolation=None, strict=True,
                                   default_section="\0none", delimiters=("=",),
                                   comment_prefixes=("#", ";"),
                                   inline_comment_prefixes=None)
    try:
        cp.read_string(text, source=path)
    except configparser.ParsingError as e:
        if isinstance(e, configparser.MissingSectionHeaderError):
            raise MatrixError(f"{path}:{e.lineno}: a key before the first "
                              "[cell] header")
        line, raw = e.errors[0]          # configparser keeps repr(line)
        raw = ast.literal_eval(raw) if raw[:1] in "'\"" else raw
        raise MatrixError(f"{path}:{line}: cannot read {raw.strip()!r}: "
                          "a line is `key = value`, a [cell] header or a # comment")
    except configparser.Error as e:
        line = getattr(e, "lineno", None)
        msg = str(getattr(e, "message", e)).splitlines()[0]
        msg = re.sub(r"^While reading from .*?\[line\s+\d+\]: ", "", msg)
        raise MatrixError(f"{path}:{line}: {msg}" if line else f"{path}: {msg}")
    where = _key_lines(text)
    cells = [_cell(cp[name], name, where, path) for name in cp.sections()]
    if not cells:
        raise MatrixError(f"{path}: no [cell] sections")
    return cells


class _Section:
    """One [cell] section and where its lines are, for errors that name them."""

    def __init__(self, sec, name: str, where, path: str):
        self.sec, self.name, self.where, self.path = sec, name, where, path

    def err(self, key, msg) -> MatrixError:
        line = self.where.get((self.name, key), self.where.get((self.name, None), 0))
        return MatrixError(f"{self.path}:{line}: [{self.name}] "
                           f"{key + ': ' if key else ''}{msg}")

    def integer(self, key, lo, hi=None) -> int:
        raw = self.sec[key].strip()
        try:
            v = int(raw)
        except ValueError:
            raise self.err(key, f"{raw!r} is not a whole number")
        if v < lo or (hi is not None and v > hi):
            raise self.err(key, f"{v} is outside {lo}..{hi if hi is not None else ''}")
        return v


def _cell(sec, name: str, where, path: str) -> Cell:
    s = _Section(sec, name, where, path)
    kind = _kind(s)
    try:
        arch = arches.get(sec["arch"].strip())
    except arches.UnknownArch as e:
        raise s.err("arch", str(e))
    cell = Cell(name=name, arch=arch.name, kind=kind, groups=(),
                line=where.get((name, None), 0))
    cell.groups = tuple(sec["groups"].replace(",", " ").split())
    for g in cell.groups:
        if not NAME_RE.match(g):
            raise s.err("groups", f"bad group name {g!r}")
    _axes(s, cell, arch)
    _limits(s, cell)
    _check_command(s, cell)
    return cell


def _kind(s: _Section) -> str:
    """The cell's kind, once its name and keys are known good: every key
    known, the required ones there, and each one applying to the kind."""
    if not NAME_RE.match(s.name):
        raise s.err(None, "a cell name is letters, digits, '_', '.' and '-'")
    for key in s.sec:
        if key not in KEYS:
            raise s.err(key, f"unknown key; the keys are {', '.join(KEYS)}")
    for key in ("arch", "kind", "groups"):
        if not s.sec.get(key, "").strip():
            raise s.err(None, f"missing key {key!r} ({KEYS[key]})")
    kind = s.sec["kind"].strip()
    if kind not in KINDS:
        raise s.err("kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    takes = KINDS[kind][1]
    for key in s.sec:
        if key not in COMMON_KEYS and key not in takes:
            raise s.err(key, f"does not apply to kind {kind}"
                        + (" (the in-guest differential runs every mechanism)"
                           if key == "mechanism" else ""))
    return kind


def _axes(s: _Section, cell: Cell, arch) -> None:
    """CPUs, mechanism, probes, workload, iterations, states and extra
    parameters, each against what the arch has and what the kind takes."""
    sec, kind = s.sec, cell.kind
    if "smp" in sec:
        if kind in HERE_KINDS:
            raise s.err("smp", f"does not apply to kind {kind} (it boots no guest "
                        "of its own here)")
        cell.smp = s.integer("smp", 1, arch.max_smp)
    if "mechanism" in KINDS[kind][1]:
        cell.mechanism = sec.get("mechanism", arch.default_mechanism).strip()
        if cell.mechanism not in arch.mechanisms:
            raise s.err("mechanism", f"{cell.mechanism!r}: {arch.name} has "
                        f"{', '.join(arch.mechanisms)}")
    if "probes" in sec:
        cell.probes = sec["probes"].strip()
        try:
            sites.parse_spec(cell.probes)
        except sites.SpecError as e:
            raise s.err("probes", str(e))
    if "workload" in sec:
        cell.workload = " ".join(sec["workload"].split())
        if not cell.workload:
            raise s.err("workload", "empty")
    if "iters" in sec:
        cell.iters = s.integer("iters", 1)
    if "states" in sec:
        cell.states = s.integer("states", 1)
    if "extra_params" in sec:
        try:
            cell.extra_params = tuple(shlex.split(sec["extra_params"]))
        except ValueError as e:
            raise s.err("extra_params", str(e))


def _limits(s: _Section, cell: Cell) -> None:
    """The timeout (the kind's default, else more than 0 seconds) and the
    xfail text."""
    cell.timeout = KINDS[cell.kind][2]
    if "timeout" in s.sec:
        raw = s.sec["timeout"].strip()
        try:
            cell.timeout = float(raw)
        except ValueError:
            raise s.err("timeout", f"{raw!r} is not a number of seconds")
        if not cell.timeout > 0:
            raise s.err("timeout", "must be more than 0 seconds")
    if "xfail" in s.sec:
        cell.xfail = s.sec["xfail"].strip()
        if not cell.xfail:
            raise s.err("xfail", "needs the text the failing output contains")


def _check_command(s: _Section, cell: Cell) -> None:
    """The subcommand's own parser has the last word on the arguments."""
    msg = io.StringIO()
    try:
        with contextlib.redirect_stderr(msg):
            build_parser().parse_args(cell.argv())
    except SystemExit:
        last = msg.getvalue().strip().splitlines()[-1:] or ["rejected"]
        raise s.err("extra_params" if cell.extra_params else None,
                    f"`python3 -m bench {shlex.join(cell.argv())}`: {last[0]}")


def load(path: Path = MATRIX_FILE) -> list[Cell]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise MatrixError(f"cannot read the matrix file: {e}")
    return parse(text, str(path))


def select(cells: list[Cell], group: str, arch_names: list[str] | None = None,
           patterns: list[str] | None = None) -> list[Cell]:
    groups = sorted({g for c in cells for g in c.groups})
    if group not in groups:
        raise MatrixError(f"no cell is in group {group!r}; groups: {', '.join(groups)}")
    out = [c for c in cells if group in c.groups]
    if arch_names is not None:
        out = [c for c in out if c.arch in arch_names]
    if patterns:
        for p in patterns:
            if not any(fnmatch.fnmatchcase(c.name, p) for c in out):
                raise MatrixError(f"no cell of group {group!r} matches {p!r}")
        out = [c for c in out if any(fnmatch.fnmatchcase(c.name, p) for p in patterns)]
    return out
