"""The entry of `python3 -m bench <subcommand>`; the Makefile wraps it.

The grammar is bench/parser.py; each subcommand's code is a cmd_*
function in bench/commands/ (grouped by job: run, trace, suite, export,
tools), found through COMMANDS. main() runs it with the backend asked for
and turns every error of the harness into a message and an exit status
from bench/errors.py's table: 0 when everything asked for passed, 1 when
something ran and failed, 2 for bad usage (unknown arch or mechanism, bad
arguments or probe spec; nothing ran), 3 when a libvirt host could not be
reached or went away, 130 when interrupted. Every failure prints what went
wrong, the QEMU command line and where the full log is.
"""

from __future__ import annotations

import os
import shutil
import sys

from .commands import dtrace, export, run, suite, tools, trace
from .debug import debugger
from .errors import EXIT_INTERRUPTED, EXIT_OK, BenchError, UsageError
from .guest import libvirt, libvirtd
from .guest.backend import use_backend, use_channel
from .parser import build_parser
from .paths import BUILD

COMMANDS = {
    "check": suite.cmd_check, "selftest": suite.cmd_selftest,
    "boot-time": suite.cmd_boot_time, "cmd": tools.cmd_cmd, "run": run.cmd_run,
    "lossless": trace.cmd_lossless, "toggle": trace.cmd_toggle,
    "bench": suite.cmd_bench, "fuzz": suite.cmd_fuzz, "export": export.cmd_export,
    "debug": debugger.cmd_debug, "itrace": trace.cmd_itrace,
    "matrix": suite.cmd_matrix, "image": tools.cmd_image, "daemon": tools.cmd_daemon,
    "avoid": suite.cmd_avoid, "trace": dtrace.cmd_trace,
}


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
