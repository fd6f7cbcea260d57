"""The trace channels: the drain against the raw channel, and the
sustained run.

drainrate times FILL frames sent back to back (the raw channel) against
trace records drained from a full buffer (the payload), over the 16550
and, in the same boot, over the virtio port where the guest has one; a
ratio per repetition, never across boots. The sustained run is calltree
on 8 threads at the full firing rate with the default 256 KiB per-CPU
buffers over each channel: records arrived, lost, and the run's time;
over virtio also with the drains woken by their ticks only (`trace kick
off`), which shows what waking them at a ring's half is worth.
"""

from __future__ import annotations

from ...guest.qemu import Guest
from ...trace.session import TraceError, open_session
from ...trace.stress import LOSSLESS_FUNCS
from ...trace.verify import verify
from ...wire import frames
from .core import Bench, figure

DRAIN_TRIES = 3            # drainrate keeps the fastest of these


def drain(b: Bench, g: Guest, channel: str = "serial") -> None:
    """drainrate over one channel (`channel` chooses it in the guest):
    figures CHANNEL_raw, CHANNEL_payload, CHANNEL_payload_over_raw."""
    virtio = channel == "virtio"
    nbytes = b.sizes.virtio_bytes if virtio else b.sizes.drain_bytes
    firings = b.sizes.virtio_firings if virtio else b.sizes.drain_firings
    g.command(f"channel {channel}")
    g.command(f"trace buffer {16 << 20 if virtio else 1 << 20}", timeout=60)
    raw, pay, ratio = [], [], []
    for i in range(b.reps):
        mark = len(g.trace_frames)
        r = g.command(f"run drainrate bytes={nbytes} "
                      f"firings={firings} tries={DRAIN_TRIES}")
        vals = {}
        for line in r.text:
            w = line.split()
            if w[:1] == ["drain"] and len(w) == 4 and w[2].isdigit():
                vals[w[1]] = (int(w[2]), int(w[3]))
        if not r.ok or {"raw", "payload"} - vals.keys():
            raise TraceError(f"drainrate failed: {r.message}: {r.text[-3:]}")
        rec_bytes = sum(len(f.payload) - 8 for f in g.trace_frames[mark:]
                        if f.type == frames.T_EVENTS) / DRAIN_TRIES
        rb = vals["raw"][0] / (vals["raw"][1] / b.hz)
        pb = rec_bytes / (vals["payload"][1] / b.hz)
        raw.append(rb)
        pay.append(pb)
        ratio.append(pb / rb)
        b.say(f"  drain {channel} {i + 1}/{b.reps}: raw {rb / 1e3:,.0f} kB/s, "
              f"payload {pb / 1e3:,.0f} kB/s")
    g.command("trace buffer 262144", timeout=60)
    b.put(f"{channel}_raw", raw, "bytes/s", what="FILL frames, header and CRC "
          "included, back to back",
          **({"target": "virtio_raw_bytes"} if virtio else {}))
    b.put(f"{channel}_payload", pay, "bytes/s", what="trace record bytes drained "
          "from a full buffer")
    b.put(f"{channel}_payload_over_raw", ratio, "ratio",
          target=f"{channel}_payload_over_raw")
    if virtio and "serial_raw" in b.figures:
        # Same boot, same repetition index: a ratio per repetition.
        b.put("virtio_raw_over_serial",
              [v / s for v, s in zip(raw, b.figures["serial_raw"]["values"])],
              "ratio", target="virtio_raw_over_serial")


def sustained_reps(b: Bench, channel: str) -> int:
    """Repetitions of the sustained run over a channel: the bench's, but
    at most Sizes.sustained_serial_reps over the 16550."""
    return min(b.reps, b.sizes.sustained_serial_reps) if channel == "serial" else b.reps


def sustained(b: Bench, g: Guest, channel: str, kick: str = "on") -> None:
    """Figure sustained_CHANNEL (`_ticks` with kick off): the sustained
    run over one channel, sustained_reps times."""
    s = open_session(g)
    g.command("probe clear")
    s.setup(LOSSLESS_FUNCS, b.arch.default_mechanism, buffer_bytes=262144,
            strict=False)
    ids = [str(p.id) for p in s.probes]
    g.command(f"channel {channel}")
    s.must(f"trace kick {kick}")
    key = f"sustained_{channel}" + ("_ticks" if kick == "off" else "")
    cmd = f"run calltree threads=8 iters={b.sizes.sustained_iters}"
    rows = []
    reps = sustained_reps(b, channel)
    if reps < b.reps:
        b.notes.append(f"sustained over {channel}: {reps} repetitions of {b.reps}, "
                       "each bound by the line (Sizes.sustained_serial_reps)")
    for _ in range(reps):
        s.must("trace reset")
        mark = len(g.trace_frames)
        for k in range(0, len(ids), 12):
            s.must("probe enable " + " ".join(ids[k:k + 12]))
        r = s.cmd(cmd, timeout=1800)
        s.must("probe disable all")
        s.must("trace flush", timeout=1800)
        if not r.ok or not r.results:
            raise TraceError(f"sustained calltree over {channel} failed: {r.message}")
        cap = g.capture(mark)
        rep = verify(cap, s.probes, (), allow_missing=True)
        rows.append((len(cap.events), rep.dropped, rep.fired,
                     r.results[-1]["cycles"] / b.hz))
    s.must("trace kick on")

    def col(i):
        return [row[i] for row in rows]
    b.figures[key] = f = {
        "what": f"calltree threads=8 iters={b.sizes.sustained_iters}, "
                f"{g.hello['ncpus']} CPUs, 256 KiB buffers, over {channel}"
                + (", drains woken by their ticks only" if kick == "off" else ""),
        "records": figure(col(0), "records"),
        "fired": figure(col(2), "firings"),
        "guest_seconds": figure(col(3), "s"),
        # Judged over virtio only: the 16550 is the comparison.
        "lost": figure(col(1), "records",
                       **({"target": "sustained_lost"} if key == "sustained_virtio"
                          else {})),
    }
    b.say(f"  sustained over {channel}"
          + (" (drains at ticks only)" if kick == "off" else "")
          + f": {f['records']['median']:,.0f} records, "
          f"dropped {f['lost']['median']:,.0f} of {f['fired']['median']:,.0f} "
          f"fired, {f['guest_seconds']['median']:.2f} s")
