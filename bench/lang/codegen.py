"""A parsed script into probe programs: checks, then RPN text per probe group.

compile_script() matches every clause's probes (probes.py) and plans them
as `run` would (bench/trace/sites.py), groups the probes by the clauses
they run — each group is one program in one slot, its clauses in script
order, this->x its locals, shared by its clauses as DTrace's are — and
writes each program's RPN, which bench/program/asm.py assembles and checks
against wire.h's limits (a program it refuses is an error at the first
clause's probe). Names resolve here: arg0..arg15 (`arg N`, argument N as
the ABI passes it: the word index on i386 follows the DWARF signature when
there is one), args[N] (typed by DWARF: signedness, enums, char * as a
string; N past the arity is an error), retval (return probes only),
probefunc and probename (the probe's id, named on the host; compared with
strings on the host where the group's probes decide it), cpu, tid,
timestamp (ns), caller (entry probes: the arch's RPN in arches.py), in a
return clause DTrace's arg0 (the return's offset) and arg1 (retval), scalar
globals (global words), self->x (thread-local words) and this->x.

Values are the arch's words; an aggregation's value goes on as 64 bits,
zero-extended when its type is unsigned. Division is unsigned (the VM's
divu). A program sends one LOG record per firing, so a group may hold one
printf or trace(); exit() sets a global every program checks first.
BEGIN and END run on the host: constants, printf, trace, exit, clear and
trunc. What the output needs travels in Compiled: each aggregation's
kind, keys and lquantize range, each printf's format and arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..program import asm
from ..trace import sites
from ..wire.frames import WIRE
from . import probes as probes_mod
from .parser import (AggRef, AggStmt, ArgsIndex, Assign, Action, Binary, Cast, Cond,
                     Member, Name, Num, Script, Str, Unary, CASTS)

SLOTS = WIRE.const("WIRE_PROGRAMS")
LOCALS = asm.LIMITS["LOCALS"]
GLOBALS = asm.LIMITS["GLOBALS"]
TLS = asm.LIMITS["TLS"]
MAX_ARG = asm.LIMITS["MAX_ARG"]
MAX_KEYS = asm.MAX_KEYS
LQ_MAX = WIRE.const("WIRE_LQUANTIZE_MAX")
MAJOR = 31                     # LOG records of compiled printf/trace
EXIT_GLOBAL = GLOBALS - 1      # set by exit(); every program checks it first
FLAG_LOCAL = LOCALS - 1        # a printf ran: send the log
SCRATCH_LOCAL = LOCALS - 2     # lquantize's value
THIS_LOCALS = LOCALS - 2       # this->x take 0 .. THIS_LOCALS - 1
BUILTINS = ("probefunc", "probename", "cpu", "tid", "timestamp", "caller", "retval")
STRING_BYTES = 64              # a %s argument: the string, up to this many bytes


@dataclass(frozen=True)
class Ty:
    kind: str = "int"          # int string probefunc probename enum pointer
    signed: bool = True
    ctype: object = None       # a DWARF CType, for naming values
    what: str = ""             # a key's meaning: cpu tid caller ...


INT = Ty()
UINT = Ty(signed=False)


@dataclass
class AggInfo:
    name: str
    func: str
    keys: list                 # Ty per key
    pos: int
    lq: tuple | None = None    # (lo, hi, step)


@dataclass
class Printf:
    fmt: str                   # Python %-format
    args: list                 # ("int", signed) | ("string",) | ("const", value)
    pos: int


@dataclass
class Group:
    slot: int
    clauses: list
    probes: list               # sites.Probe
    text: str = ""
    program: object = None     # asm.Program
    aggs: list = field(default_factory=list)    # AggInfo per program aggregation
    printf: Printf | None = None


@dataclass
class Compiled:
    spec: str
    probes: list
    groups: list
    aggs: dict                 # name -> AggInfo, in order of first use
    begin: list                # host clauses' actions
    end: list
    uses_exit: bool = False

    def rpn(self) -> str:
        out = []
        for g in self.groups:
            names = sorted({p.spec for p in g.probes})
            out.append(f"# slot {g.slot}: clauses "
                       f"{', '.join(str(c.index + 1) for c in g.clauses)}; "
                       f"{len(g.probes)} probes: {', '.join(names[:6])}"
                       + (" ..." if len(names) > 6 else ""))
            out.append(g.text)
        return "\n".join(out)


class _Scope:
    """The script's variables: globals and thread-locals, by first assignment."""

    def __init__(self):
        self.globals: dict[str, int] = {}
        self.tls: dict[str, int] = {}
        self.types: dict[tuple, Ty] = {}


