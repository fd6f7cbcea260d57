"""A site wanted by two probes keeps one, and the other is noted, never
dropped silently (bench/trace/sites.py, taken()).

Theory of operation: workloads/shapes.c's shape_empty is one instruction
on both arches (i386 `ret`, sparc64 `retl` and its slot), so its entry and
return sites are the same address and the guest holds one probe per site.
The plan must keep the entry probe and note, for the return, the probe
that holds the site and that each entry is also a return. Over every
workload function of both images, each kind asked for either has a probe
of that function or a note naming the function: a probe left out with no
word fails the test.
"""

import pytest

from bench import arches
from bench.trace.image import load_image
from bench.trace.sites import plan


@pytest.fixture
def image(arch, built):
    built(arch)
    return load_image(arches.get(arch).elf())


def _mechanism(arch):
    return arches.get(arch).mechanisms[0]


def test_a_one_instruction_function_keeps_its_entry_and_notes_its_return(image, arch):
    f = image.functions["shape_empty"]
    assert f.insns[0].mnemonic in ("ret", "retl"), f.insns[:2]
    probes, notes = plan("fbt:shape_empty:entry,fbt:shape_empty:return", image,
                         _mechanism(arch))
    assert [(p.kind, p.addr) for p in probes] == [("entry", f.addr)]
    assert notes == [f"shape_empty: no return probe at {f.addr:#x}: the site holds "
                     "probe 0 (shape_empty entry) and takes one probe; shape_empty "
                     "is one instruction, so each of its entries is also a return"]


@pytest.mark.parametrize("spec", ["fbt:*:entry,fbt:*:return",
                                  "fbt:*:return,fbt:*:entry,branch:*"])
def test_every_kind_asked_has_a_probe_or_a_note(image, arch, spec):
    probes, notes = plan(spec, image, _mechanism(arch))
    kinds = [part.rsplit(":", 1)[-1] if part.startswith("fbt") else "branch"
             for part in spec.split(",")]
    got = {(p.function, p.kind) for p in probes}
    silent = []
    for f in image.workload_functions():
        for kind in kinds:
            if (f.name, kind) in got:
                continue
            if not any(n.startswith(f"{f.name}: ") and kind in n for n in notes):
                silent.append(f"{f.name} {kind}")
    assert not silent, "left out with no note: " + ", ".join(silent)
