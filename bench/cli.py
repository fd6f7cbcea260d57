"""The commands of `python3 -m bench <subcommand>`; the Makefile wraps them.

The grammar is bench/parser.py; each subcommand's code is a cmd_* function
here, found through COMMANDS. main() turns every error of the harness into
a message and an exit status from bench/errors.py's table: 0 when
everything asked for passed, 1 when something ran and failed, 2 for bad
usage (unknown arch or mechanism, bad arguments or probe spec; nothing
ran), 3 when a libvirt host could not be reached or went away, 130 when
interrupted. Every failure prints what went wrong, the QEMU
command line and where the full log is.
"""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import statistics
import subprocess
import sys

from . import arches
from .check import fuzz
from .debug import debugger, sitecheck
from .export import ctf, logs, timeline
from .errors import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK,
                     BenchError, GuestExited, HostLost, UsageError)
from .guest import build, libvirt, libvirtd
from .guest.backend import open_guest, use_backend, use_channel
from .parser import PROBES_DEFAULT, build_parser
from .paths import BUILD, PROGRAMS
from .program import aggregate, asm, templates
from .suite import hosts, junit, matrix, perf, selftest
from .trace import avoid, sites, stress, verify, watch
from .trace.image import load_image
from .program import load as program_load
from .trace.format import format_trace, nesting_error_lines, summary_lines
from .trace.session import open_session


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


def cmd_cmd(args) -> int:
    arch = arches.get(args.arch)
    build.ensure_image(arch)
    worst = EXIT_OK
    with open_guest(arch, label="cmd", smp=args.smp,
                    on_text=lambda l: print(l, flush=True)) as g:
        for line in args.commands:
            print(f">> {line}", flush=True)
            try:
                r = g.command(line)
            except GuestExited as e:      # `exit N`, or a crash
                print(f"guest exited with status {e.status} ({e.status_name})")
                return EXIT_OK if e.status == 0 else EXIT_FAILED
            for res in r.results:
                secs = res["cycles"] / g.hello["cycles_hz"]
                print(f"result {res['name']}: value={res['value']} "
                      f"cycles={res['cycles']} ({secs * 1e3:.2f} ms, "
                      f"{res['value'] / secs:,.0f} per second) status={res['status']}")
            print(f"<< {r.status_name}: {r.message}", flush=True)
            worst = max(worst, EXIT_OK if r.ok else EXIT_FAILED)
        g.exit(0)
    return worst


def _probe_args(args, arch, all_mechanisms: bool = False) -> None:
    """Fill in the arch's defaults: its first mechanism (or all of them),
    and 4 CPUs or as many as it has; UsageError for what it lacks."""
    if args.mechanism is None:
        args.mechanism = ",".join(arch.mechanisms) if all_mechanisms \
            else arch.default_mechanism
    for m in args.mechanism.split(","):
        arch.check_mechanism(m)
    if args.smp is None:
        args.smp = min(4, arch.max_smp)
    if not 1 <= args.smp <= arch.max_smp:
        raise UsageError(f"{arch.name} runs 1 to {arch.max_smp} CPUs "
                         f"(asked for {args.smp})")


