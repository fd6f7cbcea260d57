"""The recording path of i386's opt (tracer/arch/i386/opt_fast.S, the
return trampoline's in opt_return.S, opt_fast.c): a plain entry probe's
detour and a riding return probe's trampoline write their ENTRY and
RETURN records themselves, with no trap frame and no call into C. Their
records must be the C path's: the same workloads traced with every
record sent into C (opt_fast_off, set through the GDB stub) give the same
records, word for word (threads numbered in the order they appear, stack
addresses relative to each thread's first record's sp: each run has
stacks of its own), in a sub-buffer (the shm channel) and in a byte ring
(virtio), over fib, calltree on one thread and calltree on four threads
over four CPUs (each thread's records compared as a sequence). A
recording path that records edx as a return's value (opt_fast_broken)
is caught: RETURN records differ in their value word (all but those whose
eax happened to equal edx) and nothing else does."""

import pytest

import fastpaths

from bench import arches
from bench.guest.qemu import Guest
from bench.trace.session import open_session

ARCH = "i386"
SPEC = "fbt:fib:entry,fbt:fib:return,fbt:ct_*:entry,fbt:ct_*:return"
RUNS = ("fib n=10", "calltree threads=1 iters=3 depth=3",
        "calltree threads=4 iters=3 depth=3")
ENTRY, RETURN = fastpaths.ENTRY, fastpaths.RETURN
SP, VALUE = 1, 2        # WIRE_ENTRY_SP == WIRE_RETURN_SP; WIRE_RETURN_VALUE
SB_ON = 96              # opt_fast.h's OPT_T_SB_ON
NEAR = 1 << 16          # a word this near a thread's sp is a stack address


@pytest.fixture(scope="module")
def i386(built):
    built(ARCH)
    return arches.get(ARCH)


def _fast_records(g, s) -> int:
    """Records the recording paths wrote so far (opt_fast_recorded, 4 CPUs)."""
    raw = fastpaths.peek(g, s, "opt_fast_recorded", 0, 16)
    return sum(int.from_bytes(raw[i:i + 4], "little") for i in range(0, 16, 4))


def _sub_buffers(g, s) -> bool:
    return fastpaths.sub_buffers(g, s, SB_ON)


def _word(w, base):
    return ("sp", w - base) if abs(w - base) < NEAR else w


def _traced(g, s):
    """Each run's records of the probes: one sequence per thread, of
    (kind, probe, words) with stack addresses relative, the sequences
    sorted (which thread ran which part of a run is the scheduler's)."""
    runs = []
    for events in fastpaths.probe_events(g, s, SPEC, "opt", RUNS, 4 << 20, 300):
        threads = {}
        for e in events:
            seq = threads.setdefault(e.thread, [])
            base = threads[e.thread][0][3] if seq else e.words[SP]
            seq.append((e.kind, e.probe, tuple(_word(w, base) for w in e.words), base))
        runs.append(sorted(([(k, p, w) for k, p, w, _ in seq] for seq in threads.values()),
                           key=repr))
    return runs


def _flat(run):
    return [r for seq in run for r in seq]


def _differences(a, b):
    a, b = _flat(a), _flat(b)
    assert len(a) == len(b), (len(a), len(b))
    return [(n, x, y) for n, (x, y) in enumerate(zip(a, b)) if x != y]


def test_recording_path_writes_the_c_paths_records_and_a_wrong_value_is_caught(i386):
    with Guest(i386, label="opt-fast", gdbstub=True, smp=4) as g:
        s = open_session(g)
        for channel in ("shm", "virtio"):       # sub-buffers, then the byte ring (put())
            s.must(f"channel {channel}")
            before = _fast_records(g, s)
            fast = _traced(g, s)
            taken = _fast_records(g, s) - before
            fastpaths.poke(g, s, "opt_fast_off", 1)
            slow = _traced(g, s)
            assert _fast_records(g, s) - before == taken    # off: none
            fastpaths.poke(g, s, "opt_fast_off", 0)
            fastpaths.poke(g, s, "opt_fast_broken", 1)
            broken = _traced(g, s)
            fastpaths.poke(g, s, "opt_fast_broken", 0)
            assert _sub_buffers(g, s) == (channel == "shm"), channel
            # Nearly every record took the path: all but a thread's first
            # call (its shadow stack claimed in C), a flush's first record
            # into a new sub-buffer, a ring's wrap or kick.
            records = sum(len(_flat(r)) for r in fast)
            assert records * 0.9 <= taken <= records, (taken, records)
            _same_and_caught(fast, slow, broken)
        g.exit(0)


def _same_and_caught(fast, slow, broken):
    for f, c in zip(fast, slow):
        assert _differences(f, c) == []
    for f, b in zip(fast, broken):
        diff = _differences(f, b)
        flat = _flat(f)
        returns = {n for n, (k, _, _) in enumerate(flat) if k == RETURN}
        assert diff and {n for n, _, _ in diff} <= returns, diff[:5]
        for n, x, y in diff:
            assert x[:2] == y[:2] and x[2][:VALUE] == y[2][:VALUE] and \
                x[2][VALUE + 1:] == y[2][VALUE + 1:] and x[2][VALUE] != y[2][VALUE], (x, y)
