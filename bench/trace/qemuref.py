"""QEMU as the independent reference for instruction traces.

The same image boots a second time with `-singlestep -d nochain` (one
instruction per translation block, no chaining: every execution of an
instruction is an execution of its own block) and a QMP socket; just
before the workload's `run` command the harness turns on QEMU's `exec`
log through the monitor (`log exec,nochain`) and turns it off after the
reply, so the log holds the workload and whatever interrupts and threads
ran meanwhile, not the boot. Nothing is probed in that boot: what QEMU
logs is the workload running untraced. Each line is

    Trace CPU: HOSTPTR [CS_BASE/PC/FLAGS/CFLAGS] SYMBOL

with the guest pc the second field in the brackets (QEMU 7.2's
log_cpu_exec, on both arches).

Delimiting a region in the log (regions() below): keep only pcs in the
workload text (the kernel's handlers, the scheduler and other threads'
kernel code fall away, as they do in the trace, where the CPU clears TF
on entry to a handler); a region opens at the traced function's entry
address, and closes after the `ret` that brings its call depth below 0.
The log has no thread ids, so threads are told apart by the kernel's
context switch: a CPU that runs it suspends its open region, and a
region resumes (on any CPU) where its last instruction can go next;
where several could, the one suspended first (counted and reported as
ambiguous resumes). Anything this does not delimit right shows as
differences, never as agreement: region counts that differ are
differences too.

Comparison: each traced region is matched with an unused QEMU region of
the same instruction sequence if there is one, else with the next unused
one in order; differences are the positions where the sequences differ
plus the difference in length.
"""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BenchError

_LINE = re.compile(rb"^Trace (\d+): (\S+) \[[0-9a-f]+/([0-9a-f]+)/")
_STOPPED = re.compile(rb"^Stopped execution of TB chain before (\S+) \[([0-9a-f]+)\]")


class ReferenceError(BenchError):
    """QEMU's monitor or log could not be used as asked."""


def qemu_args(log: Path, qmp: Path) -> list[str]:
    """The extra QEMU arguments of the reference boot."""
    return ["-singlestep", "-d", "nochain", "-D", str(log),
            "-qmp", f"unix:{qmp},server=on,wait=off"]


class Monitor:
    """A QMP connection, for HMP's `log` command."""

    def __init__(self, path: Path, timeout: float = 30):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.f = self.sock.makefile("rw")
        self.f.readline()                         # the greeting
        self._do({"execute": "qmp_capabilities"})

    def _do(self, msg: dict) -> dict:
        self.f.write(json.dumps(msg) + "\n")
        self.f.flush()
        while True:
            line = self.f.readline()
            if not line:
                raise ReferenceError("QEMU's monitor closed")
            r = json.loads(line)
            if "error" in r:
                raise ReferenceError(f"QEMU's monitor: {r['error']}")
            if "return" in r:
                return r["return"]

    def hmp(self, line: str) -> str:
        return self._do({"execute": "human-monitor-command",
                         "arguments": {"command-line": line}})

    def close(self) -> None:
        self.f.close()
        self.sock.close()


def exec_pcs(log: Path) -> list[tuple[int, int]]:
    """The log's executed (cpu, pc), in the log's order. QEMU prints a Trace line
    before it runs the block; a block that an interrupt request stops
    before its first instruction is followed by `Stopped execution of TB
    chain before HOSTPTR [PC]` (no CPU number): the latest Trace line of
    that block and pc did not run, and is dropped (none: it was logged
    before the log was on)."""
    runs: list[tuple[int, bytes, int] | None] = []
    with open(log, "rb") as f:
        for line in f:
            m = _LINE.match(line)
            if m:
                runs.append((int(m.group(1)), m.group(2), int(m.group(3), 16)))
                continue
            m = _STOPPED.match(line)
            if m:
                ptr, pc = m.group(1), int(m.group(2), 16)
                for k in range(len(runs) - 1, -1, -1):
                    if runs[k] and runs[k][1] == ptr and runs[k][2] == pc:
                        runs[k] = None
                        break
    return [(run[0], run[2]) for run in runs if run]


