"""BEGIN and END, which run on the host, and C formats in Python's terms.

A BEGIN or END clause never reaches the guest: its actions (printf,
trace, exit, clear, trunc) become tuples that bench/lang/output.py carries
out before the run or after it. printf and trace take expressions over
constants and the script's scalar globals: the host reads the globals
back from the guest at the end (`program global N`; all 0 at BEGIN) and
evaluates them here as the VM would, on the arch's word (HostValues).
c_format() turns a C printf format into a Python %-format and lists each
conversion's kind (int or string); the guest's printf programs
(statements.py) use it too, so a format means the same wherever it
appears.
"""

from __future__ import annotations

import re

from .model import INT
from .parser import AggRef, Action, Binary, Cast, Cond, Name, Num, Script, Str, Unary, \
    CASTS


def host_clause(script: Script, c, aggs, scope) -> list:
    """BEGIN/END: what the host does, as (action, args)."""
    if c.predicate is not None:
        raise script.error(c.predicate.pos, "BEGIN and END run on the host: no "
                           "predicate")
    out = []
    for s in c.body:
        if not isinstance(s, Action):
            raise script.error(s.pos, "BEGIN and END run on the host: only printf, "
                               "trace, exit, clear and trunc, of constants and globals")
        if s.name in ("clear", "trunc"):
            if not s.args or not isinstance(s.args[0], AggRef):
                raise script.error(s.pos, f"{s.name}() takes an aggregation (@name)")
            if s.args[0].name not in aggs:
                raise script.error(s.args[0].pos, f"no aggregation @{s.args[0].name}")
            n = None
            if s.name == "trunc" and len(s.args) > 1:
                n = _const(script, s.args[1])
            if len(s.args) > (2 if s.name == "trunc" else 1):
                raise script.error(s.pos, f"{s.name}() takes too many arguments")
            out.append((s.name, s.args[0].name, n))
        elif s.name == "printf":
            if not s.args or not isinstance(s.args[0], Str):
                raise script.error(s.pos, "printf's first argument is its format string")
            fmt, kinds = c_format(script, s.args[0])
            if len(kinds) != len(s.args) - 1:
                raise script.error(s.pos, f"the format wants {len(kinds)} arguments, "
                                   f"printf has {len(s.args) - 1}")
            for k, a in zip(kinds, s.args[1:]):
                if (k == "string") != isinstance(a, Str):
                    raise script.error(a.pos, "BEGIN and END print strings only as "
                                       "constants, and numbers with %d, %u, %x ..."
                                       if k == "string" else
                                       "a string for a number's conversion: use %s")
                _check(script, a, scope)
            out.append(("print", fmt, s.args[1:]))
        elif s.name == "trace":
            if len(s.args) != 1:
                raise script.error(s.pos, "trace() takes one argument")
            _check(script, s.args[0], scope)
            out.append(("print", "%s\n", s.args))
        else:
            vals = [_const(script, a) for a in s.args]
            out.append(("exit", vals[0] if vals else 0))
    return out


def _check(script: Script, e, scope) -> None:
    """An expression BEGIN and END can evaluate: constants, globals,
    operators, casts."""
    if isinstance(e, (Num, Str)):
        return
    if isinstance(e, Name):
        if e.name not in scope.globals:
            raise script.error(e.pos, f"{e.name!r} in BEGIN or END: the host knows "
                               "constants and the script's globals only")
        return
    if isinstance(e, (Unary, Cast)):
        return _check(script, e.e, scope)
    if isinstance(e, Binary):
        return _check(script, e.a, scope) or _check(script, e.b, scope)
    if isinstance(e, Cond):
        for x in (e.c, e.a, e.b):
            _check(script, x, scope)
        return
    raise script.error(e.pos, "BEGIN and END run on the host: only constants and "
                       "globals here")


