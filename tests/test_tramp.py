"""sparc64 probes with no trap (`tramp`, tracer/arch/sparc64/tramp.c): an
entry or return site becomes one `ba,a` to the probe's trampoline, which
records and runs the displaced word (and a return's delay slot) natively.

What must hold: fib traced completely, every value right, through both of
its return forms (`return %i7+8` and `ret; restore %i5, %o0, %o0`), with
each site holding a `ba,a` into tramp_slots while armed (read through
QEMU's GDB stub) and its own word back once disarmed; calltree's entries
and returns on 8 preempted threads lose nothing, with its branch probes
taking the illtrap beside them (the mechanism's other sites); and the
guest's self-test passes, the trampoline that skips its delay slot
(tramp_skip_delay_broken) caught, a delay slot that cannot run from a
copy refused and a slot another thread's stack points into held from
reuse. Check mode (tracer/arch/sparc64/tramp_check.c): every
trampoline's displaced instruction — the forms workload's `save`, `ret`
and `return`, calltree's on 4 threads — re-run in unicorn from the state
before it, and a return's delay slot word as its copy ran it (fm_cti's
`ret; restore %o0, 0, %o0`: the restore with the caller's window), 0
mismatches, one record a firing and one a checked delay slot; a
trampoline that does not give %y back (tramp_check_broken, set through
the GDB stub) is reported on every record, and one that does so only
after a delay slot's restore (tramp_check_broken = 2) on those records
alone. The full-size runs are the matrix's sparc64-*-tramp cells."""

import pytest

from bench import arches
from bench.check import sparc64 as C
from bench.debug import rsp
from bench.guest.qemu import Guest
from bench.trace import stress
from bench.trace.session import open_session
from bench.trace.sites import sites_of
from bench.trace.verify import verify
from test_trace_sparc64 import check_fib12

ARCH = "sparc64"


@pytest.fixture(scope="module")
def sparc64(built):
    built(ARCH)
    return arches.get(ARCH)


def _is_ba_a(word: int) -> bool:
    return word & 0xffc00000 == 0x30800000


def _target(addr: int, word: int) -> int:
    disp = word & 0x3fffff
    return addr + 4 * (disp - (1 << 22) if disp & (1 << 21) else disp)


def test_fib_traced_with_a_branch_at_every_site(sparc64):
    with Guest(sparc64, label="tramp-fib", gdbstub=True) as g:
        s = open_session(g)
        s.setup("fbt:fib:entry,fbt:fib:return", "tramp", buffer_bytes=16 << 20)
        s.enable(True, strict=True)
        with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
            stub.halt()
            armed = {p.addr: int.from_bytes(stub.read_identity(p.addr, 4), "big")
                     for p in s.probes}
            stub.detach()
        r = s.must("run fib n=12", timeout=600)
        s.enable(False)
        with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
            stub.halt()
            disarmed = {p.addr: stub.read_identity(p.addr, 4) for p in s.probes}
            stub.detach()
        cap = s.finish()
        g.exit(0)
    assert r.ok
    lo, hi = s.image.symbols["tramp_slots"], s.image.symbols["tramp_slots_end"]
    for addr, word in armed.items():
        assert _is_ba_a(word) and lo <= _target(addr, word) < hi, (hex(addr), hex(word))
    assert all(code == s.image.code(a, 4) for a, code in disarmed.items()), disarmed
    check_fib12(cap, s.probes, g.link_errors)


def test_calltree_on_preempted_threads_loses_nothing(sparc64):
    spec = stress.lossless_probes(sparc64)     # branch probes take the illtrap
    with Guest(sparc64, label="tramp-calltree") as g:
        s = open_session(g)
        s.setup(spec, "tramp", buffer_bytes=16 << 20)
        s.enable(True)
        s.must("timer 20000")
        r = s.must("run calltree threads=8 iters=40 depth=4", timeout=600)
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    assert r.ok
    rep = verify(cap, s.probes, g.link_errors)
    assert rep.ok and rep.missed == 0 and rep.dropped == 0, rep.problems
    for f in ("ct_root", "ct_rec", "ct_mid", "ct_add", "ct_mul"):
        assert rep.entries[f] == rep.returns[f] == rep.expected[f] > 0, f
    assert rep.nesting_checked > 1000


