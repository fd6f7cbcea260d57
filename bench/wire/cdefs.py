"""Read the shared C headers, so the host never keeps a second copy.

The guest and the host share numbers and layouts (frame types, reply and
exit statuses, payload structs). They are written once, in C headers, in
three deliberately plain forms that this module understands:

  #define NAME value                 integer constants
  #define TABLE(X) X(NAME, value[, value...], "meaning"[, "more text"...]) ...
                                     X-macro tables
  struct name { uintN_t field; intN_t field[K]; ... };

A table's values are numbers, or constants joined by '|' or '+' — of the
header itself or of a header it includes with `#include "x.h"` from its own
directory or the guest's include directories — include/ (what the kernel,
the tracer and the host share), the tracer's and the kernel's — (only the
constants of such a header are read). Anything else in the header is
ignored. A header that uses one of these
forms in a way the reader does not understand raises CdefsError rather than
being half-read. Struct layout follows natural alignment with no padding
allowed (the C side asserts the size), so a struct is a fixed-size record.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import BenchError
from ..paths import REPO


class CdefsError(BenchError):
    """A shared header this reader cannot read whole (a build problem)."""


@dataclass(frozen=True)
class TableEntry:
    name: str
    value: int
    meaning: str
    more: tuple[str, ...] = ()      # further string columns, in order
    values: tuple[int, ...] = ()    # every number column, value first


@dataclass(frozen=True)
class Field:
    name: str
    ctype: str
    count: int          # 1 for a scalar, K for an array
    offset: int


@dataclass(frozen=True)
class CStruct:
    name: str
    fields: tuple[Field, ...]
    size: int

    def format(self, byte_order: str) -> str:
        """struct-module format for this layout ('<' or '>')."""
        codes = "".join(
            (str(f.count) if f.count > 1 else "") + _TYPES[f.ctype][1]
            for f in self.fields)
        return byte_order + codes

    def unpack(self, data: bytes, byte_order: str) -> dict:
        if len(data) < self.size:
            raise CdefsError(f"struct {self.name}: need {self.size} bytes, "
                             f"got {len(data)}")
        values = struct.unpack(self.format(byte_order), data[:self.size])
        out, i = {}, 0
        for f in self.fields:
            if f.count == 1:
                out[f.name] = values[i]
            else:
                out[f.name] = list(values[i:i + f.count])
            i += f.count
        return out

    def pack(self, byte_order: str, **values) -> bytes:
        flat = []
        for f in self.fields:
            v = values.get(f.name, 0 if f.count == 1 else [0] * f.count)
            flat.extend(v if f.count > 1 else [v])
        return struct.pack(self.format(byte_order), *flat)


_TYPES = {  # ctype: (size, struct code)
    "uint8_t": (1, "B"), "int8_t": (1, "b"),
    "uint16_t": (2, "H"), "int16_t": (2, "h"),
    "uint32_t": (4, "I"), "int32_t": (4, "i"),
    "uint64_t": (8, "Q"), "int64_t": (8, "q"),
}


@dataclass(frozen=True)
class Header:
    path: Path
    constants: dict[str, int]
    tables: dict[str, tuple[TableEntry, ...]]
    structs: dict[str, CStruct]
    included: dict[str, int] = None     # constants of the headers it includes

    def const(self, name: str) -> int:
        """A constant of the header, or of a header it includes."""
        for d in (self.constants, self.included or {}):
            if name in d:
                return d[name]
        raise CdefsError(f"{self.path}: no constant {name}")

    def table(self, name: str) -> tuple[TableEntry, ...]:
        try:
            return self.tables[name]
        except KeyError:
            raise CdefsError(f"{self.path}: no table {name}") from None

    def by_value(self, table: str) -> dict[int, TableEntry]:
        return {e.value: e for e in self.table(table)}

    def by_name(self, table: str) -> dict[str, TableEntry]:
        return {e.name: e for e in self.table(table)}


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _join_continuations(text: str) -> list[str]:
    return text.replace("\\\n", " ").split("\n")


_INT = r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*"
_CONST_RE = re.compile(r"^\s*#\s*define\s+([A-Z][A-Z0-9_]*)\s+" + _INT + r"\s*$")
_TABLE_RE = re.compile(r"^\s*#\s*define\s+([A-Z][A-Z0-9_]*)\(X\)\s+(.*)$")
_STR = r'"(?:[^"\\]|\\.)*"'
_ENTRY_RE = re.compile(r"X\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*((?:[^,\"()]+?\s*,\s*)+?)"
                       r"(" + _STR + r"(?:\s*,\s*" + _STR + r")*)\s*\)")
_STR_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')
_TERM_RE = re.compile(r"^(?:" + _INT + r"|([A-Z_][A-Z0-9_]*))$")
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Where `#include "x.h"` is looked for, after the including header's own
# directory (the guest's -I directories that hold shared headers).
INCLUDE_DIRS = ("include", "tracer/include", "guest-kernel/include")
_STRUCT_RE = re.compile(r"\bstruct\s+([a-z_][a-z0-9_]*)\s*\{([^}]*)\}\s*;", re.S)
_FIELD_RE = re.compile(r"^(u?int(?:8|16|32|64)_t)\s+([a-z_][a-z0-9_]*)"
                       r"(?:\[(\d+)\])?$")


def _value(expr: str, constants: dict[str, int]) -> int | None:
    """A table value: numbers and constant names joined by '|' or '+'."""
    total, op = 0, "+"
    for tok in re.split(r"\s*([|+])\s*", expr.strip()):
        if tok in "|+" and tok:
            op = tok
            continue
        m = _TERM_RE.match(tok)
        if not m:
            return None
        v = int(m.group(1), 0) if m.group(1) else constants.get(m.group(2))
        if v is None:
            return None
        total = total | v if op == "|" else total + v
    return total


def _included_constants(text: str, path: Path, seen: set) -> dict[str, int]:
    """The #define constants of the headers text includes (recursively)."""
    out: dict[str, int] = {}
    for name in _INCLUDE_RE.findall(text):
        for d in (path.parent, *(REPO / i for i in INCLUDE_DIRS)):
            inc = (d / name).resolve()
            if inc.is_file():
                break
        else:
            continue                 # a header of the other tree, or none
        if inc in seen:
            continue
        seen.add(inc)
        sub = inc.read_text()
        out.update(_included_constants(sub, inc, seen))
        for line in _join_continuations(_strip_comments(sub)):
            m = _CONST_RE.match(line)
            if m:
                out[m.group(1)] = int(m.group(2), 0)
    return out


