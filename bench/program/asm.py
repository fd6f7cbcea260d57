"""Probe programs, host side: RPN text into the guest's bytecode.

    prog = assemble(text, arch, "count.rpn")       # AsmError: file:line:col: what
    prog.image(byte_order)                         # struct wire_program + insns

The language is seed 002's (DProbes) RPN model as wire.h's WIRE_RPN_OPS
defines it — every mnemonic, its operands and its stack effect are read from
that table, the register names from the arch's TARCH_REGISTERS, the limits
from wire.h's WIRE_PROGRAM_*, so nothing here is a second copy. Grammar
(docs/programs.md):

    program     := { line }
    line        := [ label ":" ] [ directive | instruction ] [ comment ]
    comment     := ("#" | ";") anything to the end of the line
    directive   := "major" number | "minor" number | "agg" "@"name kind
    instruction := mnemonic [ operand { "," operand } ]
    operand     := number | register | label | "@"name | size
    number      := [ "-" ] ( decimal | "0x" hex )
    size        := 1 | 2 | 4 | 8 | b | w | d | q | a   (a: the arch's word)

Operands by the table's operand kind: imm (a number; one that does not
fit 32 signed bits becomes push + pushhi: the VM's word is 64 bits on
every arch), reg (a register
name, with or without %), n (an argument, below WIRE_PROGRAM_MAX_ARG),
depth (`stack`'s frames, optional: none is the guest's default),
size, label (defined later in the file: jumps only go forward),
local/global/tls (an index), word (`strword`'s word of a string, below
WIRE_PROGRAM_STRING_BYTES / 8), `size, n` (log), `@name,
n [, flag]` (an aggregation, its number of keys and optionally a WIRE_RPN_AGG_FLAGS word
such as `unsigned`; the first use declares it with the instruction's kind
unless an `agg` line did).

Everything the guest would refuse is refused here first, with the file,
line and column of the token at fault: an unknown mnemonic or register, a
bad operand, a backward or unknown label, an index out of range, a stack
that underflows, overflows, or differs where paths join (checked on every
path: jumps only go forward, so one pass in order sees every path), a
program that can fall off its end, too many instructions, an aggregation
used with two kinds or too many keys. The guest checks again.

The assembler also follows what each stack slot holds — the probe id, the
thread, the cpu, an argument, a register, or just a value — through to the
keys of every aggregation, so the host can print keys as function names,
threads and CPUs (Program.keys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .. import arches
from ..errors import UsageError
from ..wire import cdefs
from ..wire.frames import WIRE

OPS = {e.meaning: e for e in WIRE.table("WIRE_RPN_OPS")}    # by mnemonic
POPS_A = WIRE.const("WIRE_RPN_POPS_A")
POPS_A1 = WIRE.const("WIRE_RPN_POPS_A1")
AGG_KINDS = {e.meaning: e.value for e in WIRE.table("WIRE_AGG_KINDS")}
LIMITS = {n: WIRE.const(f"WIRE_PROGRAM_{n}") for n in
          ("MAX_INSNS", "STACK", "LOCALS", "GLOBALS", "LOG_BYTES", "MAX_AGGS",
           "MAX_ARG", "TLS", "STRING_BYTES")}
AGG_FLAGS = {e.name.lower(): e.value for e in WIRE.table("WIRE_RPN_AGG_FLAGS")}
MAX_KEYS = WIRE.const("WIRE_AGG_MAX_KEYS")
VM_WORD = WIRE.const("WIRE_PROGRAM_WORD_BYTES")
HEADER = WIRE.structs["wire_program"]
INSN = WIRE.structs["wire_rpn_insn"]
SIZE_LETTERS = {"b": 1, "w": 2, "d": 4, "q": 8}
# What a stack slot holds, for aggregation keys.
FACTS = {"probe": "probe", "thread": "thread", "cpu": "cpu", "pc": "address",
         "stack": "stack"}
# Operand kinds that may be left out, and what the instruction then takes.
OPTIONAL = {"depth": "0"}
MAX_DEPTH = WIRE.const("WIRE_STACK_MAX_DEPTH")


class AsmError(UsageError):
    """A program the guest would refuse: file:line:col: what."""


@dataclass(frozen=True)
class Insn:
    op: str              # mnemonic
    a: int = 0
    b: int = 0
    imm: int = 0
    line: int = 0
    col: int = 0


@dataclass
class Aggregation:
    name: str
    kind: str            # a WIRE_AGG_KINDS word
    keys: tuple = ()     # what each key is: probe, thread, cpu, ("arg", n), ...


@dataclass
class Program:
    path: str
    arch: str
    insns: list[Insn]
    major: int = 0
    minor: int = 0
    aggs: list[Aggregation] = field(default_factory=list)

    def image(self, order: str) -> bytes:
        """struct wire_program and the instructions, in the guest's order."""
        kinds = [AGG_KINDS[a.kind] for a in self.aggs]
        kinds += [0] * (LIMITS["MAX_AGGS"] - len(kinds))
        head = HEADER.pack(order, ninsns=len(self.insns), major=self.major,
                           minor=self.minor, naggs=len(self.aggs), agg_kind=kinds)
        body = b"".join(INSN.pack(order, op=OPS[i.op].value, a=i.a, b=i.b, imm=i.imm)
                        for i in self.insns)
        return head + body

    def agg_named(self, number: int) -> Aggregation:
        return self.aggs[number]


