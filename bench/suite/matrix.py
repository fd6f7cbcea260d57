"""The correctness matrix: cells read from ci/matrix.cfg, run in parallel.

The matrix is data. Each `[cell]` section of the file names one guest run
by its axes — arch, CPUs, probe mechanism, kind (trace, check,
differential, lossless, toggle) — plus a timeout and the groups it belongs
to; the keys are documented at the top of ci/matrix.cfg and in KEYS below,
and anything else is refused with the file and line. A cell becomes one
`python3 -m bench <subcommand>` process (the same command a person types),
so its exit status is the verdict, its output is its log
(build/matrix/logs/<cell>.log), and a timeout is a kill of that process
tree.

Parallelism: cells run at most `jobs` at a time (default os.cpu_count()),
one slot per cell whatever its -smp. Under TCG a guest's vCPUs spend most
of a run waiting for the serial line, the timer or each other: an i386
lossless run at -smp 4 used 12 s of host CPU over 14 s of wall time, a
-smp 1 one 7 s over 24 s. Counting vCPUs instead would leave cores idle;
counting cells keeps them busy without timing out cells by
oversubscription. Cells start longest first, by the durations of the
previous run (build/matrix/durations.json), else by their timeouts.

A cell passes when its command exits 0. `xfail = TEXT` marks a cell that
is known to fail, and how: it is an expected failure only if it fails and
its output contains TEXT; a different failure is a failure, and a pass is
an unexpected pass (XPASS), which fails the run so the marker is removed.
Results go to the terminal (one line per cell as it finishes, then a
table), to JUnit XML and to TAP.
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import fnmatch
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import arches
from ..errors import EXIT_HOST, UsageError
from ..parser import build_parser
from ..paths import BUILD, REPO
from ..trace import sites
from . import hosts as hosts_mod
from . import junit, tap

MATRIX_FILE = REPO / "ci" / "matrix.cfg"
OUT_DIR = BUILD / "matrix"

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
}
COMMON_KEYS = ("arch", "smp", "kind", "extra_params", "timeout", "groups", "xfail")
KEYS = {
    "arch": "i386 or sparc64 (required)",
    "smp": "guest CPUs, 1 to the arch's maximum (default 1)",
    "kind": "trace | check | differential | lossless | toggle | fuzz | itrace | avoid "
            "(required)",
    "mechanism": "the probe mechanism: i386 int3|ud|step, sparc64 emulate|shellgame "
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
        if self.kind != "fuzz":
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


# ---- parsing ----

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


def _cell(sec, name: str, where, path: str) -> Cell:
    def err(key, msg):
        line = where.get((name, key), where.get((name, None), 0))
        return MatrixError(f"{path}:{line}: [{name}] {key + ': ' if key else ''}{msg}")

    if not NAME_RE.match(name):
        raise err(None, "a cell name is letters, digits, '_', '.' and '-'")
    for key in sec:
        if key not in KEYS:
            raise err(key, f"unknown key; the keys are {', '.join(KEYS)}")
    for key in ("arch", "kind", "groups"):
        if not sec.get(key, "").strip():
            raise err(None, f"missing key {key!r} ({KEYS[key]})")
    kind = sec["kind"].strip()
    if kind not in KINDS:
        raise err("kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    takes = KINDS[kind][1]
    for key in sec:
        if key not in COMMON_KEYS and key not in takes:
            raise err(key, f"does not apply to kind {kind}"
                      + (" (the in-guest differential runs every mechanism)"
                         if key == "mechanism" else ""))
    try:
        arch = arches.get(sec["arch"].strip())
    except arches.UnknownArch as e:
        raise err("arch", str(e))

    def integer(key, lo, hi=None):
        raw = sec[key].strip()
        try:
            v = int(raw)
        except ValueError:
            raise err(key, f"{raw!r} is not a whole number")
        if v < lo or (hi is not None and v > hi):
            raise err(key, f"{v} is outside {lo}..{hi if hi is not None else ''}")
        return v

    cell = Cell(name=name, arch=arch.name, kind=kind, groups=(),
                line=where.get((name, None), 0))
    cell.groups = tuple(sec["groups"].replace(",", " ").split())
    for g in cell.groups:
        if not NAME_RE.match(g):
            raise err("groups", f"bad group name {g!r}")
    if "smp" in sec:
        if kind == "fuzz":
            raise err("smp", "does not apply to kind fuzz (it boots no guest)")
        cell.smp = integer("smp", 1, arch.max_smp)
    if "mechanism" in takes:
        cell.mechanism = sec.get("mechanism", arch.default_mechanism).strip()
        if cell.mechanism not in arch.mechanisms:
            raise err("mechanism", f"{cell.mechanism!r}: {arch.name} has "
                      f"{', '.join(arch.mechanisms)}")
    if "probes" in sec:
        cell.probes = sec["probes"].strip()
        try:
            sites.parse_spec(cell.probes)
        except sites.SpecError as e:
            raise err("probes", str(e))
    if "workload" in sec:
        cell.workload = " ".join(sec["workload"].split())
        if not cell.workload:
            raise err("workload", "empty")
    if "iters" in sec:
        cell.iters = integer("iters", 1)
    if "states" in sec:
        cell.states = integer("states", 1)
    if "extra_params" in sec:
        try:
            cell.extra_params = tuple(shlex.split(sec["extra_params"]))
        except ValueError as e:
            raise err("extra_params", str(e))
    cell.timeout = KINDS[kind][2]
    if "timeout" in sec:
        raw = sec["timeout"].strip()
        try:
            cell.timeout = float(raw)
        except ValueError:
            raise err("timeout", f"{raw!r} is not a number of seconds")
        if not cell.timeout > 0:
            raise err("timeout", "must be more than 0 seconds")
    if "xfail" in sec:
        cell.xfail = sec["xfail"].strip()
        if not cell.xfail:
            raise err("xfail", "needs the text the failing output contains")
    # The subcommand's own parser has the last word on the arguments.
    msg = io.StringIO()
    try:
        with contextlib.redirect_stderr(msg):
            build_parser().parse_args(cell.argv())
    except SystemExit:
        last = msg.getvalue().strip().splitlines()[-1:] or ["rejected"]
        raise err("extra_params" if cell.extra_params else None,
                  f"`python3 -m bench {shlex.join(cell.argv())}`: {last[0]}")
    return cell


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


# ---- running ----

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


def bench_argv(cell: Cell) -> list[str]:
    return [sys.executable, "-m", "bench", *cell.argv()]


def on_host(cell: Cell, host: "hosts_mod.Host | None") -> list[str]:
    """The cell's command, its guests on host (None: this machine's QEMU;
    fuzz cells boot no guest and always run here)."""
    extra = ["--backend", "libvirt", "--connect", host.uri] if host else []
    return bench_argv(cell) + extra


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat): with the pid,
    it names one process even after the pid is reused."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _descendants(pid: int) -> list[tuple[int, str]]:
    """Every process below pid, with its start time (QEMU runs in its own
    session, so killing the cell's process group would not reach it)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append((c, _start_time(c)))
            todo.append(c)
    return out


def _stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGINT first: the harness then leaves its Guest blocks, which reap
    QEMU and close the logs; whatever is still there after `grace` seconds
    is killed by pid (the same processes: their start times still match)."""
    below = _descendants(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGINT)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    for pid, started in below:
        if started is not None and _start_time(pid) == started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    proc.wait()


def _output(path: Path, n: int) -> list[str]:
    """The last n lines the cell printed (the log's first line is the
    command, which must not match an xfail text)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[1:][-n:]
    except OSError:
        return []


def _judge(o: Outcome, timed_out: bool) -> None:
    lines = _output(o.log, 400)
    o.tail = "\n".join(lines[-30:])
    o.last_line = next((l.strip() for l in reversed(lines) if l.strip()), "")
    if timed_out:
        o.verdict = "TIMEOUT"
        o.last_line = f"killed after {o.cell.timeout:g} s"
    elif o.cell.xfail is None:
        o.verdict = "PASS" if o.status == 0 else "FAIL"
    elif o.status == 0:
        o.verdict = "XPASS"
    else:
        seen = [l.strip() for l in lines if o.cell.xfail in l]
        o.verdict = "XFAIL" if seen else "FAIL"
        o.last_line = seen[0] if seen else \
            f"failed without {o.cell.xfail!r}: {o.last_line}"


def _order(cells: list[Cell], history: dict) -> list[Cell]:
    """Longest first, so the long cells do not start last and run alone:
    by the last run's durations, and (a heuristic) by timeout for a cell
    never timed, whose timeout is larger than most cells' durations."""
    return sorted(cells, key=lambda c: -history.get(c.name, c.timeout))


@dataclass
class _Running:
    outcome: Outcome
    proc: subprocess.Popen
    t0: float
    fh: object
    host: "hosts_mod.Host | None"
    excluded: frozenset


def _error_line(o: Outcome) -> str:
    """The harness's own `error: ...` line from a cell's output, if any."""
    for line in reversed(_output(o.log, 400)):
        if line.startswith("error: "):
            return line[7:].strip()
    return o.last_line


def run(cells: list[Cell], group: str, jobs: int | None = None,
        out_dir: Path = OUT_DIR, argv_of: Callable[[Cell], list[str]] = bench_argv,
        echo=lambda line: print(line, flush=True),
        grace: float = 10.0, hosts: "list[hosts_mod.Host] | None" = None,
        place=on_host, host_check=hosts_mod.check) -> MatrixResult:
    """Run the cells, at most `jobs` at a time on this machine.

    With hosts (bench/suite/hosts.py), every cell that boots a guest runs on
    one of them, its command from place(cell, host): a host runs as many
    cells at once as its slots, the longest waiting cell going to the host
    with the most free slots (fuzz cells boot no guest and run here, `jobs`
    at a time). A cell that fails is run once more, on another host, if
    its host failed — the cell exited with EXIT_HOST (the harness lost its
    libvirt connection), or host_check finds the host no longer answering,
    which also takes the host out of the rotation — and never when the host
    still answers: that is the cell failing."""
    local_jobs = max(1, jobs or os.cpu_count() or 1)
    cap = jobs if (jobs and hosts is not None) else None
    logs = out_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    hist_path = out_dir / "durations.json"
    try:
        history = json.loads(hist_path.read_text())
    except (OSError, ValueError):
        history = {}
    # (cell, hosts it may no longer go to, notes of earlier attempts)
    pending = [(c, frozenset(), []) for c in _order(cells, history)]
    width = max((len(c.name) for c in cells), default=4)
    res = MatrixResult(group, hosts=list(hosts or []))
    running: list[_Running] = []
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if hosts is None:
        echo(f"matrix {group}: {len(cells)} cells, {min(local_jobs, len(cells) or 1)} "
             f"at a time, logs in {logs}/")
    else:
        echo(f"matrix {group}: {len(cells)} cells on {len(hosts)} "
             f"host{'s' if len(hosts) != 1 else ''} ("
             + ", ".join(f"{h.label}: {h.slots} slots" if not h.down
                         else f"{h.label}: down, {h.down}" for h in hosts)
             + f"), logs in {logs}/")
    t_start = time.monotonic()
    done = 0

    def busy(h) -> int:
        return sum(r.host is h for r in running)

    def usable(excluded) -> list:
        return [h for h in hosts if not h.down and h.uri not in excluded]

    def finish(o: Outcome) -> None:
        nonlocal done
        res.outcomes.append(o)
        done += 1
        where = f" on {o.host}" if o.host else ""
        again = " (rerun)" if o.attempts else ""
        echo(f"[{done:{len(str(len(cells)))}}/{len(cells)}] {o.verdict:<7} "
             f"{o.cell.name:<{width}} {o.seconds:7.1f} s{where}{again}  "
             f"{o.last_line[:90]}")

    def start(cell, host, excluded, attempts) -> None:
        o = Outcome(cell, log=logs / f"{cell.name}.log",
                    host=host.label if host else "", attempts=list(attempts))
        fh = open(o.log, "w", encoding="utf-8")
        cmd = argv_of(cell) if hosts is None else place(cell, host)
        fh.write(f"# {shlex.join(cmd)}\n")
        fh.flush()
        proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL,
                                stdout=fh, stderr=subprocess.STDOUT, env=env)
        if host:
            host.ran.append(cell.name)
        running.append(_Running(o, proc, time.monotonic(), fh, host, excluded))

    def place_pending() -> None:
        for item in list(pending):
            if cap is not None and len(running) >= cap:
                return
            cell, excluded, attempts = item
            if hosts is None or cell.kind == "fuzz":
                if sum(r.host is None for r in running) < local_jobs:
                    pending.remove(item)
                    start(cell, None, excluded, attempts)
                continue
            left = usable(excluded)
            if not left:
                pending.remove(item)
                o = Outcome(cell, verdict="FAIL", attempts=list(attempts),
                            last_line="no host left to run it on: " + "; ".join(
                                f"{h.label} {h.down or 'tried'}" for h in hosts))
                o.tail = o.last_line
                finish(o)
                continue
            free = [h for h in left if busy(h) < h.slots]
            if free:
                pending.remove(item)
                start(cell, max(free, key=lambda h: h.slots - busy(h)),
                      excluded, attempts)

    def host_failed(r: _Running) -> str | None:
        """Why r's host failed it, or None if the cell failed by itself."""
        h, o = r.host, r.outcome
        if h is None or not o.failed or o.verdict == "XPASS":
            return None
        why = None
        if o.status == EXIT_HOST:
            why = _error_line(o)
        gone = host_check(h)
        if gone is not None:
            if not h.down:
                h.down = f"stopped answering: {gone}"
                h.down_at = time.monotonic() - t_start
                echo(f"host {h.label} is down ({gone}); no more cells go there")
            why = why or f"the host stopped answering: {gone}"
        return why

    try:
        while pending or running:
            place_pending()
            time.sleep(0.1)
            for r in list(running):
                o = r.outcome
                timed_out = False
                if r.proc.poll() is None:
                    if time.monotonic() - r.t0 < o.cell.timeout:
                        continue
                    _stop(r.proc, grace)
                    timed_out = True
                    r.fh.write(f"\n# killed: still running after the cell's "
                               f"timeout of {o.cell.timeout:g} s\n")
                r.fh.close()
                running.remove(r)
                o.status = r.proc.returncode
                o.seconds = time.monotonic() - r.t0
                _judge(o, timed_out)
                why = host_failed(r)
                if why is not None:
                    note = f"{r.host.label}: host failed ({why})"
                    others = usable(r.excluded | {r.host.uri})
                    if not o.attempts and others:
                        kept = o.log.with_name(f"{o.cell.name}.try1.log")
                        o.log.replace(kept)
                        echo(f"retry   {o.cell.name} after {o.seconds:.1f} s on "
                             f"{r.host.label}: host failed ({why[:80]}); rerun "
                             "on another host")
                        pending.insert(0, (o.cell, r.excluded | {r.host.uri},
                                           [f"{note}; log {kept}"]))
                        continue
                    o.attempts.append(note)
                    o.last_line = f"host failed: {why}" + (
                        "" if others else "; no other host left")
                finish(o)
    finally:
        for r in running:       # interrupted: leave nothing behind
            _stop(r.proc, grace)
            r.fh.close()
    res.seconds = time.monotonic() - t_start
    order = {c.name: i for i, c in enumerate(cells)}
    res.outcomes.sort(key=lambda o: order[o.cell.name])
    history.update({o.cell.name: round(o.seconds, 1) for o in res.outcomes
                    if o.verdict != "TIMEOUT" and not o.attempts})
    hist_path.write_text(json.dumps(history, indent=1, sort_keys=True) + "\n")
    res.junit = out_dir / f"{group}.xml"
    res.tap = out_dir / f"{group}.tap"
    _write_reports(res)
    return res


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


def _write_reports(res: MatrixResult) -> None:
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
            row.append((o.host or ("here" if c.kind == "fuzz" else "-"))
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
