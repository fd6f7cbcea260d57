"""TAP (Test Anything Protocol, version 13) for tools that read it.

One test point per result: `ok N - name` or `not ok N - name`; an expected
failure is `not ok N - name # TODO reason` (TAP consumers then do not count
it against the run), and a YAML block with the details a person needs
(verdict, log path, the failing output). The plan `1..N` comes first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Point:
    name: str
    ok: bool
    todo: str = ""
    detail: dict[str, str] = field(default_factory=dict)


def _one_line(s: str) -> str:
    # '#' would start a directive in the description.
    return re.sub(r"\s+", " ", s).replace("#", "\\#").strip()


def _yaml(detail: dict[str, str]) -> list[str]:
    out = ["  ---"]
    for key, value in detail.items():
        value = re.sub(r"[^\n\t\x20-\x7e\xa0-\ufffd]", "?", value)
        if "\n" in value:
            out.append(f"  {key}: |")
            out.extend(f"    {line}".rstrip() for line in value.splitlines())
        else:
            out.append(f"  {key}: '{value.replace(chr(39), chr(39) * 2)}'")
    out.append("  ...")
    return out


def lines(points: list[Point]) -> list[str]:
    out = ["TAP version 13", f"1..{len(points)}"]
    for n, p in enumerate(points, 1):
        head = f"{'ok' if p.ok else 'not ok'} {n} - {_one_line(p.name)}"
        if p.todo:
            head += f" # TODO {_one_line(p.todo)}"
        out.append(head)
        if p.detail:
            out.extend(_yaml(p.detail))
    return out


def write(path: Path, points: list[Point]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines(points)) + "\n", encoding="utf-8")
