"""D scripts the host refuses, each with its exact error, and nothing armed.

Every bad script of BAD is compiled against the i386 image and must fail
with exactly its message — `FILE:LINE:COL: what`, then the source line and
a caret under the column — before anything boots: the CLI returns 2 with
open_guest replaced by a function that fails the test if called. Also:
--emit-rpn prints the programs without a guest, a probefunc comparison a
group's probes decide is a constant, and clauses on the same probes share
one program (this-> is shared by them) while other probes get their own.
"""

import pytest

from bench import arches, cli
from bench.paths import PROGRAMS
from bench.program import asm
from bench.lang import runner
from bench.lang.errors import LangError
from bench.trace.image import load_image

BAD = [
    ('fbt::fib:entry { @[arg99] = count(); }',
     "1:20: unknown variable 'arg99': the guest reads arg0..arg15"),
    ('fbt::fib:entry { @ = count(); x = y; }',
     "1:35: unknown variable 'y'"),
    ('fbt::fib:entry { frob(1); }',
     "1:18: unknown function 'frob'; the actions are printf, trace, exit, clear, trunc"),
    ('fbt::fib:entry { @ = frobnicate(arg0); }',
     "1:22: 'frobnicate' is not an aggregating function; they are count, sum, min, max, avg, quantize, lquantize"),
    ('fbt::fib:entry { @ = count(args[3]); }',
     '1:22: count() takes 0 arguments, not 1'),
    ('fbt::fib:entry { @ = sum(args[1]); }',
     '1:31: args[1]: fib takes 1 argument'),
    ('fbt::fib:entry { @ = sum(retval); }',
     '1:26: retval in a clause of entry probes: only return probes have one'),
    ('fbt::fib:return { @ = sum(arg2); }',
     '1:27: arg2 in a clause of return probes: only entry probes have arguments'),
    ('fbt::ct_*:return { @ = sum(arg0); }',
     "1:28: arg0 of a return probe is its offset in the function: give the clause "
     "one function"),
    ('fbt::fibb:entry { @ = count(); }',
     "1:1: probe 'fbt::fibb:entry': no function 'fibb'; nearest: fib"),
    ('fbt::zz_*:entry { @ = count(); }',
     "1:1: probe 'fbt::zz_*:entry' matches no workload function (fbt:kernel:GLOB:... for the kernel's)"),
    ('fbt::fib:middle { @ = count(); }',
     "1:10: probe name 'middle': fbt has entry and return"),
    ('foo::fib:entry { @ = count(); }',
     "1:1: provider 'foo': the providers are fbt, insn, branch, profile (profile-N, tick-N), BEGIN and END"),
    ('fbt:mod:fib:entry { @ = count(); }',
     "1:5: module 'mod': the guest has one, `kernel` (or leave it empty)"),
    ('fbt::fib:entry { @[1,2,3,4,5] = count(); }',
     "1:28: a program past the VM's limits: 5 keys, at most 4"),
    ('fbt::fib:entry { @ = lquantize(arg0, 0, 1000, 1); }',
     "1:38: a program past the VM's limits: 1000 lquantize levels, at most 120"),
    ('fbt::fib:entry { @ = count(); } fbt::fib:return { @ = sum(1); }',
     '1:51: @ is count() with 0 keys at bad.d:1:18; here sum() with 0'),
    ('fbt::fib:entry { printf("%d %d", arg0); }',
     '1:18: the format wants 2 arguments, printf has 1'),
    ('fbt::fib:entry { printf("%s", arg0); }',
     '1:31: %s wants a string (a char * argument)'),
    ('fbt::fib:entry { printf("%d", 1); printf("%d", 2); }',
     '1:35: one printf or trace() per probe: the VM sends one LOG record per firing, and bad.d:1:18 has it'),
    ('fbt::fib:entry { @ = sum(self->nope); }',
     '1:26: self->nope is never assigned'),
    ('fbt::fib:entry { @ = count() }\nfbt::fib:entry /arg0 > / { @ = count(); }',
     "2:24: an expression is expected here, not '/'"),
    ('fbt::fib:entry { @ = count(); ',
     "1:31: the clause's body never ends: '}' is missing"),
    ('fbt::fib:entry { trunc(@, 3); }',
     "1:18: trunc() acts on the host's tables: use it in an END clause"),
    ('fbt::fib:entry { @[probefunc + 1] = count(); }',
     "1:20: probefunc has no value for '+'"),
    ('fbt::fib:entry /probefunc == arg0/ { @ = count(); }',
     '1:30: probefunc compares with a string constant'),
    ('BEGIN { @ = count(); }',
     '1:9: BEGIN and END run on the host: only printf, trace, exit, clear and trunc of constants'),
    ('fbt::fib:entry { @ = count(); } END { trunc(@nope, 1); }',
     '1:45: no aggregation @nope'),
    ('fbt::fib:entry { arg0 = 1; }',
     '1:18: arg0 cannot be assigned'),
    ('fbt::ct_add:entry { @[args[0]] = count(); @s = sum(args[7]); }',
     '1:57: args[7]: ct_add takes 3 arguments'),
    ('fbt::fib:entry { @ = quantize("x"); }',
     '1:31: quantize() of a string'),
    ('fbt::fib:entry { @ = count(); } /* never ends',
     '1:33: a comment that never ends'),
    ('fbt::fib:entry { @ = count(1); }',
     '1:22: count() takes 0 arguments, not 1'),
    ('fbt::fib:entry { @[stack(0)] = count(); }',
     '1:26: stack(0): a stack holds 1 to 32 frames (WIRE_STACK_MAX_DEPTH)'),
    ('fbt::fib:entry { @[stack(33)] = count(); }',
     '1:26: stack(33): a stack holds 1 to 32 frames (WIRE_STACK_MAX_DEPTH)'),
    ('fbt::fib:entry /stack() != 0/ { @ = count(); }',
     '1:17: stack() is an aggregation key only: @[stack()] = count()'),
    ('fbt::fib:entry { trace(stack()); }',
     '1:24: stack() is an aggregation key only: @[stack()] = count()'),
    ('fbt::fib:entry { @[ustack()] = count(); }',
     "1:20: ustack(): the guest has no user stacks; stack() walks the kernel's"),
    ('tick-3ms { @ = count(); }',
     "1:1: probe 'tick-3ms': 3ms is 333.333 Hz; the guest's sampling timer takes a "
     "whole rate of 1 to 20000 Hz"),
    ('profile-997 { @ = count(); } tick-1s { @ = count(); }',
     '1:30: one sampling probe (profile-N or tick-N) per script: the guest has one '
     'sampling timer'),
    ('profile-997 { @[arg2] = count(); }',
     '1:17: arg2 in a clause of profile-997: a sampling probe has arg0 (the '
     'interrupted PC) and arg1 (the user PC, 0)'),
    ('profile-997, fbt::fib:entry { @ = count(); }',
     '1:1: a profile/tick probe runs in the timer interrupt, not at a site: give it '
     'a clause of its own'),
    ("fbt::fib:entry { " + "@a = sum(arg0 * 2 + 1); " * 60 + "}",
     "1:1: a program past the VM's limits: more than 256 instructions"),
]


