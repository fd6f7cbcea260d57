"""`export`: a saved run read back from its logs, and the exports that
`run` writes beside its trace.

A guest's logs (build/logs/NAME.serial and .log, bench/export/logs.py)
hold every frame and the ELF behind the addresses, so a run can be
turned into CTF 1.8 (bench/export/ctf.py), per-CPU call timelines
(bench/export/timeline.py) or a text trace long after its guest is gone.
write_exports() is the one place --ctf and --plot are honoured, for a
live run and a saved one alike.
"""

from __future__ import annotations

from ..errors import EXIT_OK, UsageError
from ..export import chrome, ctf, logs, timeline
from ..trace.format import format_trace


def write_exports(args, cap, probes, image, hello, environment) -> None:
    """--ctf, --plot and --chrome, for run and export."""
    if getattr(args, "ctf", None):
        w = ctf.write(args.ctf, cap, probes, image, hello, environment)
        print(f"ctf: {w.path}: {w.events} events in {w.streams} streams"
              + (f", {w.discarded} discarded" if w.discarded else "")
              + f" (babeltrace2 {w.path})")
    if getattr(args, "plot", None):
        made = timeline.draw(cap, probes, args.plot, hello["cycles_hz"],
                             f"{hello['arch_name']} ")
        print(f"timeline: {', '.join(str(p) for p in made) or 'no calls to draw'}")
    if getattr(args, "chrome", None):
        n = chrome.write(args.chrome, cap, probes, hello["cycles_hz"])
        print(f"chrome: {args.chrome}: {n} calls (Perfetto, speedscope, chrome://tracing)")


def cmd_export(args) -> int:
    run = logs.load(args.log)
    if not (args.ctf or args.plot or args.chrome or args.limit):
        raise UsageError("export what? --ctf DIR, --plot DIR, --chrome FILE or --limit N")
    print(f"export {run.name}: {run.hello['arch_name']}, {len(run.probes)} probes, "
          f"{len(run.capture.events)} records, {len(run.capture.checks)} CHECK records"
          + (f", {len(run.link_errors)} link errors" if run.link_errors else ""))
    if args.limit:
        for ln in format_trace(run.capture, run.probes, limit=args.limit,
                               image=run.image):
            print(ln)
    write_exports(args, run.capture, run.probes, run.image, run.hello,
             {"mechanism": run.mechanism, "log": run.name})
    return EXIT_OK