def _cdiv(a: int, b: int) -> int:
    """C's signed division: the quotient truncated toward 0 (the VM's divs)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


class HostValues:
    """Expressions of BEGIN and END over the globals' words, as the VM
    computes them: each result cut to the 64-bit word, division,
    comparisons and >> signed unless a side is unsigned."""

    def __init__(self, scope, words: dict, word_bytes: int):
        self.scope, self.words, self.bits = scope, words, 8 * word_bytes
        self.mask = (1 << self.bits) - 1

    def signed(self, e) -> bool:
        if isinstance(e, Name):
            return self.scope.types.get(("g", e.name), INT).signed
        if isinstance(e, Cast):
            return CASTS[e.type][1]
        if isinstance(e, Binary) and e.op not in ("==", "!=", "<", "<=", ">", ">=",
                                                   "&&", "||", "^^"):
            return self.signed(e.a) and self.signed(e.b)
        if isinstance(e, Unary) and e.op != "!":
            return self.signed(e.e)
        if isinstance(e, Cond):
            return self.signed(e.a)
        return True

    def value(self, e) -> int:
        """e's value as the printf of a word shows it (signed or not)."""
        v = self.word(e) & self.mask
        if self.signed(e) and v >> (self.bits - 1):
            v -= 1 << self.bits
        return v

    def word(self, e) -> int:
        m = self.mask
        if isinstance(e, Num):
            return e.value & m
        if isinstance(e, Name):
            return self.words.get(self.scope.globals[e.name], 0) & m
        if isinstance(e, Cast):
            bits, signed = CASTS[e.type]
            v = self.word(e.e)
            if not bits or bits >= self.bits:
                return v
            v &= (1 << bits) - 1
            return (v - (1 << bits) if signed and v >> (bits - 1) else v) & m
        if isinstance(e, Unary):
            v = self.word(e.e)
            return {"-": -v, "~": ~v, "!": int(v == 0), "+": v}[e.op] & m
        if isinstance(e, Cond):
            return self.word(e.a) if self.word(e.c) else self.word(e.b)
        a, b = self.word(e.a), self.word(e.b)
        signed = self.signed(e.a) and self.signed(e.b)
        sa, sb = (self.value(e.a), self.value(e.b)) if signed else (a, b)
        ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
               "/": lambda: (_cdiv(sa, sb) if signed else a // b) if b else 0,
               "%": lambda: (sa - _cdiv(sa, sb) * sb if signed else a % b) if b else 0,
               "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
               "<<": lambda: a << (b % self.bits),
               ">>": lambda: (sa if signed else a) >> (b % self.bits),
               "==": lambda: int(a == b), "!=": lambda: int(a != b),
               "<": lambda: int(sa < sb), "<=": lambda: int(sa <= sb),
               ">": lambda: int(sa > sb), ">=": lambda: int(sa >= sb),
               "&&": lambda: int(bool(a) and bool(b)),
               "||": lambda: int(bool(a) or bool(b)),
               "^^": lambda: int(bool(a) != bool(b))}
        return ops[e.op]() & m

    def text(self, fmt: str, args: list) -> str:
        return fmt % tuple(a.value if isinstance(a, Str) else self.value(a)
                           for a in args)


def globals_read(actions: list, scope) -> dict:
    """name -> number of every global the actions read."""
    found: dict = {}

    def walk(e):
        if isinstance(e, Name) and e.name in scope.globals:
            found[e.name] = scope.globals[e.name]
        for x in vars(e).values():
            if isinstance(x, (Name, Unary, Binary, Cond, Cast)):
                walk(x)
    for act in actions:
        if act[0] == "print":
            for a in act[2]:
                walk(a)
    return found


def _const(script: Script, e):
    if isinstance(e, (Num, Str)):
        return e.value
    if isinstance(e, Unary) and e.op == "-" and isinstance(e.e, Num):
        return -e.e.value
    raise script.error(e.pos, "BEGIN and END run on the host: only constants here")


_CONV = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?(hh|h|ll|l|z)?([diuxXcsp%])")


def c_format(script: Script, s: Str) -> tuple[str, list]:
    """A C format into Python's, and each conversion's kind (int, string)."""
    out, kinds, i = [], [], 0
    text = s.value
    for m in _CONV.finditer(text):
        out.append(text[i:m.start()].replace("%", "%%"))
        flags, width, prec, _, conv = m.groups()
        i = m.end()
        if conv == "%":
            out.append("%%")
            continue
        if conv == "p":
            out.append(f"%{flags}{width}x")
            conv = "x"
        else:
            out.append(f"%{flags}{width}{'.' + prec if prec else ''}"
                       f"{'d' if conv in 'iu' else conv}")
        kinds.append("string" if conv == "s" else "int")
    rest = text[i:]
    bad = rest.find("%")
    if bad >= 0:
        raise script.error(s.pos + 1 + _raw_offset(s, i + bad),
                           f"unknown conversion {rest[bad:bad + 2]!r} in the format")
    out.append(rest)
    return "".join(out), kinds


def _raw_offset(s: Str, k: int) -> int:
    return k        # escapes before it shift it slightly; close enough for a caret
