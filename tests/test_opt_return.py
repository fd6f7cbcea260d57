"""Returns with no trap under i386's `opt` (tracer/arch/i386/opt_return.c):
each return probe rides on its function's entry probe, whose firing puts
the return trampoline in the return address's slot and keeps the real
address on the thread's shadow stack.

Theory of operation: tests/workloads/retaddr.c reads its own return
addresses (__builtin_return_address and __builtin_frame_address up to three
levels) through retaddr.h's return_address_real and hashes them; the hash
must be the same probed and unprobed, while the raw words (raw=1) differ
when probed: the trampoline is there, and only a reader that maps it back
sees the real addresses. `probe ride` alone gives the guest's counts of
trampolined calls, fallbacks to the return site's int3 (a full shadow
stack) and abandoned frames. Threads that exit with calls open must leave
their shadow stacks to the threads after them."""

import re

import pytest

from bench import arches
from bench.guest import build
from bench.guest.qemu import Guest
from bench.trace import stress
from bench.trace.session import open_session
from bench.trace.verify import verify

WORKLOAD = "tests/workloads/retaddr.c"
SPEC = "fbt:ra_*:entry,fbt:ra_*:return"
DEPTH = 64                      # OPT_RETURN_DEPTH (opt_return.h)


@pytest.fixture(scope="module")
def i386(built):
    built("i386")
    return arches.get("i386")


@pytest.fixture(scope="module")
def image(i386):
    return build.user_image(i386, WORKLOAD)


def _value(reply) -> int:
    assert reply.ok, reply.message
    return int(reply.message.split("= ")[1].split()[0])


