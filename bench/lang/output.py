"""A compiled script's results as DTrace prints them.

printf and trace() lines come from the LOG records of the compiled
programs (major model.MAJOR, minor the slot): a record holds every printf
of one firing in the order they ran, each its number in the group's
printfs, then its arguments; that Printf says what each argument was — a
word (signed or not), a string behind a logs prefix, a probe id for
probefunc/probename, a constant the host kept — and the C format, turned
into Python's, renders them. DTrace's columns lead each line (CPU, probe id,
FUNCTION:NAME) unless quiet.

Aggregations: the entries of every CPU and of every program that feeds
one named aggregation are merged under their keys as printed (a function
name for probefunc: the entry probe and each return site of a function
are one row), then each table is sorted by value, ascending, as DTrace
does; quantize and lquantize print as distributions. A stack() key
prints as its frames, one per line, and func() as a function
(stackkeys.py, given the run's stacks and symbols as a Frames); a row
keeps its keys' raw values (a stack's PCs) beside their text. END's
trunc() keeps the largest rows, clear() zeroes the values. to_json gives
the same tables as data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..program import aggregate
from ..wire.records import K_LOG, log_data
from . import model, stackkeys
from .model import VM_WORD

TOKENS_STRING = 0x01


@dataclass
class Row:
    keys: tuple
    sort: tuple
    count: int = 0
    sum: int = 0
    min: int | None = None
    max: int | None = None
    buckets: dict = field(default_factory=dict)
    raw: tuple = ()            # each key's value: a stack's PCs, else the word

    def add(self, e: dict, unsigned: bool) -> None:
        self.count += e["count"]
        s, lo, hi = e["sum"], e["min"], e["max"]
        if unsigned:
            s, lo, hi = (v & (1 << 64) - 1 for v in (s, lo, hi))
        self.sum += s
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)
        for i, n in e["buckets"].items():
            self.buckets[i] = self.buckets.get(i, 0) + n

    def value(self, func: str):
        if func == "avg":
            return self.sum // self.count if self.count else 0
        return {"count": self.count, "sum": self.sum, "min": self.min,
                "max": self.max}.get(func, self.count)


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def key_text(v: int, t, probes: dict, word: int, frames=None) -> tuple[str, object]:
    """A key as printed, and how it sorts (frames: stackkeys.Frames)."""
    bits = 8 * word
    if t.what in ("stack", "func"):
        if frames is None:
            return f"{t.what} {v:#x}", v
        return frames.key(v, t.what)[:2]
    if t.what == "probefunc":
        p = probes.get(v)
        return (p.function if p else f"probe{v}"), 0
    if t.what == "probename":
        p = probes.get(v)
        return (p.kind if p else f"probe{v}"), 0
    if t.what == "cpu":
        return f"cpu{v}", v
    if t.what == "tid":
        return f"t{v}", v
    if t.what == "caller":
        return f"{v & (1 << bits) - 1:#x}", v
    if t.kind == "enum" and t.ctype is not None:
        return t.ctype.format(v), v
    if t.kind == "pointer":
        return f"{v & (1 << bits) - 1:#x}", v
    n = _signed(v, bits) if t.signed else v & (1 << bits) - 1
    return str(n), n


def merge(compiled, entries: list[dict], probes: dict, word: int,
          frames=None) -> dict:
    """Aggregation name -> {printed keys: Row}; frames (stackkeys.Frames)
    names stack() and func() keys."""
    out = {name: {} for name in compiled.aggs}
    for e in entries:
        if e["program"] >= len(compiled.groups):
            continue
        g = compiled.groups[e["program"]]
        if e["agg"] >= len(g.aggs):
            continue
        info = g.aggs[e["agg"]]
        texts, sorts, raws = [], [], []
        for k, t in zip(e["key"][:e["nkeys"]], info.keys):
            text, sort = key_text(k, t, probes, word, frames)
            texts.append(text)
            sorts.append(sort)
            raws.append(frames.key(k, t.what)[2] if frames and t.what in ("stack", "func")
                        else k)
        rows = out[info.name]
        row = rows.setdefault(tuple(texts), Row(tuple(texts), tuple(sorts), raw=tuple(raws)))
        row.add(e, False)
    return out


def apply_end(tables: dict, actions: list, values) -> list[str]:
    """BEGIN's or END's printing (values: a hosted.HostValues over the
    globals read back), trunc() and clear(); the lines it printed."""
    printed = []
    for act in actions:
        if act[0] == "print":
            printed.append(values.text(act[1], act[2]))
        elif act[0] == "trunc":
            rows = tables[act[1]]
            keep = act[2] or 0
            ranked = sorted(rows.values(), key=lambda r: _rank(r), reverse=True)[:keep]
            tables[act[1]] = {r.keys: r for r in ranked}
        elif act[0] == "clear":
            for r in tables[act[1]].values():
                r.count, r.sum, r.min, r.max, r.buckets = 0, 0, 0, 0, {}
    return printed


def _rank(r: Row):
    return (r.count if r.buckets else (r.sum or r.count), r.keys)


def lines(compiled, tables: dict) -> list[str]:
    out = []
    several = len([n for n in tables if tables[n]]) > 1
    for name, rows in tables.items():
        info = compiled.aggs[name]
        if not rows:
            continue
        out.append("")
        if several or name:
            out.append(f"@{name}:" if name else "@:")
        ordered = sorted(rows.values(), key=lambda r: (
            r.count if info.func in ("quantize", "lquantize") else r.value(info.func),
            r.sort))
        for r in ordered:
            if stackkeys.has_stack(info):
                out += _stack_row(r, info)
                continue
            label = "  ".join(r.keys)
            if info.func in ("quantize", "lquantize") and label:
                out.append(f"  {label}")
            if info.func == "quantize":
                out += aggregate.histogram(r.buckets, "  ")
            elif info.func == "lquantize":
                out += lhistogram(r.buckets, info.lq, "  ")
            else:
                v = r.value(info.func)
                out.append(f"  {label:<40} {v:>16}" if label else f"  {v:>16}")
    return out


def _stack_row(r: Row, info) -> list[str]:
    """A row with a stack() key, as DTrace lays it out (stackkeys.row_lines)."""
    if info.func == "quantize":
        values = aggregate.histogram(r.buckets, "  ")
    elif info.func == "lquantize":
        values = lhistogram(r.buckets, info.lq, "  ")
    else:
        values = [f"  {r.value(info.func):>16}"]
    return stackkeys.row_lines([k for k, t in zip(r.keys, info.keys) if t.what != "stack"],
                               [k for k, t in zip(r.keys, info.keys) if t.what == "stack"],
                               values)


def lhistogram(buckets: dict, lq, indent: str) -> list[str]:
    """lquantize's picture: a row per step, < low and >= high at the ends."""
    lo, hi, step = lq
    levels = -(-(hi - lo) // step)
    total = sum(buckets.values())
    if not total:
        return [f"{indent}(no values)"]
    used = sorted(i for i, n in buckets.items() if n)
    first, last = max(0, used[0] - 1), min(levels + 1, used[-1] + 1)
    out = [f"{indent}{'value':>16}  {'-' * 13} Distribution {'-' * 13} count"]
    for i in range(first, last + 1):
        label = f"< {lo}" if i == 0 else (f">= {hi}" if i == levels + 1
                                          else str(lo + (i - 1) * step))
        n = buckets.get(i, 0)
        bar = "@" * round(aggregate.WIDTH * n / total)
        out.append(f"{indent}{label:>16} |{bar:<{aggregate.WIDTH}} {n}")
    return out


def to_json(compiled, tables: dict) -> dict:
    out = {}
    for name, rows in tables.items():
        info = compiled.aggs[name]
        out[name or "@"] = {
            "function": info.func,
            "rows": [{"keys": list(r.keys), "value": r.value(info.func),
                      "count": r.count, "sum": r.sum, "min": r.min, "max": r.max,
                      "buckets": {str(k): v for k, v in sorted(r.buckets.items())}}
                     for r in rows.values()]}
    return out


def printf_lines(compiled, events, probes: dict, order: str, word: int,
                 quiet: bool) -> list[str]:
    """Every compiled printf/trace line, in time order and, within a
    firing, in program order."""
    out = []
    for ev in events:
        if ev.kind != K_LOG:
            continue
        major, minor, data = log_data(ev, order, word)
        if major != model.MAJOR or minor >= len(compiled.groups):
            continue
        printfs = compiled.groups[minor].printfs
        p = probes.get(ev.probe)
        where = f"{p.function}:{p.kind}" if p else f"probe{ev.probe}"
        for text in render_record(printfs, data, order, word, probes):
            out.append(text if quiet else
                       f"{ev.cpu:>3} {ev.probe:>6} {where:>32} {text}")
    return out


def render_record(printfs: list, data: bytes, order: str, word: int,
                  probes: dict) -> list[str]:
    """A firing's LOG data: each printf's number, then its arguments."""
    endian = "little" if order == "<" else "big"
    texts, pos = [], 0
    while pos + word <= len(data):
        n = int.from_bytes(data[pos:pos + word], endian)
        if n >= len(printfs):
            texts.append(f"(printf: no printf {n} in this program)")
            break
        text, pos = render(printfs[n], data, pos + word, order, word, probes)
        texts.append(text)
    return texts


def render(pf, data: bytes, pos: int, order: str, word: int,
           probes: dict) -> tuple[str, int]:
    """One printf's line from its arguments at data[pos:]; where the next
    printf starts."""
    endian = "little" if order == "<" else "big"
    vals = []
    for a in pf.args:
        if a[0] == "const":
            vals.append(a[1])
        elif a[0] == "probe":
            v = int.from_bytes(data[pos:pos + word], endian)
            pos += word
            p = probes.get(v)
            vals.append((p.function if a[1] == "probefunc" else p.kind) if p
                        else f"probe{v}")
        elif a[0] == "int":                 # a VM word: 8 bytes on every arch
            v = int.from_bytes(data[pos:pos + VM_WORD], endian)
            pos += VM_WORD
            vals.append(_signed(v, 8 * VM_WORD) if a[1] else v)
        else:
            token, length = data[pos], int.from_bytes(data[pos + 1:pos + 3], endian)
            body = data[pos + 3:pos + 3 + length]
            pos += 3 + length
            if token == TOKENS_STRING:
                vals.append(body.split(b"\0")[0].decode("utf-8", "replace"))
            else:
                vals.append(f"<fault at {int.from_bytes(body, endian):#x}>")
    try:
        return (pf.fmt % tuple(vals)).rstrip("\n"), pos
    except (TypeError, ValueError) as e:
        return f"(printf: {e}: {vals})", pos