def _assemble_file(path: str, arch):
    """The probe program in path, assembled for arch: refused before any
    guest boots when it cannot be read or is not a valid program."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise UsageError(f"cannot read the program {path}: {e}") from None
    return asm.assemble(text, arch, path)


def _workload_image(args, arch, default_run: str):
    """(image, ELF, run line) for --workload FILE.c (built into its own
    image) or the arch's own image (None, None: the guest's defaults)."""
    if args.workload:
        image = build.user_image(arch, args.workload)
        return (image, image.parent / arch.symbols,
                args.run or build.workload_name(args.workload))
    build.ensure_image(arch)
    return None, None, args.run or default_run


def cmd_run(args) -> int:
    arch = arches.get(args.arch)
    _probe_args(args, arch)
    if args.watch is not None:
        return _run_watch(args, arch)
    sites.parse_spec(args.probes)          # a bad spec: refused before booting
    program = formatter = None
    if args.program:                       # a bad program: refused before booting
        program = _assemble_file(args.program, arch)
    if args.program or args.templates:
        formatter = templates.Formatter.load(args.templates or
                                             PROGRAMS / "templates")
    image, elf, line = _workload_image(args, arch, "fib n=10")
    stub_states = []
    with open_guest(arch, label="run", smp=args.smp, image=image, elf=elf,
                    command_timeout=args.timeout, gdbstub=args.stub_check) as g:
        s = open_session(g)
        s.setup(args.probes, args.mechanism, check=args.check,
                buffer_bytes=args.buffer, strict=False, program=program,
                pass_count=args.pass_count, maxhits=args.maxhits)
        s.must(f"trace kick {args.kick}")
        s.enable(True)
        armed = s.arm_window()
        for n in s.notes:
            print(f"note: {n}")
        if args.timer_hz:
            s.must(f"timer {args.timer_hz}")
        r = s.cmd(f"run {line}")
        if args.stub_check:
            stub_states.append(sitecheck.read_sites(g, s.image, s.probes,
                                                    args.mechanism,
                                                    {p.id for p in s.probes}))
        window = (armed, s.disarm_window())
        if args.stub_check:
            stub_states.append(sitecheck.read_sites(g, s.image, s.probes,
                                                    args.mechanism, set()))
        cap = s.finish()
        g.exit(0)
    for ln in format_trace(cap, s.probes, limit=args.limit, image=s.image,
                           formatter=formatter, order=g.byte_order):
        print(ln)
    if cap.aggs:
        names = {p.id: p.function if p.kind == "entry" else f"{p.function}:{p.kind}"
                 for p in s.probes}
        for ln in aggregate.lines(aggregate.merge(cap.aggs), s.programs, names,
                                  arch.word_bytes):
            print(ln)
    _exports(args, cap, s.probes, s.image, g.hello,
             {"mechanism": args.mechanism, "workload": line, "smp": args.smp})
    for res in r.results:
        print(f"result {res['name']} = {res['value']} "
              f"({'ok' if res['status'] == 0 else 'WRONG'})")
    rep = verify.verify(cap, s.probes, g.link_errors,
                        allow_missing=args.mechanism in arch.lossy, refused=s.refused,
                        window=window,
                        accounting=not (args.check or program or args.pass_count
                                        or args.maxhits or args.mechanism in arch.lossy))
    print(f"probes: {len(s.probes)} enabled, mechanism {args.mechanism}"
          + (f", {len(s.refused)} refused (notes above)" if s.refused else ""))
    print(f"trace channel: {g.channel_used}" + (
        f" (asked for {g.channel}; the guest has none: {g.channel_absent})"
        if g.channel_used != g.channel else ""))
    own = avoid.own_traps_line(cap)
    if own:
        print(own)
    for ln in summary_lines(rep):
        print(ln)
    status = EXIT_OK if r.ok else EXIT_FAILED
    if args.check:
        checker = importlib.import_module(arch.checker)
        crep = checker.verify(cap.checks, sites.sites_of(s.image, s.probes))
        print(crep.summary())
        for m in crep.mismatches[:20]:
            print(f"  MISMATCH {m}")
        if crep.mismatches or not crep.checked:
            status = EXIT_FAILED
        # One CHECK record per recorded firing, when every firing records
        # and emulates (or, under opt, runs its copies): a firing without
        # one was never re-run.
        ids = {p.id for p in s.probes}
        firings = sum(e.probe in ids for e in cap.events)
        if (not (args.program or args.pass_count or args.maxhits) and rep.dropped == 0
                and args.mechanism not in arch.lossy and firings != len(cap.checks)):
            print(f"PROBLEM: check: {firings} firings recorded, "
                  f"{len(cap.checks)} CHECK records")
            status = EXIT_FAILED
    for when, states in zip(("enabled", "after disable"), stub_states):
        bad = [st for st in states if not st.ok]
        print(f"stub: {len(states)} sites read through the GDB stub {when}: "
              f"{sum(st.got == st.trap for st in states)} trap, "
              f"{sum(st.got == st.original for st in states)} original, "
              f"{len(bad)} wrong")
        for st in bad:
            print(f"PROBLEM: {st.describe()}")
            status = EXIT_FAILED
    if args.exec_count:
        status = max(status, _exec_count(args, arch, s, rep, line, image, elf))
    for prob in rep.problems:
        print(f"PROBLEM: {prob}")
    for ln in nesting_error_lines(rep):
        print(ln)
    print(f"traced={rep.traced} fired={rep.fired} missed={rep.missed} "
          f"dropped={rep.dropped} nesting_checked={rep.nesting_checked}")
    return status if rep.ok else EXIT_FAILED


def _exec_count(args, arch, s, rep, line, image, elf) -> int:
    """Every insn probe's firings against QEMU's count in an unprobed twin
    (bench/trace/execcount.py); REP-prefixed instructions are left out."""
    from .trace import execcount
    insns = [p for p in s.probes if p.kind == "insn"
             and s.image.code(p.addr, 1) not in (b"\xf2", b"\xf3")]
    if not insns:
        print("PROBLEM: --exec-count: no insn probe to count")
        return EXIT_FAILED
    counts = execcount.count(arch, [p.addr for p in insns], line, s.image.symbols,
                             smp=args.smp,
                             before=[f"timer {args.timer_hz}"] if args.timer_hz else (),
                             image=image, elf=elf)
    bad = [p for p in insns if rep.insns[p.id] != counts[p.addr]]
    print(f"exec-count: {len(insns)} insn probes, {sum(counts.values())} executions "
          f"in the unprobed twin, {len(insns) - len(bad)} equal, {len(bad)} differ")
    for p in bad[:20]:
        print(f"PROBLEM: {p.spec}: {rep.insns[p.id]} firings, QEMU ran it "
              f"{counts[p.addr]} times")
    return EXIT_FAILED if bad or rep.dropped else EXIT_OK


def _run_watch(args, arch) -> int:
    """run --watch: watches, not probes (bench/trace/watch.py)."""
    if args.check and not arch.watch_checker:
        raise UsageError(f"--watch --check: {arch.name}'s watches emulate nothing "
                         "(the hardware makes the access), so there is nothing to "
                         "re-execute")
    for flag, given in (("--probes", args.probes != PROBES_DEFAULT),
                        ("--stub-check", args.stub_check), ("--ctf", args.ctf),
                        ("--plot", args.plot), ("--pass", args.pass_count)):
        if given:
            raise UsageError(f"--watch does not combine with {flag} yet")
    program = None
    if args.program:
        program = _assemble_file(args.program, arch)
    image, elf, line = _workload_image(args, arch,
                                       "watchctr threads=8 writes=1000 reads=1000")
    elf = elf or arch.elf()
    img = load_image(elf)
    planned = watch.plan(args.watch, img, arch)     # bad input: nothing boots
    with open_guest(arch, label="watch", smp=args.smp, image=image,
                    elf=elf if args.workload else None,
                    command_timeout=args.timeout) as g:
        if args.buffer:
            g.command(f"trace buffer {args.buffer}", timeout=60)
        g.command("trace reset")
        g.command(f"probe check {'on' if args.check else 'off'}")
        watch.arm(g, planned)
        ids = [w.id for w in planned]
        if program is not None:
            g.command("program clear")
            program_load.load(g, program, 0)
            program_load.attach(g, 0, ids)
        program_load.limits(g, ids, None, args.maxhits)
        r = g.command(f"run {line}")
        watch.disarm(g, planned)
        fl = g.command("trace flush", timeout=600)
        cap = g.capture()
        g.exit(0)
    value = next((res["value"] for res in r.results), None)
    v = watch.verdict(cap, planned, img, line, value, program=program is not None)
    for ln in watch.trace_lines(planned, img, args.limit):
        print(ln)
    if cap.aggs:
        for ln in aggregate.lines(aggregate.merge(cap.aggs), {0: program} if program
                                  else {}, {w.id: w.name for w in planned},
                                  arch.word_bytes):
            print(ln)
    for res in r.results:
        print(f"result {res['name']} = {res['value']} "
              f"({'ok' if res['status'] == 0 else 'WRONG'})")
    for ln in v.lines:
        print(ln)
    dropped = sum(s["dropped"] for s in cap.stats.values())
    problems = list(v.stopped)
    if not r.ok:
        problems.append(f"the workload failed: {r.status_name}: {r.message}")
    if not fl.ok:
        problems.append(f"trace flush failed: {fl.message}")
    if dropped and program is None:
        problems.append(f"{dropped} records dropped (a bigger --buffer?)")
    if g.link_errors:
        problems.append(f"the serial link lost or damaged frames: {g.link_errors}")
    if args.check:
        crep = importlib.import_module(arch.watch_checker).verify(
            cap.checks, {w.id for w in planned})
        print(crep.summary())
        for m in crep.mismatches[:20]:
            print(f"  MISMATCH {m}")
        if crep.mismatches or not crep.checked:
            problems.append("check mode: " + ("mismatches" if crep.mismatches
                                              else "nothing re-executed"))
    for p in problems:
        print(f"PROBLEM: {p}")
    print(f"watch: fired={v.fired} expected={v.expected} values_ok={v.values_ok}")
    return EXIT_OK if v.ok and not problems else EXIT_FAILED


def _exports(args, cap, probes, image, hello, environment) -> None:
    """--ctf and --plot, for run and export."""
    if getattr(args, "ctf", None):
        w = ctf.write(args.ctf, cap, probes, image, hello, environment)
        print(f"ctf: {w.path}: {w.events} events in {w.streams} streams"
              + (f", {w.discarded} discarded" if w.discarded else "")
              + f" (babeltrace2 {w.path})")
    if getattr(args, "plot", None):
        made = timeline.draw(cap, probes, args.plot, hello["cycles_hz"],
                             f"{hello['arch_name']} ")
        print(f"timeline: {', '.join(str(p) for p in made) or 'no calls to draw'}")


def cmd_export(args) -> int:
    run = logs.load(args.log)
    if not (args.ctf or args.plot or args.limit):
        raise UsageError("export what? --ctf DIR, --plot DIR or --limit N")
    print(f"export {run.name}: {run.hello['arch_name']}, {len(run.probes)} probes, "
          f"{len(run.capture.events)} records, {len(run.capture.checks)} CHECK records"
          + (f", {len(run.link_errors)} link errors" if run.link_errors else ""))
    if args.limit:
        for ln in format_trace(run.capture, run.probes, limit=args.limit,
                               image=run.image):
            print(ln)
    _exports(args, run.capture, run.probes, run.image, run.hello,
             {"mechanism": run.mechanism, "log": run.name})
    return EXIT_OK


def cmd_itrace(args) -> int:
    arch = arches.get(args.arch)
    _probe_args(args, arch)
    if args.skip < 0 or args.regions < 0:
        raise UsageError("--skip and --regions are counts")
    if arch.itrace != "step" and (args.skip or args.regions or args.method != "previous"):
        raise UsageError(f"{arch.name} rebuilds instructions from branch records: "
                         "--skip, --regions and --method are for single-stepping arches")
    from .trace import itrace_run            # capstone: only this command
    return itrace_run.run(args, arch)


def cmd_lossless(args) -> int:
    arch = arches.get(args.arch)
    _probe_args(args, arch, all_mechanisms=True)
    if args.also:
        sites.parse_spec(args.also)        # a bad spec: refused before booting
    worst = EXIT_OK
    for mechanism in args.mechanism.split(","):
        print(f"lossless {arch.name} mechanism={mechanism}:", flush=True)
        res = stress.lossless(arch, mechanism, args.smp, args.threads, args.iters,
                              depth=args.depth, timer_hz=args.timer_hz,
                              on_line=lambda l: print(l, flush=True),
                              buffer_bytes=args.buffer, also=args.also)
        rep = res.report
        for ln in summary_lines(rep):
            print(ln)
        for prob in rep.problems:
            print(f"  PROBLEM: {prob}")
        for ln in nesting_error_lines(rep):
            print(f"  {ln}")
        pct = 100.0 * res.missed / res.firings_expected if res.firings_expected else 0
        print(f"  expected={res.firings_expected} traced={rep.traced} "
              f"fired={rep.fired} missed={res.missed} ({pct:.2f}%) "
              f"dropped={rep.dropped} nesting_checked={rep.nesting_checked} "
              f"workload={'ok' if res.result_ok else 'WRONG'} "
              f"run {res.seconds:.1f} s", flush=True)
        lossy = mechanism in arch.lossy
        bad = (not res.result_ok or rep.dropped or rep.link_errors or
               (not lossy and (res.missed or not rep.ok)))
        worst = max(worst, EXIT_FAILED if bad else EXIT_OK)
        last = (res.missed, rep.dropped)
    print(f"missed={last[0]} dropped={last[1]}")
    return worst


def cmd_toggle(args) -> int:
    arch = arches.get(args.arch)
    _probe_args(args, arch)
    if args.also:
        sites.parse_spec(args.also)
    print(f"toggle {arch.name} mechanism={args.mechanism}: {args.toggles} arm/disarm "
          f"cycles while {args.threads} threads run on {args.smp} CPUs", flush=True)
    res = stress.toggle_stress(arch, args.mechanism, args.smp, args.threads,
                               args.iters, args.toggles,
                               on_line=lambda l: print(l, flush=True), also=args.also,
                               check=args.check)
    rep = res.report
    print(f"  workload {'ok' if res.result_ok else 'WRONG'}; {res.windows} armed "
          f"windows; {rep.traced} records; {res.nesting_checked} returns checked "
          f"inside windows, {len(res.nesting_errors)} nesting errors; "
          f"dropped={rep.dropped}; {res.seconds:.1f} s")
    for loss in rep.losses[:8]:
        print(f"  LOST: {loss.describe()}")
    for e in res.nesting_errors[:5]:
        print(f"  NESTING BROKEN: {e.message}")
        for h in e.history:
            print(f"      {h}")
    if not res.nesting_checked:
        print("  PROBLEM: no return was checked inside an armed window (the workload "
              "ended before the toggles did? raise --iters): the run proves nothing")
    for prob in rep.accounting:
        print(f"  PROBLEM: {prob}")
    bad = not res.result_ok or res.nesting_errors or rep.dropped or rep.link_errors \
        or not res.nesting_checked or rep.accounting
    if args.check:
        print(f"  {res.check.summary()}")
        for m in res.check.mismatches[:10]:
            print(f"  MISMATCH {m}")
        # Every firing's record, the insn probes' (--also) too: `traced`
        # counts entries and returns only.
        if res.check_records != res.firings:
            print(f"  PROBLEM: check: {res.firings} firings recorded, "
                  f"{res.check_records} CHECK records")
        bad = bad or res.check.mismatches or not res.check.checked \
            or res.check_records != res.firings
    return EXIT_FAILED if bad else EXIT_OK


def cmd_bench(args) -> int:
    worst = EXIT_OK
    for name in arches.names(args.arch):
        worst = max(worst, perf.run(name, reps=args.reps, small=args.small))
    return worst


def cmd_image(args) -> int:
    for name in arches.names(args.arch):
        build.ensure_image(arches.get(name))
        print(f"{name}: {arches.get(name).image()}")
    return EXIT_OK


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


def cmd_check(args) -> int:
    names = arches.names(args.arch)
    junit_dir = BUILD / "junit"
    junit_dir.mkdir(parents=True, exist_ok=True)
    host_xml = junit_dir / "host.xml"
    host_xml.unlink(missing_ok=True)
    for name in names:
        build.ensure_image(arches.get(name))

    print(f"== host tests (pytest) for {', '.join(names)}", flush=True)
    pytest = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider",
         f"--junitxml={host_xml}", f"--arch={','.join(names)}"], cwd=BUILD.parent)
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
    return EXIT_FAILED if failed else EXIT_OK


def _with_backend(args, run) -> int:
    """run(args) with the backend it asked for; with libvirt and no
    --connect, inside a private session daemon started (and stopped) here."""
    backend = getattr(args, "backend", "qemu")
    use_channel(getattr(args, "channel", None))
    if getattr(args, "connect", None) and backend != "libvirt":
        raise UsageError("--connect needs --backend libvirt")
    if backend != "libvirt":
        return run(args)
    if args.connect:
        libvirt.check_uri(args.connect)
        use_backend("libvirt", args.connect)
        return run(args)
    root = BUILD / "libvirt" / f"d{os.getpid()}"
    with libvirtd.PrivateDaemon(root) as d:
        print(f"libvirt: private session daemon, {d.uri}", flush=True)
        use_backend("libvirt", d.uri)
        rc = run(args)
    if rc == EXIT_OK:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"libvirt: daemon and domain logs kept in {root}")
    return rc


def cmd_matrix(args) -> int:
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
    res = matrix.run(cells, args.group, jobs=args.jobs, hosts=on)
    print()
    for line in matrix.summary_lines(res):
        print(line)
    return EXIT_OK if res.ok else EXIT_FAILED


def cmd_daemon(args) -> int:
    """Private session daemons listening on 127.0.0.1 (bench/guest/libvirtd.py),
    as stand-ins for remote hosts, until interrupted."""
    import time
    if len(set(args.tcp_port)) != len(args.tcp_port) or \
            not all(0 < p < 65536 for p in args.tcp_port):
        raise UsageError("--tcp-port: distinct ports from 1 to 65535")
    daemons = []
    try:
        for port in args.tcp_port:
            d = libvirtd.PrivateDaemon(BUILD / "libvirt" / f"tcp{port}", tcp_port=port)
            daemons.append(d)
            d.start()
            print(f"libvirt: {d.tcp_uri} (pid {d.proc.pid}, logs in {d.root})",
                  flush=True)
        print("HOSTS='" + " ".join(d.tcp_uri for d in daemons) + "'; Ctrl-C stops "
              "them", flush=True)
        while all(d.proc.poll() is None for d in daemons):
            time.sleep(1)
        gone = [d.tcp_uri for d in daemons if d.proc.poll() is not None]
        print(f"libvirt: daemon exited: {' '.join(gone)}", flush=True)
        return EXIT_FAILED
    finally:
        for d in daemons:
            d.stop()


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


def _avoid_step(args, arch) -> int:
    """`bench avoid` on a single-stepping arch (i386): avoid_step.py."""
    from .trace import avoid_step
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


COMMANDS = {
    "check": cmd_check, "selftest": cmd_selftest, "boot-time": cmd_boot_time,
    "cmd": cmd_cmd, "run": cmd_run, "lossless": cmd_lossless,
    "toggle": cmd_toggle, "bench": cmd_bench, "fuzz": cmd_fuzz, "export": cmd_export,
    "debug": debugger.cmd_debug, "itrace": cmd_itrace,
    "matrix": cmd_matrix, "image": cmd_image, "daemon": cmd_daemon,
    "avoid": cmd_avoid,
}


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)       # exits EXIT_USAGE itself
    try:
        if getattr(args, "runs", 1) < 1:
            raise UsageError("--runs must be at least 1")
        return _with_backend(args, COMMANDS[args.subcommand])
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
