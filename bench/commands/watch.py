"""`run --watch`: watchpoints instead of probes over a workload.

The watch spec is planned against the ELF before anything boots
(bench/trace/watch.py: bad input, nothing runs); the guest then arms the
watches, runs the workload, disarms and flushes, and the verdict holds
every firing against the accesses the workload makes (fired, expected,
values_ok). A probe program may run on each firing, and --check re-runs
every watched access in the arch's watch checker where it has one.
"""

from __future__ import annotations

import importlib

from ..errors import EXIT_FAILED, EXIT_OK, UsageError
from ..guest.backend import open_guest
from ..parser import PROBES_DEFAULT
from ..program import aggregate
from ..program import load as program_load
from ..trace import watch
from ..trace.image import load_image
from .inputs import assemble_file, workload_image


def run_watch(args, arch) -> int:
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
        program = assemble_file(args.program, arch)
    image, elf, line = workload_image(args, arch,
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