@pytest.mark.parametrize("script, error", BAD, ids=[e for _, e in BAD])
def test_a_bad_script_gets_its_exact_error(built, script, error):
    built("i386")
    with pytest.raises(LangError) as e:
        runner.compile_text(script, arches.get("i386"), "int3", "bad.d")
    text = str(e.value)
    first, src, caret = text.split("\n")
    assert first == f"bad.d:{error}", text
    line, col = (int(x) for x in error.split(":")[:2])
    assert src.strip() == script.splitlines()[line - 1].strip()
    assert caret.index("^") - 4 == col - 1


def test_there_are_twenty_bad_scripts_at_least():
    assert len(BAD) >= 20


def test_nothing_is_armed_when_a_script_is_refused(built, monkeypatch, capsys):
    built("i386")
    booted = []
    monkeypatch.setattr("bench.commands.run.open_guest",
                        lambda *a, **k: booted.append(a) or pytest.fail("booted"))
    for script, error in BAD[:5]:
        assert cli.main(["trace", "--arch", "i386", "-n", script]) == 2
        assert f"-n:{error}" in capsys.readouterr().err
    assert not booted


def test_emit_rpn_needs_no_guest(built, monkeypatch, capsys):
    built("i386")
    monkeypatch.setattr("bench.commands.run.open_guest",
                        lambda *a, **k: pytest.fail("booted"))
    assert cli.main(["trace", "--arch", "i386", "--emit-rpn", "-n",
                     "fbt::fib:entry { @[arg0] = count(); }"]) == 0
    out = capsys.readouterr().out
    assert "arg 0\ncount @_, 1\n" in out and "# slot 0" in out


