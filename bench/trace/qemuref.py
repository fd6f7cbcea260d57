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

Delimiting a region in the log, per CPU: keep only pcs in the workload
text (the kernel's handlers, the scheduler and other threads' kernel code
fall away, as they do in the trace, where the CPU clears TF on entry to
a handler); a region opens at the traced function's entry address while
none is open on that CPU, and closes after the `ret` that brings the call
depth back to 0 (a `call` counts one deeper unless the next workload pc
on that CPU is its own return address: a call out of the workload text,
untraced). A region that migrates to another CPU midway, or two
threads interleaving workload code on one CPU, would break this per-CPU
delimiting; the comparison then reports differences rather than
pretending, and region counts that differ are a difference too.

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


def exec_pcs(log: Path) -> dict[int, list[int]]:
    """The log's executed pcs, per CPU, in order. QEMU prints a Trace line
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
    per_cpu: dict[int, list[int]] = {}
    for run in runs:
        if run:
            per_cpu.setdefault(run[0], []).append(run[2])
    return per_cpu


@dataclass
class RefRegion:
    cpu: int
    addrs: list[int] = field(default_factory=list)


def regions(per_cpu: dict[int, list[int]], entry: int, lo: int, hi: int,
            insns) -> list[RefRegion]:
    """The traced function's regions in QEMU's log (see the top)."""
    out: list[RefRegion] = []
    for cpu, pcs in sorted(per_cpu.items()):
        pcs = [pc for pc in pcs if lo <= pc < hi]
        cur: RefRegion | None = None
        depth = 0
        for k, pc in enumerate(pcs):
            if cur is None:
                if pc != entry:
                    continue
                cur, depth = RefRegion(cpu), 0
                out.append(cur)
            cur.addrs.append(pc)
            m = insns.mnemonic(pc)
            if m.startswith("call"):
                nxt = pcs[k + 1] if k + 1 < len(pcs) else None
                if nxt != pc + (insns.length(pc) or 0):
                    depth += 1
            elif m.startswith("ret"):
                depth -= 1
                if depth < 0:
                    cur = None
    return out


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
