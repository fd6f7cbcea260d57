"""`python3 -m bench itrace`: trace every instruction of a function's
regions, list them per thread, and compare them with QEMU's own log.

One boot: the function's entry probe is added (its own record off:
`probe action null`, so the wire carries ITRACE records only), the
workload runs twice untraced (the lesser is the cost baseline: the first
also pays QEMU's translation of the code), then the probe is
enabled, `itrace on` armed and the workload runs again, traced. The
records become regions (itrace.py), each checked against the ELF; the
listing shows every instruction as address, symbol+offset, bytes and
capstone's disassembly. Figures: the traps the tracer caused by kind
(the guest's `itrace stats`), bytes per instruction on the wire, and the
cost per traced instruction in guest cycles, (traced - untraced) /
instructions, both measured in this boot.

With --reference qemu, a second boot of the same image under
`-singlestep -d nochain` runs the same commands but adds no probe, and
QEMU's exec log of the workload's run is the reference (qemuref.py says
how its regions are delimited). The last line is
`itrace: N instructions traced, N compared with QEMU, N differences`;
the exit status is 1 on any difference, any problem in the records (a
lost or reordered record, a step the ELF contradicts), a wrong workload
result or a region that did not end.

--tamper drop:K|swap:K removes the K-th ITRACE record of the capture or
swaps it with the next, before decoding: what a test uses to show that
a lost or reordered record is caught.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..errors import EXIT_FAILED, EXIT_OK, UsageError
from ..guest import build
from ..guest.backend import open_guest
from ..wire import records
from . import itrace, itrace_branches, qemuref
from .session import open_session


def _tamper(events, spec: str, steps: bool = True):
    if not spec:
        return events
    how, _, k = spec.partition(":")
    kind = itrace.K_ITRACE if steps else records.K_BRANCH
    idx = [i for i, e in enumerate(events) if e.kind == kind]
    k = int(k)
    if how not in ("drop", "swap") or not 0 <= k < len(idx) - (how == "swap"):
        raise UsageError(f"--tamper {spec}: drop:K or swap:K with K below "
                         f"{len(idx)} records")
    events = list(events)
    if how == "drop":
        del events[idx[k]]
    else:
        a, b = idx[k], idx[k + 1]
        events[a], events[b] = events[b], events[a]
    return events


def _stats(message: str) -> dict[str, int]:
    out = {}
    for word in message.split():
        name, _, value = word.partition("=")
        if value.isdigit():
            out[name] = int(value)
    return out


def _name_of(image, addr: int) -> str:
    f = image.function_at(addr)
    return f"{f.name}+{addr - f.addr:#x}" if f else "?"


def _listing(image, arch, r, limit: int, insns) -> list[str]:
    import capstone                      # only the listing needs it
    mode = 0
    for name in arch.capstone[1:]:
        mode |= getattr(capstone, name)
    md = capstone.Cs(getattr(capstone, arch.capstone[0]), mode)
    out = []
    for n, a in enumerate(r.addrs):
        if limit and n >= limit:
            out.append(f"  ... {len(r.addrs) - limit} more (--lines 0 lists all)")
            break
        f = image.function_at(a)
        ins = next(md.disasm(image.code(a, 15), a, 1), None)
        if ins:
            raw, text = bytes(ins.bytes), f"{ins.mnemonic} {ins.op_str}".strip()
        else:                            # capstone lacks it: objdump's words
            elf = insns.by_addr.get(a)
            raw = elf.raw if elf else image.code(a, 1)
            text = f"{elf.text} (objdump)" if elf else "(undecodable)"
        name = f"{f.name}+{a - f.addr:#x}" if f else "?"
        out.append(f"  {a:#010x} {name:<18} {raw.hex(' '):<24} {text}")
        if n in r.outs:
            out.append("             (the callee ran untraced)")
    return out


def _workload_lines(reply) -> list[str]:
    return [f"{res['name']} = {res['value']} ({'ok' if res['status'] == 0 else 'WRONG'})"
            for res in reply.results]


def _traced_boot(args, arch, line):
    steps = arch.itrace == "step"
    spec = f"fbt:{args.function}:entry"
    if not steps:
        spec += "".join(f",branch:{g}" for g in args.within.split(","))
    with open_guest(arch, label="itrace", smp=args.smp,
                    command_timeout=args.timeout) as g:
        s = open_session(g)
        s.setup(spec, args.mechanism, buffer_bytes=args.buffer)
        pid = s.probes[0].id
        if steps:
            s.must(f"probe action {pid} null")
        # Untraced twice: the first run also pays QEMU's translation of
        # the workload's code; the lesser cycle count is the baseline.
        base = min((s.cmd(f"run {line}") for _ in range(2)),
                   key=lambda r: r.results[0]["cycles"] if r.results else 0)
        s.enable(True, strict=True)
        if steps:
            s.must(f"itrace on {pid} {args.method} {args.skip} {args.regions}")
        s.must("trace misses reset")
        traced = s.cmd(f"run {line}")
        misses = s.must("trace misses").message
        st = s.must("itrace stats") if steps else None
        if steps:
            s.must("itrace off")
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    return s, g, cap, base, traced, st, misses


def own_interrupts(misses: str) -> dict[str, int]:
    """`trace misses`' per-CPU counts of the tracer's own, summed: TLB
    misses (where the arch's are visible) and faults by kind."""
    out = {"itlb": 0, "dtlb": 0, "faults": 0, "pf": 0, "gp": 0}
    for part in misses.split(";"):
        own = part.split("(all:")[0]
        for word in own.replace("(", " ").replace(")", " ").split():
            name, _, value = word.partition("=")
            if name in out and value.isdigit():
                out[name] += int(value)
    return out


def _reference_boot(args, arch, line, workdir: Path):
    """QEMU's exec log of the workload's run, its reply, and where the
    guest's own log went (the exec log is kept beside it on a difference)."""
    log, qmp = workdir / "exec.log", workdir / "qmp.sock"
    with open_guest(arch, label="itrace-ref", smp=args.smp,
                    command_timeout=args.timeout, boot_timeout=120,
                    extra_args=qemuref.qemu_args(log, qmp)) as g:
        mon = qemuref.Monitor(qmp)
        try:
            for _ in range(2):                    # the traced boot's first runs
                g.command(f"run {line}")
            mon.hmp("log exec,nochain")
            r = g.command(f"run {line}")
            mon.hmp("log nochain")
        finally:
            mon.close()
        g.exit(0)
    return log, r, g.log_path


def run(args, arch) -> int:
    line = args.run
    if not args.function:
        args.function = line.split()[0]
    args.within = args.within or args.function
    build.ensure_image(arch)
    s, g, cap, base, traced, st, misses = _traced_boot(args, arch, line)
    image = s.image
    f = image.functions.get(args.function)
    insns = itrace.InsnTable(image)
    steps = arch.itrace == "step"
    regs = _regions(args, arch, s, g, cap, f, insns, steps)
    total = sum(len(r.addrs) for r in regs)
    for k, r in enumerate(regs, 1):
        print(f"thread {r.thread} region {k} (cpu {','.join(map(str, sorted(r.cpus)))}): "
              f"{len(r.addrs)} instructions ({r.emulated} emulated by probes, "
              f"{r.calls_out} calls out untraced), {r.records} records, "
              f"ended by {r.ended or 'nothing'}")
        for ln in _listing(image, arch, r, args.lines, insns):
            print(ln)
    problems = [p for r in regs for p in r.problems]
    problems += [f"region of thread {r.thread} did not end by its return ({r.ended or 'open'})"
                 for r in regs if r.ended != "return"]
    stats = _figures(args, arch, line, f, regs, cap, st, misses, steps)
    _cost_lines(regs, total, base, traced)
    problems += _run_problems(regs, stats, base, traced, steps)
    status = EXIT_OK
    summary = f"itrace: {total} instructions traced"
    if args.reference == "qemu":
        compared, differences = _compare_with_qemu(args, arch, line, image, f, insns,
                                                   regs, steps, problems)
        summary += f", {compared} compared with QEMU, {differences} differences"
        if differences:
            status = EXIT_FAILED
    for p in problems:
        print(f"PROBLEM: {p}")
    if problems:
        status = EXIT_FAILED
    print(summary)
    return status


def _regions(args, arch, s, g, cap, f, insns, steps: bool) -> list:
    """The capture's records (tampered with, if asked) as regions: replayed
    steps on a single-stepping arch, walked branch records elsewhere (each
    thread's wire bytes counted on its first region)."""
    image = s.image
    events = _tamper(cap.events, args.tamper, steps)
    if steps:
        return itrace.regions(events, image, g.byte_order, arch.word_bytes, insns)
    regs, outside = itrace_branches.regions(events, image, s.probes[0].id,
                                            f.addr, args.within)
    if outside:
        print(f"note: {outside} branch records from the traced functions "
              "called outside any region (not walked)")
    traced_events = [e for e in events
                     if e.kind in (records.K_BRANCH, records.K_ENTRY)]
    for r in regs:
        r.wire_bytes = 0
    per = {}
    for e in traced_events:
        per[e.thread] = per.get(e.thread, 0) + 16 + len(e.words) * arch.word_bytes
    for r in regs:
        r.wire_bytes = per.pop(r.thread, 0)   # a thread's bytes, on its first region
    return regs


def _figures(args, arch, line, f, regs, cap, st, misses, steps: bool) -> dict:
    """The run's headline, the guest's own counts and the traps and TLB
    misses the tracer caused; returns the guest's counts."""
    total = sum(len(r.addrs) for r in regs)
    if steps:
        stats = _stats(st.message)
        guest_line = st.message
    else:
        fired = sum(c["fired"] for c in cap.stats.values())
        stats = {"regions": len(regs), "probe_traps": fired}
        guest_line = (f"probe traps {fired} (entry and branch probes: every "
                      "transfer of the traced functions)")
    print(f"itrace {line!r} on {arch.name}, function {args.function} at "
          f"{f.addr:#x}, method {args.method if steps else 'branches (' + args.within + ')'}: "
          f"{total} instructions in {len(regs)} "
          f"regions of {len({r.thread for r in regs})} threads")
    print(f"guest: {guest_line}")
    own = own_interrupts(misses)
    tlb = ("none visible (the CPU walks the page tables)" if "not visible" in misses
           else f"ITLB {own['itlb']}, DTLB {own['dtlb']}")
    tlb += (f"; tracer faults {own['faults']} (#PF {own['pf']}, #GP {own['gp']}, "
            f"other {own['faults'] - own['pf'] - own['gp']})")
    if steps:
        print(f"traps the tracer caused: #DB single-steps {stats.get('db_steps', 0)}, "
              f"probe traps (emulated) {stats.get('probe_traps', 0)}, return-pad #UD "
              f"{stats.get('pad_traps', 0)}, stray #DB {stats.get('stray_db', 0)}; "
              f"tracer TLB misses: {tlb}")
    else:
        print(f"traps the tracer caused: probe traps {stats['probe_traps']} (entry "
              f"and branch probes, emulated); tracer TLB misses: {tlb}")
    if steps and args.method == "next":
        print(f"next: {sum(r.ahead_traps for r in regs)} read-aheads found a probe's "
              "trap byte, not the code (the host put the code back from the ELF)")
    return stats


def _cost_lines(regs, total: int, base, traced) -> None:
    """Bytes per instruction on the wire, guest cycles per traced one."""
    wire_bytes = sum(r.wire_bytes for r in regs)
    if total:
        print(f"wire: {wire_bytes} bytes in {sum(r.records for r in regs)} records, "
              f"{wire_bytes / total:.2f} bytes per instruction")
    bc = base.results[0]["cycles"] if base.results else 0
    tc = traced.results[0]["cycles"] if traced.results else 0
    if total and bc and tc:
        print(f"cost: untraced {bc} cycles, traced {tc} cycles ({tc / bc:.0f}x, "
              f"one boot): {(tc - bc) / total:.0f} guest cycles per traced instruction")


def _run_problems(regs, stats: dict, base, traced, steps: bool) -> list[str]:
    """The workload's runs (printed), and what went wrong beyond the records."""
    problems = []
    for name, rep in (("untraced", base), ("traced", traced)):
        for ln in _workload_lines(rep):
            print(f"workload {name}: {ln}")
        if not rep.ok or any(res["status"] != 0 for res in rep.results):
            problems.append(f"the {name} run failed: {rep.message}")
    if stats.get("stray_db"):
        problems.append(f"{stats['stray_db']} single-steps on threads with no region")
    if stats.get("no_state"):
        problems.append(f"{stats['no_state']} regions not started: the guest's pool was empty")
    if not regs:
        problems.append("no region was traced")
    if steps and stats.get("regions") != len(regs):
        problems.append(f"the guest started {stats.get('regions')} regions, the "
                        f"records hold {len(regs)}")
    return problems


def _compare_with_qemu(args, arch, line, image, f, insns, regs, steps: bool,
                       problems: list[str]) -> tuple[int, int]:
    """--reference qemu: a second boot under QEMU's exec log, its regions
    held against the traced ones; (compared, differences)."""
    with tempfile.TemporaryDirectory(prefix="itrace-ref-") as d:
        log, ref_reply, guest_log = _reference_boot(args, arch, line, Path(d))
        if not ref_reply.ok:
            problems.append(f"the reference run failed: {ref_reply.message}")
        lo, hi = image.symbols["__workload_text_start"], image.symbols["__workload_text_end"]
        refs, ambiguous = qemuref.regions(qemuref.exec_pcs(log), f.addr, lo, hi, insns,
                                          image.symbols.get("arch_context_switch"),
                                          arch.delay_slots, None if steps else
                                          lambda a: itrace_branches.follows(image, a))
        cmp = qemuref.compare(regs, refs, lambda a: _name_of(image, a))
        if cmp.differences:
            kept = Path(str(guest_log) + ".exec")
            shutil.copyfile(log, kept)
            cmp.lines.append(f"QEMU's exec log kept: {kept}")
    print(f"QEMU's log: {len(refs)} regions, {ambiguous} ambiguous resumes "
          "(threads that could go on at the same pc; the first suspended went on)")
    for ln in cmp.lines:
        print(ln)
    return cmp.compared, cmp.differences
