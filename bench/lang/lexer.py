"""D's tokens, each with its offset in the text (for errors' places).

Tokens: numbers (decimal, 0x hex, octal 0...), strings ("..." with C's
escapes), identifiers, aggregation names (@ or @name), and C's
punctuators, longest first. Comments are C's /* */ and //. A probe
description is not lexed here: the parser reads it as raw text
(probe_description) at the start of a clause, since `fbt::ct_*:entry`
is not made of C tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import LangError

PUNCT = sorted("""-> ++ -- << >> <= >= == != && || ^^ += -= *= /= %= &= |= ^=
    ? : ; , ( ) [ ] { } / * % + - ! ~ < > & | ^ = .""".split(), key=len, reverse=True)
_SPACE = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n]*)+", re.S)
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|\d+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AGG = re.compile(r"@[A-Za-z0-9_]*")
_PROBE = re.compile(r"[A-Za-z0-9_:*?+.\[\]\-]+")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "0": "\0", "r": "\r"}


@dataclass(frozen=True)
class Token:
    kind: str            # number string ident agg punct eof
    text: str
    pos: int
    value: object = None


class Lexer:
    def __init__(self, text: str, path: str):
        self.text, self.path, self.pos = text, path, 0

    def error(self, pos: int, what: str) -> LangError:
        return LangError(self.path, self.text, pos, what)

    def skip(self) -> None:
        m = _SPACE.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        if self.text.startswith("/*", self.pos):
            raise self.error(self.pos, "a comment that never ends")

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def probe_description(self) -> Token:
        self.skip()
        m = _PROBE.match(self.text, self.pos)
        if not m:
            raise self.error(self.pos, "a probe description (provider:module:"
                             "function:name, BEGIN or END) is expected here")
        self.pos = m.end()
        return Token("probe", m.group(0), m.start())

    def next(self) -> Token:
        self.skip()
        t, pos = self.text, self.pos
        if pos >= len(t):
            return Token("eof", "", pos)
        m = _NUMBER.match(t, pos)
        if m:
            self.pos = m.end()
            if _IDENT.match(t, self.pos) and not t[self.pos - 1].isalpha():
                raise self.error(pos, f"{t[pos:self.pos + 1]!r} is not a number")
            s = m.group(0)
            v = int(s, 16) if s[:2].lower() == "0x" else int(s, 8 if len(s) > 1 and
                                                               s[0] == "0" else 10)
            return Token("number", s, pos, v)
        if t[pos] == '"':
            out, i = [], pos + 1
            while i < len(t) and t[i] != '"':
                if t[i] == "\n":
                    break
                if t[i] == "\\" and i + 1 < len(t):
                    if t[i + 1] not in _ESCAPES:
                        raise self.error(i, f"unknown escape \\{t[i + 1]}")
                    out.append(_ESCAPES[t[i + 1]])
                    i += 2
                    continue
                out.append(t[i])
                i += 1
            if i >= len(t) or t[i] != '"':
                raise self.error(pos, "a string that never ends")
            self.pos = i + 1
            return Token("string", t[pos:i + 1], pos, "".join(out))
        m = _AGG.match(t, pos)
        if m:
            self.pos = m.end()
            return Token("agg", m.group(0), pos, m.group(0)[1:])
        m = _IDENT.match(t, pos)
        if m:
            self.pos = m.end()
            return Token("ident", m.group(0), pos)
        for p in PUNCT:
            if t.startswith(p, pos):
                self.pos = pos + len(p)
                return Token("punct", p, pos)
        raise self.error(pos, f"unexpected character {t[pos]!r}")
