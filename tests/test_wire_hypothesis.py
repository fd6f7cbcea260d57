"""The harness's own deframer and record decoder on corrupted streams
(python3-hypothesis): the guest's framing is fuzzed in C (tests/fuzz/),
this is the host's side of the same wire.

- bench/wire/frames.py: a stream of valid frames, damaged by flipped
  bits, inserted and deleted bytes and a cut end, fed in chunks of any
  size: no exception; every frame it returns is one that was sent, byte
  for byte (a damaged frame never passes its CRC); every frame whose bytes
  the damage did not touch comes through (resynchronisation costs the
  damaged frame only); and a stream that lost frames reports a LinkError.
- bench/wire/records.py: trace frames (EVENTS, STATS, EXPECT, AGGS,
  PROBES) with any payload: decoded, or a ProtocolError — the one
  exception decode() documents — never another."""

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bench.errors import ProtocolError  # noqa: E402
from bench.wire import frames, records  # noqa: E402
from bench.wire.frames import Deframer, Frame, LinkError, encode  # noqa: E402

TYPES = sorted(frames.FRAME_NAMES)
payloads = st.binary(max_size=300)
streams = st.lists(st.tuples(st.sampled_from(TYPES), payloads), min_size=1, max_size=12)
damage = st.lists(st.tuples(st.sampled_from(["flip", "insert", "delete"]),
                            st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
                  max_size=6)
SETTINGS = settings(max_examples=int(__import__("os").environ.get("HYPOTHESIS_EXAMPLES", "200")),
                    deadline=None, database=None,  # no .hypothesis/ in the tree
                    suppress_health_check=[HealthCheck.too_slow])


def _damage(data: bytes, edits) -> tuple[bytes, list[tuple[int, int]]]:
    """The stream with edits applied, and the original byte ranges touched."""
    b = bytearray(data)
    touched = []
    for kind, where, value in edits:
        if not b:
            break
        i = int(where * len(b))
        # Positions are in the damaged stream; map to the original roughly
        # by marking the whole neighbourhood touched.
        touched.append((i - 8, i + 8))
        if kind == "flip":
            b[i] ^= 1 << (value % 8)
        elif kind == "insert":
            b.insert(i, value)
        else:
            del b[i]
    return bytes(b), touched


@SETTINGS
@given(streams, damage, st.integers(1, 64), st.booleans())
# Found by this test: a flipped bit in frame 1's length claimed 258 bytes;
# at the end of the stream the deframer gave up on everything after it.
@example([(1, b""), (1, b"\0\0"), (1, b"\0" * 4), (1, b"\0" * 5)],
         [("flip", 0.3334960937500003, 0)], 1, False)
@example([(1, b"")], [], 1, True)
def test_deframer_detects_or_resyncs(sent, edits, chunk, cut):
    wire = b""
    spans = []
    for seq, (t, p) in enumerate(sent):
        f = encode(t, seq, p)
        spans.append((len(wire), len(wire) + len(f), seq, t, p))
        wire += f
    damaged, touched = _damage(wire, edits)
    shift = sum(1 if k == "insert" else -1 if k == "delete" else 0 for k, _, _ in edits)
    if cut and len(damaged) > 3:
        damaged = damaged[:len(damaged) - 3]
    d = Deframer()
    out = []
    for i in range(0, len(damaged), chunk):
        out += d.feed(damaged[i:i + chunk])
    out += d.finish()
    got = [x for x in out if isinstance(x, Frame)]
    errors = [x for x in out if isinstance(x, LinkError)]
    by_seq = {seq: (t, p) for _, _, seq, t, p in spans}
    for f in got:
        assert (f.type, f.payload) == by_seq[f.seq]
    if damaged == wire:
        assert [f.seq for f in got] == list(range(len(sent))) and not errors
        return
    seen = {f.seq for f in got}
    if len(seen) < len(sent):
        assert errors, "frames were lost and nothing said so"
    if not edits or shift:
        return
    # Only flips (offsets unchanged): every untouched frame is delivered,
    # except one the cut end reached.
    for start, end, seq, t, p in spans:
        hit = any(a < end and start < b for a, b in touched)
        if not hit and not (cut and end > len(damaged)):
            assert seq in seen, f"frame {seq} untouched but not delivered"


EVENTS = next(t for t, n in frames.FRAME_NAMES.items() if n == "EVENTS")
RECORD_TYPES = [t for t in TYPES if frames.FRAME_NAMES[t] in
                ("EVENTS", "STATS", "EXPECT", "AGGS", "PROBES")]


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(RECORD_TYPES), st.binary(max_size=400)),
                max_size=6), st.sampled_from(["<", ">"]), st.sampled_from([4, 8]))
# Found by this test: an empty EVENTS frame raised cdefs' CdefsError.
@example([(EVENTS, b"")], "<", 4)
def test_record_decoder_raises_only_protocol_errors(frs, order, word):
    fl = [Frame(t, seq, p, 0) for seq, (t, p) in enumerate(frs)]
    try:
        records.decode(fl, order, word)
    except ProtocolError:
        pass
