"""The formatter (seed 002 §6): a program's LOG records as text, by templates
keyed by the record's major and minor codes.

A template file declares its major code first, then a template per minor:

    /* args.tmpl: comments as in C */
    major=1
    minor=1,
    desc="thread_create",
    fmt="name=0x%4x fn=0x%4x ",
    fmt="string='%ps'"

`desc` and `fmt` are C strings (\\n, \\t, \\", \\\\); the `fmt`s of a minor are
concatenated. A template directory is every *.tmpl file in it, each mapped
by the major code it declares (two files with one major are an error).
Placeholders take bytes of the log data in order, in the guest's byte order:

    %<n>x   n bytes in hex, with leading zeros      (n defaults to 1)
    %<n>u   n bytes as an unsigned decimal
    %<n>d   n bytes as a signed decimal
    %<n>c   n bytes as characters ('.' for what is not printable)
    %<n>i   skip n bytes
    %s      a string up to its NUL
    %p...   a logm/logs prefix, then the control after it on its data
            (%ps, %p4x ...); a fault token prints <fault at 0xADDR>
    %r(...) a prefix whose length repeats the expression in parentheses
            until its data is used (%r4x repeats one control)
    %z      the rest as a dump
    %%  %(  %)   the characters themselves

Our own extension: `w` for n is the guest's word size (%wx is 4 bytes on
i386, 8 on sparc64), so one template serves both arches. %f (floats) is
not supported: the guest logs no floating point. A record whose major and
minor have no template, or whose template does not fit its data, prints in
the dump form: offsets, 16 bytes in hex, and their characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..wire.frames import WIRE

PREFIX = WIRE.const("WIRE_LOG_PREFIX_BYTES")
TOKENS = {e.name: e.value for e in WIRE.table("WIRE_LOG_TOKENS")}


class TemplateError(UsageError):
    """A template file that cannot be read: file:line: what."""


@dataclass
class Template:
    major: int
    minor: int
    desc: str
    fmt: str
    where: str = ""      # file:line, for errors


def _cstring(text: str, where: str) -> str:
    m = re.fullmatch(r'\s*"((?:[^"\\]|\\.)*)"\s*,?\s*', text)
    if not m:
        raise TemplateError(f"{where}: expected a C string, got {text.strip()!r}")
    return bytes(m.group(1), "utf-8").decode("unicode_escape")


def parse(text: str, path: str = "<templates>") -> list[Template]:
    """The templates of one file."""
    clean = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    major = None
    out: list[Template] = []
    for n, line in enumerate(clean.splitlines(), 1):
        where = f"{path}:{n}"
        if not line.strip():
            continue
        m = re.match(r"^\s*(major|minor|desc|fmt)\s*=(.*)$", line)
        if not m:
            raise TemplateError(f"{where}: expected major=, minor=, desc= or fmt=")
        key, value = m.group(1), m.group(2)
        if key in ("major", "minor"):
            try:
                v = int(value.strip().rstrip(","), 0)
            except ValueError:
                raise TemplateError(f"{where}: {key}={value.strip()} is not a number") \
                    from None
            if key == "major":
                if major is not None or out:
                    raise TemplateError(f"{where}: major= comes once, first")
                major = v
            else:
                if major is None:
                    raise TemplateError(f"{where}: minor= before major=")
                out.append(Template(major, v, "", "", where))
            continue
        if not out:
            raise TemplateError(f"{where}: {key}= before any minor=")
        s = _cstring(value, where)
        if key == "desc":
            out[-1].desc = s
        else:
            out[-1].fmt += s
    for t in out:
        if not t.desc:
            raise TemplateError(f"{t.where}: minor={t.minor} has no desc=")
        check(t.fmt, t.where)
    if major is None:
        raise TemplateError(f"{path}: no major=")
    return out


def check(fmt: str, where: str) -> None:
    """Refuse placeholders the formatter does not know."""
    i = 0
    while True:
        i = fmt.find("%", i)
        if i < 0:
            return
        m = _PLACE.match(fmt, i)
        if not m:
            raise TemplateError(f"{where}: unknown placeholder {fmt[i:i + 4]!r}")
        i = m.end()


class _Data:
    def __init__(self, data: bytes, order: str, word: int):
        self.data, self.pos, self.order, self.word = data, 0, order, word

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise IndexError(f"the template wants {n} bytes at offset {self.pos}, "
                             f"the record has {len(self.data) - self.pos} left")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int(self, n: int, signed=False) -> int:
        return int.from_bytes(self.take(n), "little" if self.order == "<" else "big",
                              signed=signed)


def dump(data: bytes, indent: str = "  ") -> list[str]:
    """Offsets, 16 bytes in hex, and their characters."""
    out = []
    for off in range(0, len(data), 16):
        chunk = data[off:off + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 0x20 <= b < 0x7f else "." for b in chunk)
        out.append(f"{indent}+{off:08x} {hexes:<47} *{text}*")
    return out


def _one(ctrl: str, n: int, d: _Data) -> str:
    if ctrl == "x":
        return f"{d.int(n):0{2 * n}x}"
    if ctrl == "u":
        return str(d.int(n))
    if ctrl == "d":
        return str(d.int(n, signed=True))
    if ctrl == "c":
        return "".join(chr(b) if 0x20 <= b < 0x7f else "." for b in d.take(n))
    if ctrl == "i":
        d.take(n)
        return ""
    raise ValueError(ctrl)


def _string(d: _Data, limit: int | None) -> str:
    raw = d.data[d.pos:] if limit is None else d.take(limit)
    end = raw.find(b"\0")
    text = raw[:end if end >= 0 else len(raw)]
    if limit is None:
        d.pos += len(text) + (1 if end >= 0 else 0)
    return text.decode("utf-8", "replace")


_PLACE = re.compile(r"%(%|\(|\)|r\(|r|p|z|s|(w|\d*)([xudci]))")
_AFTER = re.compile(r"s|(w|\d*)([xudci])")


def _width(spec: str, d: _Data) -> int:
    return d.word if spec == "w" else int(spec or 1)


def _render(fmt: str, d: _Data) -> str:
    """fmt applied from d's position on; d advances by what it used."""
    out = []
    i = 0
    while i < len(fmt):
        if fmt[i] != "%":
            out.append(fmt[i])
            i += 1
            continue
        m = _PLACE.match(fmt, i)
        i = m.end()
        tok = m.group(1)
        if tok in ("%", "(", ")"):
            out.append(tok)
        elif tok == "z":
            out.append("\n" + "\n".join(dump(d.data[d.pos:])))
            d.pos = len(d.data)
        elif tok == "s":
            out.append(_string(d, None))
        elif m.group(3):
            out.append(_one(m.group(3), _width(m.group(2), d), d))
        else:                                      # p, r, r(: a prefix first
            token, length = d.int(1), d.int(2)
            if tok == "r(":
                close = fmt.index(")", i)
                body, i = fmt[i:close], close + 1
            else:
                after = _AFTER.match(fmt, i)
                if not after:
                    raise ValueError(f"%{tok} must be followed by a control")
                body, i = "%" + after.group(0), after.end()
            if token == TOKENS["FAULT"]:
                out.append(f"<fault at {d.int(length):#x}>")
                continue
            part = _Data(d.data[:d.pos + length], d.order, d.word)
            part.pos = d.pos
            if tok == "p":
                out.append(_render(body, part) if body != "%s" else _string(part, length))
            else:                                  # repeat until the data is used
                reps = []
                while part.pos < len(part.data):
                    reps.append(_render(body, part))
                out.append("".join(reps) if tok == "r(" else " ".join(reps))
            d.pos += length
    return "".join(out)


