"""The command line's grammar: every subcommand of `python3 -m bench` and
its arguments, and nothing else.

Each subcommand's arguments are added by a small function of its own
(_run, _matrix, ...); SUBCOMMANDS lists them with their one-line help in
the order --help shows, and build_parser() walks that table. The parser
names each subcommand's handler by the subcommand itself
(args.subcommand); bench/cli.py maps names to code. Keeping the grammar
apart lets the correctness matrix (bench/suite/matrix.py) check each
cell's arguments with the very parser a person's command meets, without
importing the commands.

The probe mechanism is --mechanism (--mode is accepted as its old name).
"""

from __future__ import annotations

import argparse

from . import arches
from .guest.backend import BACKENDS, CHANNELS
from .paths import REPO

DESCRIPTION = """\
The host side of the trap-and-emulate probe test bench. Each subcommand
boots guests under QEMU (TCG) as needed; `make` targets wrap them.

exit status: 0 passed, 1 something ran and failed, 2 bad usage (nothing
ran), 3 a libvirt host unreachable or gone, 130 interrupted (bench/errors.py
EXIT_STATUSES)."""


PROBES_DEFAULT = "fbt:*:entry,fbt:*:return"


def _mechanism_help() -> str:
    return "; ".join(f"{', '.join(a.mechanisms)} ({a.name})"
                     for a in arches.ARCHES.values())


def _add_backend(s) -> None:
    """--backend/--connect for a subcommand that boots guests."""
    s.add_argument("--backend", choices=BACKENDS, default="qemu",
                   help="qemu: the harness starts QEMU (default); libvirt: a "
                   "transient libvirt domain (see README)")
    s.add_argument("--connect", metavar="URI",
                   help="libvirt URI, e.g. qemu:///system (default: a private "
                   "session daemon of the bench's own under build/libvirt/, "
                   "qemu:///session?socket=...)")
    s.add_argument("--channel", choices=CHANNELS, default=None,
                   help="where the trace travels: shm (the per-CPU rings read "
                   "out of guest RAM, no drain in the guest: the default where "
                   "the harness starts QEMU), virtio (a virtio-console port; "
                   "the default under libvirt where the arch's guest drives one: "
                   f"{', '.join(a.name for a in arches.ARCHES.values() if a.default_channel == 'virtio')}) "
                   "or serial (the 16550 that carries the commands)")


def _add_mechanism(s, what: str) -> None:
    s.add_argument("--mechanism", "--mode", dest="mechanism", metavar="NAME",
                   help=f"{what}: {_mechanism_help()}")


def _check(s) -> None:
    s.add_argument("--arch", help="one arch, a comma list, or all (default)")


def _selftest(s) -> None:
    s.add_argument("--arch", required=True, help="i386, sparc64, or all")
    s.add_argument("--smp", type=int, default=1, help="CPUs, 1 to the arch's "
                   "maximum (" + ", ".join(f"{a.name} {a.max_smp}"
                                           for a in arches.ARCHES.values()) + ")")
    s.add_argument("--area", default="", help="only areas starting with this")
    _add_backend(s)