@dataclass
class RefRegion:
    cpu: int
    addrs: list[int] = field(default_factory=list)
    entries: list[int] = field(default_factory=list)    # their places in runs
    depth: int = 0
    done: bool = False
    pending_call: int | None = None     # a call whose callee is not known yet
    slot_left: int = 0                  # delay slots still to come before it is
    closing: bool = False               # the final return's delay slot is next
    kernel_since: bool = False          # kernel code ran since its last pc


_TARGET = re.compile(r"^\S+\s+([0-9a-f]+)\b")


def successors(insns, pc: int) -> set[int] | None:
    """Where the workload's instruction at pc may go next (None: anywhere,
    a return or an indirect transfer)."""
    i = insns.by_addr.get(pc)
    if i is None:
        return None
    nxt = pc + len(i.raw)
    m = i.mnemonic
    if m.startswith("ret") or "*" in i.text:
        return None
    t = _TARGET.match(i.text)
    if m.startswith("jmp"):
        return {int(t.group(1), 16)} if t else None
    if m.startswith(("j", "call", "loop")) and t:
        return {int(t.group(1), 16), nxt}
    return {nxt}


def regions(runs: list[tuple[int, int]], entry: int, lo: int, hi: int,
            insns, switch_pc: int | None = None,
            delay_slots: bool = False, follows=None) -> tuple[list[RefRegion], int]:
    """The traced function's regions in QEMU's log. Per CPU, only pcs in
    the workload text count; a region opens at the function's entry and
    closes after the `ret` that brings its call depth below 0 (a `call`
    counts one deeper unless the next workload pc is its own return
    address: a call out of the workload text). When the CPU runs the
    kernel's context switch (switch_pc), its open region is suspended;
    the next workload pc on a CPU resumes the suspended region (of any
    CPU: threads migrate) whose instructions can go there next
    (follows(addrs): a set of pcs, or None for unknown; default: the
    last instruction's successors() on a machine without delay slots),
    or opens a new region at the entry (where only a region known to go
    to the entry next is resumed). Where several suspended regions could
    go there, the one suspended first resumes (a round-robin scheduler's
    order); how often that choice was made is returned with the regions,
    and a wrong choice shows as differences, never as agreement.

    With delay_slots (SPARC), a call's callee is known two workload pcs
    later (after its slot: pc + 8 is its return), and the region closes
    after the final return's delay slot. On every arch, a region's
    instruction logged again after kernel code ran (on its CPU, or a
    context switch away and back), with none of its workload pcs between,
    is one that trapped (a TLB miss, a register-window spill or fill, an
    interrupt that switched threads before it could finish) and ran again
    after the handler's `retry`: it is counted once, as the trace counts
    it."""
    walk = _RefWalk(runs, entry, lo, hi, insns, switch_pc, delay_slots, follows)
    for n, (cpu, pc) in enumerate(runs):
        walk.feed(cpu, pc, n)
    return walk.out, walk.ambiguous


