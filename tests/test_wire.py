"""The wire format: the host reads the same header the guest compiles, the
C framing and the Python deframer agree byte for byte, and every kind of
line damage is detected and survived."""

import subprocess

import pytest

from bench.wire import cdefs, records
from bench.wire import frames as wire
from bench.check.hostc import OUT, build

EMIT = ["tests/c/frame_emit.c", "tracer/core/frame.c"]


@pytest.fixture(scope="module")
def emit():
    exe = build("frame_emit", EMIT)
    return lambda *args: subprocess.run([str(exe), *args], check=True,
                                        capture_output=True).stdout


def _layout_program(structs) -> str:
    """C that prints, for every struct and field the host read, the
    compiler's offset and size — so the check lists nothing by hand."""
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "wire.h"',
             "int main(void)", "{"]
    for name, s in structs.items():
        lines.append(f'\tprintf("{name} sizeof %zu\\n", sizeof(struct {name}));')
        for f in s.fields:
            lines.append(f'\tprintf("{name} {f.name} %zu %zu\\n", '
                         f"offsetof(struct {name}, {f.name}), "
                         f"sizeof(((struct {name} *)0)->{f.name}));")
    return "\n".join(lines + ["\treturn 0;", "}", ""])


def test_struct_layout_matches_the_c_compiler():
    OUT.mkdir(parents=True, exist_ok=True)
    src = OUT / "wire_layout.c"
    src.write_text(_layout_program(wire.WIRE.structs))
    out = subprocess.run([str(build("wire_layout", [src]))], check=True,
                         capture_output=True, text=True).stdout
    c_layout = {}
    for line in out.splitlines():
        parts = line.split()
        if parts[1] == "sizeof":
            c_layout[(parts[0], "sizeof")] = int(parts[2])
        else:
            c_layout[(parts[0], parts[1])] = (int(parts[2]), int(parts[3]))
    py_layout = {}
    for name, s in wire.WIRE.structs.items():
        py_layout[(name, "sizeof")] = s.size
        for f in s.fields:
            py_layout[(name, f.name)] = (f.offset, cdefs._TYPES[f.ctype][0] * f.count)
    assert "wire_frame_header" in wire.WIRE.structs
    assert py_layout == c_layout


def test_record_slots_and_kinds_come_from_the_header():
    assert (records.ENTRY.PC, records.ENTRY.SP, records.ENTRY.ARG0) == (0, 1, 2)
    assert records.RETURN.VALUE == 2 and records.BRANCH.FLAGS == 2
    assert records.BRANCH_BITS.TAKEN == 1 and records.BRANCH_BITS.ANNULLED == 2
    assert records.PROBE_KINDS == {"entry": records.K_ENTRY,
                                   "return": records.K_RETURN,
                                   "branch": records.K_BRANCH,
                                   "insn": records.K_INSN}
    assert (records.INSN.PC, records.INSN.SP) == (0, 1)


def test_tables_are_read_whole():
    assert wire.FRAME_NAMES[wire.T_HELLO] == "HELLO"
    assert set(wire.REPLY_NAMES.values()) >= {"OK", "UNKNOWN", "BAD_ARGS",
                                             "TOO_LONG", "FAILED"}
    assert wire.MAGIC == b"\xd5\x7e"


def test_header_reader_reads_symbolic_values_and_more_columns():
    h = cdefs.parse('#define F_A 0x1\n#define F_B 4\n'
                    '#define T(X) X(A, 0, "a", "the a") X(B, F_A | F_B, "b", "the b") '
                    'X(C, F_B + 2, "c")')
    assert [(e.name, e.value, e.meaning, e.more) for e in h.table("T")] == [
        ("A", 0, "a", ("the a",)), ("B", 5, "b", ("the b",)), ("C", 6, "c", ())]


def test_header_reader_refuses_what_it_cannot_read():
    with pytest.raises(cdefs.CdefsError, match="not of the form"):
        cdefs.parse('#define T(X) X(A, 1, "a") X(B 2 "b")')
    with pytest.raises(cdefs.CdefsError, match="not a number or known constants"):
        cdefs.parse('#define T(X) X(A, 1, "a") X(B, TWO, "b")')
    with pytest.raises(cdefs.CdefsError, match="fixed-width"):
        cdefs.parse("struct s { int x; };")
    with pytest.raises(cdefs.CdefsError, match="padding"):
        cdefs.parse("struct s { uint8_t a; uint32_t b; };")


