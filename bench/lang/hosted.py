"""BEGIN and END, which run on the host, and C formats in Python's terms.

A BEGIN or END clause never reaches the guest: its actions (printf,
trace, exit, clear, trunc) must have constant arguments and become
(action, args) tuples that bench/lang/output.py carries out before the
run or after it. cc_format() turns a C printf format into a Python
%-format and lists each conversion's kind (int or string); the guest's
printf programs (statements.py) use it too, so a format means the same
wherever it appears.
"""

from __future__ import annotations

import re

from .parser import AggRef, Action, Num, Script, Str, Unary



def host_clause(script: Script, c, aggs) -> list:
    """BEGIN/END: what the host does, as (action, args) with constants."""
    if c.predicate is not None:
        raise script.error(c.predicate.pos, "BEGIN and END run on the host: no "
                           "predicate")
    out = []
    for s in c.body:
        if not isinstance(s, Action):
            raise script.error(s.pos, "BEGIN and END run on the host: only printf, "
                               "trace, exit, clear and trunc of constants")
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
            continue
        vals = [_const(script, a) for a in s.args]
        if s.name == "printf":
            if not s.args or not isinstance(s.args[0], Str):
                raise script.error(s.pos, "printf's first argument is its format string")
            fmt, kinds = c_format(script, s.args[0])
            if len(kinds) != len(vals) - 1:
                raise script.error(s.pos, f"the format wants {len(kinds)} arguments, "
                                   f"printf has {len(vals) - 1}")
            out.append(("print", fmt % tuple(vals[1:])))
        elif s.name == "trace":
            out.append(("print", f"{vals[0]}\n" if vals else "\n"))
        else:
            out.append(("exit", vals[0] if vals else 0))
    return out


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
