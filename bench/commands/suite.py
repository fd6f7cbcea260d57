"""The suite's commands: what checks and measures the bench as a whole.

check is `make check` (pytest, every arch's guest self-tests at each
-smp it is checked at, and the matrix's quick group; one summary row each
and JUnit XML in build/junit/); selftest and matrix run those parts alone
(bench/suite/selftest.py, the matrix in bench/suite/matrix.py); bench is
`make bench`, the seeds' experiments (bench/suite/perf/); fuzz holds the
host-compiled probe emulator against unicorn (bench/check/fuzz.py),
libfuzz the libFuzzer targets over the guest's C (bench/check/libfuzz.py);
boot-time and avoid measure the boot and seed 003's interrupt-avoidance
methods. Each returns an exit status from bench/errors.py.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import statistics
import subprocess
import sys

from .. import arches
from ..check import fuzz, libfuzz
from ..errors import EXIT_FAILED, EXIT_OK, BenchError, HostLost, UsageError
from ..guest import build, libvirt, shm_channel
from ..guest.backend import open_guest
from ..paths import BUILD
from ..suite import guestfuzz, hosts, junit, lint, matrix, perf, selftest, spawned_hosts
from ..trace import avoid


def cmd_check(args) -> int:
    names = arches.names(args.arch)
    junit_dir = BUILD / "junit"
    junit_dir.mkdir(parents=True, exist_ok=True)
    host_xml = junit_dir / "host.xml"
    host_log = junit_dir / "host.log"
    host_xml.unlink(missing_ok=True)
    for name in names:
        build.ensure_image(arches.get(name))

    # The host tests run beside the guest self-tests (each side is mostly
    # one QEMU or one Python at a time, so together they fill the cores
    # the suite alone left half idle); pytest's output is kept in a file
    # and shown once the self-tests are done.
    workers = _pytest_workers()
    print(f"== host tests (pytest) for {', '.join(names)}"
          f"{f', {workers[1]} workers' if workers else ''}, beside the self-tests",
          flush=True)
    with open(host_log, "w") as out:
        pytest = subprocess.Popen(
            [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider",
             *workers, f"--junitxml={host_xml}", f"--arch={','.join(names)}"],
            cwd=BUILD.parent, stdout=out, stderr=subprocess.STDOUT)
        try:
            self_rows = _check_selftests(names)
        except BaseException:
            pytest.kill()
            raise
        finally:
            pytest.wait()
    print(f"== host tests (pytest): {host_log}", flush=True)
    print(host_log.read_text(), end="", flush=True)
    rows = []
    if host_xml.exists():
        rows.append(("host tests", *junit.counts(host_xml)))
    else:
        rows.append(("host tests", 0, 1, 0))
    if pytest.returncode not in (0, 1):
        print(f"pytest itself failed (exit {pytest.returncode})")
        rows.append(("pytest run", 0, 1, 0))
    rows += self_rows

    rows.append(_check_matrix_quick(names, junit_dir))
    rows.append(lint.row())

    print("\n== summary")
    for what, p, f, s in rows:
        print(f"  {what:<28} {p:4d} passed {f:4d} failed {s:4d} skipped")
    passed = sum(r[1] for r in rows)
    failed = sum(r[2] for r in rows)
    skipped = sum(r[3] for r in rows)
    print(f"JUnit XML: {junit_dir}/")
    print(f"check: {passed} passed, {failed} failed, {skipped} skipped")
    return EXIT_FAILED if failed else EXIT_OK


def _pytest_workers() -> list[str]:
    """pytest-xdist's options (Debian's python3-pytest-xdist): a worker a
    core, up to 4, each test file whole on one worker so that a module's
    booted guest serves all its tests; none where xdist is missing."""
    n = min(os.cpu_count() or 1, 4)
    if n < 2 or importlib.util.find_spec("xdist") is None:
        return []
    return ["-n", str(n), "--dist", "loadfile"]


def _check_selftests(names: list[str]) -> list[tuple]:
    """Every arch's guest self-tests at each -smp it is checked at: a
    summary row each."""
    rows = []
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
    return rows


def _check_matrix_quick(names: list[str], junit_dir) -> tuple:
    """The matrix's quick group (ci/matrix.cfg) for these arches: a summary
    row for make check; its JUnit XML is copied beside the others."""
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


def cmd_selftest(args) -> int:
    failed = 0
    for name in arches.names(args.arch):
        print(f"== {name} -smp {args.smp}: guest self-tests", flush=True)
        res = selftest.run(name, args.area, echo=lambda l: print(l, flush=True),
                           smp=args.smp)
        for p in res.problems:
            print(f"PROBLEM: {p}")
        print(f"selftest {name}: {len(res.passed)} passed, {len(res.failed)} failed"
              + (f", {len(res.problems)} problems" if res.problems else ""))
        failed += not res.ok
    return EXIT_FAILED if failed else EXIT_OK


def cmd_boot_time(args) -> int:
    arch = arches.get(args.arch)
    build.ensure_image(arch)
    ms = []
    for i in range(args.runs):
        with open_guest(arch, label=f"boot{i}", smp=args.smp) as g:
            ms.append(g.boot_seconds * 1000)
            g.exit(0)
        print(f"boot {i + 1}/{args.runs}: {ms[-1]:.1f} ms", flush=True)
    q = statistics.quantiles(ms, n=4) if len(ms) >= 2 else [ms[0]] * 3
    print(f"{arch.name} -smp {args.smp}: {len(ms)} boots, QEMU start to HELLO frame; "
          f"min {min(ms):.1f} ms, quartiles {q[0]:.1f}/{q[1]:.1f}/{q[2]:.1f} ms, "
          f"max {max(ms):.1f} ms")
    print(f"boot-to-ready median {statistics.median(ms):.0f} ms")
    return EXIT_OK


def cmd_matrix(args) -> int:
    if args.spawn_hosts is not None:
        if args.host:
            raise UsageError("--spawn-hosts makes the hosts: no --host with it")
        if not 1 <= args.spawn_hosts <= 8 or (args.kill_one and args.spawn_hosts < 2):
            raise UsageError("--spawn-hosts: 1 to 8 (at least 2 with --kill-one: "
                             "a lost host's cells need another)")
        if not args.list:
            with spawned_hosts.SpawnedHosts(args.spawn_hosts) as sp:
                return _matrix(args, sp)
    elif args.kill_one:
        raise UsageError("--kill-one needs --spawn-hosts (it kills a host it made)")
    return _matrix(args, None)


def _matrix(args, spawned) -> int:
    if spawned is not None:
        args.host = spawned.uris
    cells = matrix.select(matrix.load(args.file), args.group,
                          arches.names(args.arch) if args.arch else None, args.cell)
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.list:
        for c in cells:
            print(f"{c.name:<32} {c.timeout:6g} s  python3 -m bench "
                  f"{' '.join(map(shlex.quote, c.argv()))}"
                  + (f"   (xfail: {c.xfail})" if c.xfail else ""))
        return EXIT_OK
    for uri in args.host or []:
        libvirt.check_uri(uri)
    if args.host and len(set(args.host)) != len(args.host):
        raise UsageError("--host: the same URI twice")
    for name in sorted({c.arch for c in cells}):   # once, before cells race to
        build.ensure_image(arches.get(name))       # build it in parallel
    on = None
    if args.host:
        on = hosts.connect(args.host)
        for h in on:
            print(f"host {h.label}: " + (f"{h.cpus} CPUs, {h.slots} slots"
                                         if not h.down else f"down, {h.down}"),
                  flush=True)
        if all(h.down for h in on):
            raise HostLost("no host could be reached: " + "; ".join(
                f"{h.uri}: {h.down}" for h in on))
    if spawned is not None and args.kill_one:
        spawned.kill_when_busy()
    res = matrix.run(cells, args.group, jobs=args.jobs, hosts=on)
    print()
    for line in matrix.summary_lines(res):
        print(line)
    if spawned is None or not args.kill_one:
        return EXIT_OK if res.ok else EXIT_FAILED
    problems = spawned_hosts.survival_problems(res, spawned.victim.tcp_uri,
                                               spawned.killed.is_set())
    for p in problems:
        print(f"PROBLEM: {p}")
    print(f"hosts: {spawned.victim.tcp_uri} killed after "
          f"{spawned.killed_after or 0:.0f} s; " +
          ("every promise of a lost host kept" if not problems
           else f"{len(problems)} problems"))
    return EXIT_FAILED if problems else EXIT_OK


def cmd_bench(args) -> int:
    # Guest time is what the bench times: the shm consumer does not take
    # the vCPU's core away whenever it wakes (bench/guest/shm_channel.py).
    shm_channel.raise_priority(False)
    worst = EXIT_OK
    for name in arches.names(args.arch):
        worst = max(worst, perf.run(name, reps=args.reps, small=args.small,
                                        only=args.only))
    return worst


def cmd_libfuzz(args) -> int:
    if args.seconds is not None and args.seconds < 1 or args.execs < 0:
        raise UsageError("--seconds must be at least 1 and --execs at least 0")
    # With --execs, --seconds caps the time: libFuzzer stops at either.
    seconds = args.seconds if args.seconds is not None else 0 if args.execs else 60
    names = args.target or list(libfuzz.TARGETS)
    unknown = [n for n in names if n not in libfuzz.TARGETS]
    if unknown:
        raise UsageError(f"no fuzz target {', '.join(unknown)}: "
                         f"{', '.join(libfuzz.TARGETS)}")
    exes = libfuzz.build(names)
    failed = 0
    for n in names:
        for path, ok, tail in libfuzz.replay(n, libfuzz.regressions(n), exes[n]):
            print(f"regression {n}/{path.name}: {'passed' if ok else 'FAILED'}")
            if not ok:
                failed += 1
                print(tail)
    if args.replay:
        return EXIT_FAILED if failed else EXIT_OK
    for n in names:
        c = libfuzz.run(n, seconds=seconds, runs=args.execs, exe=exes[n])
        print(f"libfuzz {n}: {c.execs} executions in {c.seconds:.0f} s "
              f"({c.rate:.0f}/s), cov {c.cov} ft {c.ft}, corpus {c.corpus}, "
              f"{len(c.crashes)} crashes", flush=True)
        for crash in c.crashes:
            print(f"  crash input: {crash}")
        if c.crashes or c.returncode not in (0,):
            failed += 1
            print(c.tail)
    print(f"libfuzz: {len(names)} targets, {failed} failed")
    return EXIT_FAILED if failed else EXIT_OK


def cmd_fuzz_guest(args) -> int:
    if args.count < 1:
        raise UsageError("--count must be at least 1")
    st = guestfuzz.run(args.arch, args.count, args.seed, args.smp,
                       echo=lambda l: print(l, flush=True))
    answered = sum(st.answered.values())
    print(f"fuzz-guest {args.arch}: {st.sent} lines sent, {answered} answered "
          f"({', '.join(f'{k} {v}' for k, v in sorted(st.answered.items()))}), "
          f"{st.programs_sent} programs checked, {st.programs_accepted} accepted, "
          f"fired {st.fired} times, {st.seconds:.0f} s")
    for p in st.problems:
        print(f"PROBLEM: {p}")
    print(f"fuzz-guest {args.arch}: guest {'alive' if not st.problems else 'in trouble'}, "
          f"{len(st.problems)} problems")
    return EXIT_FAILED if st.problems or answered != st.sent else EXIT_OK


def cmd_fuzz(args) -> int:
    arch = arches.get(args.arch)
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    print(f"fuzz {arch.name}: {args.states} states per class, seed {args.seed}",
          flush=True)
    res = fuzz.run(arch, args.states, args.classes, args.seed, args.jobs,
                   on_line=lambda l: print(l, flush=True))
    bad = sum(len(r.mismatches) for r in res)
    print(f"fuzz {arch.name}: {sum(r.compared for r in res)} states in "
          f"{len(res)} classes, {bad} mismatches")
    return EXIT_OK if all(r.ok for r in res) else EXIT_FAILED


def cmd_avoid(args) -> int:
    arch = arches.get(args.arch)
    if min(args.pages, args.iters, args.reps) < 1:
        raise UsageError("--pages, --iters and --reps must be at least 1")
    if arch.itrace == "step":
        return _avoid_step(args, arch)
    print(f"avoid {arch.name}: tlbwalk pages={args.pages} iters={args.iters}, "
          f"{args.reps} repetitions", flush=True)
    with open_guest(arch, label="avoid", smp=args.smp, command_timeout=600) as g:
        rows = avoid.measure(g, args.pages, args.iters, args.reps,
                             on_line=lambda l: print(l, flush=True))
    figs = avoid.figures(rows)
    for line in avoid.table_lines(figs):
        print(line)
    bad = avoid.problems(figs)
    for b in bad:
        print(f"  PROBLEM: {b}")
    m = figs["all"]["median"]
    print(f"avoid {arch.name}: all methods on: {max(figs['all']['own_total'])} misses "
          f"and faults of the tracer's own (ITLB {m['own_itlb']:.0f}, DTLB "
          f"{m['own_dtlb']:.0f}, faults {m['own_faults']:.0f}); {len(bad)} problems")
    return EXIT_FAILED if bad else EXIT_OK


def _avoid_step(args, arch) -> int:
    """`bench avoid` on a single-stepping arch (i386): avoid_step.py."""
    from ..trace import avoid_step
    print(f"avoid {arch.name}: demand iters={args.iters}, each instruction-tracing "
          "method with demand_step's page resident and evicted before every call",
          flush=True)
    with open_guest(arch, label="avoid", smp=args.smp, command_timeout=600) as g:
        reps = avoid_step.measure(g, arch, args.iters, args.reps,
                                  on_line=lambda l: print(l, flush=True))
        g.exit(0)
    rows = avoid_step.merge(reps)
    for line in avoid_step.table_lines(rows):
        print(line)
    bad = [b for rep in reps for b in avoid_step.problems(rep, args.iters)]
    for b in bad:
        print(f"  PROBLEM: {b}")
    nxt = [r for r in rows if r["method"] == "next" and r["evict"]]
    prev = [r for r in rows if r["method"] == "previous" and r["evict"]]
    print(f"avoid {arch.name}: page evicted before each call: the tracer took "
          f"{prev[0]['own_faults']} faults of its own by previous, "
          f"{nxt[0]['own_faults']} by next; {len(bad)} problems")
    return EXIT_FAILED if bad else EXIT_OK
