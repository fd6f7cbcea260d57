"""Chrome trace-event JSON: a traced run's calls as Perfetto, speedscope and
chrome://tracing open them.

    python3 -m bench run ... --probes 'fbt:ct_*:entry,fbt:ct_*:return' --chrome FILE.json

`{"traceEvents": [...], "displayTimeUnit": "ns"}`: one complete event
(`ph: "X"`, `ts` and `dur` in µs of guest time from the first record) per
call whose return paired with its entry, as the verifier's per-thread
stacks pair them (bench/trace/callstacks.py's Walker, its on_call) — the
one model of calls, across switches, CPUs and interrupts. A track is a
CPU (pid = cpu + 1, named `cpuN`) and a thread on it (tid = thread,
named `tN`): a call is on the track of the CPU its entry was recorded on,
so a thread's calls on one CPU nest on that track.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..trace.callstacks import Walker
from ..wire.records import Capture


def events(cap: Capture, probes, hz: float) -> list[dict]:
    """The trace events: metadata naming each track, then the calls."""
    calls: list[tuple] = []
    Walker(probes, lambda ev, thread: thread, True,
           on_call=lambda *c: calls.append(c)).run(cap.events, cap.switches)
    if not calls:
        return []
    t0 = min(c[3] for c in calls)
    us = 1e6 / hz
    out, tracks = [], set()
    for thread, function, cpu, start, end, depth in sorted(calls, key=lambda c: (c[3], -c[4])):
        tracks.add((cpu, thread))
        out.append({"name": function, "cat": "call", "ph": "X", "pid": cpu + 1,
                    "tid": thread, "ts": round((start - t0) * us, 3),
                    "dur": round((end - start) * us, 3), "args": {"depth": depth}})
    meta = []
    for cpu in sorted({c for c, _ in tracks}):
        meta.append({"name": "process_name", "ph": "M", "pid": cpu + 1, "tid": 0,
                     "ts": 0, "args": {"name": f"cpu{cpu}"}})
    for cpu, thread in sorted(tracks):
        meta.append({"name": "thread_name", "ph": "M", "pid": cpu + 1, "tid": thread,
                     "ts": 0, "args": {"name": f"t{thread}"}})
    return meta + out


def write(path, cap: Capture, probes, hz: float) -> int:
    """Write the JSON; the number of calls in it."""
    evs = events(cap, probes, hz)
    Path(path).write_text(json.dumps({"traceEvents": evs, "displayTimeUnit": "ns"}))
    return sum(1 for e in evs if e["ph"] == "X")
