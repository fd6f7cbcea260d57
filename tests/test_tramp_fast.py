"""The recording path of sparc64's tramp slots (tracer/arch/sparc64/
tramp_slots.S, tramp_fast.c): a plain probe's slot writes its ENTRY or
RETURN record itself, with no trap frame and no call. Its records must be
the C path's: the same workloads traced with every firing sent into C
(tramp_fast_off, set through the GDB stub) give the same records, word for
word (the threads' numbers and their stacks' bases aside, which each run
has its own of), in a sub-buffer (the shm channel, the session's) and in
a byte ring (virtio), over fib's `ret; restore %i5, %o0, %o0` and `return; nop` and
calltree's `return; srl %oN, 0, %o0` (a value from the site's %i, copied
by the slot) and the forms workload's (a leaf's `retl`, `ret; restore`
with an immediate; a site that takes the illtrap instead is left as it
is). A recording path that records the wrong register as the
return value (tramp_fast_broken) is caught: RETURN records differ in
their value (all but those whose value happens to be the stale register's)
and nothing else does."""

import pytest

import fastpaths

from bench import arches
from bench.guest.qemu import Guest
from bench.trace.session import open_session

ARCH = "sparc64"
SPEC = "fbt:fib:entry,fbt:fib:return,fbt:ct_*:entry,fbt:ct_*:return," \
       "fbt:fm_*:entry,fbt:fm_*:return"
RUNS = ("fib n=10", "calltree threads=1 iters=3 depth=3", "forms n=6")
ENTRY, RETURN = fastpaths.ENTRY, fastpaths.RETURN
SP = 1                  # WIRE_ENTRY_SP == WIRE_RETURN_SP
SB_ON = 112             # tramp.h's TRAMP_T_SB_ON


@pytest.fixture(scope="module")
def sparc64(built):
    built(ARCH)
    return arches.get(ARCH)


def _sub_buffers(g, s) -> bool:
    return fastpaths.sub_buffers(g, s, SB_ON)


def _traced(g, s):
    """Each run's records of the probes, thread and stack made relative
    to the run's first record: (kind, probe, words) each."""
    runs = []
    for events in fastpaths.probe_events(g, s, SPEC, "tramp", RUNS, 16 << 20, 600):
        order, base = {}, {}
        for e in events:                # threads in the order they appear
            order.setdefault(e.thread, len(order))
            base.setdefault(e.thread, e.words[SP])
        runs.append([(e.kind, e.probe, (order[e.thread], e.words[0],
                                        e.words[SP] - base[e.thread]) + e.words[2:])
                     for e in events])
    return runs


def _differences(a, b):
    assert len(a) == len(b), (len(a), len(b))
    return [(n, x, y) for n, (x, y) in enumerate(zip(a, b)) if x != y]


def test_recording_path_writes_the_c_paths_records_and_a_wrong_value_is_caught(sparc64):
    with Guest(sparc64, label="tramp-fast", gdbstub=True) as g:
        s = open_session(g)
        for channel in ("shm", "virtio"):       # sub-buffers, then the byte ring (put())
            s.must(f"channel {channel}")
            fast = _traced(g, s)
            fastpaths.poke(g, s, "tramp_fast_off", 1)
            slow = _traced(g, s)
            fastpaths.poke(g, s, "tramp_fast_off", 0)
            fastpaths.poke(g, s, "tramp_fast_broken", 1)
            broken = _traced(g, s)
            fastpaths.poke(g, s, "tramp_fast_broken", 0)
            assert _sub_buffers(g, s) == (channel == "shm"), channel
            _same_and_caught(fast, slow, broken)
        g.exit(0)


def _same_and_caught(fast, slow, broken):
    for f, c in zip(fast, slow):
        assert _differences(f, c) == []
        assert sum(k == RETURN and len(w) == 4 for k, _, w in f) == \
            sum(k == RETURN for k, _, _ in f) > 0          # every value known
    for f, b in zip(fast, broken):
        diff = _differences(f, b)
        returns = {n for n, (k, _, _) in enumerate(f) if k == RETURN}
        # The register it records holds one stale value (PSTATE's bits):
        # every return whose true value is another is caught.
        stale = {y[2][3] for _, _, y in diff}
        assert diff and {n for n, _, _ in diff} <= returns and len(stale) == 1, diff[:5]
        assert all(f[n][2][3] in stale for n in returns - {n for n, _, _ in diff})
        for n, x, y in diff:
            assert x[:2] == y[:2] and x[2][:3] == y[2][:3] and x[2][3] != y[2][3], (x, y)
