"""The validator's accept/reject table: each program below, given as its
raw instructions, goes to the guest's own validator (program_check.c,
compiled for the host: tests/fuzz/validator_cli.c) and, written out as
RPN text, to the host's assembler (bench/program/asm.py); each row holds
the exact reason each gives ('ok' if it accepts). The assembler may be
stricter than the guest (it refuses `log` of 0 items), never laxer: a
program the guest refuses is refused on the host first. Where both accept,
the assembler's bytes are the row's own. None in the host column: a
program the text cannot say (a header the assembler writes itself, an
aggregation it declares on first use).

The limits that other work may change are read from wire.h (STACK,
MAX_KEYS, MAX_ARG, TLS, LQUANTIZE_MAX, the aggregation flags); the registers are sparc64's, as in the fuzz targets' host build.

The baddof test beside it, after DTrace's (it flips every bit of valid
DIF objects): every bit of every example program in bench/programs/
flipped in turn, each result either refused by the validator or run by
the interpreter safely (the `run` fuzz target's checks: its length, its
memory, its stack, the sanitizers). It prints the count."""

import subprocess

import pytest

from bench import arches
from bench.check import libfuzz
from bench.program import asm
from bench.paths import REPO

ARCH = arches.get("sparc64")
STACK = asm.LIMITS["STACK"]
MAX_KEYS = asm.MAX_KEYS
MAX_ARG = asm.LIMITS["MAX_ARG"]
TLS = asm.LIMITS["TLS"]
LQ_MAX = asm.WIRE.const("WIRE_LQUANTIZE_MAX")
UNSIGNED = asm.AGG_FLAGS["unsigned"]
ALL_FLAGS = sum(asm.AGG_FLAGS.values())
EXIT = ("exit", 0, 0, 0)
REGS = {v: k for k, v in sorted(asm._registers(ARCH).items(), key=lambda kv: -len(kv[0]))}
BY_VALUE = {e.value: e for e in asm.WIRE.table("WIRE_RPN_OPS")}
KIND_WORDS = {v: k for k, v in asm.AGG_KINDS.items()}

