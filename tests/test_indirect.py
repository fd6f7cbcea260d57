"""Indirect calls and jumps under `insn:FUNC+*` on i386 (tests/workloads/
indirect.c): every instruction of functions that call through a table, a
register and a stack word, and jump through a switch's table, is armed;
the trap path emulates the indirect ones (emulate.c's CALL_IND and
JMP_IND: the target from the register or loaded through the ModRM/SIB
operand, a call pushing site + length). The workload's own sum is right (a
call resumed at the wrong target or returning to the wrong place would
change it, or crash), and each probe's firings equal QEMU's count of its
instruction (`--exec-count`), under int3 and ud.

Check mode re-runs every emulated indirect call and jmp in unicorn
(bench/check/i386_ool.py: the record's layout is the out-of-line one, two
places touched): 0 mismatches, one CHECK record per firing; and the
broken variant (i386_indirect_broken, set through QEMU's GDB stub: CF
flipped after each emulated indirect call or jmp) is reported on exactly
those records, as a CF mismatch alone.

A call through a table that is not there (indfault, under trap_try) is
caught at the call's own address, probed as unprobed: the emulation's load
faults and the same #PF reaches the same try, and the kernel runs on. With
no try, the kernel stops either way: unprobed on the #PF at the call,
probed with a panic naming the probe, the address and the trap.
"""

import re
import subprocess
import sys

import pytest

from bench import arches
from bench.check import i386 as C
from bench.debug import rsp
from bench.guest import build
from bench.guest.qemu import Guest
from bench.paths import REPO
from bench.trace import sites
from bench.trace.image import load_image
from bench.trace.session import open_session

WORKLOAD = "tests/workloads/indirect.c"
# Refusals that are the ud mechanism's own (a one-byte instruction, a ret
# before another probe's site), none an indirect form's.
UD_LIMITS = ("ud2 is two bytes", "the byte after this ret is another probe's site")


def _run(*extra, probes="insn:ind_*+*", line="indirect n=40"):
    cmd = [sys.executable, "-m", "bench", "run", "--arch", "i386", "--workload", WORKLOAD,
           "--probes", probes, "--run", line, "--limit", "0", "--timeout", "300", *extra]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    return p.returncode, p.stdout + p.stderr


def _refusals(out):
    return [l for l in out.splitlines() if "refused:" in l]


def _image():
    return load_image(build.user_image(arches.get("i386"), REPO / WORKLOAD))


def _indirect_sites(image):
    """(function, address, text) of every indirect call and jmp in ind_*."""
    return [(f.name, i.addr, i.text) for f in image.functions.values()
            if f.name.startswith("ind_") for i in f.insns
            if re.match(r"(call|jmp)l?\s+\*", i.text)]


def test_gcc_emits_the_indirect_forms(built):
    built("i386")
    texts = " | ".join(t for _, _, t in _indirect_sites(_image()))
    assert re.search(r"call\s+\*0x[0-9a-f]+\(,%e[a-d]x,4\)", texts), texts  # the table
    assert re.search(r"call\s+\*%e[a-d]x", texts), texts                     # a register
    assert re.search(r"call\s+\*\(%esp\)", texts), texts
    assert re.search(r"jmp\s+\*0x[0-9a-f]+\(,%e[a-d]x,4\)", texts), texts   # the switch
    assert re.search(r"call\s+\*\(%e[a-d]x,%e[a-d]x,4\)", texts), texts     # indfault's


@pytest.mark.parametrize("mechanism", ["int3", "ud"])
def test_every_instruction_of_indirect_calls_and_jumps_counts_as_qemu_does(built, mechanism):
    built("i386")
    rc, out = _run("--exec-count", "--mechanism", mechanism)
    assert rc == 0, out[-3000:]
    assert "result indirect = " in out and "(ok)" in out, out[-3000:]
    refused = _refusals(out)
    if mechanism == "int3":
        assert refused == [], refused
    assert all(any(r in l for r in UD_LIMITS) for l in refused), refused
    image = _image()
    for _, addr, text in _indirect_sites(image):
        assert f"{addr:#x}:" not in " ".join(refused), (text, refused)
    m = re.search(r"exec-count: (\d+) insn probes, (\d+) executions in the unprobed "
                  r"twin, (\d+) equal, (\d+) differ", out)
    assert m, out[-3000:]
    probes, runs, equal, differ = map(int, m.groups())
    every = sum(len(f.insns) for f in image.functions.values() if f.name.startswith("ind_"))
    assert probes == equal == every - len(refused) and differ == 0 and runs > 2000, \
        (m.group(0), every)


