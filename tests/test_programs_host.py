"""Probe programs, host side with no guest (bench/program/): every kind of
bad program refused with file:line:col, the bytecode's layout, what the
compiler knows of aggregation keys, the formatter's placeholders and fault
tokens, and aggregations merged across CPUs and drawn as histograms."""

import re
import struct

import pytest

from bench import arches
from bench.paths import REPO
from bench.program import aggregate, asm, templates
from bench.program.asm import AsmError, assemble
from bench.wire.frames import WIRE

OPS = {e.meaning: e.value for e in WIRE.table("WIRE_RPN_OPS")}


@pytest.mark.parametrize("source, where, words", [
    ("frob 1\nabort", "1:1", "unknown instruction 'frob'"),
    ("reg xyz\nabort", "1:5", "no register 'xyz' on i386"),
    ("push\nabort", "1:1", "push takes imm, not 0 operands"),
    ("push 1, 2\nabort", "1:1", "push takes imm, not 2 operands"),
    ("push 0x1_0\nabort", "1:6", "is not an operand"),
    ("add\nabort", "1:1", "add: needs 2 on the stack, which holds 0"),
    ("\n".join(["push 1"] * 33) + "\nabort", "33:1", "more than 32"),
    ("back: push 1\ndrop\njmp back\nabort", "3:5", "jumps only go forward"),
    ("jmp nowhere\nabort", "1:5", "no label 'nowhere'"),
    ("jmp end\nabort\nend:", "1:5", "names no instruction"),
    ("lget 16\nabort", "1:6", "local 16 is outside 0..15"),
    ("gset 64\nabort", "1:6", "global 64 is outside 0..63"),
    ("push 0\nload 8\nabort", "2:6", "size 8"),
    ("push 1\npush 2\npush 3\npush 4\npush 5\ncount @c, 5\nabort", "6:11", "at most 4"),
    ("arg 99\ndrop\nabort", "1:5", "argument 99: at most 16 are read"),
    ("tget 16\ndrop\nabort", "1:6", "thread-local 16 is outside 0..15"),
    ("push 1\nsum @s, 0, signed\nabort", "2:12", "'signed' is no aggregation flag"),
    ("push 1\nsum @x, 0\npush 1\ncount @x, 0\nabort", "4:7", "@x is a sum aggregation"),
    ("push 0\njz a\npush 5\na: abort", "3:1", "where this path joins another"),
    ("push 1", "1:1", "can run past its last instruction"),
    ("", "1:1", "an empty program"),
    ("\n".join(["push 1\ndrop"] * 128) + "\nabort", "257:1", "more than 256 instructions"),
    ("push 18446744073709551616\nabort", "1:6", "does not fit a 64-bit word"),
    ("push 1\npushhi 4294967296\nabort", "2:8", "does not fit 32 bits"),
    ("major 70000\nabort", "1:7", "outside 0..65535"),
    ("agg @a bogus\nabort", "1:", "no aggregation kind 'bogus'"),
    ("push 1\ncount @a, 1\npush 1\npush 2\ncount @a, 2\nabort", "5:", "used with 1 and 2 keys"),
])
def test_a_bad_program_is_refused_with_its_place(source, where, words):
    with pytest.raises(AsmError) as e:
        assemble(source, "i386", "bad.rpn")
    msg = str(e.value)
    assert msg.startswith(f"bad.rpn:{where}"), msg
    assert words in msg, msg


def test_arch_rules_differ():
    assemble("arg 6\nabort", "sparc64")                  # a stack word on both
    assemble("arg 15\nabort", "i386")
    # The guest reads at most WIRE_PROGRAM_MAX_ARG arguments on every arch:
    # the assembler refuses the rest in the guest's words.
    for arch in ("sparc64", "i386"):
        with pytest.raises(AsmError, match="argument 16: at most 16 are read"):
            assemble("arg 16\nabort", arch)
    p = assemble("arg 0\nsum @s, 0, unsigned\nabort", "i386")
    assert p.insns[1].imm == 1 and p.insns[1].a == 0
    # The VM's word is 64 bits on both: a wide constant is push + pushhi,
    # log q is a whole word, and arg64 takes a second argument word on i386
    for arch in ("sparc64", "i386"):
        p = assemble("push 0x123456789\nlog q, 1\nexit", arch)
        assert [(i.op, i.imm) for i in p.insns[:2]] == [("push", 1), ("pushhi", 0x23456789)]
        p = assemble("push 0xffffffff\nlog q, 1\nexit", arch)  # not -1: 2^32 - 1
        assert [(i.op, i.imm) for i in p.insns[:2]] == [("push", 0), ("pushhi", -1)]
    assemble("arg64 15\ndrop\nexit", "sparc64")
    with pytest.raises(AsmError, match="argument 16: at most 16 are read"):
        assemble("arg64 15\ndrop\nexit", "i386")
    assemble("arg64 14\ndrop\nexit", "i386")
    with pytest.raises(AsmError, match="size q: 1, 2, 4 bytes"):
        assemble("push 0\nload q\nexit", "i386")           # a load: the arch's widest
    assert assemble("reg %sp\nreg fp\nlog a, 2\nexit", "sparc64").insns[2].b == 8
    with pytest.raises(AsmError, match="no register 'o0' on i386"):
        assemble("reg o0\nabort", "i386")


