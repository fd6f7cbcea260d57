"""Where each parameter is at a function's entry, from its DWARF location.

At -O2 gcc does not always pass arguments as the calling convention says:
on i386 a static function, and its .part/.isra/.constprop clones, take
them in registers (`mov %edi,%eax; call f`), and a clone may have lost
some or have them as constants. The record's stack words would then be
stale. So each formal parameter's DW_AT_location is evaluated at the
function's first instruction (low_pc), where entry probes fire: a single
expression, or the entry of its location list whose range holds low_pc
(DWARF 5 offset pairs are relative to the CU's base, or to the last base
address entry). Each piece of it (DW_OP_piece splits a 64-bit value) is
handed to the arch (arches.Arch.arg_location), which says where the
trapped state holds it: ("word", k), the convention's argument word k, or
("reg", r), register r as probe programs number them; or why it cannot.

A parameter with no location but DW_AT_const_value is that constant (a
.constprop clone's); with neither it was optimized out; one whose
location is the caller's argument (DW_OP_GNU_parameter_ref) was not
passed to the clone at all. Nothing here ever stands in a stack word for
a value DWARF does not place there.
"""

from __future__ import annotations

from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.locationlists import (BaseAddressEntry, LocationEntry,
                                          LocationExpr, LocationParser)


class Entry:
    """A parameter's place at entry: sources (one per word), a constant,
    or why neither."""

    def __init__(self, sources=(), const=None, why=""):
        self.sources = tuple(sources)
        self.const = const
        self.why = why


class Locator:
    """Parameter locations of one ELF's DWARF, evaluated at entry."""

    def __init__(self, dwarf, arg_location):
        self.parser = LocationParser(dwarf.location_lists())
        self.arg_location = arg_location
        self._expr = {}

    def _ops(self, cu, raw):
        p = self._expr.get(id(cu))
        if p is None:
            p = self._expr[id(cu)] = DWARFExprParser(cu.structs)
        return p.parse_expr(raw)

    def _at(self, loc, cu, entry: int):
        """The expression that holds at entry, or None."""
        if isinstance(loc, LocationExpr):
            return loc.loc_expr
        base = cu.get_top_DIE().attributes.get("DW_AT_low_pc")
        base = base.value if base is not None else 0
        for e in loc:
            if isinstance(e, BaseAddressEntry):
                base = e.base_address
            elif isinstance(e, LocationEntry):
                lo, hi = e.begin_offset, e.end_offset
                if not getattr(e, "is_absolute", False):
                    lo, hi = lo + base, hi + base
                if lo <= entry < hi:
                    return e.loc_expr
        return None

    def entry(self, param, function, cu, origin, size: int, word_bytes: int) -> Entry:
        """Where param (a DW_TAG_formal_parameter of the concrete function
        DIE; origin: the DIE holding its name and type) is at entry."""
        attr = param.attributes.get("DW_AT_location")
        if attr is None:
            for d in (param, origin):
                c = d.attributes.get("DW_AT_const_value")
                if c is not None and isinstance(c.value, int):
                    return Entry(const=c.value)
            return Entry(why="optimized out")
        try:
            loc = self.parser.parse_from_attribute(attr, cu["version"], function)
        except Exception as e:          # a form this pyelftools does not read
            return Entry(why=f"location not read ({type(e).__name__})")
        raw = self._at(loc, cu, function.attributes["DW_AT_low_pc"].value)
        if raw is None:
            return Entry(why="no location at the function's entry")
        pieces, ops = [], []
        for op in self._ops(cu, raw):
            if op.op_name == "DW_OP_piece":
                pieces.append((ops, op.args[0]))
                ops = []
            else:
                ops.append(op)
        if ops or not pieces:
            pieces.append((ops, size))
        sources = []
        for ops, nbytes in pieces:
            if any(o.op_name == "DW_OP_GNU_parameter_ref" for o in ops):
                return Entry(why="not passed to this clone: DWARF gives its value "
                             "at the call site only")
            if len(ops) != 1:
                names = " ".join(o.op_name for o in ops) or "empty"
                return Entry(why=f"location at entry is a computation ({names})")
            where = self.arg_location(ops[0].op_name, ops[0].args)
            if isinstance(where, str):
                return Entry(why=where)
            kind, n = where
            words = max(1, -(-nbytes // word_bytes))
            if words > 1 and kind != "word":
                return Entry(why=f"{nbytes} bytes in one register")
            sources += [(kind, n + i) for i in range(words)]
        return Entry(sources)
