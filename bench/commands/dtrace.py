"""`trace`: ask the kernel in D, as `dtrace -n '...'` or `dtrace -s FILE.d`.

cmd_trace goes step by step: the script read (-n clauses, -s files) and
compiled on the host against the image it will run on (bench/lang/: any
error refuses the script before a guest boots, and nothing is armed);
--emit-rpn prints the programs and stops there; otherwise the traced run is
`run`'s (bench/commands/run.py: boot, arm, run the workload, disarm,
drain), with each group's program loaded into its slot and attached to its
probes, the workload stopped at an exit() (runner.Workload: the run ends
there, `trace` exits with its n) and END's globals read back before the
guest exits; the verdict is `run`'s too: the trace against the probes,
check mode, the stub check, the channel, the PROBLEM lines and the last
`traced=... fired=... missed=... dropped=...` line. In between, the
script's output as DTrace prints it: BEGIN's, the printf lines, END's,
then the aggregations (--json FILE writes them; --folded and
--flamegraph draw the stack() ones), and a profile/tick probe's samples.
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import arches
from ..errors import EXIT_FAILED, EXIT_OK, UsageError
from ..export import flamegraph
from ..lang import codegen, output, runner, stackkeys
from ..lang.hosted import HostValues
from ..lang.model import VM_WORD
from ..lang.parser import parse
from ..trace import verify
from ..trace.format import nesting_error_lines, summary_lines
from ..trace.image import load_image
from . import run as run_cmd
from .inputs import probe_args, workload_image

# What `run` reads of its arguments that `trace` does not ask for.
_RUN_DEFAULTS = {"pass_count": None, "maxhits": None, "timer_hz": None,
                 "exec_count": False, "program": None, "templates": None,
                 "ctf": None, "plot": None, "limit": 0}


def script_text(args) -> tuple[str, str]:
    """(text, path) of the script: -s FILE, or the -n clauses."""
    if bool(args.script) == bool(args.clauses):
        raise UsageError("give the script as -n 'CLAUSES' or -s FILE.d (one of them)")
    if args.script:
        try:
            return open(args.script, encoding="utf-8").read(), args.script
        except OSError as e:
            raise UsageError(f"cannot read the script {args.script}: {e}") from None
    return "\n".join(args.clauses), "-n"


def compile_for(args, arch):
    """The script compiled for the image the run will boot: (compiled,
    image, ELF, run line)."""
    text, path = script_text(args)
    script = parse(text, path)
    image, elf, line = workload_image(args, arch, "fib n=10")
    img = load_image(elf or arch.elf())
    return codegen.compile_script(script, img, arch, args.mechanism), image, elf, line


def cmd_trace(args) -> int:
    arch = arches.get(args.arch)
    probe_args(args, arch)
    for k, v in _RUN_DEFAULTS.items():
        if not hasattr(args, k):
            setattr(args, k, v)
    args.program = "D"      # every probe runs a program: check mode counts so
    compiled, image, elf, line = compile_for(args, arch)
    if args.emit_rpn:
        print(compiled.rpn(), end="")
        return EXIT_OK
    zero = HostValues(compiled.scope, {}, VM_WORD)     # globals at BEGIN
    for ln in output.apply_end({n: {} for n in compiled.aggs}, compiled.begin, zero):
        print(ln, end="")
    if not compiled.groups:
        return _host_only(args, compiled, zero)
    work = runner.Workload(compiled, args.timeout)
    t = run_cmd._trace_workload(args, arch, None, image, elf, line,
                                load=runner.loader(compiled), spec=compiled.spec,
                                workload=work, finish=lambda s: runner.host_values(
                                    compiled, s, VM_WORD))
    status = EXIT_OK if t.reply.ok else EXIT_FAILED
    status = max(status, _print_results(args, arch, compiled, t, line))
    rep = verify.verify(t.capture, t.session.probes, t.guest.link_errors,
                        allow_missing=args.mechanism in arch.lossy,
                        refused=t.session.refused, window=t.window,
                        accounting=False)      # programs run: no record per firing
    run_cmd._print_setup(args, t)
    for ln in summary_lines(rep):
        print(ln)
    if args.check:
        status = max(status, run_cmd._check_mode(args, arch, t, rep))
    status = max(status, run_cmd._stub_verdict(t.stub_states))
    for prob in rep.problems:
        print(f"PROBLEM: {prob}")
    for ln in nesting_error_lines(rep):
        print(ln)
    print(f"traced={rep.traced} fired={rep.fired} missed={rep.missed} "
          f"dropped={rep.dropped} nesting_checked={rep.nesting_checked}")
    if not rep.ok:
        return EXIT_FAILED
    if work.status is not None and status == EXIT_OK:
        print(f"exit({work.status}): the run ended there, the workload stopped")
        return work.status                    # as dtrace exits with exit()'s n
    return status


def _host_only(args, compiled, zero) -> int:
    """A script of BEGIN and END alone: nothing to arm."""
    tables = {name: {} for name in compiled.aggs}
    for ln in output.apply_end(tables, compiled.end, zero):
        print(ln, end="")
    return EXIT_OK


def _write_flames(args, compiled, tables, sym, line) -> None:
    """--folded and --flamegraph from the script's stack() aggregations."""
    if not (args.folded or args.flamegraph):
        return
    paths = stackkeys.folded(compiled, tables, sym)
    if args.folded:
        Path(args.folded).write_text("".join(f"{ln}\n" for ln in
                                             flamegraph.folded_lines(paths)))
        print(f"folded: {args.folded}: {len(paths)} stacks")
    if args.flamegraph:
        Path(args.flamegraph).write_text(flamegraph.svg(paths, f"Flame Graph: {line}"))
        print(f"flamegraph: {args.flamegraph}: {sum(paths.values())} counted in "
              f"{len(paths)} stacks")


def _print_results(args, arch, compiled, t, line: str = "") -> int:
    """printf lines, END, the aggregations; PROBLEM lines for what the
    guest could not keep."""
    cap, g = t.capture, t.guest
    probes = runner.probe_names(compiled, t.session.probes)
    for ln in output.printf_lines(compiled, cap.events, probes, g.byte_order,
                                  arch.word_bytes, args.quiet):
        print(ln)
    frames = runner.frames(cap, t.session.image)
    tables = output.merge(compiled, cap.aggs, probes, VM_WORD, frames)
    for ln in output.apply_end(tables, compiled.end, t.after):
        print(ln, end="")
    for ln in output.lines(compiled, tables):
        print(ln)
    print()
    _write_flames(args, compiled, tables, frames.sym, line)
    if t.session.sample_report:
        print(t.session.sample_report.replace("profile off:", "samples:", 1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(output.to_json(compiled, tables), f, indent=1)
    for res in t.reply.results:
        print(f"result {res['name']} = {res['value']} "
              f"({'ok' if res['status'] == 0 else 'WRONG'})")
    status = EXIT_OK
    dropped = sum(cap.agg_dropped.values())
    if dropped:
        print(f"PROBLEM: {dropped} aggregation updates found no room in the guest: "
              "the tables above are short")
        status = EXIT_FAILED
    if cap.tls_dropped:
        print(f"PROBLEM: {cap.tls_dropped} self-> stores found no room in the "
              "guest's thread-local pool")
        status = EXIT_FAILED
    faults = sum(c.get("faults", 0) for c in cap.probe_counts.values())
    if faults:
        print(f"programs: {faults} runs ended by a fault (an argument or a string "
              "that could not be read)")
    return status
