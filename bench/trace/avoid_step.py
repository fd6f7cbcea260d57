"""Seed 003's interrupt avoidance on a single-stepping arch (i386): what
each instruction-tracing method costs in the tracer's own interrupts.

IA-32 gives no counterpart to methods 1 and 2: a present page is always
readable by the code that executes it (no execute-only pages), and the
CPU walks the page tables itself (no TLB-miss trap, nothing for the
tracer to avoid in writing its buffer). The interrupts a tracer can cause
of its own are faults, counted by the kernel per CPU and by kind when
their EIP is tracer text (miss_account.h: #PF, #GP, other), and what is
left to compare is method 4 against its alternative and method 3:

  previous (method 4) the instruction that just ran: resident, read only
                      as far as its own bytes;
  next                the instruction about to run, read ahead at the new
                      EIP: its page may not be resident yet;
  address (method 3)  no bytes at all, resolved by the host from the ELF.

The workload `demand` (guest-kernel/workloads/demand.c) calls demand_call
`iters` times, which calls demand_step at the start of a page of its own;
with evict=1 that page is made not present before every call, as a pager
would leave it, and the kernel serves the first touch (mm.h's
mm_demand). Reading ahead, `next` touches it first, in the #DB handler:
the #PF is the tracer's. Every configuration runs in one boot: each
method with evict 0 and 1, beside untraced runs of both for the cost
baseline (the lesser of two: the first also pays QEMU's translation),
`reps` times over (the counts of each repetition checked, the median
cost shown).
Every traced run is checked: one region per call (the workload's count),
each ended by its return, no record lost or dropped, no problem in the
replay, and the same instruction listing by every method.
"""

from __future__ import annotations

import re
import statistics

from ..errors import BenchError
from . import itrace
from .session import Session, open_session

FUNCTION = "demand_call"
SPEC = f"fbt:{FUNCTION}:entry"
METHODS = ("previous", "next", "address")
WHAT = {
    "previous": "4: the previous instruction (resident)",
    "next": "4 off: the next instruction, read ahead",
    "address": "3: addresses only, no bytes",
}
_LINE = re.compile(r"^demand evicted=(\d+) served=(\d+) own_pf=(\d+) own_gp=(\d+) "
                   r"own_faults=(\d+)$")


class AvoidStepError(BenchError):
    pass


def parse_line(lines) -> dict[str, int]:
    """The workload's counts line among its TEXT lines, as a dict."""
    keys = ("evicted", "served", "own_pf", "own_gp", "own_faults")
    for line in lines:
        m = _LINE.match(line.strip())
        if m:
            return dict(zip(keys, map(int, m.groups())))
    raise AvoidStepError("demand printed no counts line: " + " | ".join(lines[-5:]))


def _stats(message: str) -> dict[str, int]:
    return {k: int(v) for k, _, v in (w.partition("=") for w in message.split())
            if v.isdigit()}


def run_one(s: Session, order: str, word_bytes: int, method: str | None,
            evict: int, iters: int) -> dict:
    """One run of the workload, traced by method (None: untraced); its row."""
    g = s.guest
    pid = s.probes[0].id
    s.must("trace reset")
    mark = len(g.trace_frames)
    if method:
        s.must(f"probe enable {pid}")
        s.must(f"itrace on {pid} {method}")
    r = s.cmd(f"run demand iters={iters} evict={evict}", timeout=600)
    st = _stats(s.must("itrace stats").message) if method else {}
    if method:
        s.must("itrace off")
        s.must("probe disable all")
    s.must("trace flush", timeout=600)
    if not r.ok or not r.results or r.results[0]["status"] != 0:
        raise AvoidStepError(f"demand {method or 'untraced'} evict={evict} failed: "
                             f"{r.message}")
    cap = g.capture(mark)
    row = {"method": method, "evict": evict, "cycles": r.results[0]["cycles"],
           **parse_line(r.text), "steps": st.get("db_steps", 0),
           "probe_traps": st.get("probe_traps", 0), "instructions": 0,
           "wire_bytes": 0, "regions": 0, "addrs": [], "ahead_traps": 0,
           "problems": []}
    if not method:
        return row
    regs = itrace.regions(cap.events, s.image, order, word_bytes)
    dropped = sum(x["dropped"] for x in cap.stats.values())
    want = cap.expects.get(FUNCTION)
    probs = [p for x in regs for p in x.problems]
    probs += [f"a region ended by {x.ended or 'nothing'}" for x in regs
              if x.ended != "return"]
    if dropped:
        probs.append(f"{dropped} records dropped")
    if len(regs) != want or st.get("regions") != want:
        probs.append(f"{len(regs)} regions in the records, the guest started "
                     f"{st.get('regions')}, the workload made {want} calls")
    row.update(instructions=sum(len(x.addrs) for x in regs),
               wire_bytes=sum(x.wire_bytes for x in regs), regions=len(regs),
               addrs=[a for x in regs for a in x.addrs],
               ahead_traps=sum(x.ahead_traps for x in regs), problems=probs)
    return row


