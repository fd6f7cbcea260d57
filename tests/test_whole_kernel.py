"""Every function of the kernel, entries and returns (DTrace's `fbt:::`),
in a guest: the run exits 0 with `0 broken`, SWITCH records seen, every
function's calls ending as entries = returns + open, every firing
recorded, dropped or missed. Then a probe hit inside a firing, made on
demand (tracer/core/selftest_reentry.c, its flags set through QEMU's GDB
stub): counted as missed, and, with reentry_broken, swallowed — which the
accounting must catch."""

import re

import pytest

from bench import arches, cli
from bench.debug import rsp
from bench.guest.qemu import Guest
from bench.trace import sites
from bench.trace.image import load_image
from bench.trace.session import open_session
from bench.trace.verify import verify

WHOLE = "fbt:kernel:*:entry,fbt:kernel:*:return"


@pytest.mark.parametrize("arch_name,smp", [("i386", 1), ("i386", 2), ("sparc64", 1)])
def test_the_whole_kernel_traced_nests_and_every_call_ends(built, capsys, arch_name,
                                                            smp):
    built(arch_name)
    rc = cli.main(["run", "--arch", arch_name, "--smp", str(smp), "--probes", WHOLE,
                   "--run", "calltree threads=4 iters=20", "--buffer", "4194304",
                   "--limit", "0"])
    out = capsys.readouterr().out
    tail = "\n".join(l for l in out.splitlines() if "not checked" not in l)[-3000:]
    assert rc == 0 and "PROBLEM" not in out, tail
    checked = re.search(r"nesting: (\d+) returns checked, .*?(\d+) broken", out)
    assert checked and int(checked[1]) > 1000 and checked[2] == "0", tail
    calls = re.search(r"calls: (\d+) entries = (\d+) returns \+ (\d+) open .*?; "
                      r"(\d+) SWITCH records, (\d+) interrupt frames", out)
    assert calls, tail
    entries, returns, still, switches, _ = (int(x) for x in calls.groups())
    assert entries == returns + still and switches >= 8, calls[0]
    assert "UNBALANCED" not in out, tail
    # schedule's calls left open are named by thread.
    row = next(l for l in out.splitlines() if re.match(r"\s+schedule\s+\d+ entries =", l))
    assert re.search(r"open \((t\d+ \d+(, )?)+", row), row
    # Every firing is a record: none missed, none dropped.
    assert re.search(r"traced=(\d+) fired=\1 missed=0 dropped=0", out), tail


def test_a_kernel_symbol_no_probe_may_take_is_refused_with_its_reason(built):
    built("sparc64")
    image = load_image(arches.get("sparc64").elf())
    with pytest.raises(sites.SpecError) as e:
        sites.plan("fbt:prom_fatal:entry", image, "emulate")
    assert "refused: prom_fatal is a function in .prom, outside the kernel's .text" \
        in str(e.value), str(e.value)
    _, notes = sites.plan("fbt:kernel:*:entry", image, "emulate")
    assert any(n.startswith("prom_fatal: no entry probe: refused: ") for n in notes)
    with pytest.raises(sites.SpecError, match="unknown symbol"):
        sites.plan("fbt:no_such_function:entry", image, "emulate")


def _set(g, image, name, value):
    with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
        stub.halt()
        stub.write_memory(image.symbols[name], value.to_bytes(4, "little"))
        stub.detach()


def _reentrant_run(built, flags):
    """calltree under probes on ct_* and on reentry_probe_point, with the
    guest's flags set through the GDB stub after arming."""
    built("i386")
    with Guest(arches.get("i386"), label="reentry", gdbstub=True) as g:
        s = open_session(g)
        s.setup("fbt:ct_*:entry,fbt:ct_*:return,fbt:reentry_probe_point:entry", "int3",
                buffer_bytes=1 << 20)
        s.enable(True)
        for name in flags:
            _set(g, s.image, name, 1)
        armed = s.arm_window()
        r = s.cmd("run calltree threads=2 iters=10")
        window = (armed, s.disarm_window())
        cap = s.finish()
        g.exit(0)
    rep = verify(cap, s.probes, g.link_errors, refused=s.refused, window=window)
    point = next(p for p in s.probes if p.function == "reentry_probe_point")
    return r, cap, rep, point


def test_a_hit_inside_a_firing_is_missed_and_a_swallowed_one_is_caught(built):
    r, cap, rep, point = _reentrant_run(built, ["reentry_test"])
    recorded = sum(e.probe != point.id for e in cap.events)
    # Every recorded firing called reentry_probe_point inside itself: each
    # of those hits is missed, counted per CPU and per probe, never recorded.
    assert r.ok and rep.ok, rep.problems
    assert rep.nmissed == recorded > 100, (rep.nmissed, recorded)
    assert cap.probe_counts[point.id]["missed"] == recorded
    assert not any(e.probe == point.id for e in cap.events)
    # Swallowed: the same hits, neither recorded nor counted.
    r2, cap2, rep2, _ = _reentrant_run(built, ["reentry_test", "reentry_broken"])
    assert r2.ok and rep2.nmissed == 0
    unaccounted = [p for p in rep2.problems if "unaccounted" in p or "hits, but" in p]
    assert unaccounted, rep2.problems
