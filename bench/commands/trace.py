"""The trace commands beside `run`: itrace, lossless and toggle.

itrace traces every instruction of a function's regions
(bench/trace/itrace_run.py; capstone is imported by that command alone).
lossless and toggle are the stress runs of bench/trace/stress.py: calltree
on many threads under probes, its expected firings against the traced
ones (lossless), or probes armed and disarmed over and over while the
threads run (toggle). Each prints its verdict's lines and a last summary
line; a lossy mechanism (the arch's `lossy`) may miss, never drop.
"""

from __future__ import annotations

from .. import arches
from ..errors import EXIT_FAILED, EXIT_OK, UsageError
from ..trace import sites, stress
from ..trace.format import nesting_error_lines, summary_lines
from .inputs import probe_args


def cmd_itrace(args) -> int:
    arch = arches.get(args.arch)
    probe_args(args, arch)
    if args.skip < 0 or args.regions < 0:
        raise UsageError("--skip and --regions are counts")
    if arch.itrace != "step" and (args.skip or args.regions or args.method != "previous"):
        raise UsageError(f"{arch.name} rebuilds instructions from branch records: "
                         "--skip, --regions and --method are for single-stepping arches")
    from ..trace import itrace_run           # capstone: only this command
    return itrace_run.run(args, arch)


def cmd_lossless(args) -> int:
    arch = arches.get(args.arch)
    probe_args(args, arch, all_mechanisms=True)
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
    probe_args(args, arch)
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
        # A CHECK record for every firing's record, the insn probes'
        # (--also) too (`traced` counts entries and returns only), and for
        # every trap at a probe being disarmed, which runs the instruction
        # but records no firing (the guest's late count).
        print(f"  {res.firings} firings recorded, {res.late} late traps, "
              f"{res.check_records} CHECK records")
        if res.check_records != res.firings + res.late:
            print(f"  PROBLEM: check: {res.firings} firings recorded and {res.late} "
                  f"late traps, but {res.check_records} CHECK records")
        bad = bad or res.check.mismatches or not res.check.checked \
            or res.check_records != res.firings + res.late
    return EXIT_FAILED if bad else EXIT_OK
