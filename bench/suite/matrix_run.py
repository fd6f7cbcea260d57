"""The matrix's run: a group's cells as parallel `python3 -m bench` processes.

A cell is the command a person types, so its exit status is the verdict,
its output its log (build/matrix/logs/<cell>.log), and a timeout a kill of
its process tree (SIGINT, so the harness reaps its QEMU; then SIGKILL by
pid and start time: QEMU runs in a session of its own). Cells run at most
`jobs` at a time, one slot per cell whatever its -smp: under TCG a guest's
vCPUs mostly wait (an i386 lossless run at -smp 4 used 12 s of host CPU
over 14 s of wall time), so counting vCPUs would leave cores idle. Cells
start longest first, by the last run's durations (durations.json), else by
their timeouts. A run goes by steps (_Runner): place waiting cells on free
slots, poll the running ones, judge each that ended (PASS, FAIL, TIMEOUT,
XFAIL, XPASS), rerun once elsewhere a cell whose libvirt host failed it,
then keep the durations and write the reports (matrix_report.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import EXIT_HOST
from ..paths import BUILD, REPO
from . import hosts as hosts_mod
from .matrix_plan import HERE_KINDS, Cell
from .matrix_report import MatrixResult, Outcome, write_reports

OUT_DIR = BUILD / "matrix"


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
    r = _Runner(cells, group, jobs, out_dir, argv_of, echo, grace, hosts, place,
                host_check)
    r.announce()
    try:
        while r.pending or r.running:
            r.place_pending()
            time.sleep(0.1)
            r.poll()
    finally:
        r.stop_all()        # interrupted: leave nothing behind
    return r.wrap_up()


class _Runner:
    """One run of the matrix, its state and its steps (run() drives them)."""

    def __init__(self, cells, group, jobs, out_dir, argv_of, echo, grace, hosts,
                 place, host_check):
        self.cells, self.group, self.out_dir = cells, group, out_dir
        self.argv_of, self.echo, self.grace = argv_of, echo, grace
        self.hosts, self.place, self.host_check = hosts, place, host_check
        self.local_jobs = max(1, jobs or os.cpu_count() or 1)
        self.cap = jobs if (jobs and hosts is not None) else None
        self.logs = out_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.hist_path = out_dir / "durations.json"
        try:
            self.history = json.loads(self.hist_path.read_text())
        except (OSError, ValueError):
            self.history = {}
        # (cell, hosts it may no longer go to, notes of earlier attempts)
        self.pending = [(c, frozenset(), []) for c in _order(cells, self.history)]
        self.width = max((len(c.name) for c in cells), default=4)
        self.res = MatrixResult(group, hosts=list(hosts or []))
        self.running: list[_Running] = []
        self.env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.t_start = time.monotonic()
        self.done = 0

    def announce(self) -> None:
        cells, hosts = self.cells, self.hosts
        if hosts is None:
            self.echo(f"matrix {self.group}: {len(cells)} cells, "
                      f"{min(self.local_jobs, len(cells) or 1)} "
                      f"at a time, logs in {self.logs}/")
        else:
            self.echo(f"matrix {self.group}: {len(cells)} cells on {len(hosts)} "
                      f"host{'s' if len(hosts) != 1 else ''} ("
                      + ", ".join(f"{h.label}: {h.slots} slots" if not h.down
                                  else f"{h.label}: down, {h.down}" for h in hosts)
                      + f"), logs in {self.logs}/")

    def busy(self, h) -> int:
        return sum(r.host is h for r in self.running)

    def usable(self, excluded) -> list:
        return [h for h in self.hosts if not h.down and h.uri not in excluded]

    def finish(self, o: Outcome) -> None:
        self.res.outcomes.append(o)
        self.done += 1
        n = len(self.cells)
        where = f" on {o.host}" if o.host else ""
        again = " (rerun)" if o.attempts else ""
        self.echo(f"[{self.done:{len(str(n))}}/{n}] {o.verdict:<7} "
                  f"{o.cell.name:<{self.width}} {o.seconds:7.1f} s{where}{again}  "
                  f"{o.last_line[:90]}")

    def start(self, cell, host, excluded, attempts) -> None:
        o = Outcome(cell, log=self.logs / f"{cell.name}.log",
                    host=host.label if host else "", attempts=list(attempts))
        fh = open(o.log, "w", encoding="utf-8")
        cmd = self.argv_of(cell) if self.hosts is None else self.place(cell, host)
        fh.write(f"# {shlex.join(cmd)}\n")
        fh.flush()
        proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL,
                                stdout=fh, stderr=subprocess.STDOUT, env=self.env)
        if host:
            host.ran.append(cell.name)
        self.running.append(_Running(o, proc, time.monotonic(), fh, host, excluded))

    def place_pending(self) -> None:
        """Start what fits: here, up to local_jobs; on hosts, on the one
        with the most free slots; a cell with no host left fails."""
        for item in list(self.pending):
            if self.cap is not None and len(self.running) >= self.cap:
                return
            cell, excluded, attempts = item
            if self.hosts is None or cell.kind in HERE_KINDS:
                if sum(r.host is None for r in self.running) < self.local_jobs:
                    self.pending.remove(item)
                    self.start(cell, None, excluded, attempts)
                continue
            left = self.usable(excluded)
            if not left:
                self.pending.remove(item)
                o = Outcome(cell, verdict="FAIL", attempts=list(attempts),
                            last_line="no host left to run it on: " + "; ".join(
                                f"{h.label} {h.down or 'tried'}" for h in self.hosts))
                o.tail = o.last_line
                self.finish(o)
                continue
            free = [h for h in left if self.busy(h) < h.slots]
            if free:
                self.pending.remove(item)
                self.start(cell, max(free, key=lambda h: h.slots - self.busy(h)),
                           excluded, attempts)

    def poll(self) -> None:
        """Judge every cell that ended or ran out of time."""
        for r in list(self.running):
            o = r.outcome
            timed_out = False
            if r.proc.poll() is None:
                if time.monotonic() - r.t0 < o.cell.timeout:
                    continue
                _stop(r.proc, self.grace)
                timed_out = True
                r.fh.write(f"\n# killed: still running after the cell's "
                           f"timeout of {o.cell.timeout:g} s\n")
            r.fh.close()
            self.running.remove(r)
            o.status = r.proc.returncode
            o.seconds = time.monotonic() - r.t0
            _judge(o, timed_out)
            if not self.retried(r):
                self.finish(o)

    def host_failed(self, r: _Running) -> str | None:
        """Why r's host failed it, or None if the cell failed by itself."""
        h, o = r.host, r.outcome
        if h is None or not o.failed or o.verdict == "XPASS":
            return None
        why = None
        if o.status == EXIT_HOST:
            why = _error_line(o)
        gone = self.host_check(h)
        if gone is not None:
            if not h.down:
                h.down = f"stopped answering: {gone}"
                h.down_at = time.monotonic() - self.t_start
                self.echo(f"host {h.label} is down ({gone}); no more cells go there")
            why = why or f"the host stopped answering: {gone}"
        return why

    def retried(self, r: _Running) -> bool:
        """If r's host failed it, queue it once more on another host (True),
        or note why it could not be (its outcome then stands)."""
        o = r.outcome
        why = self.host_failed(r)
        if why is None:
            return False
        note = f"{r.host.label}: host failed ({why})"
        others = self.usable(r.excluded | {r.host.uri})
        if not o.attempts and others:
            kept = o.log.with_name(f"{o.cell.name}.try1.log")
            o.log.replace(kept)
            self.echo(f"retry   {o.cell.name} after {o.seconds:.1f} s on "
                      f"{r.host.label}: host failed ({why[:80]}); rerun "
                      "on another host")
            self.pending.insert(0, (o.cell, r.excluded | {r.host.uri},
                                    [f"{note}; log {kept}"]))
            return True
        o.attempts.append(note)
        o.last_line = f"host failed: {why}" + ("" if others else "; no other host left")
        return False

    def stop_all(self) -> None:
        for r in self.running:
            _stop(r.proc, self.grace)
            r.fh.close()

    def wrap_up(self) -> MatrixResult:
        """The outcomes in the file's order, the durations kept for the
        next run's order, and the reports written."""
        res = self.res
        res.seconds = time.monotonic() - self.t_start
        order = {c.name: i for i, c in enumerate(self.cells)}
        res.outcomes.sort(key=lambda o: order[o.cell.name])
        self.history.update({o.cell.name: round(o.seconds, 1) for o in res.outcomes
                             if o.verdict != "TIMEOUT" and not o.attempts})
        self.hist_path.write_text(json.dumps(self.history, indent=1,
                                             sort_keys=True) + "\n")
        res.junit = self.out_dir / f"{self.group}.xml"
        res.tap = self.out_dir / f"{self.group}.tap"
        write_reports(res)
        return res
