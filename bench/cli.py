"""Command line: `python3 -m bench <subcommand>`; the Makefile wraps these.

Exit status: 0 when everything asked for passed, 1 when something ran and
failed, 2 for bad usage (unknown arch, bad arguments). Every failure prints
what went wrong, the QEMU command line and where the full log is.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import shlex
import statistics
import subprocess
import sys

from . import arches, build, junit, runs, selftest, sitecheck, trace
from .cdefs import REPO
from .errors import BenchError, GuestExited
from .machine import BACKENDS, Guest, use_backend


def _arch_list(value: str | None) -> list[str]:
    names = arches.available() if value in (None, "", "all") else value.split(",")
    for n in names:
        arches.get(n)          # raises UnknownArch with the list of known ones
    return names


def cmd_selftest(args) -> int:
    failed = 0
    for name in _arch_list(args.arch):
        print(f"== {name} -smp {args.smp}: guest self-tests", flush=True)
        res = selftest.run(name, args.area, echo=lambda l: print(l, flush=True),
                           smp=args.smp)
        for p in res.problems:
            print(f"PROBLEM: {p}")
        print(f"selftest {name}: {len(res.passed)} passed, {len(res.failed)} failed"
              + (f", {len(res.problems)} problems" if res.problems else ""))
        failed += not res.ok
    return 1 if failed else 0


def cmd_boot_time(args) -> int:
    arch = arches.get(args.arch)
    build.ensure_image(arch)
    ms = []
    for i in range(args.runs):
        with Guest(arch, label=f"boot{i}", smp=args.smp) as g:
            ms.append(g.boot_seconds * 1000)
            g.exit(0)
        print(f"boot {i + 1}/{args.runs}: {ms[-1]:.1f} ms", flush=True)
    q = statistics.quantiles(ms, n=4) if len(ms) >= 2 else [ms[0]] * 3
    print(f"{arch.name} -smp {args.smp}: {len(ms)} boots, QEMU start to HELLO frame; "
          f"min {min(ms):.1f} ms, quartiles {q[0]:.1f}/{q[1]:.1f}/{q[2]:.1f} ms, "
          f"max {max(ms):.1f} ms")
    print(f"boot-to-ready median {statistics.median(ms):.0f} ms")
    return 0


def cmd_cmd(args) -> int:
    arch = arches.get(args.arch)
    build.ensure_image(arch)
    worst = 0
    with Guest(arch, label="cmd", smp=args.smp,
               on_text=lambda l: print(l, flush=True)) as g:
        for line in args.commands:
            print(f">> {line}", flush=True)
            try:
                r = g.command(line)
            except GuestExited as e:      # `exit N`, or a crash
                print(f"guest exited with status {e.status} ({e.status_name})")
                return 0 if e.status == 0 else 1
            for res in r.results:
                secs = res["cycles"] / g.hello["cycles_hz"]
                print(f"result {res['name']}: value={res['value']} "
                      f"cycles={res['cycles']} ({secs * 1e3:.2f} ms, "
                      f"{res['value'] / secs:,.0f} per second) status={res['status']}")
            print(f"<< {r.status_name}: {r.message}", flush=True)
            worst = max(worst, 0 if r.ok else 1)
        g.exit(0)
    return worst


def _workload_of(source) -> str:
    """The workload a user's C file defines: WORKLOAD(ident) = { "name", ..."""
    import re
    text = open(source, encoding="utf-8", errors="replace").read()
    m = re.search(r'WORKLOAD\s*\(\s*\w+\s*\)\s*=\s*\{\s*"([^"]+)"', text)
    if not m:
        raise runs.TraceError(f"{source}: no `WORKLOAD(ident) = {{ \"name\", ... }}` "
                              "descriptor (see guest-kernel/include/workload.h)")
    return m.group(1)


def _probe_args(args, arch, all_modes: bool = False) -> None:
    """Fill in the arch's defaults: its first mode (or all of them), and
    4 CPUs or as many as it has."""
    if args.mode is None:
        args.mode = ",".join(arch.modes) if all_modes else arch.modes[0]
    for m in args.mode.split(","):
        if m not in arch.modes:
            raise runs.TraceError(f"mode {m!r}: {arch.name} has {', '.join(arch.modes)}")
    if args.smp is None:
        args.smp = min(4, arch.max_smp)
    if args.smp > arch.max_smp:
        raise runs.TraceError(f"{arch.name} runs at most {arch.max_smp} CPUs "
                              f"(asked for {args.smp})")