def _boot_time(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--runs", type=int, default=10)
    s.add_argument("--smp", type=int, default=1)
    _add_backend(s)


def _cmd(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, default=1)
    s.add_argument("commands", nargs="+", metavar="COMMAND",
                   help="e.g. 'run fib n=25' (quote each command)")
    _add_backend(s)


def _run(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, default=1)
    s.add_argument("--workload", help="a C file with a WORKLOAD(); linked into "
                   "the image (default: the built-in workloads)")
    s.add_argument("--run", help="the run command's arguments, e.g. 'fib n=12' "
                   "(default: the file's workload, or 'fib n=10')")
    s.add_argument("--probes", default=PROBES_DEFAULT,
                   help="fbt:FUNCTION:entry|return or branch:FUNCTION (sparc64), "
                   "comma-separated; globs match workload functions")
    s.add_argument("--watch", metavar="SPEC", help="watchpoints instead of probes: "
                   "KIND:SYMBOL[+OFF][/LEN] or KIND:ADDR/LEN, comma-separated, KIND "
                   "x|w|r|rw|io as the arch has them (i386: x, w, rw, io); ends with "
                   "`watch: fired=N expected=N values_ok=...` (README: Watchpoints)")
    _add_mechanism(s, "the probe mechanism, default the arch's first")
    s.add_argument("--check", action="store_true", help="verify every emulation "
                   "in unicorn")
    s.add_argument("--buffer", type=int, help="trace buffer bytes per CPU")
    s.add_argument("--kick", choices=("on", "off"), default="on",
                   help="on (default): a CPU's buffer past half full wakes its "
                   "drain at once; off: the drain waits for its tick, so a small "
                   "buffer overflows (the guest's `trace kick`)")
    s.add_argument("--limit", type=int, default=200, help="trace lines to print")
    s.add_argument("--timeout", type=float, default=300)
    s.add_argument("--stub-check", action="store_true", dest="stub_check",
                   help="read every probed site through QEMU's GDB stub after the "
                   "run (the trap) and after disabling (the original bytes)")
    s.add_argument("--program", metavar="FILE.rpn", help="a probe program every "
                   "probe runs instead of recording (README: Probe programs; "
                   "examples in bench/programs/)")
    s.add_argument("--templates", metavar="DIR", help="formatting templates for its "
                   "log records (default bench/programs/templates)")
    s.add_argument("--pass", type=int, dest="pass_count", metavar="N",
                   help="run the program only every Nth hit of a probe")
    s.add_argument("--maxhits", type=int, metavar="N", help="a probe does nothing "
                   "after N hits and is disabled")
    s.add_argument("--ctf", metavar="DIR", help="also write the trace as CTF 1.8 "
                   "into DIR (babeltrace2 DIR reads it)")
    s.add_argument("--plot", metavar="DIR", help="also draw per-CPU call timelines "
                   "into DIR/timeline-cpuN.png")
    s.add_argument("--chrome", metavar="FILE", help="also write the calls as Chrome "
                   "trace-event JSON (Perfetto, speedscope)")
    s.add_argument("--folded", metavar="FILE", help="also write the stack "
                   "aggregations as folded stacks (root;...;leaf COUNT)")
    s.add_argument("--flamegraph", metavar="FILE", help="also draw the stack "
                   "aggregations as a flame graph SVG")
    s.add_argument("--exec-count", action="store_true", dest="exec_count",
                   help="hold every insn probe's firings against how often QEMU "
                   "ran the instruction in an unprobed twin (bench/trace/execcount.py)")
    s.add_argument("--timer-hz", type=int, default=0, dest="timer_hz",
                   help="the guest's timer rate for the run (preemption)")
    _add_backend(s)


def _itrace(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, default=1)
    s.add_argument("--run", required=True, help="the run command's arguments, "
                   "e.g. 'fib n=10'")
    s.add_argument("--function", help="the function whose regions are traced, "
                   "entry to matching return, nested calls included (default: "
                   "the workload's name)")
    s.add_argument("--within", metavar="GLOB[,GLOB]", help="arches with no "
                   "single-step (sparc64): the functions whose transfers are "
                   "probed and walked (default: the function itself)")
    s.add_argument("--method", choices=("previous", "address", "next"), default="previous",
                   help="previous (seed 003's method 4: the instruction that ran, "
                   "its length or its bytes), address (method 3: addresses, "
                   "resolved by the host from the ELF) or next (what method 4 "
                   "is measured against: the instruction about to run, read "
                   "ahead at the new EIP)")
    s.add_argument("--skip", type=int, default=0, metavar="K",
                   help="do not trace the first K entries of the function")
    s.add_argument("--regions", type=int, default=0, metavar="N",
                   help="trace at most N regions (0: every one)")
    _add_mechanism(s, "the entry probe's mechanism (int3 or ud)")
    s.add_argument("--reference", choices=("qemu",), help="boot again under "
                   "QEMU's -singlestep exec log and compare, per thread")
    s.add_argument("--lines", type=int, default=40, metavar="N",
                   help="listing lines per region (0: all)")
    s.add_argument("--buffer", type=int, default=1 << 20, help="trace buffer bytes per CPU")
    s.add_argument("--timeout", type=float, default=300)
    s.add_argument("--tamper", default="", metavar="drop:K|swap:K",
                   help="(tests) drop the K-th ITRACE record, or swap it with the "
                   "next, before decoding")
    _add_backend(s)


def _lossless(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, help="default: 4, or all the arch has")
    _add_mechanism(s, "a mechanism or a comma list, default all of the arch's")
    s.add_argument("--threads", type=int, default=8)
    s.add_argument("--iters", type=int, default=3500)
    s.add_argument("--depth", type=int, default=4)
    s.add_argument("--timer-hz", type=int, default=0, dest="timer_hz")
    s.add_argument("--buffer", type=int, metavar="BYTES", help="per-CPU trace "
                   "buffer (a power of two; default: room for the whole run, "
                   "so that only the mechanism can lose records); e.g. 262144, "
                   "the guest's default, makes the drain keep up instead")
    s.add_argument("--also", default="", metavar="SPEC", help="more probes beside "
                   "calltree's, e.g. insn:ct_*+* (out-of-line sites)")
    _add_backend(s)


def _toggle(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, help="default: 4, or all the arch has")
    _add_mechanism(s, "default the arch's first")
    s.add_argument("--threads", type=int, default=8)
    s.add_argument("--iters", type=int, default=100000)
    s.add_argument("--toggles", type=int, default=1000)
    s.add_argument("--also", default="", metavar="SPEC", help="more probes beside "
                   "calltree's, e.g. insn:ct_*+* (out-of-line sites)")
    s.add_argument("--check", action="store_true",
                   help="check mode: every emulation (and opt detour) re-run in "
                   "unicorn, one CHECK record per firing")
    _add_backend(s)


def _bench(s) -> None:
    s.add_argument("--arch", help="one arch, a comma list, or all (default), "
                   "one after the other")
    s.add_argument("--reps", type=int, default=5)
    s.add_argument("--small", action="store_true",
                   help="few iterations per figure (the machinery, not the numbers)")
    s.add_argument("--only", type=lambda v: tuple(x for x in v.split(",") if x),
                   default=(), metavar="NAME[,NAME]",
                   help="only these experiments (firepath, fbt, or BOOT:name "
                   "such as A:fbt; bench/suite/perf/plan.py), with the boots "
                   "that hold them")


def _export(s) -> None:
    s.add_argument("log", metavar="LOG", help="build/logs/NAME.log or .serial")
    s.add_argument("--ctf", metavar="DIR", help="write a CTF 1.8 trace into DIR")
    s.add_argument("--plot", metavar="DIR", help="draw timeline-cpuN.png into DIR")
    s.add_argument("--chrome", metavar="FILE", help="write the calls as Chrome "
                   "trace-event JSON")
    s.add_argument("--limit", type=int, default=0, help="also print this many "
                   "lines of the text trace")


def _fuzz(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--states", type=int, default=1000000,
                   help="states per class (default 10^6)")
    s.add_argument("--class", dest="classes", action="append", metavar="CLASS",
                   help="only this class (repeatable), e.g. BPR or LEAVE")
    s.add_argument("--seed", type=int, default=0, help="another set of states")
    s.add_argument("--jobs", type=int, help="worker processes (default: the "
                   "host's CPU count)")


def _libfuzz(s) -> None:
    s.add_argument("--arch", default="sparc64", choices=["sparc64"],
                   help="whose registers and word size the host build's validator "
                   "checks programs against: sparc64's, whose 64-bit word is the "
                   "host's (the default and only choice)")
    s.add_argument("--target", action="append", metavar="NAME",
                   help="only this target (repeatable): command, args, validate, "
                   "run, frame (default: every one)")
    s.add_argument("--seconds", type=int, default=None,
                   help="each target's campaign (default 60; with --execs, a "
                   "time cap: whichever comes first)")
    s.add_argument("--execs", type=int, default=0,
                   help="stop each target after this many executions instead")
    s.add_argument("--replay", action="store_true",
                   help="only replay the kept regressions (tests/fuzz/regressions/)")


def _fuzz_guest(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--count", type=int, default=100000,
                   help="command lines to send (default 10^5)")
    s.add_argument("--seed", type=int, default=0, help="another sequence of lines")
    s.add_argument("--smp", type=int, default=1)


def _avoid(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, default=1)
    s.add_argument("--pages", type=int, default=128, help="pages walked between "
                   "two calls of the traced function (default 128; the DTLB has 64; sun4u "
                   "only: i386's table has no walk)")
    s.add_argument("--iters", type=int, default=500, help="walks per run (i386: "
                   "calls of the traced function per run)")
    s.add_argument("--reps", type=int, default=3, help="repetitions of every "
                   "configuration (medians shown)")
    _add_backend(s)


def _debug(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, default=1)
    s.add_argument("--workload", help="a C file with a WORKLOAD() (as for run)")
    s.add_argument("--probes", help="probes the harness arms once the guest is up "
                   "(as for run; default none)")
    _add_mechanism(s, "default the arch's first")
    s.add_argument("--run", help="what the harness runs after arming, e.g. "
                   "'fib n=8' (default: the file's workload, or fib n=8)")
    s.add_argument("--batch", help="run gdb -batch with this script instead of "
                   "interactively")
    s.add_argument("--channel", choices=CHANNELS, default=None,
                   help="the trace channel (default shm: `tb buffer` then shows "
                   "the rings as sub-buffers; virtio or serial: the byte ring)")


def _matrix(s) -> None:
    s.add_argument("--group", default="quick", help="quick (default), full, ...")
    s.add_argument("--arch", help="only cells of these arches (a comma list)")
    s.add_argument("--cell", action="append", metavar="GLOB",
                   help="only cells whose name matches (repeatable)")
    s.add_argument("--jobs", type=int, help="cells at a time (default: the "
                   "host's CPU count)")
    s.add_argument("--file", default=str(REPO / "ci" / "matrix.cfg"))
    s.add_argument("--list", action="store_true", help="print the cells and "
                   "their commands; run nothing")
    s.add_argument("--host", action="append", metavar="URI",
                   help="a libvirt host to run cells on (repeatable; e.g. "
                   "qemu+tcp://HOST:16509/session): slots from its CPU count, "
                   "a cell rerun once elsewhere if its host fails; without "
                   "--host, QEMU here")
    s.add_argument("--spawn-hosts", type=int, metavar="N",
                   help="start N private libvirt daemons on loopback TCP and "
                   "run the cells on them as on remote hosts "
                   "(bench/suite/spawned_hosts.py)")
    s.add_argument("--kill-one", action="store_true",
                   help="with --spawn-hosts: SIGKILL the last host once it runs "
                   "a guest; the run passes only if every cell still passes, "
                   "each of its cells rerun once elsewhere")


def _daemon(s) -> None:
    s.add_argument("--tcp-port", type=int, action="append", required=True,
                   metavar="PORT", help="127.0.0.1:PORT, auth none (repeatable)")


def _image(s) -> None:
    s.add_argument("--arch", help="one arch, a comma list, or all (default)")


# (subcommand, the function that adds its arguments, its one-line help),
# in the order `--help` lists them.
def _trace(s) -> None:
    s.add_argument("--arch", required=True)
    s.add_argument("--smp", type=int, default=1)
    s.add_argument("--workload", help="a C file with a WORKLOAD(); linked into "
                   "the image (default: the built-in workloads)")
    s.add_argument("--run", help="the run command's arguments, e.g. 'calltree "
                   "threads=4' (default: the file's workload, or 'fib n=10')")
    s.add_argument("-n", dest="clauses", action="append", default=[],
                   metavar="CLAUSES", help="D clauses, as dtrace -n: 'fbt::fib:entry "
                   "{ @[arg0] = count(); }' (may be given again)")
    s.add_argument("-s", dest="script", metavar="FILE.d", help="a D script file "
                   "(examples in bench/scripts/)")
    s.add_argument("-q", dest="quiet", action="store_true",
                   help="quiet: printf lines without DTrace's CPU/ID/PROBE columns")
    s.add_argument("--json", metavar="FILE", help="write the aggregations as JSON")
    s.add_argument("--emit-rpn", action="store_true", dest="emit_rpn",
                   help="print the generated probe programs and stop (no guest)")
    s.add_argument("--folded", metavar="FILE", help="also write the stack() "
                   "aggregations as folded stacks (root;...;leaf COUNT)")
    s.add_argument("--flamegraph", metavar="FILE", help="also draw the stack() "
                   "aggregations as a flame graph SVG")
    _add_mechanism(s, "the probe mechanism, default the arch's first")
    s.add_argument("--check", action="store_true", help="verify every emulation "
                   "in unicorn")
    s.add_argument("--buffer", type=int, help="trace buffer bytes per CPU")
    s.add_argument("--kick", choices=("on", "off"), default="on",
                   help="the guest's `trace kick` (as under run)")
    s.add_argument("--timeout", type=float, default=300)
    s.add_argument("--stub-check", action="store_true", dest="stub_check",
                   help="read every probed site through QEMU's GDB stub (as run)")
    _add_backend(s)


SUBCOMMANDS = (
    ("check", _check,
     "host tests + guest self-tests + the matrix's quick group (make check)"),
    ("selftest", _selftest,
     "boot a guest and run its self-tests"),
    ("boot-time", _boot_time,
     "median time from QEMU start to HELLO"),
    ("cmd", _cmd,
     "boot a guest, send commands, print answers"),
    ("run", _run,
     "trace a workload with fbt probes"),
    ("trace", _trace,
     "ask the kernel in D: -n 'CLAUSES' or -s FILE.d, compiled to probe "
     "programs (docs/language.md)"),
    ("itrace", _itrace,
     "trace every instruction of a function's regions (i386: single-step); "
     "--reference qemu compares them with QEMU's exec log"),
    ("lossless", _lossless,
     "calltree under probes on many threads: expected vs traced, missed, "
     "dropped"),
    ("toggle", _toggle,
     "arm/disarm probes over and over while threads run"),
    ("bench", _bench,
     "the seeds' experiments: table, JSON, plots (make bench)"),
    ("export", _export,
     "a saved run (build/logs/NAME.serial and .log) as CTF, a text trace or "
     "timelines"),
    ("fuzz", _fuzz,
     "the probe emulator (compiled for the host) against unicorn on random "
     "states, class by class"),
    ("libfuzz", _libfuzz,
     "the libFuzzer targets over the guest's own C (tests/fuzz/): command "
     "loop, arguments, validator, interpreter, frames; coverage and crashes"),
    ("fuzz-guest", _fuzz_guest,
     "a booted guest under random and mutated command lines and probe "
     "programs: every line answered, the guest alive, nothing armed that was "
     "refused"),
    ("avoid", _avoid,
     "seed 003's interrupt-avoidance methods (sun4u): each off and on, the "
     "misses and faults the tracer caused, cycles per traced instruction, "
     "bytes per record; i386: the instruction-tracing methods (previous, "
     "next, address) with the traced code's page resident and evicted"),
    ("debug", _debug,
     "boot a guest paused under QEMU's GDB stub and start gdb-multiarch on "
     "it (bench/debug/)"),
    ("matrix", _matrix,
     "the correctness matrix (ci/matrix.cfg): one group's cells in parallel;"
     " JUnit and TAP in build/matrix/"),
    ("daemon", _daemon,
     "private libvirt session daemons on loopback TCP, until Ctrl-C: hosts "
     "for `matrix --host` on this machine"),
    ("image", _image,
     "build guest images"),
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m bench", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
    for name, add_arguments, help_line in SUBCOMMANDS:
        add_arguments(sub.add_parser(name, help=help_line))
    return p