def test_the_image_is_the_header_then_eight_byte_instructions():
    p = assemble("major 7\nminor 9\n  probe\n  count @c, 1\n  push -5\n  jz end\n"
                 "  abort\nend: exit", "i386", "x.rpn")
    img = p.image(">")
    ninsns, major, minor, naggs = struct.unpack(">HHHB", img[:7])
    assert (ninsns, major, minor, naggs) == (6, 7, 9, 1)
    assert img[8] == 1                                    # agg_kind[0]: count
    assert len(img) == 16 + 6 * 8
    op, a, b, imm = struct.unpack(">BBHi", img[16 + 2 * 8:16 + 3 * 8])
    assert (op, imm) == (OPS["push"], -5)
    op, a, b, imm = struct.unpack(">BBHi", img[16 + 3 * 8:16 + 4 * 8])
    assert (op, b) == (OPS["jz"], 5)                      # the label's index
    assert p.image("<")[:2] == (6).to_bytes(2, "little")


def test_the_compiler_knows_what_keys_are():
    p = assemble("arg 0\nthread\nprobe\nsum @s, 2\ncpu\ncount @c, 1\n"
                 "push 1\nreg eax\nmax @m, 1\nabort", "i386")
    assert [(a.name, a.kind, a.keys) for a in p.aggs] == [
        ("s", "sum", ("probe", "thread")), ("c", "count", ("cpu",)),
        ("m", "max", (("reg", 0),))]
    p = assemble("probe\ndup\njz a\ndrop\nthread\na: count @c, 1\nabort", "i386")
    assert p.aggs[0].keys == ("value",), "two paths, two meanings: just a value"


# ---- templates ----

def _prefix(token, length, order="<"):
    return bytes([token]) + length.to_bytes(2, "little" if order == "<" else "big")


def test_every_placeholder():
    data = (struct.pack("<IhB", 0x1234, -7, 200) + b"AB\x01" + b"xx"
            + b"hello\0" + _prefix(1, 8) + b"hi\0\0\0\0\0\0"
            + _prefix(0, 8) + struct.pack("<II", 5, 6) + b"tail")
    out = templates.render("%4x %2d %u %2c%c%2i %s '%ps' %r(<%4u>) %z", data, "<", 4)
    assert out.startswith("00001234 -7 200 AB. hello 'hi' <5><6> \n  +00000000 "), out
    assert "*tail*" in out
    assert templates.render("%wx", struct.pack(">Q", 0xabc), ">", 8) == "0000000000000abc"
    assert templates.render("100%% %( %)", b"", "<", 4) == "100% ( )"


def test_a_fault_token_prints_the_address():
    data = _prefix(0xff, 4) + struct.pack("<I", 0x10) + _prefix(0, 2) + b"\x01\x02"
    assert templates.render("a=%p16x b=%p2x", data, "<", 4) == \
        "a=<fault at 0x10> b=0201"
    data = _prefix(0xff, 8, ">") + struct.pack(">Q", 0xfff0000000)
    assert templates.render("%ps", data, ">", 8) == "<fault at 0xfff0000000>"


def test_a_record_without_template_or_that_does_not_fit_is_dumped():
    f = templates.Formatter(templates.parse(
        'major=3\nminor=1,\ndesc="one",\nfmt="%4x"\n', "t.tmpl"))
    assert f.lines(3, 1, struct.pack("<I", 9), "<", 4) == ["one: 00000009"]
    lines = f.lines(3, 2, b"abc", "<", 4)
    assert lines[0] == "log major 3 minor 2, 3 bytes" and "*abc*" in lines[1]
    lines = f.lines(3, 1, b"ab", "<", 4)
    assert "does not fit" in lines[0] and "*ab*" in lines[1]


@pytest.mark.parametrize("text, words", [
    ('minor=1\n', "minor= before major="),
    ('major=1\nfmt="x"\n', "fmt= before any minor="),
    ('major=1\nminor=1,\nfmt="%4x"\n', "has no desc="),
    ('major=1\nminor=1,\ndesc="d",\nfmt="%4f"\n', "unknown placeholder"),
    ('major=1\nminor=1,\ndesc=d\n', "expected a C string"),
    ('major=x\n', "is not a number"),
    ('colour=red\n', "expected major=, minor=, desc= or fmt="),
])
def test_a_bad_template_is_refused_with_its_line(text, words):
    with pytest.raises(templates.TemplateError, match=words):
        templates.parse(text, "t.tmpl")