def cmd_run(args) -> int:
    arch = arches.get(args.arch)
    _probe_args(args, arch)
    if args.workload:
        image = build.user_image(arch, args.workload)
        line = args.run or _workload_of(args.workload)
        elf = image.parent / arch.symbols
    else:
        build.ensure_image(arch)
        image, elf = None, None
        line = args.run or "fib n=10"
    try:
        trace.parse_spec(args.probes)
    except trace.SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    stub_states = []
    with Guest(arch, label="run", smp=args.smp, image=image, elf=elf,
               command_timeout=args.timeout, gdbstub=args.stub_check) as g:
        s = runs.open_session(g)
        try:
            s.setup(args.probes, args.mode, check=args.check,
                    buffer_bytes=args.buffer, strict=False)
        except trace.SpecError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        s.enable(True)
        for n in s.notes:
            print(f"note: {n}")
        r = s.cmd(f"run {line}")
        if args.stub_check:
            stub_states.append(sitecheck.read_sites(g, s.image, s.probes, args.mode,
                                                    {p.id for p in s.probes}))
        s.enable(False)
        if args.stub_check:
            stub_states.append(sitecheck.read_sites(g, s.image, s.probes, args.mode,
                                                    set()))
        cap = s.finish()
        g.exit(0)
    for ln in trace.format_trace(cap, s.probes, limit=args.limit, image=s.image):
        print(ln)
    for res in r.results:
        print(f"result {res['name']} = {res['value']} "
              f"({'ok' if res['status'] == 0 else 'WRONG'})")
    rep = trace.verify(cap, s.probes, g.link_errors, allow_missing=args.mode in runs.LOSSY_MODES)
    print(f"probes: {len(s.probes)} enabled in mode {args.mode}")
    for ln in trace.summary_lines(rep):
        print(ln)
    status = 0 if r.ok else 1
    if args.check:
        checker = importlib.import_module(f".{arch.checker}", __package__)
        crep = checker.verify(cap.checks, trace.sites_of(s.image, s.probes))
        print(crep.summary())
        for m in crep.mismatches[:20]:
            print(f"  MISMATCH {m}")
        if crep.mismatches or not crep.checked:
            status = 1
    for when, states in zip(("enabled", "after disable"), stub_states):
        bad = [st for st in states if not st.ok]
        print(f"stub: {len(states)} sites read through the GDB stub {when}: "
              f"{sum(st.got == st.trap for st in states)} trap, "
              f"{sum(st.got == st.original for st in states)} original, "
              f"{len(bad)} wrong")
        for st in bad:
            print(f"PROBLEM: {st.describe()}")
            status = 1
    for prob in rep.problems:
        print(f"PROBLEM: {prob}")
    print(f"traced={rep.traced} fired={rep.fired} missed={rep.missed} "
          f"dropped={rep.dropped} nesting_checked={rep.nesting_checked}")
    return status if rep.ok else 1


def cmd_lossless(args) -> int:
    arch = arches.get(args.arch)
    _probe_args(args, arch, all_modes=True)
    modes = args.mode.split(",")
    worst = 0
    for mode in modes:
        print(f"lossless {arch.name} mode={mode}:", flush=True)
        res = runs.lossless(arch, mode, args.smp, args.threads, args.iters,
                            depth=args.depth, timer_hz=args.timer_hz,
                            on_line=lambda l: print(l, flush=True))
        rep = res.report
        for ln in trace.summary_lines(rep):
            print(ln)
        for prob in rep.problems:
            print(f"  PROBLEM: {prob}")
        pct = 100.0 * res.missed / res.firings_expected if res.firings_expected else 0
        print(f"  expected={res.firings_expected} traced={rep.traced} "
              f"fired={rep.fired} missed={res.missed} ({pct:.2f}%) "
              f"dropped={rep.dropped} nesting_checked={rep.nesting_checked} "
              f"workload={'ok' if res.result_ok else 'WRONG'} "
              f"run {res.seconds:.1f} s", flush=True)
        lossy = mode in runs.LOSSY_MODES
        bad = (not res.result_ok or rep.dropped or rep.link_errors or
               (not lossy and (res.missed or not rep.ok)))
        worst = max(worst, 1 if bad else 0)
        last = (res.missed, rep.dropped)
    print(f"missed={last[0]} dropped={last[1]}")
    return worst


