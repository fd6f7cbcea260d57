"""The wire format: the host reads the same header the guest compiles, the
C framing and the Python deframer agree byte for byte, and every kind of
line damage is detected and survived."""

import subprocess

import pytest

from bench import cdefs, wire
from hostc import build

EMIT = ["tests/c/frame_emit.c", "tracer/core/frame.c"]


@pytest.fixture(scope="module")
def emit():
    exe = build("frame_emit", EMIT)
    return lambda *args: subprocess.run([str(exe), *args], check=True,
                                        capture_output=True).stdout


def test_struct_layout_matches_the_c_compiler(emit):
    c_layout = {}
    for line in emit("layout").decode().splitlines():
        parts = line.split()
        if parts[0] == "sizeof":
            c_layout[(parts[1], "sizeof")] = int(parts[2])
        else:
            c_layout[(parts[0], parts[1])] = (int(parts[2]), int(parts[3]))
    py_layout = {}
    for name, s in wire.WIRE.structs.items():
        py_layout[(name, "sizeof")] = s.size
        for f in s.fields:
            py_layout[(name, f.name)] = (f.offset, cdefs._TYPES[f.ctype][0] * f.count)
    assert py_layout == c_layout


def test_tables_are_read_whole():
    assert wire.FRAME_NAMES[wire.T_HELLO] == "HELLO"
    assert set(wire.REPLY_NAMES.values()) >= {"OK", "UNKNOWN", "BAD_ARGS",
                                             "TOO_LONG", "FAILED"}
    assert wire.MAGIC == b"\xd5\x7e"


def test_header_reader_refuses_what_it_cannot_read():
    with pytest.raises(cdefs.CdefsError, match="not of the form"):
        cdefs.parse('#define T(X) X(A, 1, "a") X(B, two, "b")')
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


def _decode(stream):
    d = wire.Deframer()
    return d.feed(stream) + d.finish()


@pytest.mark.parametrize("where", [0, 1, 3, 5, 9, 12, 15])
def test_corrupted_byte_loses_one_frame_and_resyncs(where):
    f = _frames(4)
    bad = bytearray(f[1])
    bad[where] ^= 0x5a
    items = _decode(f[0] + bytes(bad) + f[2] + f[3])
    frames = [i for i in items if isinstance(i, wire.Frame)]
    errors = [i for i in items if isinstance(i, wire.LinkError)]
    assert [fr.seq for fr in frames] == [0, 2, 3]
    gaps = [e for e in errors if e.kind == "gap"]
    assert len(gaps) == 1 and gaps[0].count == 1
    assert any(e.kind in ("crc", "junk") for e in errors), errors


def test_dropped_frames_are_counted():
    f = _frames(10)
    items = _decode(b"".join(f[:3] + f[7:]))
    gaps = [i for i in items if isinstance(i, wire.LinkError) and i.kind == "gap"]
    assert len(gaps) == 1 and gaps[0].count == 4
    assert "expected seq 3, got 7" in str(gaps[0])


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


def test_truncated_stream_reports_the_partial_frame():
    f = _frames(2)
    items = _decode(f[0] + f[1][:7])
    assert isinstance(items[0], wire.Frame)
    assert items[-1].kind == "junk" and "ended inside a frame" in items[-1].detail
