"""--exec-count always ends, cleans up, and names what it leaves out
(bench/trace/execcount.py).

Theory of operation: the host half gives compare() a session of insn
probes and a stand-in for the twin (count), and holds what it compares
and what it says: i386's REP-prefixed sites are named as not compared,
with the reason; sparc64's `ldx [%i2+0x70],%i1` (f2 5e a0 70) is compared
like any other word, since the REP filter is i386's; a run's --timer-hz
above the kernel's default runs the twin at the default, and says so. The
guest half forces a timeout on a run too long for it (fib singlestepped,
3 s) and lists build/logs and /tmp before and after: the exec log and the
twin's directory must be gone (the guest's own .log, .serial and
.virtio, which the harness keeps for every guest, are the only new files), and so after
a run that ends well.
"""

import os
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import arches
from bench.errors import GuestTimeout
from bench.paths import LOG_DIR
from bench.trace import execcount
from bench.trace.image import load_image
from bench.trace.sites import Probe


def _session(arch, code_at: dict):
    probes = [Probe(i, "f", "insn", a, offset=i * 4) for i, a in enumerate(code_at)]
    image = SimpleNamespace(code=lambda a, n=8: code_at[a][:n], symbols={})
    return SimpleNamespace(probes=probes, image=image)


def _compare(monkeypatch, arch, code_at, firings, timer_hz=0):
    asked = {}

    def twin(arch_, addrs, line, symbols, smp=1, before=(), image=None, elf=None,
             timeout=600):
        asked.update(addrs=list(addrs), before=list(before), timeout=timeout)
        return Counter({a: firings[a] for a in addrs})
    monkeypatch.setattr(execcount, "count", twin)
    s = _session(arch, code_at)
    rep = SimpleNamespace(insns={p.id: firings[p.addr] for p in s.probes})
    equal, lines = execcount.compare(arch, s, rep, "fib n=3", 1, timer_hz, 42)
    return equal, lines, asked


def test_i386_rep_prefixed_sites_are_named_not_dropped(monkeypatch):
    i386 = arches.get("i386")
    code = {0x1000: b"\xf3\xa4", 0x1002: b"\x89\xc8", 0x1004: b"\xf2\xae"}
    equal, lines, asked = _compare(monkeypatch, i386, code, Counter({0x1002: 7}))
    assert equal and asked["addrs"] == [0x1002] and asked["timeout"] == 42
    notes = [ln for ln in lines if ln.startswith("note: ")]
    assert notes == [
        "note: exec-count: insn:f+0x0 at 0x1000 not compared: REP-prefixed (0xf3): "
        "singlestep logs each iteration, not each execution",
        "note: exec-count: insn:f+0x8 at 0x1004 not compared: REP-prefixed (0xf2): "
        "singlestep logs each iteration, not each execution"]
    assert lines[-1].endswith("1 equal, 0 differ, 2 not compared (notes above)")


def test_a_sparc64_word_starting_f2_is_compared(monkeypatch):
    sparc64 = arches.get("sparc64")
    code = {0x2000: bytes.fromhex("f25ea070"), 0x2004: bytes.fromhex("f35ea078")}
    firings = Counter({0x2000: 5, 0x2004: 5})
    equal, lines, asked = _compare(monkeypatch, sparc64, code, firings)
    assert equal and asked["addrs"] == [0x2000, 0x2004], lines
    assert not [ln for ln in lines if "not compared" in ln], lines
    firings[0x2000] = 6                          # the twin ran it once more
    rep_firings = Counter({0x2000: 5, 0x2004: 5})
    monkeypatch.setattr(execcount, "count", lambda *a, **k: firings)
    s = _session(sparc64, code)
    rep = SimpleNamespace(insns={p.id: rep_firings[p.addr] for p in s.probes})
    equal, lines = execcount.compare(sparc64, s, rep, "fib n=3", 1, 0, 42)
    assert not equal and "PROBLEM: insn:f+0x0: 5 firings, QEMU ran it 6 times" in lines


def test_a_fast_timer_is_slowed_in_the_twin_and_said(monkeypatch):
    code = {0x1002: b"\x89\xc8"}
    _, lines, asked = _compare(monkeypatch, arches.get("i386"), code,
                               Counter({0x1002: 1}), timer_hz=20000)
    assert asked["before"] == [f"timer {execcount.TWIN_TIMER_HZ}"]
    assert any(f"twin's timer at {execcount.TWIN_TIMER_HZ} Hz, not 20000" in ln
               for ln in lines), lines
    _, lines, asked = _compare(monkeypatch, arches.get("i386"), code,
                               Counter({0x1002: 1}), timer_hz=50)
    assert asked["before"] == ["timer 50"] and not any("twin's timer" in ln for ln in lines)


GUEST_LOGS = ("log", "serial", "virtio")      # the harness keeps these for every guest


def _listing():
    logs = set(LOG_DIR.iterdir()) if LOG_DIR.exists() else set()
    return logs, set(Path("/tmp").glob("tbexec-*"))


def _left_behind(before, after):
    # Only this process's guests: a test run in parallel writes its own
    # logs into the same directory (qemu.py names each by its pid).
    mine = f"-{os.getpid()}-"
    new_logs = {p for p in after[0] - before[0] if mine in p.name}
    kept = {p for p in new_logs if p.name.endswith(tuple(f"-execcount.{x}" for x in GUEST_LOGS))}
    return sorted(map(str, new_logs - kept)) + sorted(map(str, after[1] - before[1]))


@pytest.fixture(scope="module")
def i386_fib(built):
    built("i386")
    arch = arches.get("i386")
    return arch, load_image(arch.elf()).functions["fib"]


def test_a_forced_timeout_leaves_no_file_behind(i386_fib):
    arch, fib = i386_fib
    before = _listing()
    with pytest.raises(GuestTimeout):
        execcount.count(arch, [fib.addr], "fib n=30", {}, timeout=3)
    after = _listing()
    assert not _left_behind(before, after), _left_behind(before, after)


def test_a_run_that_ends_leaves_no_file_behind(i386_fib):
    arch, fib = i386_fib
    before = _listing()
    counts = execcount.count(arch, [fib.addr], "fib n=5", {}, timeout=120)
    after = _listing()
    assert counts[fib.addr] == 15                  # 2 * fib(6) - 1 calls
    assert not _left_behind(before, after), _left_behind(before, after)