def cmd_toggle(args) -> int:
    arch = arches.get(args.arch)
    _probe_args(args, arch)
    print(f"toggle {arch.name} mode={args.mode}: {args.toggles} arm/disarm cycles "
          f"while {args.threads} threads run on {args.smp} CPUs", flush=True)
    res = runs.toggle_stress(arch, args.mode, args.smp, args.threads, args.iters,
                             args.toggles, on_line=lambda l: print(l, flush=True))
    rep = res.report
    print(f"  workload {'ok' if res.result_ok else 'WRONG'}; {res.windows} armed "
          f"windows; {rep.traced} records; {res.nesting_checked} returns checked "
          f"inside windows, {len(res.nesting_errors)} nesting errors; "
          f"dropped={rep.dropped}; {res.seconds:.1f} s")
    if rep.dropped:
        print("  records were dropped: nesting errors below may come from them")
    for e in res.nesting_errors[:10]:
        print(f"  NESTING: {e}")
    bad = not res.result_ok or res.nesting_errors or rep.dropped or rep.link_errors
    return 1 if bad else 0


def cmd_bench(args) -> int:
    from . import perf
    return perf.run(args.arch, reps=args.reps, small=args.small)


def cmd_image(args) -> int:
    for name in _arch_list(args.arch):
        build.ensure_image(arches.get(name))
        print(f"{name}: {arches.get(name).image()}")
    return 0


def _check_matrix_quick(names: list[str], junit_dir) -> tuple:
    """The matrix's quick group (ci/matrix.cfg) for these arches: a summary
    row for make check; its JUnit XML is copied beside the others."""
    import shutil
    from . import matrix
    print("== matrix quick (ci/matrix.cfg)", flush=True)
    try:
        res = matrix.run(matrix.select(matrix.load(), "quick", names), "quick")
    except BenchError as e:
        print(f"ERROR: {e}")
        return ("matrix quick", 0, 1, 0)
    for line in matrix.summary_lines(res):
        print(line)
    shutil.copy(res.junit, junit_dir / "matrix-quick.xml")
    return ("matrix quick", res.count("PASS"),
            res.count("FAIL", "TIMEOUT", "XPASS"), res.count("XFAIL"))


