"""Probe programs through the guest's commands, on every arch: the bytes
come from the host's assembler (bench/program/asm.py), or, for what it
would refuse, are laid out from wire.h's structs — loaded line by line with
`program load`, checked, attached to
fib's entry probe, and judged by the replies and `probe list`. The
in-guest self-tests (area `programs`) test the validator, the interpreter
and the aggregations one by one; this test is about the command layer:
usage and refusal texts, counts, and a slot in use."""

import re

from bench import arches
from bench.program import asm
from bench.trace.image import load_image
from bench.wire import frames

WIRE = frames.WIRE
OPS = {e.meaning: e for e in WIRE.table("WIRE_RPN_OPS")}
KINDS = {e.meaning: e.value for e in WIRE.table("WIRE_AGG_KINDS")}
HEAD = WIRE.structs["wire_program"]
INSN = WIRE.structs["wire_rpn_insn"]


def insn(order, op, a=0, b=0, imm=0):
    """One instruction's bytes, for programs the host's assembler would
    refuse (the guest must refuse them too)."""
    return INSN.pack(order, op=OPS[op].value, a=a, b=b, imm=imm)


def raw(order, insns, aggs=()):
    kinds = [KINDS[k] for k in aggs] + [0] * (8 - len(aggs))
    return HEAD.pack(order, ninsns=len(insns), major=3, minor=4, naggs=len(aggs),
                     agg_kind=kinds) + b"".join(insns)


def compiled(text, arch, order):
    """A program as the host's assembler makes it (bench/program/asm.py)."""
    return asm.assemble("major 3\nminor 4\n" + text, arch).image(order)


def load(g, slot, blob, chunk=100):
    for off in range(0, len(blob), chunk):
        r = g.command(f"program load {slot} {off} {blob[off:off + chunk].hex()}")
        assert r.ok, r.message
    return g.command(f"program check {slot} {len(blob)}")


def counts(g, probe):
    line = next(l for l in g.command("probe list").text
                if l.startswith(f"probe {probe} "))
    return {k: v for k, v in re.findall(r"(\w+)=(\w+)", line)}


def test_programs_through_the_commands(guest, arch):
    g = guest
    g.wait_ready()
    order, word = g.byte_order, g.hello["word_bytes"]
    fib = load_image(arches.get(arch).elf()).functions["fib"].addr

    r = g.command("program")
    assert r.status_name == "BAD_ARGS" and "check SLOT BYTES" in r.message
    assert g.command("program load 0 0 0g").message == "'g' is not a hex digit"
    r = load(g, 1, raw(order, [insn(order, "push", imm=1), insn(order, "add"),
                               insn(order, "exit")]))
    assert r.status_name == "FAILED" and r.message == \
        "refused: instruction 1 (add): stack underflow: pops 2, 1 on the stack"
    assert g.command("program check 1 24").message == \
        "refused: byte 0 was not loaded since the slot's last check"

    counter = compiled("arg 0\ncount @args, 1\nexit", arch, order)
    r = load(g, 2, counter)
    assert r.ok and r.message == "slot 2: 3 instructions, 1 aggregations, major 3 minor 4"
    assert "program 2 insns=3 major=3 minor=4 aggs=count probes=none" in \
        g.command("program list").text
    assert g.command("probe program 1 2").message == "no probe 1"
    assert g.command(f"probe add 1 {fib:#x} entry 1").ok
    assert g.command("probe program 1 5").message == \
        "refused: slot 5 holds no program (program check)"
    assert g.command("probe program 1 2").message == "1 probes: program 2"
    assert g.command("probe enable 1").ok
    assert g.command("program clear 2").message == \
        "refused: slot 2 is run by probe 1, which can fire; disable it first"
    assert g.command("run fib n=10").message == "fib = 55"
    assert g.command("probe disable all").ok
    c = counts(g, 1)
    assert (c["program"], c["hits"], c["runs"], c["faults"]) == ("2", "177", "177", "0")
    assert g.command("trace aggregations").message == \
        "aggregations: 11 entries, 0 dropped"        # fib's arguments 0..10

    faults = compiled(f"push 0\nload {word}\ndrop\nexit", arch, order)
    assert load(g, 3, faults).ok
    assert g.command("probe program all 3").message == "1 probes: program 3"
    assert g.command("probe pass 1 3").message == "1 probes: pass 3"
    assert g.command("trace reset").ok
    assert g.command("probe enable 1").ok
    assert g.command("run fib n=10").message == "fib = 55"
    assert g.command("probe disable all").ok
    c = counts(g, 1)
    assert (c["hits"], c["runs"], c["faults"]) == ("177", "59", "59"), c

    assert g.command("probe maxhits 1 100").message == "1 probes: maxhits 100"
    assert g.command("trace reset").ok
    assert g.command("probe enable 1").ok
    assert g.command("run fib n=10").message == "fib = 55"
    g.command("probe disable all")
    c = counts(g, 1)
    hits = int(c["hits"])         # the drain thread may disarm it mid-run
    assert 100 <= hits <= 177 and int(c["over"]) == hits - 100, c
    assert int(c["runs"]) == 100 // 3, c

    # a global's word read back (a D script's END), 0 again once cleared
    assert load(g, 4, compiled("push 7\ngset 3\nabort", arch, order)).ok
    assert g.command("probe program 1 4").message == "1 probes: program 4"
    assert g.command("trace reset").ok                  # its maxhits start again
    assert g.command("probe enable 1").ok
    assert g.command("run fib n=3").message == "fib = 2"
    assert g.command("probe disable all").ok
    assert g.command("program global 3").message == "7"
    for bad in ("program global 64", "program global", "program global x"):
        r = g.command(bad)
        assert r.status_name == "BAD_ARGS" and r.message == \
            "usage: program global N, N < 64", (bad, r.message)
    # `wait TICKS` gives up while the workload runs; `wait` reaps it
    assert g.command("wait 0").status_name == "BAD_ARGS"
    assert g.command("wait 5").message == "no workload was started"
    # (a run of some 66 ms on i386 may end before `wait 1` arrives on a
    # loaded host: it answers with the result, and a run ten times as
    # long is started)
    for iters in (100000, 1000000, 10000000):
        assert g.command(f"start calltree threads=1 iters={iters} ref=0").ok
        r = g.command("wait 1")
        if r.message == "calltree still running":
            break
        assert r.message.startswith("calltree = "), r.message
    assert r.message == "calltree still running", r.message
    assert g.command("wait", timeout=300).message.startswith("calltree = ")

    assert g.command("probe program all none").message == "1 probes: no program"
    assert g.command("program clear 2").message == "slot 2 cleared"
    assert g.command("program clear").message == "every slot cleared, globals zeroed"
    assert g.command("program global 3").message == "0"
    assert g.command("program list").message == "0 programs installed"
    g.exit(0)
