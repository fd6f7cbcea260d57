"""Reasons arrive whole: a refusal's text is never cut at a buffer's end.

Theory of operation: every buffer a reason is written into is sized by
WIRE_MAX_REASON (wire.h), and the kernel's REPLY buffer holds a command
line's length plus that, so a refusal's prefix ("refused: probe N at ADDR,
mechanism M: ") and its reason both fit. The host half scans tracer/ and
guest-kernel/ for a reason buffer of any other, literal size (the old
`char why[128]` cut `...the jmp needs 5 byte`). The guest half asks i386's
opt mechanism for an entry probe at shape_calls_first, whose first five
bytes hold a call: refused, with a reason well past 127 characters, and
the reply's message is held against the whole sentence.
"""

import re
from pathlib import Path

import pytest

from bench import arches
from bench.guest.qemu import Guest
from bench.trace.image import load_image
from bench.wire import frames

REPO = Path(__file__).resolve().parent.parent
REASON_BUFFER = re.compile(r"\bchar\s+(?:\w+\[\w+\]\s*,\s*)*"
                           r"(why|other|why_buf|reason|note)\[(\d+)\]")


def test_no_reason_buffer_has_a_literal_size():
    found = []
    for tree in ("tracer", "guest-kernel"):
        for f in sorted((REPO / tree).rglob("*.[ch]")):
            for n, line in enumerate(f.read_text().splitlines(), 1):
                for m in REASON_BUFFER.finditer(line):
                    found.append(f"{f.relative_to(REPO)}:{n}: {m.group(0)}")
    assert not found, "reason buffers not sized by WIRE_MAX_REASON:\n" + "\n".join(found)


def test_the_reply_holds_a_whole_reason():
    limit = frames.WIRE.const("WIRE_MAX_REASON")
    assert limit >= 256
    assert frames.MAX_PAYLOAD >= frames.MAX_COMMAND + limit


def _call_in_the_jmps_bytes(f):
    """The offset of the call among the bytes opt's jmp would displace."""
    off = 0
    for insn in f.insns:
        if off >= 5:
            break
        if insn.raw[:1] == b"\xe8":
            return off
        off += len(insn.raw)
    return None


@pytest.fixture(scope="module")
def i386_image(built):
    built("i386")
    return load_image(arches.get("i386").elf())


def test_a_long_refusal_arrives_whole(i386_image):
    f = i386_image.functions["shape_calls_first"]      # workloads/shapes.c
    off = _call_in_the_jmps_bytes(f)
    assert off is not None, f"no call in {f.name}'s first 5 bytes: {f.insns[:3]}"
    with Guest(arches.get("i386"), label="reasons") as g:
        assert g.command("probe mechanism opt").ok
        assert g.command(f"probe add 0 {f.addr:#x} entry 0").ok
        r = g.command("probe enable 0")
    assert not r.ok
    want = (f"refused: probe 0 at {f.addr:#x}, mechanism opt: byte +{off} (opcode "
            "0xe8): not on opt's list of relocatable instructions; the jmp needs 5 "
            "bytes of whole relocatable instructions")
    assert len(want) > 127
    assert r.message == want, f"\n got: {r.message!r}\nwant: {want!r}"