def cmd_check(args) -> int:
    names = _arch_list(args.arch)
    junit_dir = REPO / "build" / "junit"
    junit_dir.mkdir(parents=True, exist_ok=True)
    host_xml = junit_dir / "host.xml"
    host_xml.unlink(missing_ok=True)
    for name in names:
        build.ensure_image(arches.get(name))

    print(f"== host tests (pytest) for {', '.join(names)}", flush=True)
    pytest = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider",
         f"--junitxml={host_xml}", f"--arch={','.join(names)}"], cwd=REPO)
    rows = []
    if host_xml.exists():
        rows.append(("host tests", *junit.counts(host_xml)))
    else:
        rows.append(("host tests", 0, 1, 0))
    if pytest.returncode not in (0, 1):
        print(f"pytest itself failed (exit {pytest.returncode})")
        rows.append(("pytest run", 0, 1, 0))

    for name in names:
        for smp in arches.get(name).check_smp:
            label = f"{name} -smp {smp} self-tests"
            print(f"== {label}", flush=True)
            try:
                res = selftest.run(name, echo=lambda l: print(l, flush=True), smp=smp)
                for p in res.problems:
                    print(f"PROBLEM: {p}")
                rows.append((label, len(res.passed),
                             len(res.failed) + len(res.problems), 0))
            except BenchError as e:
                print(f"ERROR: {e}")
                rows.append((label, 0, 1, 0))

    rows.append(_check_matrix_quick(names, junit_dir))

    print("\n== summary")
    for what, p, f, s in rows:
        print(f"  {what:<28} {p:4d} passed {f:4d} failed {s:4d} skipped")
    passed = sum(r[1] for r in rows)
    failed = sum(r[2] for r in rows)
    skipped = sum(r[3] for r in rows)
    print(f"JUnit XML: {junit_dir}/")
    print(f"check: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


def _cmd_debug(args) -> int:
    from . import debug
    return debug.cmd_debug(args)


def _add_backend(s) -> None:
    """--backend/--connect for a subcommand that boots guests."""
    s.add_argument("--backend", choices=BACKENDS, default="qemu",
                   help="qemu: the harness starts QEMU (default); libvirt: a "
                   "transient libvirt domain (see README)")
    s.add_argument("--connect", metavar="URI",
                   help="libvirt URI, e.g. qemu:///system (default: a private "
                   "session daemon of the bench's own under build/libvirt/, "
                   "qemu:///session?socket=...)")


def _with_backend(args):
    """Run the subcommand with the backend it asked for; with libvirt and no
    --connect, inside a private session daemon started (and stopped) here."""
    backend = getattr(args, "backend", "qemu")
    if getattr(args, "connect", None) and backend != "libvirt":
        print("error: --connect needs --backend libvirt", file=sys.stderr)
        return 2
    if backend != "libvirt":
        return args.func(args)
    from . import libvirtd, virt
    if args.connect:
        virt.check_uri(args.connect)
        use_backend("libvirt", args.connect)
        return args.func(args)
    root = REPO / "build" / "libvirt" / f"d{os.getpid()}"
    with libvirtd.PrivateDaemon(root) as d:
        print(f"libvirt: private session daemon, {d.uri}", flush=True)
        use_backend("libvirt", d.uri)
        rc = args.func(args)
    if rc == 0:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"libvirt: daemon and domain logs kept in {root}")
    return rc


