"""The shm channel against the others: what a record costs the guest, how
fast the host empties the rings, and calltree traced over each channel.

record_cost runs drainrate's firing loop over serial, virtio and shm in
one boot: the guest's cycles per record from the firing to the record
being committed, its channel's drain included (`drain fire` + `drain
payload`: under shm the payload is only the flush's commit). shm_raw fills
the 16 MiB rings with the consumer stopped, then times the consumer
reading them all out of guest RAM (its seconds of checks and copies),
against the virtio port's raw rate of the same boot, per repetition;
shm_raw_handed_on times the same bytes as far as the harness (the
request, the copy, the stream file written and read back). probed_virtio
and hooked_virtio run calltree once more over the virtio port (the
untagged fbt rows are over the boot's default, shm), so the table can
give probed / -finstrument-functions per mechanism and channel.
"""

from __future__ import annotations

import time

from ...guest.qemu import Guest
from ...trace.session import TraceError
from .core import Bench
from .fbt import HOOKS, fbt, workloads

CHANNELS = ("serial", "virtio", "shm")     # record_cost's, in the table's order
RING = 16 << 20            # bytes per CPU while shm_raw fills the rings


def _drainrate(g: Guest, firings: int) -> dict:
    r = g.command(f"run drainrate bytes=4096 firings={firings} tries=1", timeout=600)
    vals = {w[1]: (int(w[2]), int(w[3])) for w in (line.split() for line in r.text)
            if w[:1] == ["drain"] and len(w) == 4 and w[2].isdigit()}
    if not r.ok or {"fire", "payload"} - vals.keys():
        raise TraceError(f"drainrate failed: {r.message}: {r.text[-3:]}")
    return vals


def record_cost(b: Bench, g: Guest) -> None:
    """Figures record_cost_CHANNEL: guest cycles per record, firing to
    committed (serial's run is small: its drain is bound by the line)."""
    for ch in CHANNELS:
        firings = b.sizes.drain_firings if ch == "serial" else b.sizes.virtio_firings
        g.command(f"channel {ch}")
        g.command(f"trace buffer {RING}", timeout=60)
        costs = []
        for _ in range(b.reps):
            v = _drainrate(g, firings)
            costs.append((v["fire"][1] + v["payload"][1]) / v["fire"][0])
        b.put(f"record_cost_{ch}", costs, "guest cycles/record",
              what=f"a record's whole guest cost over {ch}: firing, recording, "
                   "drain (shm: the flush's commit)")
        b.say(f"  record cost over {ch}: {b.figures[f'record_cost_{ch}']['median']:,.0f} "
              "cycles")
    g.command("trace buffer 262144", timeout=60)


def shm_raw(b: Bench, g: Guest) -> None:
    """Figures shm_raw (bytes/s the consumer copies out of guest RAM),
    shm_raw_handed_on (the same bytes as far as the harness) and
    shm_raw_over_virtio (per repetition, against this boot's virtio_raw)."""
    g.command("channel shm")
    g.command(f"trace buffer {RING}", timeout=60)
    rates, handed = [], []
    for _ in range(b.reps):
        g.pause_channel(True)
        # Records enough to fill most of every ring, written while nothing reads.
        _drainrate(g, b.sizes.virtio_firings)
        t0 = time.perf_counter()
        got, copying = g.shm_drain_all()
        handed.append(got / (time.perf_counter() - t0))
        rates.append(got / copying)
        g.pause_channel(False)
    g.command("trace buffer 262144", timeout=60)
    b.put("shm_raw", rates, "bytes/s", what="record bytes the consumer copies out "
          "of full rings in guest RAM (its host time)")
    b.put("shm_raw_handed_on", handed, "bytes/s", what="the same bytes as the "
          "harness gets them: asked, copied, through the stream file, as frames")
    virtio = b.figures.get("virtio_raw", {}).get("values")
    if virtio:
        b.put("shm_raw_over_virtio", [s / v for s, v in zip(rates, virtio)], "ratio",
              target="shm_raw_over_virtio")


def probed_virtio(b: Bench, g: Guest) -> None:
    """calltree, one thread, under every mechanism, over the virtio port."""
    g.command("channel virtio")
    fbt(b, g, workloads(b.sizes)[1:], ["untraced", *b.arch.mechanisms], tag="_virtio")
    g.command(f"channel {g.channel_used}")


def hooked_virtio(b: Bench, g: Guest) -> None:
    """The instrumented calltree, hooks off and on, over the virtio port."""
    g.command("channel virtio")
    fbt(b, g, workloads(b.sizes)[1:], HOOKS, hooks=True, tag="_virtio")
    g.command(f"channel {g.channel_used}")
