"""No full garbage collection while an shm consumer reads guest rings.

CPython's cyclic collector runs in whichever thread allocates past its
thresholds, holding the interpreter lock throughout: a full (generation 2)
collection walks every tracked object, and in a ten-million-record sun4u
run one took 294 ms, in the consumer thread itself, while 256 KiB rings
fill in 35 ms (7,333 records lost, the run's only loss). hold() raises
the third threshold out of reach for as long as any consumer runs, so
only the young generations are collected (cheap, and they catch the
cycles made during the run); release() by the last one puts the
threshold back and collects once, where a pause costs nothing. A
gc.callbacks hook counts the collections of each generation while held
and the longest, for the consumer's stats line.
"""

from __future__ import annotations

import gc
import threading
import time

# Past any count of young collections a run makes (one per ten gen-1s).
HELD_THRESHOLD2 = 1 << 30

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, int, int] | None = None
# Per generation while held: [collections, longest in seconds].
seen: dict[int, list] = {}
_started: dict[int, float] = {}


def _watch(phase: str, info: dict) -> None:
    if phase == "start":
        _started[threading.get_ident()] = time.monotonic()
        return
    t0 = _started.pop(threading.get_ident(), None)
    if t0 is not None:
        s = seen.setdefault(info["generation"], [0, 0.0])
        s[0] += 1
        s[1] = max(s[1], time.monotonic() - t0)


def hold() -> None:
    """From now until the matching release(), no automatic full collection."""
    global _holders, _saved
    with _lock:
        if _holders == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], HELD_THRESHOLD2)
            seen.clear()
            gc.callbacks.append(_watch)
        _holders += 1


def release() -> None:
    """The last holder's release puts the threshold back and collects."""
    global _holders
    with _lock:
        if _holders == 0:
            return
        _holders -= 1
        if _holders:
            return
        gc.set_threshold(*_saved)
        if _watch in gc.callbacks:
            gc.callbacks.remove(_watch)
    gc.collect()


def summary() -> str:
    """Collections seen while held, by generation: "gen0 N (longest X ms), ..."."""
    return ", ".join(f"gen{g} {n} (longest {longest * 1e3:.1f} ms)"
                     for g, (n, longest) in sorted(seen.items())) or "none"
