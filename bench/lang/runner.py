"""Compiled scripts into a guest: the programs onto their probes, and many
scripts in one boot.

    load = loader(compiled)      # for bench/commands/run.py's traced run
    outs = run_scripts(arch, [(text, "calltree threads=2"), ...], smp=2)

loader() gives what the traced run calls once the probes are added: every
group's program checked into its slot and attached to the group's probes
the guest kept, and a profile/tick group's slot given to the sampler.
probe_names() and frames() are what output.py names keys with: the
probes by id (the sampler's WIRE_NO_PROBE among them) and the run's
stacks (sparc64's leaf callers settled) with the image's symbols.
Workload runs the workload, and stops waiting for it at a script's
exit(). run_scripts() compiles every script first (a refused one is an
error before anything boots), then boots one guest and runs each in turn
— probes added, programs loaded, enabled, the workload run, disabled,
flushed, its own frames decoded, END's globals read back, probes and
programs cleared — so that a table of one-liners
(tests/test_lang_guest.py) or a bench row costs one boot per arch, not
one per script.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..guest.backend import open_guest
from ..guest import build
from ..program import load as program_load
from ..trace import stacks
from ..trace.image import load_image
from ..trace.session import open_session
from . import codegen, output, stackkeys
from .hosted import HostValues
from .model import EXIT_GLOBAL, EXIT_SET, VM_WORD
from .parser import parse


EXIT_POLL_TICKS = 5        # how long each `wait` of an exit()ing script lasts


class Workload:
    """How a script's workload runs: `run LINE` to its end; for a script
    that calls exit(), `start LINE`, then short `wait TICKS` in turn with
    a look at exit()'s global between them, so that the host sees the
    exit at once, stops waiting and ends the run (`status` then holds
    exit()'s n, and the workload, still running, dies with the guest or
    is reaped by reap())."""

    def __init__(self, compiled, timeout: float | None = None):
        self.compiled, self.timeout = compiled, timeout
        self.status: int | None = None

    def __call__(self, session, line: str):
        if not self.compiled.uses_exit:
            return session.cmd(f"run {line}", timeout=self.timeout)
        session.must(f"start {line}")
        while True:
            r = session.cmd(f"wait {EXIT_POLL_TICKS}", timeout=self.timeout)
            running = r.ok and r.message.endswith(" still running")
            flag = int(session.must(f"program global {EXIT_GLOBAL}").message)
            if flag & EXIT_SET:                 # an exit() ran, maybe in the last ticks
                self.status = flag & 0xff
            if not running or self.status is not None:
                return r

    def reap(self, session) -> None:
        """The workload an exit() left running, waited for."""
        if self.status is not None:
            session.cmd("wait", timeout=self.timeout)   # refused if it had ended


def host_values(compiled, session, word_bytes: int):
    """END's view of the globals: each one it reads, read back now."""
    words = {n: int(session.must(f"program global {n}").message)
             for n in compiled.host_globals.values()}
    return HostValues(compiled.scope, words, word_bytes)


def loader(compiled):
    def load(session) -> None:
        kept = {p.id for p in session.probes}
        session.must("program clear")
        session.programs = {}
        for g in compiled.groups:
            ids = [p.id for p in g.probes if p.id in kept]
            if compiled.sampler in g.probes:         # run by `profile`, no site
                program_load.load(session.guest, g.program, g.slot)
                session.programs[g.slot] = g.program
                session.sample_slot = g.slot
                continue
            if not ids:
                continue
            program_load.load(session.guest, g.program, g.slot)
            program_load.attach(session.guest, g.slot, ids)
            session.programs[g.slot] = g.program
            for p in session.probes:
                if p.id in ids:
                    p.program = f"slot {g.slot}"
    return load


def probe_names(compiled, probes) -> dict:
    """id -> probe of a run's probes, the sampler's (WIRE_NO_PROBE) too."""
    out = {p.id: p for p in probes}
    if compiled.sampler is not None:
        out[compiled.sampler.id] = compiled.sampler
    return out


def frames(cap, image) -> stackkeys.Frames:
    """What stack() and func() keys are named with: the capture's stacks,
    their leaf callers settled (Session.finish does it for `trace`), and
    the image's symbols."""
    return stackkeys.Frames(stacks.settle_leaf_callers(cap.stacks, image),
                            stacks.Symbolizer(image))


@dataclass
class Outcome:
    compiled: object
    tables: dict           # name -> {keys: output.Row}
    printed: list          # printf/trace lines (quiet) and END's
    capture: object
    reply: object
    probes: dict           # id -> sites.Probe
    exit_status: int | None = None   # exit()'s n, if an exit() ended the run
    samples: str = ""      # a profile/tick script's `profile off` reply
    cycles_hz: int = 0     # the guest's cycle counter rate (the reply's cycles=)

    def values(self, name: str = "") -> dict:
        """{keys tuple: value} of one aggregation (a lone key unwrapped)."""
        info = self.compiled.aggs[name]
        return {(r.keys[0] if len(r.keys) == 1 else r.keys):
                (r.buckets if info.func in ("quantize", "lquantize") else
                 r.value(info.func))
                for r in self.tables[name].values()}


def compile_text(text: str, arch, mechanism: str, path: str = "-n", elf=None):
    """text compiled against arch's image (or the ELF of a --workload one)."""
    if elf is None:
        build.ensure_image(arch)
    return codegen.compile_script(parse(text, path), load_image(elf or arch.elf()),
                                  arch, mechanism)


def run_scripts(arch, items, smp: int = 1, mechanism: str | None = None,
                timeout: float = 300, label: str = "dtrace",
                workload=None) -> list[Outcome]:
    """Each (script text, run line) of items in one boot; workload, a C
    file, is built into the image as --workload does."""
    mechanism = mechanism or arch.default_mechanism
    image = elf = None
    if workload is not None:
        image = build.user_image(arch, workload)
        elf = image.parent / arch.symbols
    compiled = [(compile_text(text, arch, mechanism, elf=elf), line)
                for text, line in items]
    outs = []
    with open_guest(arch, label=label, smp=smp, command_timeout=timeout,
                    image=image, elf=elf) as g:
        s = open_session(g)
        for c, line in compiled:
            since = len(g.trace_frames)
            s.setup(c.spec, mechanism, strict=False, loads_programs=True)
            loader(c)(s)
            s.enable(True)
            work = Workload(c, timeout)
            r = work(s, line)
            s.enable(False)
            s.must("trace flush", timeout=timeout)
            report = s.sample_report
            cap = g.capture(since)
            probes = probe_names(c, s.probes)
            tables = output.merge(c, cap.aggs, probes, VM_WORD,   # keys: VM words
                                  frames(cap, s.image))
            printed = output.printf_lines(c, cap.events, probes, g.byte_order,
                                          arch.word_bytes, True)
            printed += output.apply_end(tables, c.end,
                                        host_values(c, s, VM_WORD))
            outs.append(Outcome(c, tables, printed, cap, r, probes, work.status,
                                report, g.hello["cycles_hz"]))
            work.reap(s)
            s.must("probe clear")
            s.must("program clear")
        g.exit(0)
    return outs