def test_groups_and_host_decided_comparisons(built):
    built("i386")
    c = runner.compile_text(
        'fbt::ct_mul:entry { this->x = 1; } fbt::ct_mul:entry { @a = sum(this->x); }'
        ' fbt::ct_*:entry /probefunc == "ct_mul"/ { @b = count(); }'
        ' fbt::ct_add:entry /probefunc == "ct_add"/ { @c = count(); }',
        arches.get("i386"), "int3")
    by_fn = {p.function: g for g in c.groups for p in g.probes}
    assert [cl.index for cl in by_fn["ct_mul"].clauses] == [0, 1, 2]
    assert "lset 0" in by_fn["ct_mul"].text and "lget 0" in by_fn["ct_mul"].text
    # ct_add's own group: its probefunc is ct_add, decided here (push 1)
    add = by_fn["ct_add"]
    assert "push 1\njz" in add.text and "probe\npush" not in add.text
    # a glob group holding several functions compares probe ids at run time
    glob = by_fn["ct_root"]
    assert "push 0\njz" in glob.text          # no ct_mul among them: false here


def test_a_sum_of_unsigned_values_is_marked_unsigned(built):
    built("i386")
    c = runner.compile_text("fbt::ct_mul:entry { @ = sum(args[2] + 0xf0000000); }"
                            " fbt::fib:entry { @q = quantize((int)arg0 - 5); }",
                            arches.get("i386"), "int3")
    texts = "".join(g.text for g in c.groups)
    assert "sum @_, 0, unsigned" in texts
    assert "quantize @q, 0\n" in texts        # signed: no flag


@pytest.mark.parametrize("name", ["count", "quantize", "dp_null"])
def test_an_rpn_example_rewritten_in_d_compiles_to_its_instructions(built, name):
    """Each example of bench/scripts/ named as one of bench/programs/ is that
    program in D: the same
    operations on the same operands, so the same tables (the D value of
    an unsigned argument carries the unsigned flag, which changes no
    table of non-negative values)."""
    built("i386")
    a = arches.get("i386")
    d = runner.compile_text((PROGRAMS.parent / "scripts" / f"{name}.d").read_text(),
                            a, "int3")
    rpn = asm.assemble((PROGRAMS / f"{name}.rpn").read_text(), a, name)
    ours = [(i.op, i.a, i.b) for i in d.groups[0].program.insns]
    theirs = [(i.op, i.a, i.b) for i in rpn.insns]
    assert ours == theirs
    assert [x.kind for x in d.groups[0].program.aggs] == [x.kind for x in rpn.aggs]


def test_lost_thread_local_stores_are_a_problem(built, capsys):
    """A capture whose AGGS frames count thread-local stores that found no
    room prints a PROBLEM and fails the run; none: no PROBLEM."""
    from types import SimpleNamespace as NS
    from bench.commands import dtrace
    built("i386")
    a = arches.get("i386")
    c = runner.compile_text("fbt::ct_mul:entry { self->x = 1; @ = count(); }", a, "int3")
    args = NS(quiet=True, json=None, folded=None, flamegraph=None)
    image = load_image(a.elf())
    for lost, want in ((3, 1), (0, 0)):
        cap = NS(events=[], aggs=[], agg_dropped={}, tls_dropped=lost, probe_counts={},
                 stacks={})
        t = NS(capture=cap, guest=NS(byte_order="<"),
               session=NS(probes=[], image=image, sample_report=""),
               reply=NS(results=[]))
        status = dtrace._print_results(args, a, c, t)
        out = capsys.readouterr().out
        assert status == want
        assert ("PROBLEM: 3 self-> stores found no room" in out) == bool(lost), out