def cmd_matrix(args) -> int:
    from . import matrix
    try:
        cells = matrix.select(matrix.load(args.file), args.group,
                              _arch_list(args.arch) if args.arch else None, args.cell)
    except matrix.MatrixError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.jobs is not None and args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return 2
    if args.list:
        for c in cells:
            print(f"{c.name:<32} {c.timeout:6g} s  python3 -m bench "
                  f"{' '.join(map(shlex.quote, c.argv()))}"
                  + (f"   (xfail: {c.xfail})" if c.xfail else ""))
        return 0
    for name in sorted({c.arch for c in cells}):   # once, before cells race to
        build.ensure_image(arches.get(name))       # build it in parallel
    res = matrix.run(cells, args.group, jobs=args.jobs)
    print()
    for line in matrix.summary_lines(res):
        print(line)
    return 0 if res.ok else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")

    s = sub.add_parser("check", help="host tests + guest self-tests + the "
                       "matrix's quick group (make check)")
    s.add_argument("--arch", help="one arch, a comma list, or all (default)")
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("selftest", help="boot a guest and run its self-tests")
    s.add_argument("--arch", required=True, help="i386, sparc64, or all")
    s.add_argument("--smp", type=int, default=1, help="CPUs (i386: 1..8)")
    s.add_argument("--area", default="", help="only areas starting with this")
    _add_backend(s)
    s.set_defaults(func=cmd_selftest)

    s = sub.add_parser("boot-time", help="median time from QEMU start to HELLO")
    s.add_argument("--arch", required=True)
    s.add_argument("--runs", type=int, default=10)
    s.add_argument("--smp", type=int, default=1)
    _add_backend(s)
    s.set_defaults(func=cmd_boot_time)

    s = sub.add_parser("cmd", help="boot a guest, send commands, print answers")
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, default=1)
    s.add_argument("commands", nargs="+", metavar="COMMAND",
                   help="e.g. 'run fib n=25' (quote each command)")
    _add_backend(s)
    s.set_defaults(func=cmd_cmd)

    s = sub.add_parser("run", help="trace a workload with fbt probes")
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, default=1)
    s.add_argument("--workload", help="a C file with a WORKLOAD(); linked into "
                   "the image (default: the built-in workloads)")
    s.add_argument("--run", help="the run command's arguments, e.g. 'fib n=12' "
                   "(default: the file's workload, or 'fib n=10')")
    s.add_argument("--probes", default="fbt:*:entry,fbt:*:return",
                   help="fbt:FUNCTION:entry|return or branch:FUNCTION (sparc64), "
                   "comma-separated; globs match workload functions")
    s.add_argument("--mode", help="int3, ud or step (i386); emulate or shellgame "
                   "(sparc64); default the first")
    s.add_argument("--check", action="store_true", help="verify every emulation "
                   "in unicorn")
    s.add_argument("--buffer", type=int, help="trace buffer bytes per CPU")
    s.add_argument("--limit", type=int, default=200, help="trace lines to print")
    s.add_argument("--timeout", type=float, default=300)
    s.add_argument("--stub-check", action="store_true", dest="stub_check",
                   help="read every probed site through QEMU's GDB stub after the "
                   "run (the trap) and after disabling (the original bytes)")
    _add_backend(s)
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("lossless", help="calltree under probes on many threads: "
                       "expected vs traced, missed, dropped")
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, help="default: 4, or all the arch has")
    s.add_argument("--mode", help="a mode or a comma list (default: all of the "
                   "arch's modes)")
    s.add_argument("--threads", type=int, default=8)
    s.add_argument("--iters", type=int, default=3500)
    s.add_argument("--depth", type=int, default=4)
    s.add_argument("--timer-hz", type=int, default=0, dest="timer_hz")
    _add_backend(s)
    s.set_defaults(func=cmd_lossless)

    s = sub.add_parser("toggle", help="arm/disarm probes over and over while "
                       "threads run")
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, help="default: 4, or all the arch has")
    s.add_argument("--mode", help="default: the arch's first mode")
    s.add_argument("--threads", type=int, default=8)
    s.add_argument("--iters", type=int, default=100000)
    s.add_argument("--toggles", type=int, default=1000)
    _add_backend(s)
    s.set_defaults(func=cmd_toggle)

    s = sub.add_parser("bench", help="the seeds' experiments: table, JSON, plots")
    s.add_argument("--arch", required=True)
    s.add_argument("--reps", type=int, default=5)
    s.add_argument("--small", action="store_true",
                   help="few iterations per figure (the machinery, not the numbers)")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("debug", help="boot a guest paused under QEMU's GDB stub "
                       "and start gdb-multiarch on it (bench/debug.py)")
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, default=1)
    s.add_argument("--workload", help="a C file with a WORKLOAD() (as for run)")
    s.add_argument("--probes", help="probes the harness arms once the guest is up "
                   "(as for run; default none)")
    s.add_argument("--mode", help="probe mechanism (default: the arch's first)")
    s.add_argument("--run", help="what the harness runs after arming, e.g. "
                   "'fib n=8' (default: the file's workload, or fib n=8)")
    s.add_argument("--batch", help="run gdb -batch with this script instead of "
                   "interactively")
    s.set_defaults(func=_cmd_debug)


    s = sub.add_parser("matrix", help="the correctness matrix (ci/matrix.cfg): "
                       "one group's cells in parallel; JUnit and TAP in build/matrix/")
    s.add_argument("--group", default="quick", help="quick (default), full, ...")
    s.add_argument("--arch", help="only cells of these arches (a comma list)")
    s.add_argument("--cell", action="append", metavar="GLOB",
                   help="only cells whose name matches (repeatable)")
    s.add_argument("--jobs", type=int, help="cells at a time (default: the "
                   "host's CPU count)")
    s.add_argument("--file", default=str(REPO / "ci" / "matrix.cfg"))
    s.add_argument("--list", action="store_true", help="print the cells and "
                   "their commands; run nothing")
    s.set_defaults(func=cmd_matrix)

    s = sub.add_parser("image", help="build guest images")
    s.add_argument("--arch", help="one arch, a comma list, or all (default)")
    s.set_defaults(func=cmd_image)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "runs", 1) < 1:
        print("error: --runs must be at least 1", file=sys.stderr)
        return 2
    try:
        return _with_backend(args)
    except arches.UnknownArch as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
