"""`run`: trace a workload with probes, and judge the trace.

cmd_run goes step by step: the arguments settled before anything boots
(bench/commands/inputs.py; --watch hands over to bench/commands/watch.py),
the traced run itself (boot, arm, run the workload, disarm, drain), the
trace printed with its aggregations and exports, then the verdicts, each
its own step: the trace against the probes (bench/trace/verify.py), check
mode (every emulation re-run in unicorn, one CHECK record per firing), the
sites as QEMU's GDB stub reads them (--stub-check), and every insn probe's
firings against QEMU's count in an unprobed twin (--exec-count). The last
line is always `traced=... fired=... missed=... dropped=...`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from .. import arches
from ..debug import sitecheck
from ..export import flamegraph
from ..errors import EXIT_FAILED, EXIT_OK
from ..guest.backend import open_guest
from ..paths import PROGRAMS
from ..program import aggregate, templates
from ..trace import avoid, execcount, sites, stacks, verify
from ..trace.format import format_trace, nesting_error_lines, summary_lines
from ..trace.session import open_session
from . import watch as watch_cmd
from .export import write_exports
from .inputs import assemble_file, probe_args, workload_image


@dataclass
class _Traced:
    """What one traced run of the workload left behind."""
    guest: object               # the Guest, exited (hello, link errors, channel)
    session: object             # the trace session (probes, image, refusals)
    capture: object             # the decoded trace
    reply: object               # the run command's Reply
    stub_states: list           # the sites the GDB stub read: armed, disarmed
    window: tuple               # cycles at which every probe was armed, disarmed
    after: object = None        # what finish(session) gave, if asked


def cmd_run(args) -> int:
    arch = arches.get(args.arch)
    probe_args(args, arch)
    if args.watch is not None:
        return watch_cmd.run_watch(args, arch)
    program, formatter = _program_and_formatter(args, arch)
    image, elf, line = workload_image(args, arch, "fib n=10")
    t = _trace_workload(args, arch, program, image, elf, line)
    _print_trace(args, arch, t, formatter, line)
    rep = verify.verify(t.capture, t.session.probes, t.guest.link_errors,
                        allow_missing=args.mechanism in arch.lossy,
                        refused=t.session.refused, window=t.window,
                        accounting=not (args.check or program or args.pass_count
                                        or args.maxhits or args.mechanism in arch.lossy))
    _print_setup(args, t)
    for ln in summary_lines(rep):
        print(ln)
    status = EXIT_OK if t.reply.ok else EXIT_FAILED
    if args.check:
        status = max(status, _check_mode(args, arch, t, rep))
    status = max(status, _stub_verdict(t.stub_states))
    if args.exec_count:
        status = max(status, _exec_count(args, arch, t.session, rep, line, image, elf))
    for prob in rep.problems:
        print(f"PROBLEM: {prob}")
    for ln in nesting_error_lines(rep):
        print(ln)
    print(f"traced={rep.traced} fired={rep.fired} missed={rep.missed} "
          f"dropped={rep.dropped} nesting_checked={rep.nesting_checked}")
    return status if rep.ok else EXIT_FAILED


def _program_and_formatter(args, arch):
    """The probe program and the formatter of its log records; a bad probe
    spec or program is refused here, before any guest boots."""
    sites.parse_spec(args.probes)
    program = formatter = None
    if args.program:
        program = assemble_file(args.program, arch)
    if args.program or args.templates:
        formatter = templates.Formatter.load(args.templates or
                                             PROGRAMS / "templates")
    return program, formatter


def _trace_workload(args, arch, program, image, elf, line, load=None,
                    spec=None, workload=None, finish=None) -> _Traced:
    """Boot, arm the probes, run the workload, disarm, drain; with
    --stub-check, the sites read through the GDB stub armed and disarmed.
    load(session), if given, puts programs on the probes once they are
    added (`trace` loads one per group of probes); spec replaces
    --probes; workload(session, line), if given, runs the workload instead
    of `run LINE` and gives its reply (`trace` stops it at a D exit());
    finish(session), if given, reads what it needs once the trace is
    drained, before the guest exits."""
    stub_states = []
    with open_guest(arch, label="run", smp=args.smp, image=image, elf=elf,
                    command_timeout=args.timeout, gdbstub=args.stub_check) as g:
        s = open_session(g)
        s.setup(spec or args.probes, args.mechanism, check=args.check,
                buffer_bytes=args.buffer, strict=False, program=program,
                pass_count=args.pass_count, maxhits=args.maxhits,
                loads_programs=load is not None)
        if load is not None:
            load(s)
        s.must(f"trace kick {args.kick}")
        s.enable(True)
        armed = s.arm_window()
        for n in s.notes:
            print(f"note: {n}")
        if args.timer_hz:
            s.must(f"timer {args.timer_hz}")
        r = workload(s, line) if workload else s.cmd(f"run {line}")
        if args.stub_check:
            stub_states.append(sitecheck.read_sites(g, s.image, s.probes,
                                                    args.mechanism,
                                                    {p.id for p in s.probes}))
        window = (armed, s.disarm_window())
        if args.stub_check:
            stub_states.append(sitecheck.read_sites(g, s.image, s.probes,
                                                    args.mechanism, set()))
        cap = s.finish()
        after = finish(s) if finish else None
        g.exit(0)
    return _Traced(g, s, cap, r, stub_states, window, after)


def _print_trace(args, arch, t: _Traced, formatter, line) -> None:
    """The trace as text, the programs' aggregations, the exports asked
    for (--ctf, --plot) and the workload's results."""
    cap, s, g = t.capture, t.session, t.guest
    for ln in format_trace(cap, s.probes, limit=args.limit, image=s.image,
                           formatter=formatter, order=g.byte_order):
        print(ln)
    if cap.aggs:
        names = {p.id: p.function if p.kind == "entry" else f"{p.function}:{p.kind}"
                 for p in s.probes}
        entries = aggregate.resolve(cap.aggs, s.programs, cap.stacks)
        sym = stacks.Symbolizer(s.image)
        tables = aggregate.merge(entries)
        for ln in aggregate.lines(tables, s.programs, names, arch.word_bytes, sym=sym,
                                  stacks_dropped=sum(cap.stack_dropped.values())):
            print(ln)
        _write_flames(args, tables, s.programs, sym, names, line)
    if cap.tls_dropped:
        print(f"PROBLEM: {cap.tls_dropped} thread-local stores found no room in the "
              "guest's pool: those threads' words read 0")
    if s.sample_report:
        print(s.sample_report.replace("profile off:", "samples:", 1))
    write_exports(args, cap, s.probes, s.image, g.hello,
                  {"mechanism": args.mechanism, "workload": line, "smp": args.smp})
    for res in t.reply.results:
        print(f"result {res['name']} = {res['value']} "
              f"({'ok' if res['status'] == 0 else 'WRONG'})")