def _stats(s) -> dict:
    msg = s.must("probe ride").message
    return {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", msg)}


def _traced(i386, image, runs, mechanism="opt"):
    """Each run line traced under SPEC; then the same lines unprobed in the
    same boot. Returns (probed replies, unprobed replies, stats, report)."""
    with Guest(i386, label="opt-return", image=image) as g:
        s = open_session(g)
        s.setup(SPEC, mechanism)
        s.enable(True, strict=True)
        probed = [s.must(f"run {r}") for r in runs]
        stats = _stats(s)
        s.enable(False)
        cap = s.finish()
        unprobed = [g.command(f"run {r}") for r in runs]
        g.exit(0)
    return probed, unprobed, stats, verify(cap, s.probes, g.link_errors)


def test_the_return_trampoline_is_invisible(i386, image):
    runs = ["retaddr depth=3", "retaddr depth=3 raw=1"]
    (real, raw), (real0, raw0), stats, rep = _traced(i386, image, runs)
    assert "(WRONG)" not in real.message
    assert _value(real) == _value(real0), (real.message, real0.message)
    # The words as read are the trampoline's: a reader that does not map
    # them would see other addresses (this is what the mapping hides).
    assert _value(raw) != _value(raw0) and _value(raw0) == _value(real0)
    calls = sum(rep.entries.values())
    assert stats["trampolined"] == calls > 0 and stats["fallbacks"] == 0, stats
    assert sum(rep.returns.values()) == calls == rep.nesting_checked, rep
    assert rep.ok, rep.problems


def test_other_mechanisms_have_no_rides(i386, image):
    probed, _, stats, rep = _traced(i386, image, ["retaddr depth=3"], "int3")
    assert stats["trampolined"] == 0 and rep.ok, rep.problems


def test_a_full_shadow_stack_falls_back_to_the_return_sites_int3(i386, image):
    # ra_top, depth + 1 ra_mid and ra_leaf open at once: past DEPTH.
    runs = [f"retaddr depth={DEPTH + 10}"]
    (real,), (real0,), stats, rep = _traced(i386, image, runs)
    assert _value(real) == _value(real0)
    assert stats["fallbacks"] > 0 and stats["trampolined"] > 0, stats
    assert rep.ok, rep.problems
    assert rep.entries == rep.returns and rep.nesting_checked == sum(rep.entries.values())


def test_threads_that_exit_with_calls_open_leave_their_shadow_stacks(i386, image):
    # More threads than there are shadow stacks (OPT_RETURN_STACKS, 64),
    # each gone with 4 calls open: a stack not taken back would make the
    # later ones fall back.
    with Guest(i386, label="opt-return-exit", image=image) as g:
        s = open_session(g)
        s.setup("fbt:ra_gone:entry,fbt:ra_gone:return," + SPEC, "opt", strict=False)
        s.enable(True, strict=True)
        assert _value(s.must("run retaddr depth=3 exiters=100")) == 100
        after = s.must("run retaddr depth=3")
        stats = _stats(s)
        s.enable(False)
        s.finish()
        before = g.command("run retaddr depth=3")
        g.exit(0)
    assert stats["trampolined"] >= 400 and stats["fallbacks"] == 0, stats
    assert _value(after) == _value(before)


@pytest.mark.parametrize("kind", ["lossless", "toggle"])
def test_lossless_and_toggled_with_returns_riding(i386, kind):
    if kind == "lossless":
        res = stress.lossless(i386, "opt", smp=2, threads=4, iters=150,
                              on_line=lambda l: None)
        rep = res.report
        assert res.result_ok and res.missed == 0 and rep.dropped == 0, rep.problems
        assert rep.ok and rep.nesting_checked > 0, rep.problems
        for f in ("ct_root", "ct_rec", "ct_add", "ct_mul"):
            assert rep.entries[f] == rep.returns[f] == rep.expected[f] > 0
    else:
        res = stress.toggle_stress(i386, "opt", smp=2, threads=4, iters=50000,
                                   toggles=40, on_line=lambda l: None)
        assert res.result_ok and res.report.dropped == 0
        assert res.nesting_checked > 0 and not res.nesting_errors, res.nesting_errors[:3]


def test_toggled_in_check_mode_every_trap_has_its_check_record(i386):
    """opt armed and disarmed in check mode while calltree runs: every
    copy run is re-run in unicorn with no mismatch, and there is a CHECK
    record for each recorded firing and for each trap the guest counted
    late (taken as its probe was being disarmed: the instruction still
    runs, no firing is recorded), none more, none fewer. Counting only
    the firings (as `bench toggle --check` once did) misses by the late
    traps: the full-group cell failed on it."""
    res = stress.toggle_stress(i386, "opt", smp=2, threads=4, iters=8000,
                               toggles=8, on_line=lambda l: None, check=True)
    assert res.result_ok and res.report.dropped == 0
    assert res.check.checked and not res.check.mismatches, res.check.mismatches[:3]
    assert res.late > 0, "no trap met a disarm: the relation below went untested"
    assert res.check_records == res.firings + res.late, \
        (res.check_records, res.firings, res.late)


def _hits(g) -> dict:
    """probe id -> hits, from `probe list`."""
    out = {}
    for line in g.command("probe list").text:
        m = re.match(r"probe (\d+) .*\bhits=(\d+)", line)
        if m:
            out[int(m.group(1))] = int(m.group(2))
    return out


def test_null_firings_ride_in_the_detour_and_trampoline_and_count_exactly(i386):
    """calltree's entries and returns with the null action on preempted
    threads on two CPUs: a riding entry trampolines its call in its slot
    (opt_detour.S's opt_ride_template) and the trampoline counts the
    return itself (opt_return.S), no C either way. Every entry's and
    every return's hits equal the workload's calls, every probe's hits
    equal the same run's with the record action (which goes to C both
    ways), and every call was trampolined: a counting path that lost a
    count, counted twice, or left a frame on the shadow stack shows."""
    with Guest(i386, label="opt-return-null", smp=2) as g:
        s = open_session(g)
        assert g.command("timer 20000").ok
        got = {}
        for action in ("null", "record"):
            s.must("trace reset")
            s.must("probe clear")
            s.setup(stress.LOSSLESS_FUNCS, "opt", strict=False)
            s.must(f"probe action all {action}")
            since = len(g.trace_frames)
            before = _stats(s)
            s.enable(True)
            r = s.cmd("run calltree threads=4 iters=40 depth=4")
            s.enable(False)
            assert r.ok, r.message
            after = _stats(s)
            got[action] = (_hits(g), g.capture(since).expects,
                           {k: after[k] - before[k] for k in after})
        g.exit(0)
    hits, expects, rides = got["null"]
    by_addr = {(p.function, p.kind): p.id for p in s.probes}
    calls = 0
    for f in ("ct_root", "ct_rec", "ct_mid", "ct_add", "ct_mul"):
        entry = by_addr[(f, "entry")]
        assert hits[entry] == expects[f] > 0, (f, hits[entry], expects[f])
        rets = sum(hits[p.id] for p in s.probes if p.function == f and p.kind == "return")
        assert rets == expects[f], (f, rets, expects[f])
        calls += expects[f]
    assert rides["fallbacks"] == rides["abandoned"] == 0, rides
    assert rides["trampolined"] >= calls, (rides, calls)
    full = got["record"][0]
    differ = {pid: (hits[pid], full[pid]) for pid in hits if hits[pid] != full[pid]}
    assert not differ and set(hits) == set(full), differ
