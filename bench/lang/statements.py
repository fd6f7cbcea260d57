"""A group's program: its clauses' statements and actions, as RPN text.

Gen (on ExprGen's expressions) writes one group's program: exit()'s
check first when the script uses it, then each clause in script order,
its predicate a jump past its body (none where the group's probes decide
it true); assignments to globals, self->x and
this->x; aggregations (an aggregation's value goes on as 64 bits,
zero-extended when its type is unsigned; lquantize's bucket is computed
here); and printf/trace, any number of them: a program sends one LOG
record per firing, so each printf that runs logs its number in the group
(Group.printfs) and then its arguments, and the host renders the record
as the printfs it holds, in the order they ran. A group's printfs must
fit the record together (model.LOG_BYTES). A peephole pass folds a test against 0 into the
jump that follows, and bench/program/asm.py assembles the text, its
refusals reported at the group's first clause.
"""

from __future__ import annotations

import re

from ..program import asm
from .expr import ExprGen, probe_truth
from .hosted import c_format
from .model import (AggInfo, EXIT_GLOBAL, EXIT_SET, FLAG_LOCAL, LOG_BYTES, LQ_MAX, MAJOR,
                    MAX_KEYS, Printf, SCRATCH_LOCAL, STRING_BYTES, THIS_LOCALS)
from .parser import AggStmt, Action, Assign, Name, Str


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


class Gen(ExprGen):
    """One group's program: RPN lines, labels, locals, aggregations."""

    def run(self) -> None:
        g = self.g
        self.emit(f"major {MAJOR}", f"minor {g.slot}")
        if self.uses_exit:
            self.emit(f"gget {EXIT_GLOBAL}", "jnz done")
        for c in g.clauses:
            skip = self.label()
            decided = {probe_truth(c.predicate, p) for p in g.probes}
            if decided != {True}:           # else the probes decided it here
                self.value(c.predicate)
                self.emit(f"jz {skip}")
            for st in c.body:
                self.statement(st)
            self.emit(f"{skip}:")
        if g.printfs:
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
            self.scalar(st.args[0])             # the status, flagged as set
            self.emit("push 255", "and", f"push {EXIT_SET}", "or", f"gset {EXIT_GLOBAL}")
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
        if not st.args or not isinstance(st.args[0], Str):
            raise self.err(st.pos, "printf's first argument is its format string")
        fmt, kinds = c_format(self.s, st.args[0])
        args = st.args[1:]
        if len(kinds) != len(args):
            raise self.err(st.pos, f"the format wants {len(kinds)} argument"
                           f"{'s' if len(kinds) != 1 else ''}, printf has {len(args)}")
        self.emit(f"push {len(self.g.printfs)}", "log a, 1")   # which printf
        size = self.addr
        described = []
        for k, a in zip(kinds, args):
            if isinstance(a, Str):
                described.append(("const", a.value))
                continue
            t = self.type_of(a)
            if k == "string" and t.kind in ("probefunc", "probename"):
                self.emit("probe", "log a, 1")      # the host names the probe
                described.append(("probe", t.kind))
                size += self.addr
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
                size += 3 + STRING_BYTES
            else:
                self.scalar(a)
                self.emit(f"log {self.word}, 1")   # the whole 64-bit value
                described.append(("int", t.signed))
                size += self.word
        self.emit("push 1", f"lset {FLAG_LOCAL}")
        used = sum(p.size for p in self.g.printfs) + size
        if used > LOG_BYTES:
            raise self.err(st.pos, f"a program past the VM's limits: the printfs of "
                           f"one probe log {used} bytes, a LOG record holds {LOG_BYTES}")
        self.g.printfs.append(Printf(fmt, described, st.pos, size))