def compile_script(script: Script, image, arch, mechanism: str) -> Compiled:
    descs = {id(c): [probes_mod.describe(script, t, arch) for t in c.probes]
             for c in script.clauses}
    for c in script.clauses:
        for d in descs[id(c)]:
            probes_mod.check_matches(script, d, image)
    hosted = [c for c in script.clauses
              if all(d.provider in probes_mod.SPECIAL for d in descs[id(c)])]
    for c in script.clauses:
        kinds = {d.provider in probes_mod.SPECIAL for d in descs[id(c)]}
        if len(kinds) > 1:
            raise script.error(c.pos, "BEGIN and END run on the host: give them a "
                               "clause of their own")
    traced = [c for c in script.clauses if c not in hosted]
    spec = ",".join(dict.fromkeys(d.spec for c in traced for d in descs[id(c)]))
    planned: list = []
    if traced:
        try:
            planned, _ = sites.plan(spec, image, mechanism)
        except sites.SpecError as e:
            raise script.error(traced[0].pos, str(e)) from None
    by_set: dict[tuple, list] = {}
    for p in planned:
        mine = tuple(c.index for c in traced
                     if any(d.matches(p, image) for d in descs[id(c)]))
        if mine:
            by_set.setdefault(mine, []).append(p)
    if len(by_set) > SLOTS:
        raise script.error(traced[0].pos, f"a program past the VM's limits: the "
                           f"probes need {len(by_set)} different programs, the guest "
                           f"has {SLOTS} slots")
    for c in traced:
        if not any(c.index in k for k in by_set):
            raise script.error(c.pos, "no probe of this clause can be placed "
                               "(the guest's rules refuse every site it matches)")
    scope = _Scope()
    _declare(script, scope)
    aggs: dict[str, AggInfo] = {}
    uses_exit = any(isinstance(s, Action) and s.name == "exit"
                    for c in traced for s in c.body)
    groups = []
    for slot, (key, ps) in enumerate(sorted(by_set.items())):
        g = Group(slot, [script.clauses[i] for i in key], ps)
        _Gen(script, g, scope, aggs, image, arch, uses_exit).run()
        groups.append(g)
    begin, end = [], []
    for c in hosted:
        acts = _host_clause(script, c, aggs)
        (begin if descs[id(c)][0].provider == "BEGIN" else end).extend(acts)
    return Compiled(spec, [p for ps in by_set.values() for p in ps], groups, aggs,
                    begin, end, uses_exit)


def _declare(script: Script, scope: _Scope) -> None:
    """Globals and thread-locals, numbered by first assignment."""
    for c in script.clauses:
        for s in c.body:
            if not isinstance(s, Assign):
                continue
            t = s.target
            if isinstance(t, Name):
                if t.name in BUILTINS or re.fullmatch(r"arg\d+", t.name) or \
                        t.name == "args":
                    raise script.error(t.pos, f"{t.name} cannot be assigned")
                if t.name not in scope.globals:
                    if len(scope.globals) >= GLOBALS - 1:
                        raise script.error(t.pos, f"a program past the VM's limits: "
                                           f"more than {GLOBALS - 1} globals")
                    scope.globals[t.name] = len(scope.globals)
            elif isinstance(t, Member) and t.scope == "self" and t.name not in scope.tls:
                if len(scope.tls) >= TLS:
                    raise script.error(t.pos, f"a program past the VM's limits: "
                                       f"more than {TLS} thread-local variables")
                scope.tls[t.name] = len(scope.tls)