def test_guest_self_test_catches_the_broken_trampoline(sparc64):
    with Guest(sparc64, label="tramp-selftest") as g:
        r = g.command("selftest probes", timeout=300)
        g.exit(0)
    lines = [l for l in r.text if ": tramp" in l]
    assert r.ok and lines and not [l for l in lines if not l.startswith("PASS")], \
        "\n".join(r.text[-20:])
    text = "\n".join(lines)
    assert "tramp (recording)" in text and "tramp (counting)" in text
    assert "skips the delay slot is caught: 6 of 6 results differ" in text
    assert "a retl whose delay slot reads the PC is refused" in text
    assert "a slot a preempted thread points into is held (held)" in text


# fm_leaf is left out: its first word is a retl, which takes the illtrap.
FORMS = "fbt:fm_cti:entry,fbt:fm_cti:return,fbt:fm_fp:entry,fbt:fm_fp:return"


def _checked(s, g, spec, line):
    since = len(g.trace_frames)
    s.must("probe clear")
    s.setup(spec, "tramp", check=True, buffer_bytes=16 << 20)
    s.enable(True, strict=True)
    r = s.must(f"run {line}", timeout=600)
    s.enable(False)
    s.must("trace flush", timeout=120)
    cap = g.capture(since)
    ids = {p.id for p in s.probes}
    firings = sum(e.probe in ids for e in cap.events)
    return r, cap, firings, C.verify(cap.checks, sites_of(s.image, s.probes))


def _break_check(g, s, how: int) -> None:
    """tramp_check_broken through the stub: 1 breaks every check record,
    2 only a delay slot's restore's."""
    with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
        stub.halt()
        stub.write_identity(s.image.symbols["tramp_check_broken"], how.to_bytes(4, "big"))
        stub.detach()


def test_check_mode_reruns_every_trampoline_and_catches_a_broken_one(sparc64):
    with Guest(sparc64, label="tramp-check", gdbstub=True) as g:
        s = open_session(g)
        runs = [_checked(s, g, FORMS, "forms n=6"),
                _checked(s, g, "fbt:ct_*:entry,fbt:ct_*:return",
                         "calltree threads=2 iters=3")]
        _break_check(g, s, 1)
        broken = _checked(s, g, FORMS, "forms n=5")
        _break_check(g, s, 2)
        restore_broken = _checked(s, g, FORMS, "forms n=5")
        g.exit(0)
    for r, cap, firings, rep in runs:
        print(rep.summary())
        assert r.ok and rep.mismatches == [], rep.mismatches[:5]
        # One record a firing, and one more for each return whose delay
        # slot ran from its copy and stopped (a restore's too).
        assert rep.checked == len(cap.checks) == firings + rep.delay_slots, \
            (firings, rep.delay_slots, rep.summary())
        assert 0 < rep.delay_slots == rep.by_form.get("OOL", 0) + \
            rep.by_form.get("RESTORE", 0), rep.summary()
    forms = runs[0][3].by_form
    assert forms.get("SAVE") and forms.get("JMPL") and forms.get("RETURN"), forms
    assert forms.get("RESTORE"), forms          # fm_cti's ret; restore
    r, cap, firings, rep = restore_broken
    assert rep.mismatches and len(rep.mismatches) == rep.by_form.get("RESTORE"), \
        rep.summary()
    for m in rep.mismatches:
        assert "(delay slot) RESTORE" in m and "y: expected " in m and \
            m.count(": expected ") == 1, m
    r, cap, firings, rep = broken
    assert rep.checked == len(cap.checks) == len(rep.mismatches) > firings > 0, \
        (firings, rep.summary())
    for m in rep.mismatches:
        assert "y: expected " in m and m.count(": expected ") == 1, m