def _write_flames(args, tables, programs, sym, names, line) -> None:
    """--folded and --flamegraph, from the stack aggregations."""
    if not (args.folded or args.flamegraph):
        return
    paths = flamegraph.folded(tables, programs, sym, names)
    if args.folded:
        Path(args.folded).write_text("".join(f"{ln}\n" for ln in flamegraph.folded_lines(paths)))
        print(f"folded: {args.folded}: {len(paths)} stacks")
    if args.flamegraph:
        Path(args.flamegraph).write_text(flamegraph.svg(paths, f"Flame Graph: {line}"))
        print(f"flamegraph: {args.flamegraph}: {sum(paths.values())} counted in "
              f"{len(paths)} stacks")


def _print_setup(args, t: _Traced) -> None:
    """How the run was traced: the probes, the channel, the tracer's own
    traps."""
    s, g = t.session, t.guest
    print(f"probes: {len(s.probes)} enabled, mechanism {args.mechanism}"
          + (f", {len(s.refused)} refused (notes above)" if s.refused else ""))
    print(f"trace channel: {g.channel_used}" + (
        f" (asked for {g.channel}; the guest has none: {g.channel_absent})"
        if g.channel_used != g.channel else ""))
    own = avoid.own_traps_line(t.capture)
    if own:
        print(own)


def _check_mode(args, arch, t: _Traced, rep) -> int:
    """--check: every emulation re-run in unicorn (the arch's checker)."""
    cap, s = t.capture, t.session
    status = EXIT_OK
    checker = importlib.import_module(arch.checker)
    crep = checker.verify(cap.checks, sites.sites_of(s.image, s.probes))
    print(crep.summary())
    for m in crep.mismatches[:20]:
        print(f"  MISMATCH {m}")
    if crep.mismatches or not crep.checked:
        status = EXIT_FAILED
    # One CHECK record per recorded firing, when every firing records
    # and emulates (or, under opt, runs its copies): a firing without
    # one was never re-run. (A tramp return's delay slot adds its own.)
    ids = {p.id for p in s.probes}
    firings = sum(e.probe in ids for e in cap.events)
    own = len(cap.checks) - crep.delay_slots
    if (not (args.program or args.pass_count or args.maxhits) and rep.dropped == 0
            and args.mechanism not in arch.lossy and firings != own):
        print(f"PROBLEM: check: {firings} firings recorded, "
              f"{own} CHECK records")
        status = EXIT_FAILED
    return status


def _stub_verdict(stub_states: list) -> int:
    """--stub-check: armed, every site holds the trap; disarmed, its
    original bytes."""
    status = EXIT_OK
    for when, states in zip(("enabled", "after disable"), stub_states):
        bad = [st for st in states if not st.ok]
        print(f"stub: {len(states)} sites read through the GDB stub {when}: "
              f"{sum(st.got == st.trap for st in states)} trap, "
              f"{sum(st.got == st.original for st in states)} original, "
              f"{len(bad)} wrong")
        for st in bad:
            print(f"PROBLEM: {st.describe()}")
            status = EXIT_FAILED
    return status


def _exec_count(args, arch, s, rep, line, image, elf) -> int:
    """Every insn probe's firings against QEMU's count in an unprobed twin
    (bench/trace/execcount.py, which names each probe it leaves out)."""
    equal, lines = execcount.compare(arch, s, rep, line, args.smp, args.timer_hz,
                                     args.timeout, image=image, elf=elf)
    print("\n".join(lines))
    return EXIT_OK if equal and not rep.dropped else EXIT_FAILED
