"""What the trace commands settle before any guest boots.

A command's bad input is refused while nothing runs yet (exit status 2,
bench/errors.py): a mechanism or CPU count the arch lacks, a probe program
that cannot be read or does not assemble. probe_args also fills in the
arch's defaults (its first mechanism, 4 CPUs or as many as it has), and
workload_image builds a --workload FILE.c into an image of its own, so the
commands that follow (run, run --watch, itrace, lossless, toggle) start
from complete, checked arguments.
"""

from __future__ import annotations

from ..errors import UsageError
from ..guest import build
from ..program import asm


def probe_args(args, arch, all_mechanisms: bool = False) -> None:
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


def assemble_file(path: str, arch):
    """The probe program in path, assembled for arch: refused before any
    guest boots when it cannot be read or is not a valid program."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise UsageError(f"cannot read the program {path}: {e}") from None
    return asm.assemble(text, arch, path)


def workload_image(args, arch, default_run: str):
    """(image, ELF, run line) for --workload FILE.c (built into its own
    image) or the arch's own image (None, None: the guest's defaults)."""
    if args.workload:
        image = build.user_image(arch, args.workload)
        return (image, image.parent / arch.symbols,
                args.run or build.workload_name(args.workload))
    build.ensure_image(arch)
    return None, None, args.run or default_run