@pytest.mark.parametrize("mechanism", ["int3", "ud"])
def test_check_mode_reruns_every_emulated_indirect_call_and_jmp(built, mechanism):
    built("i386")
    rc, out = _run("--check", "--mechanism", mechanism)
    assert rc == 0, out[-3000:]
    m = re.search(r"check: (\d+) emulations checked \(([^)]*)\), (\d+) mismatches", out)
    assert m and m.group(3) == "0", out[-3000:]
    forms = dict((k, int(v)) for k, v in (f.split() for f in m.group(2).split(", ")))
    # 40 rounds: three calls each (table, register, stack word); the
    # switch's jmp in 35 (i % 7 == 6 is its range check's default).
    assert forms.get("CALL_IND") == 120 and forms.get("JMP_IND") == 35, forms
    assert "PROBLEM" not in out and "(ok)" in out, out[-3000:]


def _checked(s, g, spec, line):
    since = len(g.trace_frames)
    s.must("probe clear")
    s.setup(spec, "int3", check=True)
    s.enable(True, strict=True)
    r = s.cmd(f"run {line}")
    s.enable(False)
    s.must("trace flush", timeout=120)
    cap = g.capture(since)
    return r, cap, C.verify(cap.checks, sites.sites_of(s.image, s.probes))


def test_a_broken_indirect_emulation_is_caught_by_check_mode(built):
    built("i386")
    a = arches.get("i386")
    image = build.user_image(a, REPO / WORKLOAD)
    spec = "insn:ind_dispatch+*,insn:ind_switch+*,insn:ind_esp+*"
    with Guest(a, label="indirect-broken", image=image, gdbstub=True) as g:
        s = open_session(g)
        r, cap, good = _checked(s, g, spec, "indirect n=10")
        flag = s.image.symbols["i386_indirect_broken"]
        with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
            stub.halt()
            stub.write_memory(flag, (1).to_bytes(4, "little"))
            stub.detach()
        r2, cap2, bad = _checked(s, g, spec, "indirect n=10")
        g.exit(0)
    assert r.ok and good.mismatches == [] and good.checked == len(cap.checks), good.summary()
    indirect = good.by_form["CALL_IND"] + good.by_form["JMP_IND"]
    assert indirect == 10 * 3 + 9, good.summary()       # i % 7 == 6 once in 10
    # Broken: each indirect record reported, naming CF alone; nothing else.
    assert r2.ok and bad.checked == good.checked, bad.summary()
    assert len(bad.mismatches) == indirect, bad.mismatches[:3]
    for m in bad.mismatches:
        assert re.search(r" (CALL|JMP)_IND: eflags: expected ", m) and \
            m.count(": expected ") == 1, m
        want, got = (int(x, 16) for x in m.split("expected ")[1].split(" vs actual "))
        assert want ^ got == 0x001, m


@pytest.mark.parametrize("mechanism", ["int3", "ud"])
def test_a_faulting_target_load_reaches_the_callers_trap_try(built, mechanism):
    built("i386")
    site = next(addr for f, addr, _ in _indirect_sites(_image()) if f == "ind_fault_call")
    for extra in ((), ("--mechanism", mechanism)):
        probes = "insn:ind_fault_call+*" if extra else "insn:ind_add+0"
        rc, out = _run(*extra, probes=probes, line="indfault n=20")
        assert rc == 0, out[-3000:]
        # value: the PC every #PF named, the call's own address
        assert f"result indfault = {site} (ok)" in out, (site, out[-3000:])


def test_a_faulting_target_load_with_no_try_stops_the_kernel_naming_the_probe(built):
    built("i386")
    site = next(addr for f, addr, _ in _indirect_sites(_image()) if f == "ind_fault_call")
    rc, out = _run(probes="insn:ind_add+0", line="indfault n=2 try=0")      # unprobed
    assert rc != 0 and "UNEXPECTED TRAP on cpu0: vector 14 #PF" in out, out[-3000:]
    assert f"EIP {site:#010x}" in out and "CR2 0x00000010" in out, out[-3000:]
    rc, out = _run(probes="insn:ind_fault_call+*", line="indfault n=2 try=0")
    assert rc != 0 and re.search(rf"PANIC: probe \d+ at {site:#x} \(call \*r/m32 .*\): "
                                 r"the load of its target faults at 0x10 \(#PF, error 0x0\)",
                                 out), out[-3000:]