def measure(g, arch, iters: int, reps: int = 1, on_line=print) -> list[list[dict]]:
    """Every configuration in one boot of g, `reps` times over: the untraced
    runs, then each method with the page resident (evict=0) and evicted
    before every call; a list of rows per repetition."""
    s = open_session(g)
    s.setup(SPEC, "int3")
    s.must(f"probe action {s.probes[0].id} null")   # ITRACE records only
    out = []
    for _ in range(reps):
        rows = []
        for evict in (0, 1):
            base = min((run_one(s, g.byte_order, arch.word_bytes, None, evict, iters)
                        for _ in range(2)), key=lambda r: r["cycles"])
            rows.append(base)
            for m in METHODS:
                row = run_one(s, g.byte_order, arch.word_bytes, m, evict, iters)
                ins = row["instructions"]
                row["cycles_per_insn"] = (row["cycles"] - base["cycles"]) / ins if ins else 0
                row["bytes_per_insn"] = row["wire_bytes"] / ins if ins else 0
                rows.append(row)
                on_line(f"  {m} evict={evict}: {ins} instructions, tracer faults "
                        f"#PF {row['own_pf']} #GP {row['own_gp']}, served {row['served']}, "
                        f"{row['cycles_per_insn']:.0f} cycles/insn")
        out.append(rows)
    return out


def merge(reps: list[list[dict]]) -> list[dict]:
    """Repetitions of measure() as one set of rows: the first's counts
    (each repetition's are checked by problems()), the median cost."""
    rows = [dict(r) for r in reps[0]]
    for k, r in enumerate(rows):
        if r["method"]:
            r["cycles_per_insn"] = statistics.median(rep[k]["cycles_per_insn"]
                                                     for rep in reps)
    return rows


def problems(rows: list[dict], iters: int) -> list[str]:
    out = []
    for r in rows:
        where = f"{r['method'] or 'untraced'} evict={r['evict']}"
        out += [f"{where}: {p}" for p in r["problems"]]
        if r["evict"] and r["served"] != iters:
            out.append(f"{where}: {r['served']} faults served for {iters} evictions "
                       "(one CPU: every eviction's first touch faults)")
    traced = [r for r in rows if r["method"]]
    ref = traced[0]["addrs"] if traced else []
    for r in traced[1:]:
        if r["addrs"] != ref:
            out.append(f"{r['method']} evict={r['evict']}: {len(r['addrs'])} "
                       f"instructions, not the {len(ref)} of previous evict=0")
    for r in traced:
        # The point of the comparison, asserted: only a read ahead takes the
        # evicted page's fault in the tracer; resident code never faults.
        want = iters if (r["method"] == "next" and r["evict"]) else 0
        if r["own_faults"] != want or r["own_pf"] != want:
            out.append(f"{r['method']} evict={r['evict']}: the tracer took "
                       f"{r['own_faults']} faults ({r['own_pf']} #PF), {want} expected")
    return out


def table_lines(rows: list[dict]) -> list[str]:
    out = ["| method | page evicted | tracer #PF | #GP | other | served by the "
           "kernel | #DB steps | probe traps | instructions | cycles/insn | B/insn |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["method"]:
            out.append(f"| untraced | {'yes' if r['evict'] else 'no'} | {r['own_pf']} | "
                       f"{r['own_gp']} | {r['own_faults'] - r['own_pf'] - r['own_gp']} | "
                       f"{r['served']} | - | - | - | - | - |")
            continue
        out.append(f"| {WHAT[r['method']]} | {'yes' if r['evict'] else 'no'} | "
                   f"{r['own_pf']} | {r['own_gp']} | "
                   f"{r['own_faults'] - r['own_pf'] - r['own_gp']} | {r['served']} | "
                   f"{r['steps']} | {r['probe_traps']} | {r['instructions']} | "
                   f"{r['cycles_per_insn']:.0f} | {r['bytes_per_insn']:.2f} |")
    out.append("| 1: execute-only code | - | no IA-32 equivalent: a present page is "
               "readable by the code that executes it | | | | | | | | |")
    out.append("| 2: buffer by physical address / locked TLB | - | nothing to avoid: "
               "the CPU walks the page tables, a TLB miss is no interrupt | | | | | | | | |")
    return out