class _RefWalk:
    """regions()' walk over the log, one pc at a time (see its docstring):
    the regions so far, each CPU's open one and the suspended pool."""

    def __init__(self, runs, entry, lo, hi, insns, switch_pc, delay_slots, follows):
        self.entry, self.lo, self.hi, self.insns = entry, lo, hi, insns
        self.switch_pc, self.delay_slots = switch_pc, delay_slots
        self.out: list[RefRegion] = []
        self.suspended: list[RefRegion] = []
        # The log's order is the order the vCPUs wrote their lines in: a
        # region suspended on one CPU is in the pool before another resumes it.
        self.cur: dict[int, RefRegion | None] = {cpu: None for cpu, _ in runs}
        self.ambiguous = 0
        self.follows = follows or (lambda addrs: successors(insns, addrs[-1]))

    def feed(self, cpu: int, pc: int, n: int) -> None:
        cur = self.cur
        if self.switch_pc is not None and pc == self.switch_pc:
            if cur[cpu] is not None:
                cur[cpu].kernel_since = True
                self.suspended.append(cur[cpu])
                cur[cpu] = None
            return
        if not self.lo <= pc < self.hi:
            if cur[cpu] is not None:
                cur[cpu].kernel_since = True
            return
        r = cur[cpu] if cur[cpu] is not None else self._resume_or_open(cpu, pc)
        if r is None:
            return
        if r.kernel_since and r.addrs and pc == r.addrs[-1]:
            r.kernel_since = False
            return                      # it trapped, and ran again after retry
        r.kernel_since = False
        self._callee_known(r, pc)
        r.addrs.append(pc)
        r.entries.append(n)
        if r.closing:
            r.done = True
            cur[cpu] = None
            return
        self._depth(cpu, r, pc)

    def _resume_or_open(self, cpu: int, pc: int) -> RefRegion | None:
        """The suspended region that goes on at pc (the first suspended of
        those that could), else a new one if pc is the entry, else None."""
        known, unknown = [], []
        for k, sr in enumerate(self.suspended):
            succ = self.follows(sr.addrs)
            if succ is None:
                unknown.append(k)
            elif pc in succ:
                known.append(k)
        # A new thread starts at the entry: only a region known to go
        # there next is resumed by it.
        fit = known if known or pc == self.entry else unknown
        if len(fit) > 1:
            self.ambiguous += 1
        if fit:
            r = self.cur[cpu] = self.suspended.pop(fit[0])
            return r
        if pc != self.entry:
            return None
        r = self.cur[cpu] = RefRegion(cpu)
        self.out.append(r)
        return r

    def _callee_known(self, r: RefRegion, pc: int) -> None:
        """A call waiting for its callee: past its delay slot, a pc that is
        not its return address is workload code, one call deeper."""
        if r.pending_call is None:
            return
        if r.slot_left:
            r.slot_left -= 1
            return
        back = 8 if self.delay_slots else (self.insns.length(r.pending_call) or 0)
        if pc != r.pending_call + back:
            r.depth += 1
        r.pending_call = None

    def _depth(self, cpu: int, r: RefRegion, pc: int) -> None:
        """A call waits for its callee; a return below depth 0 closes the
        region (after its delay slot, where there are delay slots)."""
        m = self.insns.mnemonic(pc)
        if m.startswith("call"):
            r.pending_call = pc
            r.slot_left = 1 if self.delay_slots else 0
        elif m.startswith("ret"):
            r.depth -= 1
            if r.depth < 0:
                if self.delay_slots:
                    r.closing = True
                else:
                    r.done = True
                    self.cur[cpu] = None


@dataclass
class Comparison:
    compared: int = 0
    differences: int = 0
    lines: list[str] = field(default_factory=list)


def compare(traced, ref: list[RefRegion], name_of) -> Comparison:
    """traced: bench/trace/itrace.Region list; name_of(addr) -> 'fn+0x..'."""
    c = Comparison()
    unused = list(range(len(ref)))
    if len(traced) != len(ref):
        c.differences += abs(len(traced) - len(ref))
        c.lines.append(f"regions: {len(traced)} traced, {len(ref)} in QEMU's log")
    for r in traced:
        if not unused:
            c.differences += len(r.addrs)
            c.lines.append(f"thread {r.thread}: no QEMU region left for its "
                           f"{len(r.addrs)} instructions")
            continue
        pick = next((i for i in unused if ref[i].addrs == r.addrs), unused[0])
        unused.remove(pick)
        q = ref[pick].addrs
        n = min(len(q), len(r.addrs))
        diff = sum(1 for a, b in zip(r.addrs, q) if a != b) + abs(len(q) - len(r.addrs))
        c.compared += n
        c.differences += diff
        line = (f"thread {r.thread}: {len(r.addrs)} instructions traced, QEMU's "
                f"region on cpu{ref[pick].cpu} has {len(q)}, {diff} differences")
        if diff:
            k = next((i for i in range(n) if r.addrs[i] != q[i]), n)
            t = f"{r.addrs[k]:#x} {name_of(r.addrs[k])}" if k < len(r.addrs) else "end"
            e = f"{q[k]:#x} {name_of(q[k])}" if k < len(q) else "end"
            line += f"; first at instruction {k}: traced {t} vs QEMU {e}"
        c.lines.append(line)
    return c