def _host_clause(script: Script, c, aggs) -> list:
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
            fmt, kinds = _format(script, s.args[0])
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


def _format(script: Script, s: Str) -> tuple[str, list]:
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


# A test against 0 before a conditional jump is the jump's own: `push 0,
# eq, jz L` is `jnz L` (and so on), two instructions fewer per predicate.
_FOLD = {("eq", "jz"): "jnz", ("eq", "jnz"): "jz", ("ne", "jz"): "jz",
         ("ne", "jnz"): "jnz"}


def _peephole(lines: list[str]) -> list[str]:
    out: list[str] = []
    for ln in lines:
        out.append(ln)
        if out[-4:] == ["push 0", "ne", "push 0", "ne"]:       # already 0 or 1
            del out[-2:]
        if len(out) >= 3 and out[-3] == "push 0":
            cmp_, jump = out[-2], out[-1].split(" ", 1)
            if (cmp_, jump[0]) in _FOLD and len(jump) == 2:
                out[-3:] = [f"{_FOLD[(cmp_, jump[0])]} {jump[1]}"]
    return out


class _Gen:
    """One group's program: RPN lines, labels, locals, aggregations."""

    def __init__(self, script, group, scope, aggs, image, arch, uses_exit):
        self.s, self.g, self.scope, self.aggs = script, group, scope, aggs
        self.image, self.arch, self.uses_exit = image, arch, uses_exit
        self.word = arch.word_bytes
        self.lines: list[str] = []
        self.labels = 0
        self.this: dict[str, int] = {}
        self.local_aggs: dict[str, int] = {}
        self.kinds = {p.kind for p in group.probes}
        self.functions = sorted({p.function for p in group.probes})

    def err(self, pos, what):
        return self.s.error(pos, what)

    def emit(self, *lines):
        self.lines.extend(lines)

    def label(self) -> str:
        self.labels += 1
        return f"L{self.labels}"

    def run(self) -> None:
        g = self.g
        self.emit(f"major {MAJOR}", f"minor {g.slot}")
        if self.uses_exit:
            self.emit(f"gget {EXIT_GLOBAL}", "jnz done")
        for c in g.clauses:
            skip = self.label()
            if c.predicate is not None:
                self.value(c.predicate)
                self.emit(f"jz {skip}")
            for st in c.body:
                self.statement(st)
            self.emit(f"{skip}:")
        if g.printf:
            self.emit(f"lget {FLAG_LOCAL}", "jz done", "exit")
        self.emit("done: abort")
        g.text = "\n".join(_peephole("\n".join(self.lines).split("\n"))) + "\n"
        try:
            g.program = asm.assemble(g.text, self.arch, f"<slot {g.slot}>")
        except asm.AsmError as e:
            what = re.sub(r"^<slot \d+>:\d+:\d+: ", "", str(e))
            raise self.err(g.clauses[0].pos, f"a program past the VM's limits: {what}") \
                from None

    # ---- statements ----

    def statement(self, st) -> None:
        if isinstance(st, AggStmt):
            return self.aggregate(st)
        if isinstance(st, Assign):
            return self.assign(st)
        return self.action(st)

    def assign(self, st: Assign) -> None:
        t = st.target
        if isinstance(t, Name):
            n = self.scope.globals[t.name]
            if st.op == "=":
                self.scalar(st.e)
                self.emit(f"gset {n}")
            else:
                self.scalar(st.e)
                if st.op == "-=":
                    self.emit("neg")
                self.emit(f"gadd {n}")
            self.scope.types.setdefault(("g", t.name), self.type_of(st.e))
            return
        if t.scope == "self":
            n = self.scope.tls[t.name]
            get, put = f"tget {n}", f"tset {n}"
            self.scope.types.setdefault(("self", t.name), self.type_of(st.e))
        else:
            if t.name not in self.this:
                if len(self.this) >= THIS_LOCALS:
                    raise self.err(t.pos, "a program past the VM's limits: more than "
                                   f"{THIS_LOCALS} this-> variables")
                self.this[t.name] = len(self.this)
            n = self.this[t.name]
            get, put = f"lget {n}", f"lset {n}"
            self.scope.types.setdefault(("this", t.name), self.type_of(st.e))
        if st.op != "=":
            self.emit(get)
        self.scalar(st.e)
        if st.op != "=":
            self.emit("add" if st.op == "+=" else "sub")
        self.emit(put)

    def aggregate(self, st: AggStmt) -> None:
        name = st.name or "_"
        if len(st.keys) > MAX_KEYS:
            raise self.err(st.keys[MAX_KEYS].pos, f"a program past the VM's limits: "
                           f"{len(st.keys)} keys, at most {MAX_KEYS}")
        want = {"count": 0, "lquantize": 4}.get(st.func, 1)
        if len(st.args) != want:
            raise self.err(st.func_pos, f"{st.func}() takes {want} argument"
                           + ("s" if want != 1 else "") + f", not {len(st.args)}")
        keys = [self.key_type(k) for k in st.keys]
        lq = None
        if st.func == "lquantize":
            lo, hi, step = (self.constant(a) for a in st.args[1:])
            if step <= 0 or hi <= lo:
                raise self.err(st.args[1].pos, "lquantize(value, low, high, step) "
                               "needs low < high and step > 0")
            levels = -(-(hi - lo) // step)
            if levels + 1 > LQ_MAX:
                raise self.err(st.args[1].pos, f"a program past the VM's limits: "
                               f"{levels} lquantize levels, at most {LQ_MAX - 1}")
            lq = (lo, hi, step)
        info = self.aggs.get(st.name)
        shown = f"@{st.name}"
        if info is None:
            info = self.aggs[st.name] = AggInfo(st.name, st.func, keys, st.pos, lq)
        elif info.func != st.func or len(info.keys) != len(keys) or info.lq != lq:
            where = self.s.error(info.pos, "").where
            raise self.err(st.pos, f"{shown} is {info.func}() with {len(info.keys)} "
                           f"keys at {where}; here {st.func}() with {len(keys)}")
        if st.name not in self.local_aggs:
            self.local_aggs[st.name] = len(self.g.aggs)
            self.g.aggs.append(info)
        unsigned = False
        if st.func != "count":
            vt = self.type_of(st.args[0])
            if vt.kind == "string":
                raise self.err(st.args[0].pos, f"{st.func}() of a string")
            unsigned = not vt.signed
            if st.func == "lquantize":
                self.lquantize_bucket(st.args[0], lq)
                unsigned = False
            else:
                self.scalar(st.args[0])
        for k in reversed(st.keys):      # the first key ends on top
            self.scalar(k, key=True)
        self.emit(f"{st.func} @{name}, {len(st.keys)}" + (", unsigned" if unsigned
                                                           else ""))

    def lquantize_bucket(self, e, lq) -> None:
        lo, hi, step = lq
        levels = -(-(hi - lo) // step)
        under, over, done = self.label(), self.label(), self.label()
        self.scalar(e)
        self.emit(f"lset {SCRATCH_LOCAL}",
                  f"lget {SCRATCH_LOCAL}", f"push {lo}", "lt", f"jnz {under}",
                  f"lget {SCRATCH_LOCAL}", f"push {hi}", "lt", f"jz {over}",
                  f"lget {SCRATCH_LOCAL}", f"push {lo}", "sub", f"push {step}", "divu",
                  "push 1", "add", f"jmp {done}",
                  f"{under}: push 0", f"jmp {done}",
                  f"{over}: push {levels + 1}", f"{done}:")

    def action(self, st: Action) -> None:
        if st.name in ("clear", "trunc"):
            raise self.err(st.pos, f"{st.name}() acts on the host's tables: use it in "
                           "an END clause")
        if st.name == "exit":
            if len(st.args) != 1:
                raise self.err(st.pos, "exit() takes one argument")
            self.emit("push 1", f"gset {EXIT_GLOBAL}")
            return
        if st.name == "trace":
            if len(st.args) != 1:
                raise self.err(st.pos, "trace() takes one argument")
            t = self.type_of(st.args[0])
            fmt = Str(st.pos, "%s\n" if t.kind == "string" else
                      ("%d\n" if t.signed else "%u\n"))
            return self.printf(Action(st.pos, "printf", [fmt, st.args[0]]))
        return self.printf(st)

    def printf(self, st: Action) -> None:
        if self.g.printf is not None:
            where = self.s.error(self.g.printf.pos, "").where
            raise self.err(st.pos, "one printf or trace() per probe: the VM sends one "
                           f"LOG record per firing, and {where} has it")
        if not st.args or not isinstance(st.args[0], Str):
            raise self.err(st.pos, "printf's first argument is its format string")
        fmt, kinds = _format(self.s, st.args[0])
        args = st.args[1:]
        if len(kinds) != len(args):
            raise self.err(st.pos, f"the format wants {len(kinds)} argument"
                           f"{'s' if len(kinds) != 1 else ''}, printf has {len(args)}")
        described = []
        for k, a in zip(kinds, args):
            if isinstance(a, Str):
                described.append(("const", a.value))
                continue
            t = self.type_of(a)
            if k == "string" and t.kind in ("probefunc", "probename"):
                self.emit("probe", "log a, 1")      # the host names the probe
                described.append(("probe", t.kind))
                continue
            if k == "string" and t.kind != "string":
                raise self.err(a.pos, "%s wants a string (a char * argument)")
            if k == "int" and t.kind == "string":
                raise self.err(a.pos, "a string for a number's conversion: use %s")
            if t.kind == "string":
                self.emit(f"push {STRING_BYTES}")
                self.scalar(a, allow_string=True)
                self.emit("logs")
                described.append(("string",))
            else:
                self.scalar(a)
                self.emit("log a, 1")
                described.append(("int", t.signed))
        self.emit("push 1", f"lset {FLAG_LOCAL}")
        self.g.printf = Printf(fmt, described, st.pos)

    # ---- expressions ----

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
            w += max(1, -(-max(p.type.size, 1) // self.word))
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
                               f"wider than {self.arch.name}'s {self.word}-byte word")
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
        elif isinstance(e, ArgsIndex):
            i, t = self.args_param(e)
            self.emit(f"arg {self.arg_word(i, e.pos)}")
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
        if m and self.kinds == {"return"} and m.group(1) == "1":
            self.emit("retval")                  # DTrace: arg1 is the value
        elif m and self.kinds == {"return"} and m.group(1) == "0":
            if len(self.functions) != 1:         # arg0: the return's offset
                raise self.err(e.pos, "arg0 of a return probe is its offset in the "
                               "function: give the clause one function")
            start = self.image.functions[self.functions[0]].addr
            self.emit("pc", f"push {start}", "sub")
        elif m:
            self.need_entry(e.pos, n)
            self.name_type(e)
            self.emit(f"arg {self.arg_word(int(m.group(1)), e.pos)}")
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
        else:
            self.name_type(e)
            self.emit(f"gget {self.scope.globals[n]}")

    def binary(self, e: Binary) -> None:
        ta, tb = self.type_of(e.a), self.type_of(e.b)
        if e.op in ("==", "!=") and ({ta.kind, tb.kind} & {"probefunc", "probename"}):
            return self.probe_compare(e, ta, tb)
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
        ops = {"+": "add", "-": "sub", "*": "mul", "/": "divu", "%": "modu", "&": "and",
               "|": "or", "^": "xor", "<<": "shl", ">>": "sar" if signed else "shr",
               "==": "eq", "!=": "ne", "<": "lt" if signed else "ltu",
               "<=": "le" if signed else "leu"}
        self.emit(ops[op])

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