def _registers(arch: arches.Arch) -> dict[str, int]:
    h = cdefs.load(f"tracer/arch/{arch.name}/registers.h")
    return {e.meaning: e.value for e in h.table("TARCH_REGISTERS")}


_TOKEN = re.compile(r"\s*(@?[A-Za-z_%][A-Za-z0-9_.]*|-?0[xX][0-9a-fA-F]+|-?\d+)\s*")


class _Line:
    """One source line's tokens with their columns."""

    def __init__(self, path, lineno, text):
        self.path, self.lineno, self.text = path, lineno, text

    def err(self, col, what) -> AsmError:
        return AsmError(f"{self.path}:{self.lineno}:{col}: {what}")


def _number(tok, col, line: _Line) -> int:
    try:
        return int(tok, 0)
    except ValueError:
        raise line.err(col, f"{tok!r} is not a number") from None


def _split_operands(rest: str, start: int, line: _Line) -> list[tuple[str, int]]:
    """'a, b' -> [(a, col), (b, col)]; columns are 1-based."""
    out = []
    if not rest.strip():
        return out
    pos = start
    for part in rest.split(","):
        lead = len(part) - len(part.lstrip())
        tok = part.strip()
        if not tok:
            raise line.err(pos + 1, "an operand is missing")
        if not _TOKEN.fullmatch(tok):
            raise line.err(pos + lead + 1, f"{tok!r} is not an operand")
        out.append((tok, pos + lead + 1))
        pos += len(part) + 1
    return out


def assemble(text: str, arch: arches.Arch | str, path: str = "<program>") -> Program:
    arch = arch if isinstance(arch, arches.Arch) else arches.get(arch)
    asm = _Assembler(arch, path)
    for lineno, raw in enumerate(text.splitlines(), 1):
        asm.line(_Line(path, lineno, raw), lineno, raw)
    return asm.finish()


