"""A group's expressions: their types, and RPN that pushes their values.

ExprGen holds one group's program as it is written (lines, labels,
this-> locals) and knows the group's probes, so names resolve here:
arg0..arg15 (`arg N`, argument N as the ABI passes it: the word index on
i386 follows the DWARF signature when there is one), args[N] (typed by
DWARF: signedness, enums, char * as a string; N past the arity is an
error), retval (return probes only), probefunc and probename (the
probe's id, named on the host; compared with strings on the host where
the group's probes decide it, probe_truth() deciding it per probe), a
char * argument compared with a string constant in the guest (strword),
cpu, tid, timestamp (ns), caller (entry probes: the arch's RPN in arches.py), in a return clause DTrace's arg0
(the return's offset) and arg1 (retval), scalar globals, self->x and
this->x; in a profile/tick clause arg0 is the interrupted PC and arg1
(the user PC) 0. stack() and func() are keys (stackkeys.py). Values are
the VM's 64-bit words on every arch (a 64-bit args[N] on i386 is arg64 of
its two argument words); division is C's, signed (divs) when both sides
are, else unsigned (divu). statements.py
builds the program's statements on top of this.
"""

from __future__ import annotations

import re

from . import stackkeys
from .model import INT, MAX_ARG, STRING_BYTES, VM_WORD, Ty
from .parser import (AggRef, ArgsIndex, Binary, Call, Cast, Cond, Member, Name, Num, Str,
                     Unary, CASTS)


def probe_truth(e, probe) -> bool | None:
    """A predicate at one probe, where probefunc and probename decide it:
    True or False, else None (only the run can tell)."""
    if e is None:
        return True
    if isinstance(e, Unary) and e.op == "!":
        t = probe_truth(e.e, probe)
        return None if t is None else not t
    if isinstance(e, Binary) and e.op in ("&&", "||"):
        a, b = probe_truth(e.a, probe), probe_truth(e.b, probe)
        if e.op == "&&":
            return False if False in (a, b) else (True if a and b else None)
        return True if True in (a, b) else (False if a is False and b is False
                                            else None)
    if isinstance(e, Binary) and e.op in ("==", "!="):
        for n, other in ((e.a, e.b), (e.b, e.a)):
            if isinstance(n, Name) and n.name in ("probefunc", "probename") and \
                    isinstance(other, Str):
                have = probe.function if n.name == "probefunc" else probe.kind
                return (have == other.value) == (e.op == "==")
    return None


