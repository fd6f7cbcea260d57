"""The IA-32 probe emulator (tracer/arch/i386/emulate.c), compiled for the
host, against python3-unicorn (bench/check/fuzz_i386.py): decode accepts
exactly the emulated forms and refuses the rest with a reason; for every
form, random states give identical registers, EIP, EFLAGS and stack
accesses in both; and deliberately broken emulators are caught.

The size here (STATES per form; TRAPBENCH_FUZZ_STATES to change) is many
times what any broken emulator below needs to be caught; the matrix's
full group runs `python3 -m bench fuzz` at 10^6 states per form."""

import os
import re

import pytest

from bench import arches, cli
from bench.check import fuzz
from bench.check import fuzz_i386 as F
from bench.check.hostc import OUT, build
from bench.paths import REPO

STATES = int(os.environ.get("TRAPBENCH_FUZZ_STATES", "8000"))
FORMS = list(F.CLASSES)
# The relative CTIs have no stack word to draw and few paths (taken or
# not, rel8 or rel32): 1000 states cover them and are well above what
# their broken variants below need.
FEW = {"JMP_REL": 1000, "JCC": 1000, "CALL_REL": 1000}
EMULATE = "tracer/arch/i386/emulate.c"
INSN = "tracer/arch/i386/insn.c"


@pytest.fixture(scope="module")
def runner():
    return F.runner()


@pytest.mark.parametrize("code,what", [
    (b"\x55\x89\xe5", "push %ebp; mov %esp,%ebp"), (b"\x55\x8b\xec", "push %ebp; mov %esp,%ebp"),
    (b"\x55\x89\xe6", "push %ebp"), (b"\x55", "push %ebp"), (b"\x5d", "pop %ebp"),
    (b"\xc9", "leave"), (b"\xc3", "ret"), (b"\xc2\x08\x00", "ret $imm16"),
    (b"\xc8\x10\x00\x00", "enter $imm16, $0"), (b"\x90", "nop"),
    (b"\xeb\xfe", "jmp rel"), (b"\xe9\x00\x00\x00\x80", "jmp rel"),
    (b"\x75\x10", "jcc rel"), (b"\x0f\x8e\x10\x00\x00\x00", "jcc rel"),
    (b"\xe8\xfb\xff\xff\xff", "call rel32"),
    (b"\xff\xd0", "call *r/m32"), (b"\xff\x14\x24", "call *r/m32"),
    (b"\xff\x14\x8d\x00\x05\x16\x00", "call *r/m32"), (b"\xff\x53\x08", "call *r/m32"),
    (b"\xff\xe0", "jmp *r/m32"), (b"\xff\x24\x8d\x80\x04\x16\x00", "jmp *r/m32"),
    (b"\x3e\xff\xe0", "jmp *r/m32"), (b"\x2e\xff\x15\x00\x10\x00\x00", "call *r/m32"),
])
def test_decode_accepts_the_emulated_forms(runner, code, what):
    out = F.decode(runner, code)
    assert out.startswith("kind ") and out[5:].startswith(what), out


@pytest.mark.parametrize("code,reason", [
    (b"\xcc", "already holds int3"), (b"\xf0\x0f\x0b", "LOCK prefix"),
    (b"\x89\xe5", "not one of the emulated forms"),
    (b"\xc8\x10\x00\x01", "nesting level above 0"),
    (b"\xc2\x00\x80", "32 KiB or more"),
    (b"\xe2\xfe", "not one of the emulated forms"),             # loop
    (b"\xe8\x00\x00\x00", "cut off"), (b"\x0f\x84\x00", "cut off"),
    (b"\xc2\x08", "cut off"), (b"", "no bytes"),
    (b"\x64\xff\x15\x00\x10\x00\x00", "fs/gs segment override"),
    (b"\x65\xff\xe0", "fs/gs segment override"),
    (b"\x66\xff\xd0", "operand- or address-size prefix"),
    (b"\x67\xff\x27", "operand- or address-size prefix"),
    (b"\xff\x30", "not one of the emulated forms"),           # push r/m32
    (b"\xff\x1d\x00\x10\x00\x00", "not one of the emulated forms"),   # far call
    (b"\x66\x89\xc8", "not one of the emulated forms"),
    (b"\xff\x14", "cut off"), (b"\xff", "cut off"),
])
def test_decode_refuses_with_a_reason(runner, code, reason):
    out = F.decode(runner, code)
    assert out.startswith("refused ") and reason in out, out


