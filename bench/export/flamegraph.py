"""Flame graphs of stack aggregations: FlameGraph's folded lines and an SVG
drawn here (Debian has no flamegraph, inferno or speedscope package).

    python3 -m bench run ... --program bench/programs/stack.rpn --folded FILE --flamegraph FILE.svg

folded() turns every aggregation keyed by a stack (`stack` in a program,
resolved to PCs: bench/program/aggregate.py) into `root;...;leaf COUNT`
lines, function names outermost first (bench/trace/stacks.py), the counts
of one path summed; a probe key, when there is one, is the leaf (the
probed function, which a stack at its entry begins below). svg() lays
the paths out as Brendan Gregg's flamegraph.pl does: the root at the
bottom, each frame as wide as the count of the paths through it, its
children above it in name order; a frame's hover title is its name, its
count and its share of the whole, and a name is written in the frame if
it fits.
"""

from __future__ import annotations

import html
import zlib
from collections import Counter

from ..trace import stacks

ROW = 17                 # pixels per frame
WIDTH = 1200
FONT = 12
CHAR = 7.0               # average glyph width at FONT (monospace)


def folded(tables: dict, programs: dict, sym, probe_names: dict) -> Counter:
    """'root;...;leaf' -> count, from every table keyed by a stack."""
    out: Counter = Counter()
    for (slot, number), t in tables.items():
        prog = programs.get(slot)
        kinds = prog.aggs[number].keys if prog and number < len(prog.aggs) else ()
        if "stack" not in kinds:
            continue
        for keys, row in t.rows.items():
            names: list[str] = []
            leaf = []
            for k, what in zip(keys, kinds):
                if what == "stack":
                    names = stacks.folded_names(k, sym) if k else ["(no room)"]
                elif what == "probe":
                    leaf = [probe_names.get(k, f"probe {k}")]
            out[";".join(names + leaf)] += row.count
    return out


def folded_lines(paths: Counter) -> list[str]:
    return [f"{p} {n}" for p, n in sorted(paths.items())]


def _tree(paths: Counter) -> dict:
    root: dict = {"name": "all", "count": 0, "kids": {}}
    for path, n in paths.items():
        node = root
        node["count"] += n
        for name in path.split(";"):
            node = node["kids"].setdefault(name, {"name": name, "count": 0, "kids": {}})
            node["count"] += n
    return root


def _color(name: str) -> str:
    h = zlib.crc32(name.encode())
    return f"rgb({205 + h % 50},{80 + (h >> 8) % 130},{(h >> 16) % 55})"


def _depth(node: dict) -> int:
    return 1 + max((_depth(k) for k in node["kids"].values()), default=0)


def svg(paths: Counter, title: str = "Flame Graph") -> str:
    """The SVG text (see the top)."""
    root = _tree(paths)
    total = root["count"] or 1
    height = (_depth(root) + 2) * ROW + 40
    scale = (WIDTH - 20) / total
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="monospace" font-size="{FONT}">',
           f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#f8f8f0"/>',
           f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="17">'
           f'{html.escape(title)}</text>']

    def draw(node, x, level):
        w = node["count"] * scale
        y = height - (level + 1) * ROW - 10
        share = 100.0 * node["count"] / total
        tip = f"{node['name']} ({node['count']} samples, {share:.2f}%)"
        out.append(f'<g><title>{html.escape(tip)}</title>'
                   f'<rect x="{x:.2f}" y="{y}" width="{max(w - 0.5, 0.1):.2f}" '
                   f'height="{ROW - 1}" fill="{_color(node["name"])}" rx="2"/>')
        fits = int((w - 6) // CHAR)
        if fits >= 3:
            text = node["name"] if len(node["name"]) <= fits else node["name"][:fits - 2] + ".."
            out.append(f'<text x="{x + 3:.2f}" y="{y + ROW - 5}">{html.escape(text)}</text>')
        out.append('</g>')
        cx = x
        for name in sorted(node["kids"]):
            kid = node["kids"][name]
            draw(kid, cx, level + 1)
            cx += kid["count"] * scale

    draw(root, 10, 0)
    out.append('</svg>')
    return "\n".join(out)