class ExprGen:
    """One group's program as it is written: lines, labels, this-> locals."""

    def __init__(self, script, group, scope, aggs, image, arch, uses_exit):
        self.s, self.g, self.scope, self.aggs = script, group, scope, aggs
        self.image, self.arch, self.uses_exit = image, arch, uses_exit
        self.word = VM_WORD               # the VM's word: 64 bits on every arch
        self.addr = arch.word_bytes       # the arch's: argument words, `log a`
        self.lines: list[str] = []
        self.labels = 0
        self.this: dict[str, int] = {}
        self.local_aggs: dict[str, int] = {}
        self.kinds = {p.kind for p in group.probes}
        self.sampled = any(getattr(p, "sample", False) for p in group.probes)
        self.functions = sorted({p.function for p in group.probes})

    def err(self, pos, what):
        return self.s.error(pos, what)

    def emit(self, *lines):
        self.lines.extend(lines)

    def label(self) -> str:
        self.labels += 1
        return f"L{self.labels}"

    def constant(self, e) -> int:
        if isinstance(e, Num):
            return e.value
        if isinstance(e, Unary) and e.op == "-":
            return -self.constant(e.e)
        raise self.err(e.pos, "a constant is needed here")

    def key_type(self, e) -> Ty:
        t = self.type_of(e)
        if t.kind == "string":
            raise self.err(e.pos, "a string cannot be a key: the VM keys by words")
        return t

    def scalar(self, e, key: bool = False, allow_string: bool = False) -> None:
        if key and isinstance(e, Call):
            return stackkeys.key_value(self, e)
        t = self.type_of(e)
        if t.kind in ("probefunc", "probename") and not key:
            raise self.err(e.pos, f"{t.kind} is a string: compare it with == or != "
                           "or use it as a key")
        if t.kind == "string" and not allow_string:
            raise self.err(e.pos, "a string has no value here (printf's %s takes it)")
        self.value(e)

    def type_of(self, e) -> Ty:
        if isinstance(e, Num):
            return INT
        if isinstance(e, Str):
            return Ty("string")
        if isinstance(e, Name):
            return self.name_type(e)
        if isinstance(e, ArgsIndex):
            return self.args_param(e)[1]
        if isinstance(e, Call):
            return stackkeys.call_type(self, e)
        if isinstance(e, Member):
            t = self.scope.types.get((e.scope, e.name))
            if e.scope == "self" and e.name not in self.scope.tls or \
                    e.scope == "this" and e.name not in self.this:
                raise self.err(e.pos, f"{e.scope}->{e.name} is never assigned"
                               + (" before this" if e.scope == "this" else ""))
            return t or INT
        if isinstance(e, Cast):
            bits, signed = CASTS[e.type]
            return Ty(signed=signed)
        if isinstance(e, Unary):
            t = self.type_of(e.e)
            return INT if e.op == "!" else Ty(signed=t.signed)
        if isinstance(e, Binary):
            if e.op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||", "^^"):
                return INT
            a, b = self.type_of(e.a), self.type_of(e.b)
            return Ty(signed=(a.signed or isinstance(e.a, Num)) and
                      (b.signed or isinstance(e.b, Num)))
        if isinstance(e, Cond):
            return self.type_of(e.a)
        if isinstance(e, AggRef):
            raise self.err(e.pos, "an aggregation has no value here")
        raise self.err(e.pos, "an expression the compiler does not know")

    def name_type(self, e: Name) -> Ty:
        n = e.name
        m = re.fullmatch(r"arg(\d+)", n)
        if m and self.sampled:
            self.sample_arg(e, int(m.group(1)))
            return Ty(signed=False)
        if m and self.kinds == {"return"} and int(m.group(1)) < 2:
            if m.group(1) == "1":                # DTrace's return probes
                return self.name_type(Name(e.pos, "retval"))
            return Ty(signed=False)
        if m:
            i = int(m.group(1))
            if i >= MAX_ARG:
                raise self.err(e.pos, f"unknown variable {n!r}: the guest reads "
                               f"arg0..arg{MAX_ARG - 1}")
            p = self.param(i)
            return Ty(signed=p.type.signed if p is not None and p.type.kind in
                      ("int", "enum") else False)
        if n == "probefunc":
            return Ty("probefunc", what="probefunc")
        if n == "probename":
            return Ty("probename", what="probename")
        if n == "cpu":
            return Ty(signed=False, what="cpu")
        if n == "tid":
            return Ty(signed=False, what="tid")
        if n in ("timestamp", "caller"):
            return Ty(signed=False, what=n)
        if n == "retval":
            fn = self.ret_function()
            return Ty(signed=fn.signature.ret.signed, ctype=fn.signature.ret) \
                if fn and fn.signature and fn.signature.ret.kind in ("int", "enum") \
                else INT
        if n in self.scope.globals:
            return self.scope.types.get(("g", n), INT)
        if n == "args":
            raise self.err(e.pos, "args is indexed: args[N]")
        raise self.err(e.pos, f"unknown variable {n!r}")

    def sample_arg(self, e: Name, i: int) -> int:
        """A profile/tick probe's argument i, as DTrace's: arg0 the
        interrupted kernel PC, arg1 the user PC (0: the guest has no user
        mode); no others."""
        if i > 1:
            raise self.err(e.pos, f"{e.name} in a clause of {', '.join(sorted(self.kinds))}: "
                           "a sampling probe has arg0 (the interrupted PC) and arg1 "
                           "(the user PC, 0)")
        return i

    def ret_function(self):
        return self.image.functions.get(self.functions[0]) if self.functions else None

    def param(self, i: int):
        """The DWARF parameter i of the group's (first) function, if known."""
        f = self.image.functions.get(self.functions[0]) if self.functions else None
        if f is None or f.signature is None or i >= len(f.signature.params):
            return None
        return f.signature.params[i]

    def arg_word(self, i: int, pos: int = 0) -> int:
        """The VM's `arg` index of argument i: where the probe's argument
        map puts the parameter (bench/trace/types.py), or by the
        convention: on i386 the words before it."""
        f = self.image.functions.get(self.functions[0]) if self.functions else None
        sig = f.signature if f else None
        if sig is not None and sig.argmap:
            p = sig.params[i] if i < len(sig.params) else None
            if p is None or p.word is None:
                why = p.why if p is not None and p.why else "not where a probe reads"
                raise self.err(pos, f"argument {i} of {f.name}: {why}")
            return p.word
        if self.arch.arg_registers or sig is None:
            return i
        w = 0
        for p in sig.params[:i]:
            w += max(1, -(-max(p.type.size, 1) // self.addr))
        return w

    def args_param(self, e: ArgsIndex):
        i = self.constant(e.index)
        self.need_entry(e.pos, f"args[{i}]")
        typed = None
        for fn in self.functions:
            f = self.image.functions.get(fn)
            sig = f.signature if f else None
            if sig is None:
                raise self.err(e.pos, f"args[{i}]: {fn} has no DWARF signature; "
                               f"use arg{i}")
            if i >= len(sig.params):
                raise self.err(e.index.pos, f"args[{i}]: {fn} takes {len(sig.params)} "
                               f"argument{'s' if len(sig.params) != 1 else ''}")
            ct = sig.params[i].type
            if ct.kind not in ("int", "enum", "pointer", "bool"):
                raise self.err(e.pos, f"args[{i}] of {fn} is {ct.name}: only integers, "
                               "enums and pointers")
            if ct.size > self.word:
                raise self.err(e.pos, f"args[{i}] of {fn} is {ct.name}, {ct.size} bytes: "
                               f"wider than the VM's {self.word}-byte word")
            typed = typed or ct
        if i + 1 > MAX_ARG:
            raise self.err(e.index.pos, f"args[{i}]: the guest reads arguments "
                           f"0..{MAX_ARG - 1}")
        ct = typed
        kind = "string" if ct.string else ("enum" if ct.kind == "enum" else
                                           "pointer" if ct.kind == "pointer" else "int")
        return i, Ty(kind, signed=ct.signed, ctype=ct)

    def need_entry(self, pos, what) -> None:
        bad = self.kinds - {"entry"}
        if bad:
            raise self.err(pos, f"{what} in a clause of {', '.join(sorted(bad))} probes: "
                           "only entry probes have arguments")

    def value(self, e) -> None:
        """Code that pushes e's value (a word)."""
        if isinstance(e, Num):
            self.emit(f"push {e.value}")
        elif isinstance(e, Str):
            raise self.err(e.pos, "a string constant has no value here")
        elif isinstance(e, Name):
            self.name_value(e)
        elif isinstance(e, Call):
            raise stackkeys.not_a_key(self, e)
        elif isinstance(e, ArgsIndex):
            i, t = self.args_param(e)
            # wider than the arch's word (a 64-bit parameter on i386): two
            # argument words, which arg64 joins
            op = "arg64" if t.ctype.size > self.addr else "arg"
            self.emit(f"{op} {self.arg_word(i, e.pos)}")
            self.narrow(t.ctype.size * 8 if t.ctype.kind != "pointer" else 0, t.signed)
        elif isinstance(e, Member):
            self.type_of(e)
            if e.scope == "self":
                self.emit(f"tget {self.scope.tls[e.name]}")
            else:
                self.emit(f"lget {self.this[e.name]}")
        elif isinstance(e, Cast):
            self.value(e.e)
            bits, signed = CASTS[e.type]
            self.narrow(bits, signed)
        elif isinstance(e, Unary):
            self.value(e.e)
            self.emit({"-": "neg", "~": "not", "!": "push 0\neq", "+": ""}[e.op])
        elif isinstance(e, Cond):
            other, end = self.label(), self.label()
            self.value(e.c)
            self.emit(f"jz {other}")
            self.value(e.a)
            self.emit(f"jmp {end}", f"{other}:")
            self.value(e.b)
            self.emit(f"{end}:")
        elif isinstance(e, Binary):
            self.binary(e)
        else:
            raise self.err(e.pos, "an expression the compiler does not know")
        self.lines = [x for x in self.lines if x]

    def narrow(self, bits: int, signed: bool) -> None:
        """A word cut to bits (0: the word), sign- or zero-extended."""
        word_bits = 8 * self.word
        if not bits or bits >= word_bits:
            return
        if signed:
            self.emit(f"push {word_bits - bits}", "shl", f"push {word_bits - bits}", "sar")
        else:
            self.emit(f"push {(1 << bits) - 1}", "and")

    def name_value(self, e: Name) -> None:
        n = e.name
        m = re.fullmatch(r"arg(\d+)", n)
        if m and self.sampled:                   # the interrupted PC; no user PC
            self.emit("arg 0" if self.sample_arg(e, int(m.group(1))) == 0 else "push 0")
        elif m and self.kinds == {"return"} and m.group(1) == "1":
            self.emit("retval")                  # DTrace: arg1 is the value
        elif m and self.kinds == {"return"} and m.group(1) == "0":
            if len(self.functions) != 1:         # arg0: the return's offset
                raise self.err(e.pos, "arg0 of a return probe is its offset in the "
                               "function: give the clause one function")
            start = self.image.functions[self.functions[0]].addr
            self.emit("pc", f"push {start}", "sub")
        elif m:
            self.need_entry(e.pos, n)
            t = self.name_type(e)
            self.emit(f"arg {self.arg_word(int(m.group(1)), e.pos)}")
            p = self.param(int(m.group(1)))
            if t.signed and p is not None and p.type.size <= self.addr:
                self.narrow(8 * p.type.size, True)   # a negative int, sign-extended
        elif n in ("probefunc", "probename"):
            self.emit("probe")
        elif n == "cpu":
            self.emit("cpu")
        elif n == "tid":
            self.emit("thread")
        elif n == "timestamp":
            self.emit("timens")
        elif n == "caller":
            self.need_entry(e.pos, "caller")
            self.emit(*self.arch.caller_rpn)
        elif n == "retval":
            bad = self.kinds - {"return"}
            if bad:
                raise self.err(e.pos, f"retval in a clause of {', '.join(sorted(bad))} "
                               "probes: only return probes have one")
            self.emit("retval")
            # the arch's register, zero-extended into the VM's word: a signed
            # return value narrower than 64 bits is sign-extended by its type
            t = self.name_type(e)
            size = t.ctype.size if t.ctype is not None else self.addr
            if t.signed and size < self.word:
                self.narrow(8 * size, True)
        else:
            self.name_type(e)
            self.emit(f"gget {self.scope.globals[n]}")

    def binary(self, e: Binary) -> None:
        ta, tb = self.type_of(e.a), self.type_of(e.b)
        if e.op in ("==", "!=") and ({ta.kind, tb.kind} & {"probefunc", "probename"}):
            return self.probe_compare(e, ta, tb)
        if e.op in ("==", "!=") and "string" in (ta.kind, tb.kind):
            return self.string_compare(e)
        for side, t in ((e.a, ta), (e.b, tb)):
            if t.kind in ("string", "probefunc", "probename"):
                raise self.err(side.pos, f"{'a string' if t.kind == 'string' else t.kind}"
                               f" has no value for {e.op!r}")
        if e.op in ("&&", "||", "^^"):
            self.value(e.a)
            self.emit("push 0", "ne")
            self.value(e.b)
            self.emit("push 0", "ne", {"&&": "and", "||": "or", "^^": "xor"}[e.op])
            return
        signed = (ta.signed or isinstance(e.a, Num)) and (tb.signed or isinstance(e.b, Num))
        if e.op in (">", ">="):          # a > b is b < a
            self.value(e.b)
            self.value(e.a)
            op = {">": "<", ">=": "<="}[e.op]
        else:
            self.value(e.a)
            self.value(e.b)
            op = e.op
        ops = {"+": "add", "-": "sub", "*": "mul", "/": "divs" if signed else "divu",
               "%": "mods" if signed else "modu", "&": "and",
               "|": "or", "^": "xor", "<<": "shl", ">>": "sar" if signed else "shr",
               "==": "eq", "!=": "ne", "<": "lt" if signed else "ltu",
               "<=": "le" if signed else "leu"}
        self.emit(ops[op])

    def string_compare(self, e: Binary) -> None:
        """A char * argument against a string constant, in the guest: word
        k of the string (`strword k`, its bytes from the NUL on 0) against
        word k of the constant with its NUL, for every word up to the
        constant's NUL; all equal is equal."""
        ptr, lit = (e.b, e.a) if isinstance(e.a, Str) else (e.a, e.b)
        if not isinstance(lit, Str) or isinstance(ptr, Str):
            raise self.err(e.pos, "a string compares with a string constant "
                           "(\"...\") only")
        data = lit.value.encode() + b"\0"
        if len(data) > STRING_BYTES:
            raise self.err(lit.pos, f"a string constant of {len(data) - 1} bytes: the "
                           f"guest compares strings of up to {STRING_BYTES - 1}")
        order = "little" if self.arch.byte_order == "<" else "big"
        w = self.word
        data += b"\0" * (-len(data) % w)
        self.scalar(ptr, allow_string=True)
        for k in range(len(data) // w):
            self.emit("over" if k else "dup",      # the address, kept below
                      f"strword {k}",
                      f"push {int.from_bytes(data[k * w:(k + 1) * w], order)}", "eq")
            if k:
                self.emit("and")
        self.emit("swap", "drop")            # the address under the verdict
        if e.op == "!=":
            self.emit("push 0", "eq")

    def probe_compare(self, e: Binary, ta, tb) -> None:
        """probefunc/probename against a string: decided by the group's
        probes, at run time only where they differ."""
        what, other = (e.a, e.b) if ta.kind in ("probefunc", "probename") else (e.b, e.a)
        kind = self.type_of(what).kind
        if not isinstance(other, Str):
            raise self.err(other.pos, f"{kind} compares with a string constant")
        field_ = "function" if kind == "probefunc" else "kind"
        hits = [p for p in self.g.probes if getattr(p, field_) == other.value]
        if not hits or len(hits) == len(self.g.probes):
            truth = bool(hits) == (e.op == "==")
            self.emit(f"push {int(truth)}")
            return
        for k, p in enumerate(hits):
            self.emit("probe", f"push {p.id}", "eq")
            if k:
                self.emit("or")
        if e.op == "!=":
            self.emit("push 0", "eq")