class _Assembler:
    """One program being assembled, a line at a time: its instructions, the
    labels defined so far, the jumps waiting for theirs and the
    aggregations declared; finish() resolves the jumps and checks the
    whole program."""

    def __init__(self, arch: arches.Arch, path: str):
        self.arch, self.path = arch, path
        self.word = VM_WORD               # the VM's word: 8 bytes on every arch
        self.addr = arch.word_bytes       # the arch's: `load`'s widest, size `a`
        self.regs = _registers(arch)
        self.prog = Program(path, arch.name, [])
        self.labels: dict[str, int] = {}
        self.pending: list[tuple[str, int, _Line, int]] = []   # (label, insn, line, col)
        self.declared: dict[str, Aggregation] = {}
        self.agg_where: dict[str, tuple] = {}

    def line(self, line: _Line, lineno: int, raw: str) -> None:
        """A label, then a directive or an instruction, each optional."""
        body = re.split(r"[#;]", raw, maxsplit=1)[0]
        m = re.match(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:", body)
        if m:
            name = m.group(2)
            if name in self.labels:
                raise line.err(len(m.group(1)) + 1, f"label {name!r} is defined twice")
            self.labels[name] = len(self.prog.insns)
            body = " " * len(m.group(0)) + body[len(m.group(0)):]
        m = re.match(r"^(\s*)(\S+)(.*)$", body)
        if not m:
            return
        col = len(m.group(1)) + 1
        word0, rest = m.group(2), m.group(3)
        if word0 == "agg":
            self._declare(line, col, word0, rest)
            return
        operands = _split_operands(rest, len(m.group(1)) + len(word0), line)
        if word0 in ("major", "minor"):
            if len(operands) != 1:
                raise line.err(col, f"{word0} takes one number")
            v = _number(*operands[0], line)
            if not 0 <= v <= 0xffff:
                raise line.err(operands[0][1], f"{word0} {v} is outside 0..65535")
            setattr(self.prog, word0, v)
            return
        self._instruction(line, lineno, col, word0, operands)

    def _declare(self, line: _Line, col: int, word0: str, rest: str) -> None:
        """agg @name KIND"""
        parts = rest.split()
        if len(parts) != 2 or not parts[0].startswith("@"):
            raise line.err(col, "agg @name KIND, KIND one of " + ", ".join(AGG_KINDS))
        name, kind = parts[0][1:], parts[1]
        if kind not in AGG_KINDS:
            raise line.err(col + len(word0) + rest.index(kind), f"no aggregation "
                           f"kind {kind!r}; kinds are " + ", ".join(AGG_KINDS))
        if name in self.declared:
            raise line.err(col, f"aggregation @{name} is declared twice")
        self.declared[name] = Aggregation(name, kind)
        self.agg_where[name] = (line, col)

    def _instruction(self, line: _Line, lineno: int, col: int, word0: str,
                     operands: list) -> None:
        op = OPS.get(word0)
        if op is None:
            raise line.err(col, f"unknown instruction {word0!r}")
        kinds = [k for k in op.more[0].split(",") if k]
        if not operands and len(kinds) == 1 and kinds[0] in OPTIONAL:
            operands = [(OPTIONAL[kinds[0]], col)]
        flags = 0
        if "agg" in kinds and len(operands) == len(kinds) + 1:
            tok, tcol = operands.pop()
            if tok not in AGG_FLAGS:
                raise line.err(tcol, f"{tok!r} is no aggregation flag; flags are "
                               + ", ".join(AGG_FLAGS))
            flags = AGG_FLAGS[tok]
        if len(operands) != len(kinds):
            what = ", ".join(kinds) or "no operands"
            raise line.err(col, f"{word0} takes {what}, not {len(operands)} operand"
                           + ("s" if len(operands) != 1 else ""))
        ins = dict(op=word0, line=lineno, col=col, imm=flags)
        for kind, (tok, tcol) in zip(kinds, operands):
            operand = self.OPERANDS.get(kind)
            if operand is None:
                raise line.err(tcol, f"operand kind {kind} unknown to the assembler")
            operand(self, ins, word0, tok, tcol, line)
        if word0 == "log":            # log size, n: a = n
            ins["a"] = _number(operands[1][0], operands[1][1], line)
            if not 1 <= ins["a"] <= 255:
                raise line.err(operands[1][1], "log takes 1..255 items")
        if "agg" in kinds:
            ins["a"] = _number(operands[1][0], operands[1][1], line)
            if not 0 <= ins["a"] <= MAX_KEYS:
                raise line.err(operands[1][1], f"{ins['a']} keys: at most {MAX_KEYS}")
        self.prog.insns.append(Insn(**ins))

    # ---- operands, by the kind WIRE_RPN_OPS gives them ----

    def _imm(self, ins, word0, tok, tcol, line) -> None:
        v = _number(tok, tcol, line)
        if not -(1 << 31) <= v < (1 << 31) and word0 != "pushhi":
            if not -(1 << 63) <= v < (1 << 64):
                raise line.err(tcol, f"{v} does not fit a 64-bit word")
            v &= (1 << 64) - 1
            self.prog.insns.append(Insn("push", imm=_s32(v >> 32), line=ins["line"],
                                        col=ins["col"]))
            ins.update(op="pushhi", imm=_s32(v & 0xffffffff))
            return
        if word0 == "pushhi":
            if not -(1 << 31) <= v < (1 << 32):
                raise line.err(tcol, f"{v} does not fit 32 bits")
            v = _s32(v & 0xffffffff)
        ins["imm"] = v

    def _reg(self, ins, word0, tok, tcol, line) -> None:
        name = tok.lstrip("%")
        if name not in self.regs:
            raise line.err(tcol, f"no register {tok!r} on {self.arch.name}; registers "
                           "are " + " ".join(sorted(self.regs, key=self.regs.get)))
        ins["a"] = self.regs[name]

    def _n(self, ins, word0, tok, tcol, line) -> None:
        v = _number(tok, tcol, line)
        if not 0 <= v <= 255:
            raise line.err(tcol, f"{v} is outside 0..255")
        top = LIMITS["MAX_ARG"]                 # the guest's words (program_check.c)
        last = v + (self.word // self.addr - 1 if word0 == "arg64" else 0)
        if word0 in ("arg", "arg64") and last >= top:
            raise line.err(tcol, f"argument {last}: at most {top} are read")
        ins["a"] = v

    def _depth(self, ins, word0, tok, tcol, line) -> None:
        v = _number(tok, tcol, line)
        if not 0 <= v <= MAX_DEPTH:
            raise line.err(tcol, f"depth {v}: 1..{MAX_DEPTH} frames (none: "
                           f"{WIRE.const('WIRE_STACK_DEPTH')})")
        ins["a"] = v

    def _word(self, ins, word0, tok, tcol, line) -> None:
        v = _number(tok, tcol, line)
        words = LIMITS["STRING_BYTES"] // self.word
        if not 0 <= v < words:
            raise line.err(tcol, f"string word {v}: a string is read to "
                           f"{LIMITS['STRING_BYTES']} bytes, {words} words")
        ins["a"] = v

    def _size_operand(self, ins, word0, tok, tcol, line) -> None:
        # log writes a VM word's low bytes (up to 8); load reads the arch's
        widest = self.word if word0 == "log" else self.addr
        ins["b" if word0 == "log" else "a"] = _size(tok, tcol, line, self.addr, widest)

    def _label(self, ins, word0, tok, tcol, line) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tok):
            raise line.err(tcol, f"{tok!r} is not a label")
        self.pending.append((tok, len(self.prog.insns), line, tcol))

    def _local(self, ins, word0, tok, tcol, line) -> None:
        self._index("local", ins, tok, tcol, line)

    def _global(self, ins, word0, tok, tcol, line) -> None:
        self._index("global", ins, tok, tcol, line)

    def _tls(self, ins, word0, tok, tcol, line) -> None:
        self._index("thread-local", ins, tok, tcol, line)

    def _index(self, kind, ins, tok, tcol, line) -> None:
        v = _number(tok, tcol, line)
        top = LIMITS[{"local": "LOCALS", "global": "GLOBALS",
                      "thread-local": "TLS"}[kind]]
        if not 0 <= v < top:
            raise line.err(tcol, f"{kind} {v} is outside 0..{top - 1}")
        ins["b"] = v

    def _agg(self, ins, word0, tok, tcol, line) -> None:
        if not re.fullmatch(r"@[A-Za-z_][A-Za-z0-9_]*", tok):
            raise line.err(tcol, f"{tok!r} is not an aggregation (@name)")
        name = tok[1:]
        if name not in self.declared:
            self.declared[name] = Aggregation(name, word0)
            self.agg_where[name] = (line, tcol)
        if self.declared[name].kind != word0:
            raise line.err(tcol, f"@{name} is a {self.declared[name].kind} "
                           f"aggregation, not {word0}")
        ins["b"] = list(self.declared).index(name)

    OPERANDS = {"imm": _imm, "reg": _reg, "n": _n, "size": _size_operand, "depth": _depth,
                "label": _label, "local": _local, "global": _global, "agg": _agg,
                "tls": _tls, "word": _word}

    def finish(self) -> Program:
        """Every jump to its label (forward only), the aggregations within
        their limit, and the stack checked on every path."""
        prog = self.prog
        for name, index, line, col in self.pending:
            if name not in self.labels:
                raise line.err(col, f"no label {name!r}")
            if self.labels[name] <= index:
                raise line.err(col, f"label {name!r} is not after this jump: jumps "
                               "only go forward (a program must end in bounded steps)")
            if self.labels[name] >= len(prog.insns):
                raise line.err(col, f"label {name!r} names no instruction (it is at "
                               "the end)")
            prog.insns[index] = Insn(**{**prog.insns[index].__dict__,
                                        "b": self.labels[name]})
        prog.aggs = list(self.declared.values())
        if len(prog.aggs) > LIMITS["MAX_AGGS"]:
            line, col = self.agg_where[prog.aggs[LIMITS["MAX_AGGS"]].name]
            raise line.err(col, f"more than {LIMITS['MAX_AGGS']} aggregations")
        _check_flow(prog, self.path)
        return prog


def _s32(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def _size(tok, col, line, word, widest) -> int:
    if tok in SIZE_LETTERS:
        n = SIZE_LETTERS[tok]
    elif tok == "a":
        n = word
    else:
        n = _number(tok, col, line)
    if n not in (1, 2, 4, 8) or n > widest:
        raise line.err(col, f"size {tok}: 1, 2, 4" + (" or 8" if widest == 8 else "")
                       + " bytes (b w d" + (" q" if widest == 8 else "") + ", a: a word)")
    return n


def _effect(insn: Insn) -> tuple[int, int]:
    e = OPS[insn.op]
    pops, pushes = e.values[1], e.values[2]
    if pops == POPS_A:
        pops = insn.a
    elif pops == POPS_A1:
        pops = insn.a + 1
    return pops, pushes


def _check_flow(prog: Program, path: str) -> None:
    """Stack depth and what each slot holds on every path (see the top)."""
    n = len(prog.insns)
    if not n:
        raise AsmError(f"{path}:1:1: an empty program (it needs at least exit or abort)")
    if n > LIMITS["MAX_INSNS"]:
        i = prog.insns[LIMITS["MAX_INSNS"]]
        raise AsmError(f"{path}:{i.line}:{i.col}: more than {LIMITS['MAX_INSNS']} "
                       "instructions")
    states: list[list | None] = [None] * (n + 1)
    states[0] = []
    keys: dict[int, list] = {}

    def at(i, what):
        ins = prog.insns[i]
        return AsmError(f"{path}:{ins.line}:{ins.col}: {ins.op}: {what}")

    def flow(target, stack, i):
        if states[target] is None:
            states[target] = list(stack)
        elif len(states[target]) != len(stack):
            raise at(i, f"the stack holds {len(stack)} here but {len(states[target])} "
                     "where this path joins another")
        else:
            states[target] = [a if a == b else "value"
                              for a, b in zip(states[target], stack)]

    for i, ins in enumerate(prog.insns):
        stack = states[i]
        if stack is None:
            continue                         # nothing reaches it
        pops, pushes = _effect(ins)
        if pops > len(stack):
            raise at(i, f"needs {pops} on the stack, which holds {len(stack)}")
        taken = stack[len(stack) - pops:]
        stack = stack[:len(stack) - pops]
        e = OPS[ins.op]
        if "agg" in e.more[0]:
            # key[0] is the first popped, the top (wire.h), as log's order
            keys.setdefault(ins.b, []).append(tuple(reversed(taken[len(taken) - ins.a:]))
                                              if ins.a else ())
        if ins.op in FACTS:
            pushed = [FACTS[ins.op]]
        elif ins.op == "arg":
            pushed = [("arg", ins.a)]
        elif ins.op == "reg":
            pushed = [("reg", ins.a)]
        elif ins.op == "dup":
            pushed = [taken[0], taken[0]]
        elif ins.op == "swap":
            pushed = [taken[1], taken[0]]
        elif ins.op == "over":
            pushed = [taken[0], taken[1], taken[0]]
        else:
            pushed = ["value"] * pushes
        stack = stack + pushed
        if len(stack) > LIMITS["STACK"]:
            raise at(i, f"the stack would hold {len(stack)}, more than "
                     f"{LIMITS['STACK']}")
        if ins.op in ("exit", "abort"):
            continue
        if ins.op in ("jmp", "jz", "jnz"):
            flow(ins.b, stack, i)
            if ins.op == "jmp":
                continue
        if i + 1 == n:
            raise at(i, "the program can run past its last instruction (end every "
                     "path with exit or abort)")
        flow(i + 1, stack, i)
    for number, seen in keys.items():
        agg = prog.aggs[number]
        first = seen[0]
        agg.keys = tuple(first[k] if all(len(s) > k and s[k] == first[k] for s in seen)
                         else "value" for k in range(len(first)))
        if any(len(s) != len(first) for s in seen):
            ins = next(x for x in prog.insns if "agg" in OPS[x.op].more[0] and x.b == number
                       and x.a != len(first))
            raise AsmError(f"{path}:{ins.line}:{ins.col}: @{agg.name} is used with "
                           f"{len(first)} and {ins.a} keys")
