"""Aggregations, host side: every CPU's entries merged, printed as DTrace does.

The guest keeps each aggregation per CPU, without a lock (wire.h: AGGS
frames); this merges the CPUs' entries of one key — counts and sums add,
min and max compare, averages are sums over counts, quantize buckets add —
and prints a table per aggregation, a row per key with its value sorted by
value, and a quantize as a histogram (an lquantize too, by the bucket
numbers the program computed itself: 0 below its range, WIRE_LQUANTIZE_MAX
above — an RPN program declares no range the host could print):

    @calls (count, by probe)
      ct_mul                  2000
      ct_add                  6000

    @n (quantize)
               value  ------------- Distribution ------------- count
                   0 |@@@@@@@                                  34
                   1 |@@@@@@@@@@@                              55
                   2 |@@@@@@@@@@@@@@@@@@@@@@                   110

Keys print as what the program put there (bench/program/asm.py follows
it): a probe as its function (and its kind if not an entry), a thread as
tN, a CPU as cpuN, a call stack (`stack`) as its frames, one per line
(bench/trace/stacks.py), anything else as a signed number. A stack key is
a per-CPU id in the guest: resolve() replaces it by the PCs it stands for
before the CPUs merge, so that the same stack seen on two CPUs is one row.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..trace import stacks as stack_text
from ..wire.frames import WIRE

KIND_NAMES = {e.value: e.meaning for e in WIRE.table("WIRE_AGG_KINDS")}
WIDTH = 40           # histogram bar width, as DTrace's


@dataclass
class Row:
    keys: tuple
    count: int = 0
    sum: int = 0
    min: int | None = None
    max: int | None = None
    buckets: dict = field(default_factory=dict)

    def add(self, e: dict) -> None:
        self.count += e["count"]
        self.sum += e["sum"]
        self.min = e["min"] if self.min is None else min(self.min, e["min"])
        self.max = e["max"] if self.max is None else max(self.max, e["max"])
        for i, n in e["buckets"].items():
            self.buckets[i] = self.buckets.get(i, 0) + n

    def value(self, kind: str):
        return {"count": self.count, "sum": self.sum, "min": self.min,
                "max": self.max, "avg": self.sum / self.count if self.count else 0,
                "quantize": self.count, "lquantize": self.count}[kind]


@dataclass
class Table:
    program: int
    number: int
    kind: str
    rows: dict = field(default_factory=dict)      # keys -> Row


def resolve(entries: list[dict], programs: dict, stacks: dict) -> list[dict]:
    """entries with every stack key (by its program's key kinds) replaced by
    the tuple of PCs its id stands for, or None for a stack that found no
    room."""
    out = []
    for e in entries:
        prog = programs.get(e["program"])
        agg = prog.aggs[e["agg"]] if prog and e["agg"] < len(prog.aggs) else None
        kinds = agg.keys if agg else ()
        if "stack" in kinds:
            e = dict(e, key=[stacks.get(k) if i < len(kinds) and kinds[i] == "stack"
                             else k for i, k in enumerate(e["key"])])
        out.append(e)
    return out


def merge(entries: list[dict]) -> dict[tuple[int, int], Table]:
    """(program slot, aggregation number) -> Table, the CPUs' entries merged."""
    tables: dict = {}
    for e in entries:
        t = tables.setdefault((e["program"], e["agg"]),
                              Table(e["program"], e["agg"], KIND_NAMES[e["kind"]]))
        keys = tuple(e["key"][:e["nkeys"]])
        t.rows.setdefault(keys, Row(keys)).add(e)
    return tables


def bucket_low(index: int) -> int:
    """The least value of a quantize bucket (wire.h's numbering)."""
    if index == 0:
        return 0
    if index <= 64:
        return 1 << (index - 1)
    return -(1 << (index - 65))


def bucket_of(value: int) -> int:
    """The bucket a signed value falls in (wire.h's numbering)."""
    if value == 0:
        return 0
    if value > 0:
        return value.bit_length()
    return 64 + (-value).bit_length()


def histogram(buckets: dict[int, int], indent: str = "  ") -> list[str]:
    """DTrace's quantize picture: a row per power of two, one empty row on
    either side of the used ones."""
    if not buckets:
        return [f"{indent}(no values)"]
    order = sorted(buckets, key=bucket_low)
    lows = sorted({bucket_low(i) for i in range(0, 129)})
    first = lows.index(bucket_low(order[0]))
    last = lows.index(bucket_low(order[-1]))
    shown = lows[max(0, first - 1):last + 2]
    total = sum(buckets.values())
    by_low = {bucket_low(i): n for i, n in buckets.items()}
    out = [f"{indent}{'value':>16}  {'-' * 13} Distribution {'-' * 13} count"]
    for low in shown:
        n = by_low.get(low, 0)
        bar = "@" * round(WIDTH * n / total) if total else ""
        out.append(f"{indent}{low:>16} |{bar:<{WIDTH}} {n}")
    return out


def bucket_rows(buckets: dict[int, int], indent: str = "  ") -> list[str]:
    """An lquantize's picture by bucket number, a row per bucket counted in."""
    if not buckets:
        return [f"{indent}(no values)"]
    total = sum(buckets.values())
    out = [f"{indent}{'bucket':>16}  {'-' * 13} Distribution {'-' * 13} count"]
    for i in sorted(buckets):
        bar = "@" * round(WIDTH * buckets[i] / total)
        out.append(f"{indent}{i:>16} |{bar:<{WIDTH}} {buckets[i]}")
    return out


def format_key(key, what, names: dict, word_bytes: int, sym=None) -> str:
    """A key as what it is (see the top)."""
    if what == "stack":
        return "\n".join(stack_text.stack_lines(key, sym))
    bits = 8 * word_bytes
    signed = key - (1 << bits) if key >> (bits - 1) & 1 else key
    if what == "probe":
        return names.get(key, f"probe {key}")
    if what == "thread":
        return f"t{key}"
    if what == "cpu":
        return f"cpu{key}"
    if what == "address":
        return f"{key:#x}"
    return str(signed)


def lines(tables: dict, programs: dict, probe_names: dict, word_bytes: int,
          dropped: int = 0, sym=None, stacks_dropped: int = 0) -> list[str]:
    """Every table as text. programs: slot -> bench/program/asm.Program;
    sym a bench/trace/stacks.Symbolizer for stack keys."""
    out = []
    for (slot, number), t in sorted(tables.items()):
        prog = programs.get(slot)
        agg = prog.agg_named(number) if prog and number < len(prog.aggs) else None
        name = f"@{agg.name}" if agg else f"@{slot}.{number}"
        keyinfo = agg.keys if agg else ()
        by = ", ".join(k if isinstance(k, str) else f"{k[0]} {k[1]}" for k in keyinfo)
        out.append(f"{name} ({t.kind}" + (f", by {by})" if by else ")"))
        rows = sorted(t.rows.values(), key=lambda r: (r.value(t.kind), repr(r.keys)))
        for r in rows:
            label = "  ".join(format_key(k, keyinfo[i] if i < len(keyinfo) else "value",
                                         probe_names, word_bytes, sym)
                              for i, k in enumerate(r.keys)) or "(all)"
            if "stack" in keyinfo:              # a stack: DTrace's layout
                out += label.split("\n")
                if t.kind not in ("quantize", "lquantize"):
                    v = r.value(t.kind)
                    out.append(f"  {(f'{v:.1f}' if t.kind == 'avg' else str(v)):>16}")
                    continue
                label = ""
            if t.kind in ("quantize", "lquantize"):
                out.append(f"  {label}")
                out += (histogram if t.kind == "quantize" else bucket_rows)(r.buckets, "    ")
            else:
                v = r.value(t.kind)
                text = f"{v:.1f}" if t.kind == "avg" else str(v)
                out.append(f"  {label:<24} {text:>12}")
        out.append("")
    if dropped:
        out.append(f"PROBLEM: {dropped} aggregation entries found no room in the guest "
                   "(a per-CPU table was full): the tables above are short")
    if stacks_dropped:
        out.append(f"PROBLEM: {stacks_dropped} call stacks found no room in the guest's "
                   "per-CPU stack tables: they are counted under one row of their own")
    return out


def per_probe_counts(tables: dict, programs: dict) -> dict[int, int]:
    """Counts keyed by probe alone (count @x, 1 on `probe`), summed: what a
    count.rpn-like program says each probe fired."""
    out: dict[int, int] = defaultdict(int)
    for (slot, number), t in tables.items():
        prog = programs.get(slot)
        if not prog or t.kind != "count" or prog.aggs[number].keys != ("probe",):
            continue
        for r in t.rows.values():
            out[r.keys[0]] += r.count
    return dict(out)