def test_c_frames_decode_exactly(emit):
    stream = emit("frames", "50")
    d = wire.Deframer()
    items = d.feed(stream) + d.finish()
    assert [i.payload for i in items] == [b"frame %d" % i for i in range(50)]
    assert [i.seq for i in items] == list(range(50))
    assert stream == b"".join(wire.encode(wire.T_TEXT, i, b"frame %d" % i)
                              for i in range(50))


def test_byte_at_a_time_feeding(emit):
    stream = emit("frames", "5")
    d = wire.Deframer()
    items = [x for b in stream for x in d.feed(bytes([b]))] + d.finish()
    assert [i.seq for i in items] == [0, 1, 2, 3, 4]


def _frames(n):
    return [wire.encode(wire.T_TEXT, i, b"payload %d" % i) for i in range(n)]


def _decode(stream, name="serial"):
    d = wire.Deframer(stream=name)
    return d.feed(stream) + d.finish()


# Each stream (the 16550, the virtio port) has its own deframer; damage on
# either is found the same way, and its errors say which stream.
STREAMS = ["serial", "virtio"]


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("where", [0, 1, 3, 5, 9, 12, 15])
def test_corrupted_byte_loses_one_frame_and_resyncs(where, name):
    f = _frames(4)
    bad = bytearray(f[1])
    bad[where] ^= 0x5a
    items = _decode(f[0] + bytes(bad) + f[2] + f[3], name)
    frames = [i for i in items if isinstance(i, wire.Frame)]
    errors = [i for i in items if isinstance(i, wire.LinkError)]
    assert [fr.seq for fr in frames] == [0, 2, 3]
    gaps = [e for e in errors if e.kind == "gap"]
    assert len(gaps) == 1 and gaps[0].count == 1
    assert any(e.kind in ("crc", "junk") for e in errors), errors
    assert {e.stream for e in errors} == {name}, errors


@pytest.mark.parametrize("name", STREAMS)
def test_dropped_frames_are_counted(name):
    f = _frames(10)
    items = _decode(b"".join(f[:3] + f[7:]), name)
    gaps = [i for i in items if isinstance(i, wire.LinkError) and i.kind == "gap"]
    assert len(gaps) == 1 and gaps[0].count == 4
    assert "expected seq 3, got 7" in str(gaps[0])
    assert gaps[0].stream == name
    assert ("on virtio" in str(gaps[0])) == (name == "virtio")


def test_garbage_between_frames_is_skipped_and_reported():
    f = _frames(3)
    items = _decode(b"\x00boot noise\xd5" + f[0] + b"\xd5\x7e\x07junk" + f[1] + f[2])
    assert [i.seq for i in items if isinstance(i, wire.Frame)] == [0, 1, 2]
    junk = [i for i in items if isinstance(i, wire.LinkError) and i.kind == "junk"]
    assert sum(j.count for j in junk) == len(b"\x00boot noise\xd5") + len(b"\xd5\x7e\x07junk")
    assert not [i for i in items if isinstance(i, wire.LinkError) and i.kind != "junk"]


def test_impossible_length_is_damage_not_a_wait():
    f = _frames(2)
    fake = bytearray(f[0])
    fake[8:10] = (wire.MAX_PAYLOAD + 1).to_bytes(2, "little")
    d = wire.Deframer()
    items = d.feed(bytes(fake) + f[1])
    assert [i.seq for i in items if isinstance(i, wire.Frame)] == [1]


@pytest.mark.parametrize("name", STREAMS)
def test_truncated_stream_reports_the_partial_frame(name):
    f = _frames(2)
    items = _decode(f[0] + f[1][:7], name)
    assert isinstance(items[0], wire.Frame)
    assert items[-1].kind == "junk" and "ended inside a frame" in items[-1].detail
    assert items[-1].stream == name