# (name, header fields, instructions (mnemonic or opcode, a, b, imm),
#  the guest's reason, the assembler's reason)
TABLE = [
    ('exit only', {},
     [EXIT],
     'ok',
     'ok'),
    ('abort only', {},
     [('abort', 0, 0, 0)],
     'ok',
     'ok'),
    ('push exit', {},
     [('push', 0, 0, 5), EXIT],
     'ok',
     'ok'),
    ('push drop exit', {},
     [('push', 0, 0, 5), ('drop', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('add of two', {},
     [('push', 0, 0, 1), ('push', 0, 0, 2), ('add', 0, 0, 0), ('drop', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('add of one', {},
     [('push', 0, 0, 1), ('add', 0, 0, 0), EXIT],
     'instruction 1 (add): stack underflow: pops 2, 1 on the stack',
     'add: needs 2 on the stack, which holds 1'),
    ('drop on empty', {},
     [('drop', 0, 0, 0), EXIT],
     'instruction 0 (drop): stack underflow: pops 1, 0 on the stack',
     'drop: needs 1 on the stack, which holds 0'),
    ('swap of one', {},
     [('push', 0, 0, 1), ('swap', 0, 0, 0), EXIT],
     'instruction 1 (swap): stack underflow: pops 2, 1 on the stack',
     'swap: needs 2 on the stack, which holds 1'),
    ('over of two', {},
     [('push', 0, 0, 1), ('push', 0, 0, 2), ('over', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('dup on empty', {},
     [('dup', 0, 0, 0), EXIT],
     'instruction 0 (dup): stack underflow: pops 1, 0 on the stack',
     'dup: needs 1 on the stack, which holds 0'),
    ('pushhi on empty', {},
     [('pushhi', 0, 0, 1), EXIT],
     'instruction 0 (pushhi): stack underflow: pops 1, 0 on the stack',
     'pushhi: needs 1 on the stack, which holds 0'),
    ('pushhi after push', {},
     [('push', 0, 0, 1), ('pushhi', 0, 0, 2), EXIT],
     'ok',
     'ok'),
    ("STACK pushes", {},
     [("push", 0, 0, i) for i in range(STACK)] + [EXIT],
     'ok',
     'ok'),
    ("STACK + 1 pushes", {},
     [("push", 0, 0, i) for i in range(STACK + 1)] + [EXIT],
     f'instruction {STACK} (push): stack overflow: {STACK + 1} words, at most {STACK}',
     f'push: the stack would hold {STACK + 1}, more than {STACK}'),
    ('falls off the end', {},
     [('push', 0, 0, 1)],
     'instruction 0 (push): the last instruction must be exit or abort: nothing may fall off the end',
     'push: the program can run past its last instruction (end every path with exit or abort)'),
    ('ends in jmp', {},
     [('jmp', 0, 1, 0)],
     'instruction 0 (jmp): jump to instruction 1: the program has 1',
     "label 'L1' names no instruction (it is at the end)"),
    ('ends in drop', {},
     [('push', 0, 0, 1), ('drop', 0, 0, 0)],
     'instruction 1 (drop): the last instruction must be exit or abort: nothing may fall off the end',
     'drop: the program can run past its last instruction (end every path with exit or abort)'),
    ('jmp forward', {},
     [('jmp', 0, 2, 0), ('abort', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('jmp to itself', {},
     [('jmp', 0, 0, 0), EXIT],
     'instruction 0 (jmp): jump back to instruction 0: jumps only go forward',
     "label 'L0' is not after this jump: jumps only go forward (a program must end in bounded steps)"),
    ('jmp back', {},
     [('push', 0, 0, 1), ('jz', 0, 0, 0), EXIT],
     'instruction 1 (jz): jump back to instruction 0: jumps only go forward',
     "label 'L0' is not after this jump: jumps only go forward (a program must end in bounded steps)"),
    ('jmp past the end', {},
     [('jmp', 0, 5, 0), EXIT],
     'instruction 0 (jmp): jump to instruction 5: the program has 2',
     "label 'L5' names no instruction (it is at the end)"),
    ('jmp to the end', {},
     [('jmp', 0, 2, 0), EXIT],
     'instruction 0 (jmp): jump to instruction 2: the program has 2',
     "label 'L2' names no instruction (it is at the end)"),
    ('jz without a value', {},
     [('jz', 0, 1, 0), EXIT],
     'instruction 0 (jz): stack underflow: pops 1, 0 on the stack',
     'jz: needs 1 on the stack, which holds 0'),
    ('jz joins equal', {},
     [('push', 0, 0, 1), ('jz', 0, 4, 0), ('push', 0, 0, 2), ('drop', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('jz joins unequal', {},
     [('push', 0, 0, 1), ('jz', 0, 3, 0), ('push', 0, 0, 2), EXIT],
     'instruction 3 (exit): paths join with 0 and 1 words on the stack',
     'push: the stack holds 1 here but 0 where this path joins another'),
    ('jnz joins equal', {},
     [('push', 0, 0, 0), ('jnz', 0, 3, 0), ('push', 0, 0, 9), ('drop', 0, 0, 0), EXIT],
     'instruction 3 (drop): paths join with 0 and 1 words on the stack',
     'push: the stack holds 1 here but 0 where this path joins another'),
    ('unreachable bad operand', {},
     [EXIT, ('lget', 0, 99, 0), EXIT],
     'instruction 1 (lget): local 99: there are 16',
     'local 99 is outside 0..15'),
    ('unreachable underflow', {},
     [EXIT, ('add', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('unknown op 0x00', {},
     [(0, 0, 0, 0), EXIT],
     'instruction 0 (op 0x00): unknown operation',
     "unknown instruction 'op00'"),
    ('unknown op 0xff', {},
     [(255, 0, 0, 0), EXIT],
     'instruction 0 (op 0xff): unknown operation',
     "unknown instruction 'opff'"),
    ('unknown op 0x0f', {},
     [(15, 0, 0, 0), EXIT],
     'instruction 0 (op 0x0f): unknown operation',
     "unknown instruction 'op0f'"),
    ('stack (op 0x0d), default depth', {},
     [(13, 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('strword 0', {},
     [('push', 0, 0, 0x1000), ('strword', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('strword 7, the last word of 64 bytes on sparc64', {},
     [('push', 0, 0, 0x1000), ('strword', 7, 0, 0), EXIT],
     'ok',
     'ok'),
    ('strword 8, past 64 bytes', {},
     [('push', 0, 0, 0x1000), ('strword', 8, 0, 0), EXIT],
     'instruction 1 (strword): string word 8: a string is read to 64 bytes, 8 words',
     'string word 8: a string is read to 64 bytes, 8 words'),
    ('strword 255', {},
     [('push', 0, 0, 0x1000), ('strword', 255, 0, 0), EXIT],
     'instruction 1 (strword): string word 255: a string is read to 64 bytes, 8 words',
     'string word 255: a string is read to 64 bytes, 8 words'),
    ('strword with nothing on the stack', {},
     [('strword', 0, 0, 0), EXIT],
     'instruction 0 (strword): stack underflow: pops 1, 0 on the stack',
     'strword: needs 1 on the stack, which holds 0'),
    ('timens (op 0x0c)', {},
     [(12, 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('reg 0', {},
     [('reg', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('reg 35', {},
     [('reg', 35, 0, 0), EXIT],
     'ok',
     'ok'),
    ('reg 36', {},
     [('reg', 36, 0, 0), EXIT],
     'instruction 0 (reg): register 36: there are 36',
     "no register '%r36' on sparc64; registers are g0 g1 g2 g3 g4 g5 g6 g7 o0 o1 o2 o3 o4 o5 o6 sp o7 l0 l1 l2 l3 l4 l5 l6 l7 i0 i1 i2 i3 i4 i5 i6 fp i7 pc npc ccr y"),
    ('reg 255', {},
     [('reg', 255, 0, 0), EXIT],
     'instruction 0 (reg): register 255: there are 36',
     "no register '%r255' on sparc64; registers are g0 g1 g2 g3 g4 g5 g6 g7 o0 o1 o2 o3 o4 o5 o6 sp o7 l0 l1 l2 l3 l4 l5 l6 l7 i0 i1 i2 i3 i4 i5 i6 fp i7 pc npc ccr y"),
    ('arg 0', {},
     [('arg', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('arg 5', {},
     [('arg', 5, 0, 0), EXIT],
     'ok',
     'ok'),
    ('arg 6', {},
     [('arg', 6, 0, 0), EXIT],
     'ok',
     'ok'),
    ("arg MAX_ARG - 1", {},
     [('arg', MAX_ARG - 1, 0, 0), EXIT],
     'ok',
     'ok'),
    ("arg MAX_ARG", {},
     [('arg', MAX_ARG, 0, 0), EXIT],
     f'instruction 0 (arg): argument {MAX_ARG}: at most {MAX_ARG} are read',
     f'argument {MAX_ARG}: at most {MAX_ARG} are read'),
    ('arg 99', {},
     [('arg', 99, 0, 0), EXIT],
     f'instruction 0 (arg): argument 99: at most {MAX_ARG} are read',
     f'argument 99: at most {MAX_ARG} are read'),
    # sparc64's word holds a 64-bit argument: arg64 reads one word
    ('arg64 MAX_ARG - 1', {},
     [('arg64', MAX_ARG - 1, 0, 0), ('drop', 0, 0, 0), EXIT],
     'ok', 'ok'),
    ('arg64 MAX_ARG', {},
     [('arg64', MAX_ARG, 0, 0), EXIT],
     f'instruction 0 (arg64): argument {MAX_ARG}: at most {MAX_ARG} are read',
     f'argument {MAX_ARG}: at most {MAX_ARG} are read'),
    ('log 8 (the VM word)', {},
     [('push', 0, 0, 1), ('log', 1, 8, 0), EXIT],
     'ok', 'ok'),
    ('divs and mods', {},
     [('push', 0, 0, -7), ('push', 0, 0, 2), ('divs', 0, 0, 0),
      ('push', 0, 0, 2), ('mods', 0, 0, 0), ('drop', 0, 0, 0), EXIT],
     'ok', 'ok'),
    ("tget TLS - 1", {},
     [('tget', 0, TLS - 1, 0), EXIT],
     'ok',
     'ok'),
    ("tget TLS", {},
     [('tget', 0, TLS, 0), EXIT],
     f'instruction 0 (tget): thread-local {TLS}: there are {TLS}',
     f'thread-local {TLS} is outside 0..{TLS - 1}'),
    ('tset 0', {},
     [('push', 0, 0, 1), ('tset', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ("tset TLS", {},
     [('push', 0, 0, 1), ('tset', 0, TLS, 0), EXIT],
     f'instruction 1 (tset): thread-local {TLS}: there are {TLS}',
     f'thread-local {TLS} is outside 0..{TLS - 1}'),
    ('tset on empty', {},
     [('tset', 0, 0, 0), EXIT],
     'instruction 0 (tset): stack underflow: pops 1, 0 on the stack',
     'tset: needs 1 on the stack, which holds 0'),
    ('load 1', {},
     [('push', 0, 0, 0), ('load', 1, 0, 0), EXIT],
     'ok',
     'ok'),
    ('load 8', {},
     [('push', 0, 0, 0), ('load', 8, 0, 0), EXIT],
     'ok',
     'ok'),
    ('load 3', {},
     [('push', 0, 0, 0), ('load', 3, 0, 0), EXIT],
     'instruction 1 (load): size 3: 1, 2, 4 or 8 bytes',
     'size 3: 1, 2, 4 or 8 bytes (b w d q, a: a word)'),
    ('load 0', {},
     [('push', 0, 0, 0), ('load', 0, 0, 0), EXIT],
     'instruction 1 (load): size 0: 1, 2, 4 or 8 bytes',
     'size 0: 1, 2, 4 or 8 bytes (b w d q, a: a word)'),
    ('load 16', {},
     [('push', 0, 0, 0), ('load', 16, 0, 0), EXIT],
     'instruction 1 (load): size 16: 1, 2, 4 or 8 bytes',
     'size 16: 1, 2, 4 or 8 bytes (b w d q, a: a word)'),
    ('load on empty', {},
     [('load', 4, 0, 0), EXIT],
     'instruction 0 (load): stack underflow: pops 1, 0 on the stack',
     'load: needs 1 on the stack, which holds 0'),
    ('lget 15', {},
     [('lget', 0, 15, 0), EXIT],
     'ok',
     'ok'),
    ('lget 16', {},
     [('lget', 0, 16, 0), EXIT],
     'instruction 0 (lget): local 16: there are 16',
     'local 16 is outside 0..15'),
    ('lset 0', {},
     [('push', 0, 0, 1), ('lset', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('lset on empty', {},
     [('lset', 0, 0, 0), EXIT],
     'instruction 0 (lset): stack underflow: pops 1, 0 on the stack',
     'lset: needs 1 on the stack, which holds 0'),
    ('gget 63', {},
     [('gget', 0, 63, 0), EXIT],
     'ok',
     'ok'),
    ('gget 64', {},
     [('gget', 0, 64, 0), EXIT],
     'instruction 0 (gget): global 64: there are 64',
     'global 64 is outside 0..63'),
    ('gset 64', {},
     [('push', 0, 0, 1), ('gset', 0, 64, 0), EXIT],
     'instruction 1 (gset): global 64: there are 64',
     'global 64 is outside 0..63'),
    ('gadd 1000', {},
     [('push', 0, 0, 1), ('gadd', 0, 1000, 0), EXIT],
     'instruction 1 (gadd): global 1000: there are 64',
     'global 1000 is outside 0..63'),
    ('log 2 words', {},
     [('push', 0, 0, 1), ('push', 0, 0, 2), ('log', 2, 4, 0), EXIT],
     'ok',
     'ok'),
    ('log size 3', {},
     [('push', 0, 0, 1), ('log', 1, 3, 0), EXIT],
     'instruction 1 (log): size 3: 1, 2, 4 or 8 bytes',
     'size 3: 1, 2, 4 or 8 bytes (b w d q, a: a word)'),
    ('log more than the stack', {},
     [('push', 0, 0, 1), ('log', 2, 4, 0), EXIT],
     'instruction 1 (log): stack underflow: pops 2, 1 on the stack',
     'log: needs 2 on the stack, which holds 1'),
    ('log 0 items', {},
     [('log', 0, 4, 0), EXIT],
     'ok',
     'log takes 1..255 items'),
    ('logm', {},
     [('push', 0, 0, 4), ('push', 0, 0, 0), ('logm', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('logs of one', {},
     [('push', 0, 0, 0), ('logs', 0, 0, 0), EXIT],
     'instruction 1 (logs): stack underflow: pops 2, 1 on the stack',
     'logs: needs 2 on the stack, which holds 1'),
    ('count declared', {'aggs': [1]},
     [('probe', 0, 0, 0), ('count', 1, 0, 0), EXIT],
     'ok',
     'ok'),
    ('count no keys', {'aggs': [1]},
     [('count', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('count undeclared', {'aggs': [1]},
     [('count', 0, 1, 0), EXIT],
     'instruction 0 (count): aggregation 1: the program declares 1',
     None),
    ('sum into count', {'aggs': [1]},
     [('push', 0, 0, 1), ('sum', 0, 0, 0), EXIT],
     'instruction 1 (sum): aggregation 0 is declared count',
     '@a0 is a count aggregation, not sum'),
    ('sum with a key', {'aggs': [2]},
     [('push', 0, 0, 1), ('probe', 0, 0, 0), ('sum', 1, 0, 0), EXIT],
     'ok',
     'ok'),
    ('sum without value', {'aggs': [2]},
     [('probe', 0, 0, 0), ('sum', 1, 0, 0), EXIT],
     'instruction 1 (sum): stack underflow: pops 2, 1 on the stack',
     'sum: needs 2 on the stack, which holds 1'),
    ("quantize MAX_KEYS keys", {'aggs': [6]},
     [("push", 0, 0, i) for i in range(MAX_KEYS + 1)] + [("quantize", MAX_KEYS, 0, 0), EXIT],
     'ok',
     'ok'),
    ("quantize MAX_KEYS + 1 keys", {'aggs': [6]},
     [("push", 0, 0, i) for i in range(MAX_KEYS + 2)] + [("quantize", MAX_KEYS + 1, 0, 0), EXIT],
     f'instruction {MAX_KEYS + 2} (quantize): {MAX_KEYS + 1} keys: at most {MAX_KEYS}',
     f'{MAX_KEYS + 1} keys: at most {MAX_KEYS}'),
    ('keys differ', {'aggs': [1]},
     [('probe', 0, 0, 0), ('count', 1, 0, 0), ('count', 0, 0, 0), EXIT],
     'instruction 2 (count): 0 keys for aggregation 0, which instruction 1 gives 1',
     '@a0 is used with 1 and 0 keys'),
    ('agg kind 0', {'aggs': [0]},
     [EXIT],
     'aggregation 0: no kind 0',
     None),
    ('agg kind 7 (lquantize)', {'aggs': [7]},
     [EXIT],
     'ok',
     None),
    ('agg kind 8', {'aggs': [8]},
     [EXIT],
     'aggregation 0: no kind 8',
     None),
    ('lquantize with a key', {'aggs': [7]},
     [('push', 0, 0, LQ_MAX), ('probe', 0, 0, 0), ('lquantize', 1, 0, 0), EXIT],
     'ok',
     'ok'),
    ('lquantize without bucket', {'aggs': [7]},
     [('lquantize', 0, 0, 0), EXIT],
     'instruction 0 (lquantize): stack underflow: pops 1, 0 on the stack',
     'lquantize: needs 1 on the stack, which holds 0'),
    ('lquantize into quantize', {'aggs': [6]},
     [('push', 0, 0, 1), ('lquantize', 0, 0, 0), EXIT],
     'instruction 1 (lquantize): aggregation 0 is declared quantize',
     '@a0 is a quantize aggregation, not lquantize'),
    ("count MAX_KEYS keys", {'aggs': [1]},
     [("push", 0, 0, i) for i in range(MAX_KEYS)] + [("count", MAX_KEYS, 0, 0), EXIT],
     'ok',
     'ok'),
    ("count MAX_KEYS + 1 keys", {'aggs': [1]},
     [("push", 0, 0, i) for i in range(MAX_KEYS + 1)] + [("count", MAX_KEYS + 1, 0, 0), EXIT],
     f'instruction {MAX_KEYS + 1} (count): {MAX_KEYS + 1} keys: at most {MAX_KEYS}',
     f'{MAX_KEYS + 1} keys: at most {MAX_KEYS}'),
    ('sum unsigned flag', {'aggs': [2]},
     [('push', 0, 0, -1), ('sum', 0, 0, UNSIGNED), EXIT],
     'ok',
     'ok'),
    ('sum unknown flag', {'aggs': [2]},
     [('push', 0, 0, 1), ('sum', 0, 0, 2), EXIT],
     f'instruction 1 (sum): flags 0x2: only 0x{ALL_FLAGS:x} are known',
     None),
    ('lquantize every flag bit', {'aggs': [7]},
     [('push', 0, 0, 1), ('lquantize', 0, 0, -1), EXIT],
     f'instruction 1 (lquantize): flags 0xffffffff: only 0x{ALL_FLAGS:x} are known',
     None),
    ('9 aggs', {'naggs': 9},
     [EXIT],
     '9 aggregations: at most 8',
     None),
    ('8 aggs', {'aggs': [1, 2, 3, 4, 5, 6, 1, 2]},
     [EXIT],
     'ok',
     'ok'),
    ('major minor', {'major': 7, 'minor': 9},
     [EXIT],
     'ok',
     'ok'),
    ('0 instructions', {'ninsns': 0},
     [],
     '0 instructions: a program has 1 to 256',
     None),
    ('257 instructions', {'ninsns': 257},
     [EXIT],
     '257 instructions: a program has 1 to 256',
     None),
    ('header says 2, has 1', {'ninsns': 2},
     [EXIT],
     '24 bytes: a program of 2 instructions is 32',
     None),
    ('header says 1, has 2', {'ninsns': 1},
     [('push', 0, 0, 0), EXIT],
     '32 bytes: a program of 1 instructions is 24',
     None),
    ('short header', {'truncate': 10},
     [],
     "10 bytes: shorter than a program's header (16)",
     None),
    ('divu', {},
     [('push', 0, 0, 1), ('push', 0, 0, 0), ('divu', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('not neg', {},
     [('push', 0, 0, 1), ('not', 0, 0, 0), ('neg', 0, 0, 0), EXIT],
     'ok',
     'ok'),
    ('retval cpu thread time pc', {},
     [('retval', 0, 0, 0), ('cpu', 0, 0, 0), ('thread', 0, 0, 0), ('time', 0, 0, 0), ('pc', 0, 0, 0), EXIT],
     'ok',
     'ok'),
]


def raw(head: dict, insns) -> bytes:
    """The program's bytes as the guest receives them (little-endian)."""
    aggs = head.get("aggs", [])
    h = asm.HEADER.pack("<", ninsns=head.get("ninsns", len(insns)),
                        major=head.get("major", 0), minor=head.get("minor", 0),
                        naggs=head.get("naggs", len(aggs)),
                        agg_kind=list(aggs) + [0] * (asm.LIMITS["MAX_AGGS"] - len(aggs)))
    body = b"".join(asm.INSN.pack("<", op=asm.OPS[m].value if isinstance(m, str) else m,
                                  a=a, b=b, imm=imm) for m, a, b, imm in insns)
    out = h + body
    return out[:head["truncate"]] if "truncate" in head else out


def text(head: dict, insns) -> str:
    """The same program as RPN text, operands by wire.h's operand column."""
    lines = [f"{k} {head[k]}" for k in ("major", "minor") if head.get(k)]
    lines += [f"agg @a{k} {KIND_WORDS[kind]}" for k, kind in enumerate(head.get("aggs", []))]
    targets = {b for m, a, b, imm in insns
               if isinstance(m, str) and asm.OPS[m].more[0] == "label"}
    for i, (m, a, b, imm) in enumerate(insns):
        label = f"L{i}: " if i in targets else ""
        if not isinstance(m, str):
            if m not in BY_VALUE:
                lines.append(f"{label}op{m:02x}")
                continue
            m = BY_VALUE[m].meaning
        operands = {"": "", "imm": f" {imm}", "reg": f" %{REGS.get(a, f'r{a}')}",
                    "n": f" {a}", "size": f" {a}", "label": f" L{b}", "local": f" {b}",
                    "global": f" {b}", "size,n": f" {b}, {a}",
                    "tls": f" {b}", "depth": f" {a}" if a else "", "word": f" {a}",
                    "agg,n": f" @a{b}, {a}" + "".join(
                        f", {w}" for w, bit in asm.AGG_FLAGS.items() if imm & bit)
                    }[asm.OPS[m].more[0]]
        lines.append(label + m + operands)
    lines += [f"L{b}:" for b in sorted(targets) if b >= len(insns)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def guest_reasons():
    exe = libfuzz.validator()
    progs = "".join(raw(h, i).hex() + "\n" for _, h, i, _, _ in TABLE)
    out = subprocess.run([str(exe)], input=progs, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == len(TABLE)
    return dict(zip((row[0] for row in TABLE), out))


def test_table_size():
    assert len(TABLE) >= 60
    assert len({row[0] for row in TABLE}) == len(TABLE)
    refused = sum(row[3] != "ok" for row in TABLE)
    print(f"validator table: {len(TABLE)} programs, {len(TABLE) - refused} accepted, "
          f"{refused} refused")
    assert refused >= 30 and len(TABLE) - refused >= 20


@pytest.mark.parametrize("name,head,insns,guest,host", TABLE, ids=[r[0] for r in TABLE])
def test_guest_and_host_reasons(guest_reasons, name, head, insns, guest, host):
    assert guest_reasons[name] == guest
    if host is None:
        return
    try:
        prog = asm.assemble(text(head, insns), ARCH, "t.rpn")
        said, image = "ok", prog.image("<")
    except asm.AsmError as e:
        said, image = str(e).split(": ", 1)[1], None
    assert said == host, text(head, insns)
    if guest != "ok":
        assert said != "ok", "the assembler let through what the guest refuses"
    if said == "ok":
        assert image == raw(head, insns)


def _flips():
    """Every example program's bytes with one bit flipped, each bit in turn."""
    for rpn in sorted((REPO / "bench" / "programs").glob("*.rpn")):
        if rpn.name.endswith(".i386.rpn"):
            continue
        img = asm.assemble(rpn.read_text(), ARCH, str(rpn)).image("<")
        for bit in range(8 * len(img)):
            b = bytearray(img)
            b[bit // 8] ^= 1 << (bit % 8)
            yield rpn.name, bytes(b)


def test_baddof_every_bit_of_every_example(tmp_path):
    """Each flipped program through the validator, and each it accepts
    through the `run` target (registers seeded from the bit's number)."""
    validator = libfuzz.validator()
    flips = list(_flips())
    out = subprocess.run([str(validator)], input="".join(p.hex() + "\n" for _, p in flips),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    accepted = [(name, p) for (name, p), why in zip(flips, out) if why == "ok"]
    inputs = []
    for k, (name, p) in enumerate(accepted):
        f = tmp_path / f"{k:05d}"
        f.write_bytes(k.to_bytes(8, "little") + b"\x01" + p)
        inputs.append(f)
    exe = libfuzz.build(["run"])["run"]
    proc = subprocess.run([str(exe), "-runs=1", *map(str, inputs)], capture_output=True,
                          text=True, errors="replace",
                          env={"ASAN_OPTIONS": "allow_user_segv_handler=1:detect_leaks=0"})
    print(f"baddof: {len(flips)} flipped programs, {len(flips) - len(accepted)} refused, "
          f"{len(accepted)} ran safely")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(flips) > 1000 and accepted and len(accepted) < len(flips)
