"""Functions' C signatures from the ELF's DWARF, and record words read by them.

An ENTRY record carries the arguments as raw words (wire.h: ARG0 on): on
i386 the caller's stack words (cdecl: each parameter takes its size rounded
up to 4 bytes, so a 64-bit integer takes two words, low word first); on
sparc64 %o0..%o5, one 64-bit register per parameter (arches.Arch:
arg_registers, word_bytes). A Signature knows, for each parameter, which
words hold it, so the harness asks the guest for as many words as the
parameters need (at most wire.h's WIRE_MAX_ARGS) and prints each by its type:

  signed/unsigned integers of each width   x=-193, n=42
  _Bool                                    ok=true
  enums                                    color=GREEN (the number if none)
  pointers                                 c=0x1a0b2c
  char * (and const char *)                name=0x10c020 (char *): the
                                           record holds the pointer only
  structs or unions by value, floats       s=<struct point, 8 bytes>

A parameter the record does not carry is shown as `?` with why — past the
words recorded, or (sparc64) a seventh parameter onwards, which the caller
passes on the stack — never as a zero. A RETURN record's value is the
register the caller reads (eax, %o0): printed by the return type; nothing
for void; `?` for a value wider than the register.

DWARF at -O2 may split a function into an abstract and a concrete DIE
(DW_AT_abstract_origin, DW_AT_specification): names and types are taken
from wherever they are; the parameters are the concrete DIE's, so a
.constprop/.isra clone has the ones it really has.

Where each parameter is at entry comes from its DWARF location
(locations.py), not from the convention alone: where every parameter is
where the convention puts it, the record reads as above; where one is not
(i386 passes a static function's arguments in registers), the Signature
carries an argument map (argmap, a byte per word: wire.h's WIRE_ARG_*,
tracer/core/args.c), word i the i-th parameter's first, which the probe
is given, so the record and a program's `arg N` read each where it is. A
parameter optimized out prints `?` and why; a constant (a .constprop
clone's) prints its value, marked.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wire.frames import WIRE
from .locations import Locator

MAX_ARGS = WIRE.const("WIRE_MAX_ARGS")   # words an entry record carries at most
ARG_REGISTER = WIRE.const("WIRE_ARG_REGISTER")
ARG_NONE = WIRE.const("WIRE_ARG_NONE")

# DW_ATE_* encodings (DWARF 5, 7.8)
_BOOLEAN, _FLOAT, _SIGNED, _SIGNED_CHAR, _UNSIGNED, _UNSIGNED_CHAR = 2, 4, 5, 6, 7, 8
_UTF = 0x10


@dataclass(frozen=True)
class CType:
    kind: str                   # int bool enum pointer aggregate float void
    name: str                   # as C spells it: "int", "struct ho_counts *"
    size: int = 0               # bytes
    signed: bool = False
    enumerators: tuple = ()     # ((value, name), ...)
    string: bool = False        # a pointer to char

    def format(self, raw: int) -> str:
        """A value of this type from its raw bits (at least `size` bytes)."""
        bits = 8 * self.size
        v = raw & ((1 << bits) - 1) if bits else raw
        if self.kind in ("int", "enum") and self.signed and v >> (bits - 1):
            v -= 1 << bits
        if self.kind == "bool":
            return "true" if v else "false"
        if self.kind == "enum":
            return dict(self.enumerators).get(v, str(v))
        if self.kind == "pointer":
            return f"{v:#x}" + (f" ({self.name})" if self.string else "")
        if self.kind == "int":
            return str(v)
        return f"<{self.name}, {self.size} bytes>"

    def value(self, raw: int):
        """The value as a number (for typed fields elsewhere, e.g. CTF)."""
        bits = 8 * self.size
        v = raw & ((1 << bits) - 1)
        if self.signed and v >> (bits - 1):
            v -= 1 << bits
        return v


VOID = CType("void", "void")


@dataclass(frozen=True)
class Param:
    name: str
    type: CType
    word: int | None            # index among the argument words; None: not carried
    words: int = 1              # how many words hold it
    why: str = ""               # why it is not carried
    const: int | None = None    # its value, where DWARF says it is a constant

    def format(self, args: tuple, word_bytes: int) -> str:
        """name=value from a record's argument words, or name=? (why)."""
        if self.const is not None:
            return f"{self.name}={self.type.format(self.const)} (constant)"
        if self.word is None or self.word + self.words > len(args):
            return f"{self.name}=?" + (f" ({self.why})" if self.why else "")
        if self.type.kind == "aggregate":
            return f"{self.name}={self.type.format(0)}"
        raw = 0
        for i in range(self.words):            # low word first (i386 cdecl)
            raw |= args[self.word + i] << (8 * word_bytes * i)
        return f"{self.name}={self.type.format(raw)}"


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[Param, ...]
    ret: CType
    variadic: bool = False
    argmap: tuple[int, ...] = ()    # where each word is (see the top); (): the convention

    @property
    def nwords(self) -> int:
        """Argument words an entry record should carry."""
        if self.argmap:
            return len(self.argmap)
        return min(MAX_ARGS, max((p.word + p.words for p in self.params
                                  if p.word is not None), default=0))

    def format_args(self, args: tuple, word_bytes: int) -> str:
        text = ", ".join(p.format(args, word_bytes) for p in self.params)
        return text + (", ..." if self.variadic else "")

    def value_words(self, word_bytes: int, registers: int) -> int:
        """Words of the return value a return record should carry (1, or 2
        for a 64-bit value in two 32-bit registers), at most `registers`."""
        return max(1, min(registers, -(-self.ret.size // word_bytes)))

    def format_return(self, words: tuple, word_bytes: int) -> str:
        """' = VALUE' from a return record's value words (RETURN.VALUE on,
        low word first), '' for void, ' = ?' if the record lacks some."""
        if self.ret.kind == "void":
            return ""
        need = max(1, -(-self.ret.size // word_bytes))
        if len(words) < need:
            return " = ?"
        raw = 0
        for i in range(need):
            raw |= words[i] << (8 * word_bytes * i)
        return f" = {self.ret.format(raw)}"


# ---- DWARF ----

def _attr(die, name):
    a = die.attributes.get(name)
    return a.value if a is not None else None


def _origin(die):
    """The DIE that holds die's name and type (abstract origin, specification)."""
    for ref in ("DW_AT_abstract_origin", "DW_AT_specification"):
        if ref in die.attributes:
            return _origin(die.get_DIE_from_attribute(ref))
    return die


def _name(die) -> str:
    n = _attr(_origin(die), "DW_AT_name")
    return n.decode("utf-8", "replace") if n else ""


def _type_of(die, cache: dict, depth: int = 0) -> CType:
    """The CType of a DIE's DW_AT_type (void if none)."""
    src = _origin(die)
    if "DW_AT_type" not in src.attributes:
        return VOID
    t = src.get_DIE_from_attribute("DW_AT_type")
    key = t.offset
    if key not in cache:
        cache[key] = _ctype(t, cache, depth)
    return cache[key]


def _ctype(t, cache, depth) -> CType:
    if depth > 16:
        return CType("aggregate", "?", 0)
    tag, name, size = t.tag, _name(t), _attr(t, "DW_AT_byte_size") or 0
    if tag == "DW_TAG_base_type":
        enc = _attr(t, "DW_AT_encoding")
        if enc == _BOOLEAN:
            return CType("bool", name, size)
        if enc == _FLOAT:
            return CType("float", name, size)
        return CType("int", name, size, signed=enc in (_SIGNED, _SIGNED_CHAR))
    if tag in ("DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type",
               "DW_TAG_restrict_type", "DW_TAG_atomic_type"):
        inner = _type_of(t, cache, depth + 1)
        if tag == "DW_TAG_typedef":
            return CType(inner.kind, name, inner.size, inner.signed, inner.enumerators,
                         inner.string)
        qual = tag[len("DW_TAG_"):-len("_type")]
        spelled = f"{qual} {inner.name}" if inner.kind != "pointer" else \
            f"{inner.name} {qual}"
        return CType(inner.kind, spelled, inner.size, inner.signed, inner.enumerators,
                     inner.string)
    if tag == "DW_TAG_pointer_type":
        target = _type_of(t, cache, depth + 1)
        text = target.name if target.kind != "void" else "void"
        is_char = target.kind == "int" and target.size == 1 and "char" in target.name
        return CType("pointer", f"{text} *", size, string=is_char)
    if tag == "DW_TAG_enumeration_type":
        under = _type_of(t, cache, depth + 1)
        values = tuple((_attr(e, "DW_AT_const_value"), _name(e))
                       for e in t.iter_children() if e.tag == "DW_TAG_enumerator")
        signed = under.signed if under.kind != "void" else any(v < 0 for v, _ in values)
        ct = CType("enum", f"enum {name}" if name else "enum", size, signed)
        # Enumerator values as format() sees them: the type's width, its sign.
        return CType(ct.kind, ct.name, size, signed,
                     tuple((ct.value(v) if size else v, n) for v, n in values))
    if tag in ("DW_TAG_structure_type", "DW_TAG_union_type", "DW_TAG_class_type"):
        kw = {"DW_TAG_structure_type": "struct", "DW_TAG_union_type": "union",
              "DW_TAG_class_type": "class"}[tag]
        return CType("aggregate", f"{kw} {name}".strip(), size)
    if tag == "DW_TAG_array_type":
        return CType("aggregate", f"{_type_of(t, cache, depth + 1).name}[]", size)
    if tag == "DW_TAG_subroutine_type":
        return CType("aggregate", "function", size)
    return CType("aggregate", name or tag, size)


def _place(params: list[tuple[str, CType]], word_bytes: int,
           arg_registers: int) -> tuple[Param, ...]:
    """Which argument words hold each parameter (see the top)."""
    out, word = [], 0
    for i, (name, ct) in enumerate(params):
        if arg_registers:                       # one register per parameter
            if i >= arg_registers:
                out.append(Param(name, ct, None, why="passed on the stack"))
                continue
            out.append(Param(name, ct, i, 1))
            continue
        n = max(1, -(-max(ct.size, 1) // word_bytes))
        if word + n > MAX_ARGS:
            out.append(Param(name, ct, None, n, f"past the {MAX_ARGS} words recorded"))
        else:
            out.append(Param(name, ct, word, n))
        word += n
    return tuple(out)


def _convention(params, word_bytes: int, arg_registers: int) -> list[tuple]:
    """Each parameter's words where the convention puts them, past the
    words a record carries too (a 7th parameter on i386's stack is where
    the convention says, and needs no map for `arg N` to read it)."""
    out, word = [], 0
    for i, (name, ct) in enumerate(params):
        if arg_registers:
            out.append((("word", i),))
            continue
        n = max(1, -(-max(ct.size, 1) // word_bytes))
        out.append(tuple(("word", word + j) for j in range(n)))
        word += n
    return out


def _source_byte(source) -> int:
    kind, n = source
    return ARG_REGISTER | n if kind == "reg" else n


def _place_at_entry(params, entries, word_bytes: int,
                    arg_registers: int) -> tuple[tuple[Param, ...], tuple[int, ...]]:
    """Params and the argument map from each parameter's place at entry
    (locations.Entry): no map where every placed parameter is where the
    convention puts it (see the top)."""
    default = _place(params, word_bytes, arg_registers)
    conventional = all(not e.sources or e.sources == want
                       for want, e in zip(_convention(params, word_bytes,
                                                      arg_registers), entries))
    if conventional:
        return tuple(
            Param(d.name, d.type, None, d.words, const=e.const) if e.const is not None
            else Param(d.name, d.type, None, d.words, e.why) if not e.sources
            else d for d, e in zip(default, entries)), ()
    out, argmap = [], []
    for (name, ct), e in zip(params, entries):
        n = max(1, len(e.sources))
        if len(argmap) + n > MAX_ARGS:
            out.append(Param(name, ct, None, n, f"past the {MAX_ARGS} words recorded"))
            continue
        if e.sources:
            out.append(Param(name, ct, len(argmap), n))
            argmap += [_source_byte(s) for s in e.sources]
        else:                           # a word all the same: arg N stays param N
            out.append(Param(name, ct, None, 1, e.why, e.const))
            argmap.append(ARG_NONE)
    return tuple(out), tuple(argmap)


def signatures(elf, word_bytes: int, arg_registers: int,
               arg_location=None) -> dict[int, Signature]:
    """Function address -> Signature, for every defined function with DWARF;
    with arg_location (arches.Arch.arg_location), parameters are placed by
    their DWARF locations at entry (see the top)."""
    out: dict[int, Signature] = {}
    if not elf.has_dwarf_info():
        return out
    cache: dict = {}
    dwarf = elf.get_dwarf_info()
    locator = Locator(dwarf, arg_location) if arg_location else None
    for cu in dwarf.iter_CUs():
        for die in cu.iter_DIEs():
            if die.tag != "DW_TAG_subprogram" or "DW_AT_low_pc" not in die.attributes:
                continue
            params, entries, variadic = [], [], False
            for c in die.iter_children():
                if c.tag == "DW_TAG_formal_parameter":
                    ct = _type_of(c, cache)
                    params.append((_name(c) or f"arg{len(params)}", ct))
                    if locator:
                        entries.append(locator.entry(c, die, cu, _origin(c), ct.size,
                                                     word_bytes))
                elif c.tag == "DW_TAG_unspecified_parameters":
                    variadic = True
            if locator and not variadic:
                placed, argmap = _place_at_entry(params, entries, word_bytes,
                                                 arg_registers)
            else:
                placed, argmap = _place(params, word_bytes, arg_registers), ()
            out[die.attributes["DW_AT_low_pc"].value] = Signature(
                _name(die), placed, _type_of(die, cache), variadic, argmap)
    return out
