"""D's grammar, into a tree of clauses, statements and expressions.

    script    := { clause }
    clause    := probe { "," probe } [ "/" expr "/" ] "{" { statement } "}"
    statement := ";" | "@name" [ "[" expr { "," expr } "]" ] "=" AGGFUNC "(" args ")" ";"
               | lvalue ( "=" | "+=" | "-=" ) expr ";" | lvalue ( "++" | "--" ) ";"
               | NAME "(" args ")" ";"           printf trace exit clear trunc
    lvalue    := NAME | "self->" NAME | "this->" NAME
    expr      := C's, with C's precedence: ?: || ^^ && | ^ & == != < <= > >=
                 << >> + - * / %, unary ! ~ - + and casts to sized integers,
                 args[N], self->x, this->x, numbers, strings, names,
                 NAME "(" args ")" (stack(), func(e): bench/lang/stackkeys.py)

A predicate ends at its closing "/", so a division inside one needs
parentheses, as in DTrace. The last statement before "}" may omit its ";".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import LangError
from .lexer import Lexer, Token

BINARY = {"||": 1, "^^": 2, "&&": 3, "|": 4, "^": 5, "&": 6, "==": 7, "!=": 7,
          "<": 8, "<=": 8, ">": 8, ">=": 8, "<<": 9, ">>": 9, "+": 10, "-": 10,
          "*": 11, "/": 11, "%": 11}
# Casts to sized integers: (bits, signed).
CASTS = {"char": (8, True), "short": (16, True), "int": (32, True), "long": (64, True),
         "unsigned": (32, False), "uchar_t": (8, False), "ushort_t": (16, False),
         "uint_t": (32, False), "ulong_t": (64, False),
         **{f"int{b}_t": (b, True) for b in (8, 16, 32, 64)},
         **{f"uint{b}_t": (b, False) for b in (8, 16, 32, 64)},
         "uintptr_t": (0, False), "intptr_t": (0, True)}      # 0: the arch's word
AGG_FUNCS = ("count", "sum", "min", "max", "avg", "quantize", "lquantize")
ACTIONS = ("printf", "trace", "exit", "clear", "trunc")


@dataclass
class Node:
    pos: int


@dataclass
class Num(Node):
    value: int


@dataclass
class Str(Node):
    value: str


@dataclass
class Name(Node):
    name: str


@dataclass
class ArgsIndex(Node):
    index: "Node"


@dataclass
class Call(Node):              # a function in an expression: stack(), func(e)
    name: str
    args: list


@dataclass
class Member(Node):          # self->x, this->x
    scope: str
    name: str


@dataclass
class AggRef(Node):          # @name as an action's argument
    name: str


@dataclass
class Unary(Node):
    op: str
    e: Node


@dataclass
class Binary(Node):
    op: str
    a: Node
    b: Node


@dataclass
class Cond(Node):
    c: Node
    a: Node
    b: Node


@dataclass
class Cast(Node):
    type: str
    e: Node


@dataclass
class AggStmt(Node):
    name: str
    keys: list
    func: str
    func_pos: int
    args: list


@dataclass
class Assign(Node):
    target: Node             # Name or Member
    op: str                  # = += -=
    e: Node


@dataclass
class Action(Node):
    name: str
    args: list


@dataclass
class Clause:
    probes: list[Token]
    predicate: Node | None
    body: list
    pos: int
    index: int = 0


@dataclass
class Script:
    path: str
    text: str
    clauses: list[Clause] = field(default_factory=list)

    def error(self, pos: int, what: str) -> LangError:
        return LangError(self.path, self.text, pos, what)


class _Parser:
    def __init__(self, text: str, path: str):
        self.lx = Lexer(text, path)
        self.tok = None
        self.path, self.text = path, text

    def error(self, pos: int, what: str) -> LangError:
        return LangError(self.path, self.text, pos, what)

    def advance(self) -> Token:
        t = self.tok
        self.tok = self.lx.next()
        return t

    def peek(self, text: str) -> bool:
        return self.tok.kind in ("punct", "ident") and self.tok.text == text

    def expect(self, text: str, what: str = "") -> Token:
        if not self.peek(text):
            got = self.tok.text or "the end of the script"
            raise self.error(self.tok.pos, f"expected {text!r}{what}, not {got!r}")
        return self.advance()

    # ---- clauses ----

    def script(self) -> Script:
        s = Script(self.path, self.text)
        while not self.lx.at_end():
            c = self.clause()
            c.index = len(s.clauses)
            s.clauses.append(c)
        if not s.clauses:
            raise self.error(0, "an empty script: no clause")
        return s

    def clause(self) -> Clause:
        probes = [self.lx.probe_description()]
        self.lx.skip()
        while self.lx.text.startswith(",", self.lx.pos):
            self.lx.pos += 1
            probes.append(self.lx.probe_description())
        self.advance()
        pred = None
        if self.peek("/"):
            self.advance()
            pred = self.expr(no_div=True)
            self.expect("/", " to end the predicate")
        self.expect("{", " to open the clause's body")
        body = []
        while not self.peek("}"):
            if self.tok.kind == "eof":
                raise self.error(self.tok.pos, "the clause's body never ends: '}' is missing")
            st = self.statement()
            if st is not None:
                body.append(st)
            if self.peek(";"):
                self.advance()
            elif not self.peek("}"):
                raise self.error(self.tok.pos, f"expected ';' or '}}', not {self.tok.text!r}")
        end = self.tok.pos
        self.lx.pos = end + 1          # the next clause starts after the '}'
        return Clause(probes, pred, body, probes[0].pos)

    # ---- statements ----

    def statement(self):
        t = self.tok
        if self.peek(";"):
            return None
        if t.kind == "agg":
            self.advance()
            keys = []
            if self.peek("["):
                self.advance()
                keys.append(self.expr())
                while self.peek(","):
                    self.advance()
                    keys.append(self.expr())
                self.expect("]")
            self.expect("=", " (an aggregation is assigned a function: count(), sum(x), ...)")
            f = self.tok
            if f.kind != "ident" or f.text not in AGG_FUNCS:
                raise self.error(f.pos, f"{f.text!r} is not an aggregating function; "
                                 "they are " + ", ".join(AGG_FUNCS))
            self.advance()
            return AggStmt(t.pos, t.value, keys, f.text, f.pos, self.call_args())
        if t.kind == "ident" and t.text in ACTIONS:
            self.advance()
            return Action(t.pos, t.text, self.call_args(allow_agg=True))
        if t.kind == "ident":
            if self.lx.text[self.lx.pos:].lstrip().startswith("("):   # NAME(
                raise self.error(t.pos, f"unknown function {t.text!r}; the actions are "
                                 + ", ".join(ACTIONS))
            target = self.primary()
            if not isinstance(target, (Name, Member)):
                raise self.error(t.pos, "a statement is an assignment, an aggregation "
                                 "or an action (printf, trace, exit, clear, trunc)")
            op = self.tok
            if op.text in ("++", "--"):
                self.advance()
                return Assign(op.pos, target, op.text[0] + "=", Num(op.pos, 1))
            if op.text not in ("=", "+=", "-="):
                raise self.error(op.pos, f"expected '=', '+=', '-=', '++' or '--' after "
                                 f"{self.text[t.pos:op.pos].strip()!r}")
            self.advance()
            return Assign(op.pos, target, op.text, self.expr())
        raise self.error(t.pos, f"a statement cannot start with {t.text!r}")

    def call_args(self, allow_agg: bool = False) -> list:
        self.expect("(")
        args = []
        if not self.peek(")"):
            while True:
                if allow_agg and self.tok.kind == "agg":
                    t = self.advance()
                    args.append(AggRef(t.pos, t.value))
                else:
                    args.append(self.expr())
                if not self.peek(","):
                    break
                self.advance()
        self.expect(")")
        return args

    # ---- expressions ----

    def expr(self, no_div: bool = False) -> Node:
        c = self.binary(1, no_div)
        if self.peek("?"):
            q = self.advance()
            a = self.expr(no_div)
            self.expect(":", " in ?:")
            return Cond(q.pos, c, a, self.expr(no_div))
        return c

    def binary(self, least: int, no_div: bool) -> Node:
        a = self.unary(no_div)
        while (self.tok.kind == "punct" and self.tok.text in BINARY
               and BINARY[self.tok.text] >= least
               and not (no_div and self.tok.text == "/")):
            op = self.advance()
            b = self.binary(BINARY[op.text] + 1, no_div)
            a = Binary(op.pos, op.text, a, b)
        return a

    def unary(self, no_div: bool) -> Node:
        t = self.tok
        if t.kind == "punct" and t.text in ("!", "~", "-", "+"):
            self.advance()
            return Unary(t.pos, t.text, self.unary(no_div))
        if t.kind == "punct" and t.text == "(":
            save = (self.lx.pos, self.tok)
            self.advance()
            if self.tok.kind == "ident" and self.tok.text in CASTS:
                ty = self.advance()
                if self.peek(")"):
                    self.advance()
                    return Cast(t.pos, ty.text, self.unary(no_div))
            self.lx.pos, self.tok = save
        return self.primary()

    def primary(self) -> Node:
        t = self.tok
        if t.kind == "number":
            self.advance()
            return Num(t.pos, t.value)
        if t.kind == "string":
            self.advance()
            return Str(t.pos, t.value)
        if t.kind == "agg":
            raise self.error(t.pos, f"an aggregation ({t.text}) has no value in an "
                             "expression: it is printed at the end")
        if t.kind == "ident":
            self.advance()
            if t.text in ("self", "this"):
                self.expect("->", f" after {t.text}")
                m = self.tok
                if m.kind != "ident":
                    raise self.error(m.pos, f"a variable name after {t.text}->")
                self.advance()
                return Member(t.pos, t.text, m.text)
            if t.text == "args" and self.peek("["):
                self.advance()
                i = self.expr()
                self.expect("]")
                return ArgsIndex(t.pos, i)
            if self.peek("("):
                return Call(t.pos, t.text, self.call_args())
            return Name(t.pos, t.text)
        if self.peek("("):
            self.advance()
            e = self.expr()
            self.expect(")")
            return e
        got = t.text or "the end of the script"
        raise self.error(t.pos, f"an expression is expected here, not {got!r}")


def parse(text: str, path: str = "<script>") -> Script:
    p = _Parser(text, path)
    return p.script()