def render(fmt: str, data: bytes, order: str, word: int) -> str:
    """fmt applied to data; IndexError if the data runs out."""
    return _render(fmt, _Data(data, order, word))


class Formatter:
    """Templates by (major, minor), from a directory of *.tmpl files."""

    def __init__(self, templates: list[Template] = ()):
        self.by_code = {(t.major, t.minor): t for t in templates}

    @classmethod
    def load(cls, directory) -> "Formatter":
        d = Path(directory)
        if not d.is_dir():
            raise TemplateError(f"no template directory {d}")
        majors: dict[int, Path] = {}
        found = []
        for f in sorted(d.glob("*.tmpl")):
            ts = parse(f.read_text(), str(f))
            major = ts[0].major if ts else None
            if major is not None and major in majors:
                raise TemplateError(f"{f}: major={major} is {majors[major]}'s too")
            if major is not None:
                majors[major] = f
            found += ts
        return cls(found)

    def lines(self, major: int, minor: int, data: bytes, order: str, word: int) \
            -> list[str]:
        """The record as text: `desc: formatted`, or the dump."""
        t = self.by_code.get((major, minor))
        if t is not None:
            try:
                return [f"{t.desc}: {render(t.fmt, data, order, word)}".rstrip()]
            except (IndexError, ValueError) as e:
                head = f"{t.desc}: (template {t.where} does not fit: {e})"
                return [head] + dump(data)
        return [f"log major {major} minor {minor}, {len(data)} bytes"] + dump(data)
