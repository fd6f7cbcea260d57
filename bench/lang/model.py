"""What the D compiler writes against and what it hands on.

The VM's limits come from wire.h (through bench/program/asm.py and
bench/wire/frames.py), and the compiler reserves a few of them for itself:
the last global is exit()'s flag, the last two locals are printf's
"send the log" flag and lquantize's scratch, and this->x take the rest.
Ty is an expression's type as the compiler tracks it (signedness, what a
key means, the DWARF type for naming values). A compiled script is a
Compiled: its probe groups (Group: one program in one slot, its clauses,
its aggregations and its printfs) plus what the output needs (AggInfo,
Printf, one per printf/trace in program order) and the host's BEGIN/END
actions. Scope numbers the script's globals and thread-locals, shared by
every group's program.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..program import asm
from ..wire.frames import WIRE

SLOTS = WIRE.const("WIRE_PROGRAMS")
LOCALS = asm.LIMITS["LOCALS"]
GLOBALS = asm.LIMITS["GLOBALS"]
TLS = asm.LIMITS["TLS"]
MAX_ARG = asm.LIMITS["MAX_ARG"]
MAX_KEYS = asm.MAX_KEYS
LQ_MAX = WIRE.const("WIRE_LQUANTIZE_MAX")
MAJOR = 31                     # LOG records of compiled printf/trace
EXIT_GLOBAL = GLOBALS - 1      # set by exit(); every program checks it first
EXIT_SET = 0x100               # exit(n) stores EXIT_SET | (n & 0xff): n may be 0
FLAG_LOCAL = LOCALS - 1        # a printf ran: send the log
SCRATCH_LOCAL = LOCALS - 2     # lquantize's value
THIS_LOCALS = LOCALS - 2       # this->x take 0 .. THIS_LOCALS - 1
BUILTINS = ("probefunc", "probename", "cpu", "tid", "timestamp", "caller", "retval")
STRING_BYTES = asm.LIMITS["STRING_BYTES"]   # a %s logged, a string compared: bytes
VM_WORD = asm.VM_WORD                       # the VM's word in bytes, on every arch
LOG_BYTES = asm.LIMITS["LOG_BYTES"]   # what one firing's LOG record holds


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
    size: int = 0              # bytes it logs, its number included


@dataclass
class Group:
    slot: int
    clauses: list
    probes: list               # sites.Probe
    text: str = ""
    program: object = None     # asm.Program
    aggs: list = field(default_factory=list)    # AggInfo per program aggregation
    printfs: list = field(default_factory=list)  # Printf, by its number in the record


@dataclass
class Compiled:
    spec: str
    probes: list
    groups: list
    aggs: dict                 # name -> AggInfo, in order of first use
    begin: list                # host clauses' actions
    end: list
    uses_exit: bool = False
    scope: object = None       # Scope: what BEGIN/END's globals are
    host_globals: dict = field(default_factory=dict)   # name -> number END reads
    sampler: object = None     # the profile-N/tick-N probe (probes.SampleProbe)

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


class Scope:
    """The script's variables: globals and thread-locals, by first assignment."""

    def __init__(self):
        self.globals: dict[str, int] = {}
        self.tls: dict[str, int] = {}
        self.types: dict[tuple, Ty] = {}