def parse(text: str, path: Path = Path("<text>")) -> Header:
    clean = _strip_comments(text)
    constants: dict[str, int] = {}
    tables: dict[str, tuple[TableEntry, ...]] = {}
    known = _included_constants(clean, path, {Path(path).resolve()})
    for line in _join_continuations(clean):
        m = _CONST_RE.match(line)
        if m:
            constants[m.group(1)] = int(m.group(2), 0)
            continue
        m = _TABLE_RE.match(line)
        if m:
            body, entries = m.group(2), []
            for name, exprs, strings in _ENTRY_RE.findall(body):
                values = []
                for expr in filter(None, (e.strip() for e in exprs.split(","))):
                    v = _value(expr, {**known, **constants})
                    if v is None:
                        raise CdefsError(f"{path}: table {m.group(1)}: {name}'s value "
                                         f"{expr!r} is not a number or known "
                                         "constants joined by | or +")
                    values.append(v)
                texts = _STR_RE.findall(strings)
                entries.append(TableEntry(name, values[0], texts[0], tuple(texts[1:]),
                                          tuple(values)))
            if len(entries) != body.count("X("):
                raise CdefsError(f"{path}: table {m.group(1)} has entries "
                                 "not of the form X(NAME, value, \"text\", ...)")
            tables[m.group(1)] = tuple(entries)

    structs: dict[str, CStruct] = {}
    for m in _STRUCT_RE.finditer(clean):
        name, body = m.group(1), m.group(2)
        fields, offset = [], 0
        for decl in (d.strip() for d in body.split(";")):
            if not decl:
                continue
            fm = _FIELD_RE.match(" ".join(decl.split()))
            if not fm:
                raise CdefsError(f"{path}: struct {name}: field '{decl}' is not "
                                 "a fixed-width integer or an array of them")
            ctype, fname, count = fm.group(1), fm.group(2), int(fm.group(3) or 1)
            size = _TYPES[ctype][0]
            if offset % size:
                raise CdefsError(f"{path}: struct {name}: field {fname} at "
                                 f"offset {offset} would need padding")
            fields.append(Field(fname, ctype, count, offset))
            offset += size * count
        structs[name] = CStruct(name, tuple(fields), offset)
    return Header(path, constants, tables, structs, known)


SHARED = REPO / "include"


@lru_cache(maxsize=None)
def load(relpath: str) -> Header:
    """Parse a header of this repository, e.g. 'include/wire.h'. A header
    of include/ that a header there includes (wire.h's wire_program.h) is
    one with it: its tables and structs are the including header's too."""
    path = REPO / relpath
    h = parse(path.read_text(), path)
    if path.parent.resolve() != SHARED.resolve():
        return h
    for name in _INCLUDE_RE.findall(_strip_comments(path.read_text())):
        sub = SHARED / name
        if sub.is_file() and sub.name != path.name:
            inc = parse(sub.read_text(), sub)
            for k, v in inc.tables.items():
                h.tables.setdefault(k, v)
            for k, v in inc.structs.items():
                h.structs.setdefault(k, v)
    return h
