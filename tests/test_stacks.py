"""Call stacks against ground truth: calltree's call paths are known by
construction, so `@[stack()] = count()` on ct_add's entry (in RPN:
bench/programs/stack.rpn) must list each distinct path with exactly the
number of calls made through it — on i386 under int3, ud and opt (2 CPUs),
on sparc64 under emulate, threads preempted at 2 kHz — and every frame of
every stack seen must be a call site of the ELF (bench/trace/stacks.py's
check_frames). A walker that skips a frame, or one that is off by a byte,
is caught by the same checks (the broken variants at the end)."""

from collections import Counter

import pytest

from bench import arches
from bench.guest.qemu import Guest
from bench.paths import PROGRAMS
from bench.program import aggregate, asm
from bench.trace import stacks
from bench.trace.session import open_session

THREADS, ITERS, DEPTH = 3, 40, 2


def lossless(arch: str) -> list[str]:
    """The arch's lossless mechanisms: i386 int3, ud, opt; sparc64 emulate, tramp."""
    a = arches.get(arch)
    return [m for m in a.mechanisms if m not in a.lossy]


def expected_paths(threads: int, iters: int, depth: int) -> Counter:
    """ct_add's callers, innermost first down to ct_thread, and the calls
    made through each (calltree.c: root calls mid, then rec(depth); rec(k)
    calls rec(k-1) then add for k > 0, mid at 0; mid calls add)."""
    n = threads * iters
    paths = Counter({("ct_mid", "ct_root", "ct_thread"): n,
                     ("ct_mid",) + ("ct_rec",) * (depth + 1) + ("ct_root", "ct_thread"): n})
    for j in range(1, depth + 1):
        paths[("ct_rec",) * j + ("ct_root", "ct_thread")] += n
    return paths


def paths_of(rows: dict, sym) -> Counter:
    """Each stack's function names up to ct_thread, with its count."""
    out = Counter()
    for pcs, n in rows.items():
        names = [f.name if (f := sym.function(pc)) else hex(pc) for pc in pcs]
        cut = names.index("ct_thread") + 1 if "ct_thread" in names else len(names)
        out[tuple(names[:cut])] += n
    return out


def traced_stacks(arch: str, mechanism: str):
    a = arches.get(arch)
    prog = asm.assemble((PROGRAMS / "stack.rpn").read_text(), arch, "stack.rpn")
    with Guest(a, label=f"stacks-{arch}-{mechanism}", smp=min(2, a.max_smp)) as g:
        s = open_session(g)
        s.setup("fbt:ct_add:entry", mechanism, buffer_bytes=1 << 20, program=prog)
        assert g.command("timer 2000").ok
        s.enable(True)
        r = s.cmd(f"run calltree threads={THREADS} iters={ITERS} depth={DEPTH} ref=0")
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    assert r.ok, r
    tables = aggregate.merge(aggregate.resolve(cap.aggs, s.programs, cap.stacks))
    (table,) = tables.values()
    rows = {k[0]: row.count for k, row in table.rows.items()}
    return rows, cap, s.image


@pytest.fixture(scope="module")
def runs(built):
    got = {}

    def run(arch, mechanism):
        if (arch, mechanism) not in got:
            built(arch)
            got[arch, mechanism] = traced_stacks(arch, mechanism)
        return got[arch, mechanism]
    return run


@pytest.mark.parametrize("which", range(3))
def test_each_path_has_exactly_its_calls_and_every_frame_is_a_call_site(
        arch, which, runs):
    if which >= len(lossless(arch)):
        pytest.skip(f"{arch} has {len(lossless(arch))} lossless mechanisms")
    mechanism = lossless(arch)[which]
    rows, cap, image = runs(arch, mechanism)
    assert not sum(cap.stack_dropped.values()) and not sum(cap.agg_dropped.values())
    assert None not in rows, "a stack found no room"
    sym = stacks.Symbolizer(image)
    got = paths_of(rows, sym)
    want = expected_paths(THREADS, ITERS, DEPTH)
    assert got == want, (dict(got), dict(want))
    bad = [b for pcs in rows for b in stacks.check_frames(pcs, image)]
    assert not bad, bad[:5]
    # Every stack reaches the thread's first function.
    assert all(sym.function(pcs[-1]) is None or sym.function(pcs[-1]).name != "ct_add"
               for pcs in rows)


