"""Per-CPU hit counts (tracer/core/hits.c): each CPU counts its firings of
a probe in a row of its own and `probe list` reports the sum, with each
CPU's share in `cpus=`. A 2-CPU i386 boot per mechanism that counts in a
path of its own (int3's trap hook, opt's detour): calltree on 4 threads
pinned two to a CPU (spread=1) with null-action probes on its entries,
every count against the workload's own (EXPECT frames) and each CPU's
fired count against its share, both CPUs having fired; then a maximum
hit count on two CPUs, whose hit ordinals are shared: exactly maxhits
firings act, the rest count in `over`."""

import re

import pytest

from bench import arches
from bench.guest.qemu import Guest
from bench.trace.image import load_image

ARCH = "i386"
FUNCS = ["ct_root", "ct_mid", "ct_rec", "ct_add", "ct_mul"]


@pytest.fixture(scope="module")
def image(built):
    built(ARCH)
    return load_image(arches.get(ARCH).elf())


def listing(g):
    out = {}
    for line in g.command("probe list").text:
        m = re.match(r"probe (\d+) ", line)
        if m:
            out[int(m.group(1))] = dict(re.findall(r"(\w+)=([\w,]+)", line))
    return out


# int3 counts in its trap hook (tracer_fire_count); opt's detour counts a
# null probe in assembly (opt_detour.S), a second copy of the same count.
@pytest.mark.parametrize("mechanism", ["int3", "opt"])
def test_hits_are_counted_per_cpu_and_summed(image, mechanism):
    with Guest(ARCH, smp=2, label=f"hits-per-cpu-{mechanism}") as g:
        g.wait_ready()
        assert g.command(f"probe mechanism {mechanism}").ok
        for i, f in enumerate(FUNCS):
            assert g.command(f"probe add {i} {image.functions[f].addr:#x} entry 0").ok
        assert g.command("probe action all null").ok
        assert g.command("probe enable all").ok
        since = len(g.trace_frames)
        r = g.command("run calltree threads=4 iters=40 spread=1")
        assert r.ok, r.message
        assert g.command("probe disable all").ok
        assert g.command("trace stats").ok
        cap = g.capture(since)
        want = cap.expects
        rows = listing(g)
        for i, f in enumerate(FUNCS):
            c = rows[i]
            cpus = [int(x) for x in c["cpus"].split(",")]
            assert len(cpus) == 2 and sum(cpus) == int(c["hits"]), (f, c)
            assert int(c["hits"]) == want[f], (f, c, want[f])
        # Each CPU's count of its firings is each CPU's share of the hits.
        for k in (0, 1):
            share = sum(int(rows[i]["cpus"].split(",")[k]) for i in range(len(FUNCS)))
            assert cap.stats[k]["fired"] == share, (k, cap.stats[k], rows)
        # Both CPUs fired (spread=1 pins two threads to each): the rows
        # are separate and both are read.
        assert all(sum(int(rows[i]["cpus"].split(",")[k]) for i in range(5)) > 0
                   for k in (0, 1)), rows

        # A maximum across CPUs: the ordinal is shared (gate.c), so exactly
        # maxhits firings are below it, whichever CPU made them.
        assert g.command("trace reset").ok
        assert g.command("probe maxhits 4 50").ok
        assert g.command("probe enable 4").ok
        assert g.command("run calltree threads=4 iters=40").ok
        g.command("probe disable all")
        c = listing(g)[4]
        hits, over = int(c["hits"]), int(c["over"])
        assert hits > 50 and over == hits - 50, c
        assert c["cpus"] == "0,0", c        # a gated probe counts in its gate
        g.exit(0)