@pytest.mark.parametrize("form", FORMS)
def test_emulation_matches_unicorn_on_random_states(runner, form):
    n = min(STATES, FEW.get(form, STATES)) if "TRAPBENCH_FUZZ_STATES" not in os.environ \
        else STATES
    res = fuzz.fuzz_class(F, runner, form, n, 1000 * FORMS.index(form))
    print(f"\n{res.line()}")
    assert not res.mismatches, (f"{len(res.mismatches)}+ mismatches in {res.compared} "
                                "states:\n" + "\n".join(res.mismatches))
    assert res.compared >= n


# (form, source, text, broken text): each must be caught by its form's states.
MUTANTS = [(form, EMULATE, old, new) for form, old, new in [
    ("LEAVE", "r->esp = r->ebp + 4;", "r->esp = r->ebp + 8;"),
    ("PUSH_EBP", "esp -= 4;", "esp -= 2;"),
    ("PUSH_EBP_MOV", "r->ebp = esp;", "r->ebp = esp + 4;"),
    ("RET_IMM", "r->esp = esp + 4 + s->imm16;", "r->esp = esp + 4;"),
    ("ENTER", "esp -= s->imm16;", "esp -= s->imm16 + 4;"),
    ("POP_EBP", "r->ebp = word;\n\t\tr->esp = esp + 4;", "r->ebp = word ^ 1;\n\t\tr->esp = esp + 4;"),
    ("JCC", "default: t = zf || sf != of; break;", "default: t = zf && sf != of; break;"),
    ("CALL_REL", "esp - 4, r->eip + s->len)", "esp - 4, r->eip)"),
    # An indirect call that pushes site + 2 (right only for `call *%reg`).
    ("CALL_IND", "back = r->eip + s->len;", "back = r->eip + 2;"),
    # An operand computed with the ESP after the push (`call *4(%esp)`).
    ("CALL_IND", "esp, r->ebp, r->esi, r->edi };", "esp - 4, r->ebp, r->esi, r->edi };"),
]] + [
    # The SIB's scale ignored: a switch's jmp *table(,%eax,4) reads table[eax/4].
    ("JMP_IND", INSN, "a += regs[o->index] << o->scale;", "a += regs[o->index];"),
]


@pytest.mark.parametrize("form,source,old,new", MUTANTS,
                         ids=[f"{m[0]}-{i}" for i, m in enumerate(MUTANTS)])
def test_a_broken_emulator_is_caught(form, source, old, new):
    src = (REPO / source).read_text()
    assert src.count(old) == 1, f"mutation anchor {old!r} not unique"
    tag = f"{form}_{MUTANTS.index((form, source, old, new))}"
    mutant = OUT / f"mutant_{tag}_{source.rsplit('/', 1)[1]}"
    OUT.mkdir(parents=True, exist_ok=True)
    mutant.write_text(re.sub(re.escape(old), new, src))
    sources = [str(mutant) if s == source else s for s in F.SOURCES]
    exe = build(f"i386_emulate_mutant_{tag}", sources, F.INCLUDES)
    bad, stats = F.chunk((exe, form, 7, 2000))
    assert bad, f"the {form} mutant ({old} -> {new}) went unnoticed"
    print(f"\n{form}: caught within {stats['compared']} states, first: {bad[0]}")


def test_the_fuzz_command_reports_every_form(capsys):
    assert cli.main(["fuzz", "--arch", "i386", "--states", "800", "--jobs", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [l.split(":")[0] for l in out[1:-1]] == FORMS, out
    assert out[-1] == f"fuzz i386: {800 * len(FORMS)} states in {len(FORMS)} classes, " \
        "0 mismatches", out[-1]
    assert cli.main(["fuzz", "--arch", "i386", "--class", "BOGUS"]) == 2
    assert arches.get("i386").fuzzer == F.__name__