def test_a_template_directory_maps_majors_once(tmp_path):
    (tmp_path / "a.tmpl").write_text('major=5\nminor=1,\ndesc="a"\n')
    (tmp_path / "b.tmpl").write_text('major=6\nminor=1,\ndesc="b"\n')
    assert set(templates.Formatter.load(tmp_path).by_code) == {(5, 1), (6, 1)}
    (tmp_path / "c.tmpl").write_text('major=5\nminor=2,\ndesc="c"\n')
    with pytest.raises(templates.TemplateError, match="major=5 is .*a.tmpl's too"):
        templates.Formatter.load(tmp_path)


# ---- aggregations ----

def _entry(cpu, kind, keys, count, total=0, lo=0, hi=0, buckets=None):
    return {"cpu": cpu, "program": 0, "agg": 0, "kind": kind, "nkeys": len(keys),
            "key": list(keys) + [0] * (2 - len(keys)), "count": count, "sum": total,
            "min": lo, "max": hi, "buckets": buckets or {}}


def test_cpus_merge_by_key():
    tables = aggregate.merge([_entry(0, 1, [5], 10), _entry(1, 1, [5], 7),
                              _entry(1, 1, [6], 1)])
    rows = tables[(0, 0)].rows
    assert {k: r.count for k, r in rows.items()} == {(5,): 17, (6,): 1}
    tables = aggregate.merge([_entry(0, 3, [], 2, 0, -4, 9), _entry(1, 3, [], 1, 0, -9, 3)])
    r = tables[(0, 0)].rows[()]
    assert (r.min, r.max, r.value("min")) == (-9, 9, -9)


def test_quantize_buckets_and_histogram():
    assert [aggregate.bucket_of(v) for v in (0, 1, 2, 3, 4, 7, 8, -1, -2, -3)] == \
        [0, 1, 2, 2, 3, 3, 4, 65, 66, 66]
    assert [aggregate.bucket_low(i) for i in (0, 1, 2, 3, 65, 66)] == [0, 1, 2, 4, -1, -2]
    hist = aggregate.histogram({1: 2, 3: 6})
    assert hist[1].split()[0] == "0" and hist[1].endswith(" 0")
    assert hist[2].split("|")[1].count("@") == 10 and hist[2].endswith(" 2")
    assert hist[3].split()[0] == "2" and hist[3].endswith(" 0")
    assert hist[4].split("|")[1].count("@") == 30 and hist[4].endswith(" 6")
    assert hist[5].split()[0] == "8"


def test_tables_print_keys_as_what_they_are():
    prog = assemble("probe\ncount @calls, 1\nabort", "i386", "count.rpn")
    lines = aggregate.lines(aggregate.merge([_entry(0, 1, [3], 6000), _entry(1, 1, [4], 2000)]),
                            {0: prog}, {3: "ct_add", 4: "ct_mul"}, 4)
    assert lines[0] == "@calls (count, by probe)"
    assert lines[1].split() == ["ct_mul", "2000"] and lines[2].split() == ["ct_add", "6000"]
    # An lquantize prints its buckets by the numbers the program computed.
    prog = assemble("push 3\nprobe\nlquantize @gap, 1\nabort", "i386", "gap.rpn")
    lines = aggregate.lines(aggregate.merge([_entry(0, 7, [3], 2, buckets={3: 2}),
                                             _entry(1, 7, [3], 2, buckets={3: 1, 0: 1})]),
                            {0: prog}, {3: "ct_add"}, 4)
    assert lines[0] == "@gap (lquantize, by probe)" and lines[1].split() == ["ct_add"]
    assert lines[3].split() == ["0", "|" + "@" * 10, "1"]
    assert lines[4].split() == ["3", "|" + "@" * 30, "3"]
    lines = aggregate.lines({}, {}, {}, 4, dropped=3)
    assert lines[-1].startswith("PROBLEM: 3 aggregation entries found no room")


def test_docs_document_every_instruction_and_register():
    """docs/programs.md is the language's reference: every mnemonic of
    wire.h's table and every register name of each arch (a numbered run
    like g0-g7 names its eight)."""
    section = (REPO / "docs" / "programs.md").read_text()
    words = set(re.findall(r"[a-z0-9]+", section))
    for first, last in re.findall(r"\b([a-z]+)0-\1(\d)\b", section):
        words |= {f"{first}{k}" for k in range(int(last) + 1)}
    missing = [op for op in asm.OPS if op not in words]
    for name in arches.available():
        missing += [f"{name}: {r}" for r in asm._registers(arches.get(name))
                    if r not in words]
    assert not missing, f"docs/programs.md does not name {missing}"