def test_a_stack_from_an_interrupt_hops_to_the_code_it_stopped(arch, built):
    """sched_tick's entry, in the timer interrupt at 2 kHz during calltree:
    the walk goes from the interrupt's frames through the trap to the
    interrupted PC and on through its callers, every frame a call site but
    the interrupted PC; some of them reach ct_thread."""
    built(arch)
    a = arches.get(arch)
    prog = asm.assemble((PROGRAMS / "stack.rpn").read_text(), arch, "stack.rpn")
    with Guest(a, label=f"stacks-irq-{arch}") as g:
        s = open_session(g)
        s.setup("fbt:sched_tick:entry", a.default_mechanism, buffer_bytes=1 << 20,
                program=prog)
        assert g.command("timer 2000").ok
        s.enable(True)
        # Long enough for hundreds of ticks inside calltree even when the
        # host runs other guests beside this one (at 2,000 iterations a
        # loaded host saw 5 distinct stacks).
        assert s.cmd("run calltree threads=2 iters=10000 depth=2 ref=0").ok
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    walked = list(cap.stacks.values())
    assert len(walked) > 5
    bad = [b for pcs in walked for b in stacks.check_frames(pcs, s.image)]
    assert not bad, bad[:5]
    sym = stacks.Symbolizer(s.image)
    hopped = [pcs for pcs in walked if stacks.interrupted(pcs, s.image)]
    assert len(hopped) == len(walked), "every tick's stack hops to what it stopped"
    through = [pcs for pcs in hopped
               if any(sym.nearest(pc)[0] == "ct_thread" for pc in pcs if sym.nearest(pc))]
    assert through, "no tick interrupted calltree"


def test_a_walker_that_skips_a_frame_or_is_off_by_a_byte_is_caught(arch, runs):
    rows, cap, image = runs(arch, lossless(arch)[0])
    sym = stacks.Symbolizer(image)
    want = expected_paths(THREADS, ITERS, DEPTH)
    skipped = {pcs[:1] + pcs[2:]: n for pcs, n in rows.items()}
    assert paths_of(skipped, sym) != want
    shifted = {tuple(pc + 1 for pc in pcs): n for pcs, n in rows.items()}
    assert all(stacks.check_frames(pcs, image) for pcs in shifted)


def test_returns_riding_on_trampolines_are_walked_through(built):
    # Under opt, each return probe rides on its entry (opt_return.c): while
    # a call is open its frame holds the trampoline's address, and the
    # walk must give the caller's (retaddr.h), or every path changes.
    a = arches.get("i386")
    if "opt" not in a.return_trampolines:
        pytest.skip("no return trampolines on i386's mechanisms")
    built("i386")
    prog = asm.assemble((PROGRAMS / "stack.rpn").read_text(), "i386", "stack.rpn")
    spec = ("fbt:ct_add:entry,fbt:ct_mid:entry,fbt:ct_mid:return,"
            "fbt:ct_rec:entry,fbt:ct_rec:return,fbt:ct_root:entry,fbt:ct_root:return")
    with Guest(a, label="stacks-riding", smp=2) as g:
        s = open_session(g)
        s.setup(spec, "opt", buffer_bytes=1 << 22, program=prog)
        others = [str(p.id) for p in s.probes if p.function != "ct_add"]
        s.must("probe program " + " ".join(others) + " none")
        s.enable(True)
        r = s.cmd(f"run calltree threads={THREADS} iters={ITERS} depth={DEPTH} ref=0")
        rides = g.command("probe ride").message
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    assert r.ok, r
    trampolined = int(rides.split("trampolined ")[1].split()[0])
    assert trampolined > 0, rides            # the frames did hold trampolines
    tables = aggregate.merge(aggregate.resolve(cap.aggs, s.programs, cap.stacks))
    table = next(iter(tables.values()))
    rows = {k[0]: row.count for k, row in table.rows.items()}
    got = paths_of(rows, stacks.Symbolizer(s.image))
    assert got == expected_paths(THREADS, ITERS, DEPTH), dict(got)
    bad = [b for pcs in rows for b in stacks.check_frames(pcs, s.image)]
    assert not bad, bad[:5]
