"""D scripts the host refuses, each with its exact error, and nothing armed.

Every bad script of BAD is compiled against the i386 image and must fail
with exactly its message — `FILE:LINE:COL: what`, then the source line and
a caret under the column — before anything boots: the CLI returns 2 with
open_guest replaced by a function that fails the test if called. Also:
--emit-rpn prints the programs without a guest, a probefunc comparison a
group's probes decide is no test at all (and a clause it makes false at a
probe does not run there), clauses on the same probes share one program
(this-> is shared by them) while other probes get their own, and several
printfs of one probe log in program order.
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
    ('fbt::thread_create:entry { printf("%s", args[0]); printf("%s", args[0]); '
     'trace(args[0]); }',
     "1:74: a program past the VM's limits: the printfs of one probe log 213 bytes, "
     "a LOG record holds 192"),
    ('fbt::ct_*:entry /probefunc == "nope"/ { @ = count(); }',
     "1:28: the predicate is false at every probe of this clause (probefunc and "
     "probename decide it here): it would never run"),
    ('fbt::ct_add:entry /!(probename == "entry")/ { @ = count(); }',
     "1:20: the predicate is false at every probe of this clause (probefunc and "
     "probename decide it here): it would never run"),
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
     '1:9: BEGIN and END run on the host: only printf, trace, exit, clear and trunc, '
     'of constants and globals'),
    ('fbt::fib:entry { n++; } END { printf("%d %d\\n", n, arg0); }',
     "1:52: 'arg0' in BEGIN or END: the host knows constants and the script's globals "
     "only"),
    ('fbt::fib:entry { n++; } END { printf("%s\\n", n); }',
     "1:46: BEGIN and END print strings only as constants, and numbers with %d, %u, "
     "%x ..."),
    ('fbt::thread_create:entry /args[0] == arg1/ { @ = count(); }',
     '1:35: a string compares with a string constant ("...") only'),
    ('fbt::thread_create:entry /args[0] == "' + "x" * 64 + '"/ { @ = count(); }',
     "1:38: a string constant of 64 bytes: the guest compares strings of up to 63"),
    ('fbt::thread_create:entry /args[0] < "b"/ { @ = count(); }',
     "1:27: a string has no value for '<'"),
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
    # ct_add's own group: its probefunc is ct_add, decided here: no test at all
    add = by_fn["ct_add"]
    assert [cl.index for cl in add.clauses] == [3]
    assert "jz" not in add.text and "probe\n" not in add.text
    # clause 3 is false at ct_root's probe, so it does not run there, and a
    # probe where no clause runs is not armed at all
    assert "ct_root" not in by_fn and "ct_root" not in c.spec
    assert {p.function for p in c.probes} == {"ct_mul", "ct_add"}


def test_a_predicate_the_probes_cannot_decide_is_tested_at_run_time(built):
    """probefunc or'ed with an argument test: kept at both probes, the
    comparison made in the guest on the probe id where the group's probes
    differ, and the printfs of one probe logged in program order."""
    built("i386")
    c = runner.compile_text(
        'fbt::ct_add:entry, fbt::ct_mul:entry /probefunc == "ct_mul" || arg0 > 1/ '
        '{ printf("a"); trace(arg0); }', arches.get("i386"), "int3")
    (g,) = c.groups
    assert {p.function for p in g.probes} == {"ct_add", "ct_mul"}
    assert "probe\npush" in g.text
    assert [p.fmt for p in g.printfs] == ["a", "%d\n"]
    assert g.text.index("push 0\nlog a, 1") < g.text.index("push 1\nlog a, 1")


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
               reply=NS(results=[]), after=None)
        status = dtrace._print_results(args, a, c, t)
        out = capsys.readouterr().out
        assert status == want
        assert ("PROBLEM: 3 self-> stores found no room" in out) == bool(lost), out


def test_end_evaluates_globals_as_the_vm_does(built):
    """END's expressions over the globals read back, on the VM's 64-bit
    word: it is signed unless a cast says not, / is C's (signed when both
    sides are: -4 / 2 is -2, not (2^64 - 4) / 2), a cast to 32 bits cuts
    and wraps; BEGIN sees every global 0."""
    from bench.lang.hosted import HostValues
    from bench.lang import output
    built("i386")
    c = runner.compile_text(
        "fbt::fib:entry { a += 1; b = 7; } END { printf(\"%d %d %u %d %x %d %u\\n\", "
        "a - b, a * b, (unsigned)(a - b), (a - b) / 2 > 0, (uint8_t)(a * 100), "
        "(a - b) / 2, (unsigned)(a - b) / 2); }",
        arches.get("i386"), "int3")
    assert c.host_globals == {"a": 0, "b": 1}
    got = output.apply_end({}, c.end, HostValues(c.scope, {0: 3, 1: 7}, 8))
    assert got == [f"-4 21 {2**32 - 4} 0 {300 & 255:x} -2 {(2**32 - 4) // 2}\n"]
    zero = output.apply_end({}, c.end, HostValues(c.scope, {}, 8))
    assert zero == ["0 0 0 0 0 0 0\n"]


def test_exit_stops_waiting_at_once():
    """Workload polls `wait TICKS` and exit()'s global: it stops at the
    first poll that finds the global set and keeps exit()'s n; a script
    without exit() runs the workload with one `run`."""
    from types import SimpleNamespace as NS
    from bench.lang.model import EXIT_GLOBAL, EXIT_SET

    class Guest:
        def __init__(self, flags):
            self.flags, self.sent = list(flags), []

        def cmd(self, line, timeout=None):
            self.sent.append(line)
            if line.startswith("wait"):
                return NS(ok=True, message="calltree still running")
            return NS(ok=True, message="calltree = 1")

        def must(self, line, timeout=None):
            self.sent.append(line)
            if line.startswith("start"):
                return NS(ok=True, message="calltree started")
            assert line == f"program global {EXIT_GLOBAL}"
            return NS(ok=True, message=str(self.flags.pop(0)))

    g = Guest([0, 0, EXIT_SET | 3])
    work = runner.Workload(NS(uses_exit=True))
    work(g, "calltree iters=9")
    assert g.sent[0] == "start calltree iters=9"
    assert work.status == 3 and not g.flags
    assert [x for x in g.sent if x.startswith("wait")] == [
        f"wait {runner.EXIT_POLL_TICKS}"] * 3
    plain = Guest([])
    work = runner.Workload(NS(uses_exit=False))
    work(plain, "fib n=3")
    assert plain.sent == ["run fib n=3"] and work.status is None


@pytest.mark.parametrize("name", ["i386", "sparc64"])
def test_a_string_compare_is_word_by_word_in_the_guests_order(built, name):
    """`args[0] == "calltree"`: strword 0, 1, ... of the argument against the
    constant's 8-byte words (the VM's, on every arch) with its NUL, in the
    guest's byte order: two words on each ("calltree", the NUL alone),
    little-endian on i386, big-endian on sparc64."""
    built(name)
    a = arches.get(name)
    c = runner.compile_text('fbt::thread_create:entry /args[0] == "calltree"/ '
                            "{ @ = count(); }", a, a.default_mechanism)
    text = c.groups[0].text
    data = b"calltree\0"
    data += b"\0" * (-len(data) % 8)
    words = [int.from_bytes(data[k:k + 8], "little" if a.byte_order == "<" else "big")
             for k in range(0, len(data), 8)]
    assert len(words) == 2
    for k, w in enumerate(words):
        assert f"strword {k}\npush {w}\neq\n" in text, text
    assert f"strword {len(words)}" not in text
