"""The libFuzzer targets over the guest's own C (tests/fuzz/README.md):
every crash input kept in tests/fuzz/regressions/ replays clean; each
target runs a short campaign (FUZZ_SECONDS each, default 1; `make fuzz`
and the matrix's full group run them long) and finds nothing; and guests
broken on purpose are caught — a validator that lets a program fall off
its end (the walker in `validate`, ASan's poisoned tail in `run`), one
that lets a thread-local index past WIRE_PROGRAM_TLS (the walker's
operand bounds: in program_tls.c's table it would land, unseen by ASan, in
the next thread's words), one that lets `strword` past
WIRE_PROGRAM_STRING_BYTES (its word would be read past the interpreter's
string buffer) and a
`probe enable` that keeps what it armed before a refusal (`command`, on
its kept regression input) and a sum aggregation added to as a signed
64-bit word, past INT64_MAX (`run`, on its kept input: UBSan's signed
overflow)."""

import os

import pytest

from bench.check import libfuzz
from bench.program import asm

SECONDS = int(os.environ.get("FUZZ_SECONDS", "1"))


@pytest.fixture(scope="module")
def exes():
    return libfuzz.build()


def _kept():
    return [(n, p) for n in libfuzz.TARGETS for p in libfuzz.regressions(n)]


@pytest.mark.parametrize("target,path", _kept(), ids=lambda v: getattr(v, "name", v))
def test_regression_replays_clean(exes, target, path):
    [(_, ok, tail)] = libfuzz.replay(target, [path], exes[target])
    assert ok, tail


def test_regressions_kept():
    assert libfuzz.regressions("command"), "the enable-partial input is gone"
    assert any(p.name == "sum-overflow" for p in libfuzz.regressions("run")), \
        "the sum-overflow input is gone"


@pytest.mark.parametrize("target", list(libfuzz.TARGETS))
def test_short_campaign_finds_nothing(exes, target):
    c = libfuzz.run(target, seconds=SECONDS, exe=exes[target])
    assert not c.crashes and c.returncode == 0, c.tail
    assert c.execs > 0 and c.cov > 0


NO_END_CHECK = ("if (insn[last].op != WIRE_RPN_EXIT && insn[last].op != WIRE_RPN_ABORT)",
                "if (0)")


@pytest.mark.parametrize("target", ["validate", "run"])
def test_validator_without_end_check_is_caught(target):
    exe = libfuzz.build_broken(target, "tracer/core/program_check.c", *NO_END_CHECK)
    c = libfuzz.run(target, seconds=20, exe=exe)
    assert c.crashes, f"{target} did not catch a program falling off its end\n{c.tail}"


def test_partial_enable_is_caught():
    exe = libfuzz.build_broken(
        "command", "tracer/core/commands_probe.c",
        "while (i--)\n", "while (0 && i--)\n")
    [(_, ok, tail)] = libfuzz.replay("command", libfuzz.regressions("command"), exe)
    assert not ok and "refused line changed" in tail


SIGNED_SUM = ("e->sum = (int64_t)((uint64_t)e->sum + (uint64_t)v);", "e->sum += v;")


def test_signed_sum_overflow_is_caught():
    """regressions/run/sum-overflow sums a word past INT64_MAX: the fixed
    aggregate.c wraps it (the replay above passes), the old signed += is
    caught on the same input."""
    [kept] = [p for p in libfuzz.regressions("run") if p.name == "sum-overflow"]
    exe = libfuzz.build_broken("run", "tracer/core/aggregate.c", *SIGNED_SUM)
    [(_, ok, tail)] = libfuzz.replay("run", [kept], exe)
    assert not ok and "signed integer overflow" in tail, tail


NO_TLS_CHECK = ("if (i->b < WIRE_PROGRAM_TLS)", "if (i->b < 256)")


@pytest.mark.parametrize("target,prefix", [("validate", b""), ("run", bytes(8) + b"\x01")])
def test_validator_without_tls_bound_is_caught(tmp_path, target, prefix):
    """tget of word WIRE_PROGRAM_TLS, which the broken validator accepts:
    the walker (both targets) says the operand is out of bounds."""
    tls = asm.LIMITS["TLS"]
    prog = asm.assemble(f"tget {tls - 1}\nexit", "sparc64").image("<")
    other = asm.assemble(f"tget {tls - 2}\nexit", "sparc64").image("<")
    [at] = [k for k in range(len(prog)) if prog[k] != other[k]]     # b's byte
    bad = tmp_path / "tget-past"
    bad.write_bytes(prefix + prog[:at] + bytes([tls]) + prog[at + 1:])
    [(_, ok, tail)] = libfuzz.replay(target, [bad])
    assert ok, tail                     # the real validator refuses it
    exe = libfuzz.build_broken(target, "tracer/core/program_check.c", *NO_TLS_CHECK)
    [(_, ok, tail)] = libfuzz.replay(target, [bad], exe)
    assert not ok and "thread-local past WIRE_PROGRAM_TLS" in tail, tail


NO_STRING_WORD_CHECK = ("if (i->a < words)", "if (i->a < 256)")


@pytest.mark.parametrize("target,prefix", [("validate", b""), ("run", bytes(8) + b"\x01")])
def test_validator_without_string_word_bound_is_caught(tmp_path, target, prefix):
    """strword of the word past WIRE_PROGRAM_STRING_BYTES, which the broken
    validator accepts (the interpreter would read its string buffer past
    its end): the walker (both targets) says the operand is out of bounds."""
    words = asm.LIMITS["STRING_BYTES"] // 8                  # sparc64's, the host's
    prog = asm.assemble(f"push 0\nstrword {words - 1}\nexit", "sparc64").image("<")
    other = asm.assemble(f"push 0\nstrword {words - 2}\nexit", "sparc64").image("<")
    [at] = [k for k in range(len(prog)) if prog[k] != other[k]]     # a's byte
    bad = tmp_path / "strword-past"
    bad.write_bytes(prefix + prog[:at] + bytes([words]) + prog[at + 1:])
    [(_, ok, tail)] = libfuzz.replay(target, [bad])
    assert ok, tail                     # the real validator refuses it
    exe = libfuzz.build_broken(target, "tracer/core/program_check.c",
                               *NO_STRING_WORD_CHECK)
    [(_, ok, tail)] = libfuzz.replay(target, [bad], exe)
    assert not ok and "string word past WIRE_PROGRAM_STRING_BYTES" in tail, tail
