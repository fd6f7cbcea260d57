"""A traced run: put probes into a running guest, run a workload, get the
records back.

A session talks to the guest only through its commands:
  probe mechanism M | probe check on | trace buffer BYTES | trace reset
  probe add ID ADDR entry|return|branch NARGS [MAP]  (one per site; refusals
                                noted; MAP: where each argument word is)
  probe ride ENTRY RETURN       (under a mechanism with a return trampoline:
                                each return probe rides on its function's
                                entry probe; a refusal leaves it trapping)
  [program load/check, probe program ID... SLOT, probe pass/maxhits]
  probe enable ID ... / start|run WORKLOAD / probe disable all / trace flush
  profile HZ all|one 0 ... profile off (a spec's profile-HZ or tick-HZ)
`trace flush` returns once every record written so far has been sent and
the per-CPU STATS frames are out, so the capture is complete when it
answers; finish() decodes it (bench/wire/records.py) for verify.py.

Arming many probes takes a while, and the kernel runs on meanwhile
(interrupts, the command loop): records written while some probes are
armed and others not describe half-probed call chains. arm_window()
therefore arms every probe again in one `probe enable all`, whose reply
says when the last one was live; disarm_window() disarms them all and says
when the first went: verify.py judges nesting inside that window only.
The records before it stay in the capture, as the guest's counters do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import BenchError
from ..guest.qemu import Guest
from ..program import load as program_load
from ..wire import records
from . import sites, stacks
from .image import Image, load_image


class TraceError(BenchError):
    """Probes could not be set up as asked."""


CHECK_SHM_BUFFER = 1 << 20


@dataclass
class Session:
    guest: Guest
    image: Image
    probes: list[sites.Probe] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Probes the guest refused to add or to arm, with its words in .refused
    # (the verdict does not count what they would have seen).
    refused: list[sites.Probe] = field(default_factory=list)
    # The probe programs loaded, by slot (bench/program/asm.Program).
    programs: dict = field(default_factory=dict)
    unarmed: list[sites.Probe] = field(default_factory=list)   # added, refused arming
    # A sampling probe (profile-HZ, tick-HZ): ("all"|"one", HZ), running
    # the program of sample_slot (0 unless a loader says, as `trace` does
    # for a D clause's group) from enable() to disarm_window(); its report.
    samplers: list = field(default_factory=list)
    sample_slot: int = 0
    sample_report: str = ""

    def cmd(self, line: str, timeout: float | None = None):
        return self.guest.command(line, timeout=timeout)

    def must(self, line: str, timeout: float | None = None):
        r = self.cmd(line, timeout)
        if not r.ok:
            raise TraceError(f"guest refused {line!r}: {r.status_name}: {r.message}",
                             cmdline=self.guest.cmdline, log=str(self.guest.log_path))
        return r

    def setup(self, spec: str, mechanism: str, check: bool = False,
              buffer_bytes: int | None = None, strict: bool = True,
              program=None, pass_count: int | None = None,
              maxhits: int | None = None, loads_programs: bool = False) -> None:
        """Probes for spec, added to the guest; with a program (asm.Program),
        loaded into slot 0 and run at every probe instead of its record
        (loads_programs: the caller loads its own, as `trace` does)."""
        spec, self.samplers = sites.split_samplers(spec)
        self.sample_report, self.sample_slot = "", 0
        if self.samplers and program is None and not loads_programs:
            raise TraceError(f"{'profile' if self.samplers[0][0] == 'all' else 'tick'}"
                             f"-{self.samplers[0][1]} runs a program at each sample: "
                             "give one (--program)")
        self.probes, self.notes = (sites.plan(spec, self.image, mechanism) if spec
                                   else ([], []))
        self.refused = []
        self.must(f"probe mechanism {mechanism}")
        self.must(f"probe check {'on' if check else 'off'}")
        # Check mode writes a CHECK record beside each firing, several times
        # a firing's bytes, in bursts of milliseconds; under shm no drain
        # holds the guest back, so a 256 KiB ring outruns a host consumer
        # woken late on a loaded machine (docs/channel.md, Limits): such a
        # run gets CHECK_SHM_BUFFER a CPU unless a size is asked for.
        if not buffer_bytes and check and getattr(self.guest, "channel_used", None) == "shm":
            buffer_bytes = CHECK_SHM_BUFFER
        if buffer_bytes:
            self.must(f"trace buffer {buffer_bytes}", timeout=60)
        self.must("trace reset")
        kept = []
        for p in self.probes:
            r = self.cmd(f"probe add {p.id} {p.addr:#x} {p.kind} {p.nargs}"
                         + (f" {p.argmap}" if p.argmap else ""))
            if not r.ok:
                p.refused = r.message
                self.notes.append(f"{p.function} {p.kind} at {p.addr:#x}: {r.message}")
                continue
            kept.append(p)
        refused = [p for p in self.probes if p.refused]
        self.refused += refused
        if refused and strict:
            raise TraceError("the guest refused probes:\n  " +
                             "\n  ".join(f"{p.spec} at {p.addr:#x}: {p.refused}"
                                         for p in refused))
        self.probes = kept
        if not kept and not self.samplers:
            raise TraceError("no probe left to enable:\n  " + "\n  ".join(self.notes))
        if mechanism in self.guest.arch.return_trampolines:
            self._ride(kept)
        ids = [p.id for p in kept]
        if program is not None:
            self.must("program clear")
            program_load.load(self.guest, program, 0)
            program_load.attach(self.guest, 0, ids)
            self.programs = {0: program}
            for p in kept:
                p.program = program.path
        program_load.limits(self.guest, ids, pass_count, maxhits)

    def _ride(self, probes: list[sites.Probe]) -> None:
        """Each return probe rides on its function's entry probe (the
        entry's trampoline records it); one the guest refuses keeps its
        own trap, with a note."""
        entry = {p.function: p for p in probes if p.kind == "entry"}
        for p in probes:
            e = entry.get(p.function)
            if p.kind != "return" or e is None:
                continue
            r = self.cmd(f"probe ride {e.id} {p.id}")
            if not r.ok:
                self.notes.append(f"{p.function} return at {p.addr:#x} keeps its "
                                  f"trap: {r.message}")

    def enable(self, on: bool = True, strict: bool = False) -> None:
        """Enable every probe; one the mechanism cannot arm is dropped with
        a note (or is an error, if strict)."""
        if not on:
            self._stop_sampling()
            if self.probes:
                self.must("probe disable all")
            return
        for every, hz in self.samplers:
            self.must(f"profile {hz} {every} {self.sample_slot}")
        if not self.probes:
            return
        # All at once: one batch of stores and settles (opt's IPI rounds
        # once, not once a probe: the whole kernel one by one under opt on
        # 4 CPUs took minutes). Then each probe it left disabled is tried
        # alone, for its own reason.
        if self.cmd("probe enable all").ok:
            return
        listed = [ln.split() for ln in self.must("probe list").text
                  if ln.startswith("probe ")]
        # "probe ID ADDR KIND STATE nargs=..." (the address may be followed
        # by its symbol): the state is the word before nargs=.
        live = {int(w[1]) for w in listed for i, x in enumerate(w)
                if x.startswith("nargs=") and w[i - 1] == "enabled"}
        kept = []
        for p in self.probes:
            if p.id in live:
                kept.append(p)
                continue
            r = self.cmd(f"probe enable {p.id}")
            if r.ok:
                kept.append(p)
                continue
            msg = f"{p.spec} at {p.addr:#x}: {r.message}"
            if strict:
                raise TraceError(msg)
            p.refused = r.message
            self.refused.append(p)
            self.unarmed.append(p)
            self.notes.append(msg)
        self.probes = kept

    def arm_window(self) -> int:
        """After enable(): disarm every probe and arm them all again at
        once; the cycles at which the last was live. The probes enable()
        found the mechanism cannot arm are refused again, and named so."""
        if not self.probes:
            return cycles_of(self.must("info").message)
        self.must("probe disable all")
        r = self.cmd("probe enable all")
        refused = re.search(r"\b(\d+) refused\b", r.message)
        if not r.ok and not (refused and int(refused[1]) == len(self.unarmed)):
            raise TraceError(f"guest refused 'probe enable all': {r.message}",
                             cmdline=self.guest.cmdline, log=str(self.guest.log_path))
        return cycles_of(r.message)

    def disarm_window(self) -> int:
        """Disarm every probe (and stop sampling); the cycles before the
        first went."""
        if not self.probes:
            self._stop_sampling()
            return cycles_of(self.must("info").message)
        at = cycles_of(self.must("probe disable all").message)
        self._stop_sampling()
        return at

    def _stop_sampling(self) -> None:
        if self.samplers and not self.sample_report:
            self.sample_report = self.must("profile off").message

    def finish(self) -> records.Capture:
        self.must("trace flush", timeout=600)
        cap = self.guest.capture()
        cap.stacks = stacks.settle_leaf_callers(cap.stacks, self.image)
        return cap


def reply_count(message: str, key: str) -> int:
    """The guest's KEY=N in a reply (cycles= of `probe enable|disable all`,
    late= of `trace stats`)."""
    for word in message.split():
        if word.startswith(f"{key}="):
            return int(word[len(key) + 1:].rstrip(";,"))
    raise TraceError(f"no {key}= in the reply {message!r}")


def cycles_of(message: str) -> int:
    """The guest's cycles=N in a reply (`probe enable|disable all`)."""
    return reply_count(message, "cycles")


def open_session(guest: Guest) -> Session:
    return Session(guest, load_image(guest.elf))


