"""stack() and func() in D: aggregation keys that the host names.

`stack()` / `stack(N)` pushes the id of the firing's call stack (the VM's
`stack N`: N frames, 1 to WIRE_STACK_MAX_DEPTH; stack() takes the VM's
default, WIRE_STACK_DEPTH). It is an aggregation key only, alone or beside
other keys (`@[probefunc, stack(5)] = count()`), as DTrace's stack() is
used; a stack() anywhere else (a predicate, arithmetic, trace(), printf)
is refused with that reason. The guest keeps each CPU's distinct stacks;
the host resolves an id to its PCs (Capture.stacks, sparc64's leaf callers
settled by bench/trace/stacks.py), so the same stack on two CPUs is one
row, printed as DTrace prints it: a frame per line, `kernel\u0060func+0xoff`,
indented, the value after. `func(e)` keys by the function holding the
address e (DTrace's func(): `profile-997 { @[func(arg0)] = count(); }`),
printed `kernel\u0060name`. folded() turns a D stack aggregation into
FlameGraph's paths for --folded and --flamegraph.
"""

from __future__ import annotations

from collections import Counter

from ..program import asm
from ..trace import stacks as stack_text
from ..wire.frames import WIRE
from .model import Ty

DEPTH = WIRE.const("WIRE_STACK_DEPTH")
MAX_DEPTH = asm.MAX_DEPTH
KEY_FUNCTIONS = ("stack", "func")


def call_type(gen, e) -> Ty:
    """The type of a call in an expression; errors for what is not one of
    KEY_FUNCTIONS or has the wrong arguments."""
    if e.name == "stack":
        frames(gen, e)
        return Ty("stack", signed=False, what="stack")
    if e.name == "func":
        if len(e.args) != 1:
            raise gen.err(e.pos, f"func() takes one argument (an address), not "
                          f"{len(e.args)}")
        return Ty("func", signed=False, what="func")
    if e.name == "ustack":
        raise gen.err(e.pos, "ustack(): the guest has no user stacks; stack() walks "
                      "the kernel's")
    raise gen.err(e.pos, f"unknown function {e.name!r}; in an expression: "
                  + ", ".join(f"{n}()" for n in KEY_FUNCTIONS))


def frames(gen, e) -> int:
    """stack(N)'s N, checked against the VM's limit."""
    if len(e.args) > 1:
        raise gen.err(e.pos, "stack() takes at most one argument, its frames")
    if not e.args:
        return DEPTH
    n = gen.constant(e.args[0])
    if not 1 <= n <= MAX_DEPTH:
        raise gen.err(e.args[0].pos, f"stack({n}): a stack holds 1 to {MAX_DEPTH} "
                      "frames (WIRE_STACK_MAX_DEPTH)")
    return n


def key_value(gen, e) -> None:
    """Code that pushes the key's word: a stack id, or func()'s address."""
    call_type(gen, e)
    if e.name == "stack":            # no operand: the VM's WIRE_STACK_DEPTH
        gen.emit(f"stack {frames(gen, e)}" if e.args else "stack")
    else:
        gen.scalar(e.args[0])


def not_a_key(gen, e):
    """The error for a stack() or func() used as a value."""
    call_type(gen, e)
    return gen.err(e.pos, f"{e.name}() is an aggregation key only: "
                   f"@[{e.name}({'arg0' if e.name == 'func' else ''})] = count()")


class Frames:
    """What naming a stack or func() key needs: the run's stacks (id ->
    PCs, settled) and a bench/trace/stacks.Symbolizer of its image."""

    def __init__(self, stacks: dict, sym):
        self.stacks, self.sym = stacks, sym

    def key(self, v: int, what: str):
        """(text, sort, raw) of a key: raw is a stack's PCs (None: no room)."""
        if what == "stack":
            pcs = self.stacks.get(v)
            return "\n".join(stack_text.stack_lines(pcs, self.sym)), 0, pcs
        near = self.sym.nearest(v) if self.sym else None
        return (f"kernel`{near[0]}" if near else f"{v:#x}"), 0, v


def has_stack(info) -> bool:
    return any(t.what == "stack" for t in info.keys)


def row_lines(label_keys: list[str], stack_keys: list[str], value_lines: list[str]) \
        -> list[str]:
    """A row keyed by a stack as DTrace prints it: the other keys on a line,
    the stack's frames one per line, then the value (or distribution)."""
    out = [f"  {'  '.join(label_keys)}"] if label_keys else []
    for text in stack_keys:
        out += text.split("\n")
    return out + value_lines


def folded(compiled, tables: dict, sym) -> Counter:
    """'root;...;leaf' -> count over every aggregation keyed by stack():
    the frames' functions outermost first, then a probefunc key's function
    as the leaf (the probed function, which an entry's stack begins below)."""
    out: Counter = Counter()
    for name, rows in tables.items():
        info = compiled.aggs[name]
        if not has_stack(info):
            continue
        for r in rows.values():
            names: list[str] = []
            leaf: list[str] = []
            for raw, text, t in zip(r.raw, r.keys, info.keys):
                if t.what == "stack":
                    names = stack_text.folded_names(raw, sym) if raw \
                        else ["(no room)"]
                elif t.what == "probefunc":
                    leaf = [text]
            out[";".join(names + leaf)] += r.count
    return out

