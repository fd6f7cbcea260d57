"""`make debug` unattended: gdb-multiarch in batch mode against a paused
guest (bench/debug/debugger.py), on every arch. The harness arms fib's probes and
runs fib while gdb breaks in the probe fire path three times, reads the
trap frame, and runs the tb extension's commands; their output is checked
against what the guest must hold at that moment. The trace channel shm
(the default) has `tb buffer` read the rings as sub-buffers, virtio as
the byte ring the drain empties: both must show the same records."""

import re
import shutil

import pytest

from bench import arches
from bench.debug import debugger as debug

pytestmark = pytest.mark.skipif(not shutil.which(debug.GDB),
                                reason=f"{debug.GDB} is not installed (make deps)")

SCRIPT = """\
break {fire}
continue
continue
continue
tb frame
tb probes
tb buffer 0
python
for bad in ("tb buffer 7", "tb buffer x", "tb frame 1"):
    try:
        gdb.execute(bad)
    except gdb.error as e:
        print("REFUSED", bad, "::", e)
end
delete
detach
"""


@pytest.mark.parametrize("channel", ["shm", "virtio"])
def test_gdb_batch_in_fire_path(arch, channel, built, tmp_path):
    built(arch)
    a = arches.get(arch)
    script = tmp_path / "session.gdb"
    script.write_text(SCRIPT.format(fire=a.fire_path))
    lines = []
    with debug.Debugger(a, probes="fbt:fib:entry,fbt:fib:return", run="fib n=6",
                        echo=lines.append, channel=channel) as d:
        res = d.run_batch(script, timeout=300)
        assert d.wait_driver(120), "the harness's run did not finish after detach"
    out = res.stdout
    print(out)
    print("\n".join(lines))
    assert res.returncode == 0, out
    assert d.outcome.error is None, d.outcome.error
    assert d.outcome.reply.message == "fib = 8", d.outcome.reply
    assert "trapbench gdb extension loaded" in out

    # Three stops in the fire path, each with its trap frame pointer.
    stops = re.findall(rf"Breakpoint 1, {a.fire_path} \(tf=(?:tf@entry=)?(0x[0-9a-f]+)", out)
    assert len(stops) == 3, out
    fib = next(p for p in d.outcome.probes if p.kind == "entry")
    returns = [p for p in d.outcome.probes if p.kind == "return"]
    assert fib.function == "fib" and returns

    # tb frame: the frame of the third stop, the trap, the site, the probe.
    # fib(6) recurses into fib(5), fib(4) first: three entries, two recorded.
    m = re.search(r"trap frame at (0x[0-9a-f]+) \((\d+) bytes\): (.*)", out)
    assert m and m.group(1) == stops[2], out
    if a.name == "i386":
        assert m.group(3).startswith("vector 3 #BP"), m.group(3)
        assert re.search(rf"eip +{fib.addr + 1:#x} <fib\+0x1>", out), out
        assert re.search(rf"site {fib.addr:#x} <fib> \(int3\)", out), out
    else:
        assert m.group(3) == "tt 0x10 illegal_instruction", m.group(3)
        assert re.search(rf"tpc +{fib.addr:#x} <fib>", out), out
        assert f"illtrap {fib.id}" in out, out
    assert re.search(rf"probe {fib.id}: entry of fib, enabled, mechanism "
                     rf"{a.default_mechanism}, 2 hits",
                     out), out

    # tb probes: every probe with its site, kind, state and hit count.
    rows = {int(r[0]): r for r in re.findall(
        r"^ +(\d+) +(0x[0-9a-f]+) <([^>]+)> +(\w+) +(\w+) +(\w+) +(\d+) +(\d+)$", out, re.M)}
    assert set(rows) == {p.id for p in d.outcome.probes}, out
    assert rows[fib.id][1:] == (f"{fib.addr:#x}", "fib", "entry", "enabled",
                                a.default_mechanism, "1", "2"), rows[fib.id]
    for p in returns:
        assert rows[p.id][3:5] == ("return", "enabled") and rows[p.id][7] == "0", rows[p.id]
    assert f"{len(rows)} probes, {len(rows)} enabled, 2 hits" in out

    # tb buffer 0: the counters and the two firings' records, decoded,
    # among the scheduler's SWITCH and IRQ records (written while a probe
    # records: docs/whole-kernel.md).
    m = re.search(r"cpu0: ring (\d+) bytes .* fired=(\d+) recorded=(\d+) dropped=0", out)
    assert m and m.group(2) == "2" and int(m.group(3)) >= 2, out
    # Under shm the one sub-buffer open holds them all; under virtio the
    # byte ring's head and tail.
    if channel == "shm":
        assert re.search(r"cpu0: ring \d+ bytes at 0x[0-9a-f]+ as \d+ sub-buffers .*\(shm\), "
                         r"write=0 consumed=0 discarded=0", out), out
        assert f"sub-buffer 0 (slot 0): open (being written), {m.group(3)} records" in out, out
    else:
        assert re.search(r"cpu0: ring \d+ bytes at 0x[0-9a-f]+, head=", out), out
    recs = re.findall(r"^  0x[0-9a-f]+ (pending|sent   ) t\d+ probe (\d+) entry "
                      r"cycles=\d+ -> fib\(n=(\d+)\)", out, re.M)
    assert [(int(p), int(n)) for _, p, n in recs] == [(fib.id, 6), (fib.id, 5)], out
    assert f"{m.group(3)} records:" in out, out

    # Bad input: a clear error, and the session goes on.
    assert "REFUSED tb buffer 7 :: tb buffer: cpu 7 has no trace ring" in out
    assert "REFUSED tb buffer x :: tb buffer: 'x' is not a CPU number" in out
    assert re.search(r"REFUSED tb frame 1 :: tb frame: '1' is a \w+, not a struct trapframe", out)
    assert "detached" in out


RETURNS_SCRIPT = """\
break kernel_main
continue
delete
set var *(unsigned *)&opt_fast_off = 1
break i386_opt_return
continue
continue
continue
continue
bt 3
set python print-stack full
tb returns
delete
detach
"""


def test_tb_returns_shows_the_real_addresses_behind_the_trampoline(built, tmp_path):
    """Under opt fib's returns ride on its entry: stopped in the trampoline's
    C half (its recording path switched off, opt_fast_off, once the kernel
    has cleared its BSS and before the probes are armed, so that a return
    goes there), gdb's backtrace names the
    trampoline, and `tb returns` lists the
    thread's open calls with their real return addresses, in fib or its
    caller (the verdict's `fib = 8` shows each one went back there)."""
    built("i386")
    a = arches.get("i386")
    script = tmp_path / "returns.gdb"
    script.write_text(RETURNS_SCRIPT)
    with debug.Debugger(a, probes="fbt:fib:entry,fbt:fib:return", run="fib n=6",
                        mechanism="opt", echo=lambda l: None) as d:
        res = d.run_batch(script, timeout=300)
        assert d.wait_driver(120), "the harness's run did not finish after detach"
    out = res.stdout
    print(out)
    assert res.returncode == 0 and d.outcome.error is None, out
    assert d.outcome.reply.message == "fib = 8", d.outcome.reply
    assert "opt_return_trampoline" in out, out
    m = re.search(r"thread \d+ \([^)]*\): (\d+) calls through the trampoline", out)
    assert m and int(m.group(1)) >= 1, out
    reals = re.findall(r"real 0x[0-9a-f]+ <([^>+]*)", out)
    assert reals and all(r in ("fib", "run_fib") for r in reals), reals
