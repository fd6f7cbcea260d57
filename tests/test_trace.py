"""fbt tracing end to end on i386: sites from the ELF, probes in a running
guest, records over the serial link, and the host's checks.

Each traced run knows how many events to expect: the workloads count their
own calls (EXPECT frames) and the tests compare entry and return counts
with those, check per-thread nesting, and require zero drops and zero link
errors for the emulating mechanisms. Bad probe requests must be refused
with a reason and change nothing. The full-size runs (10^6 firings, 1000
toggles) are `python3 -m bench lossless|toggle`; here they run smaller."""

import re

import pytest

from bench import arches
from bench.check import i386 as check_i386
from bench.trace import stress
from bench.trace.format import format_trace
from bench.trace.image import load_image
from bench.trace.session import open_session
from bench.trace.sites import SpecError, plan, sites_of
from bench.trace.verify import verify
from bench.wire import frames, records
from bench.guest.qemu import Guest

ARCH = "i386"


@pytest.fixture(scope="module")
def i386(built):
    built(ARCH)
    return arches.get(ARCH)


@pytest.fixture(scope="module")
def image(i386):
    return load_image(i386.elf())


def test_sites_are_found_in_the_elf(image):
    probes, notes = plan("fbt:fib:entry,fbt:fib:return", image, "int3")
    fib = image.functions["fib"]
    entries = [p for p in probes if p.kind == "entry"]
    returns = [p for p in probes if p.kind == "return"]
    assert [p.addr for p in entries] == [fib.addr]
    assert entries[0].nargs == 1
    assert returns and all(fib.addr < p.addr < fib.addr + fib.size for p in returns)
    assert all(image.code(p.addr, 1) in (b"\x5d", b"\xc9", b"\xc3") for p in returns)
    # In ud mode a return is probed at its ret (ud2 is two bytes).
    ud, _ = plan("fbt:fib:return", image, "ud")
    assert all(image.code(p.addr, 1) == b"\xc3" for p in ud)


@pytest.mark.parametrize("spec,message", [
    ("fbt:no_such_function:entry", "unknown symbol"),
    ("fbt:zz*:entry", "matches no function"),
    ("fbt:fib", "expected fbt:[kernel:]FUNCTION:entry|return"),
    ("kprobe:fib:entry", "expected fbt:[kernel:]FUNCTION:entry|return"),
    ("fbt:kernel:fib", "expected fbt:[kernel:]FUNCTION"),
    ("", "no probes given"),
])
def test_bad_probe_patterns_are_refused(image, spec, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        plan(spec, image, "int3")


def _traced_fib(i386, mode, n=12, smp=1, channel=None):
    with Guest(i386, label=f"trace-fib-{mode}", smp=smp, channel=channel) as g:
        s = open_session(g)
        s.setup("fbt:fib:entry,fbt:fib:return", mode)
        s.enable(True, strict=True)
        r = s.must(f"run fib n={n}")
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    return s, r, cap, g


@pytest.mark.parametrize("mode", ["int3", "ud"])
def test_fib_traced_completely(i386, mode):
    s, r, cap, g = _traced_fib(i386, mode)
    rep = verify(cap, s.probes, g.link_errors)
    calls = 2 * 233 - 1                       # fib(13) = 233
    assert rep.expected == {"fib": calls}
    assert rep.entries["fib"] == calls and rep.returns["fib"] == calls, rep
    assert rep.ok, rep.problems
    assert rep.nesting_checked == calls and rep.dropped == 0
    lines = list(format_trace(cap, s.probes))
    assert lines[0] == "cpu0 t0 -> fib(12)", lines[:3]
    assert lines[-1] == "cpu0 t0 <- fib = 144", lines[-3:]
    # Arguments and return values agree with fib itself.
    assert "-> fib(2)" in "\n".join(lines) and "<- fib = 1" in "\n".join(lines)


def test_single_step_baseline_traces_a_single_thread(i386):
    # One CPU, one thread: the baseline loses nothing here (its losses
    # need another CPU running the site while the original is back).
    s, r, cap, g = _traced_fib(i386, "step", n=10)
    rep = verify(cap, s.probes, g.link_errors)
    assert rep.ok, rep.problems
    assert rep.entries["fib"] == rep.expected["fib"] == 177


def test_refusals_name_a_reason_and_change_nothing(i386, image):
    tracer_fn = image.symbols["tracer_record"]
    fib = image.functions["fib"].addr
    with Guest(i386, label="probe-refusals") as g:
        def refused(line, reason):
            r = g.command(line)
            assert r.status_name == "FAILED" and reason in r.message, r.message
        refused(f"probe add 1 {tracer_fn:#x} entry", "code of the tracer or trap path")
        refused("probe add 1 0x10 entry", "outside kernel text")
        hlt = next(i.addr for i in image.functions["arch_wait_for_interrupt"].insns
                   if i.mnemonic == "hlt")
        refused(f"probe add 1 {hlt:#x} entry", "a privileged or system instruction")
        assert g.command(f"probe add 1 {fib:#x} entry 1").ok
        refused(f"probe add 2 {fib:#x} entry", "already probed (probe 1)")
        refused(f"probe add 1 {fib:#x} entry", "probe id 1 is in use")
        ret = next(p for p in plan("fbt:fib:return", image, "int3")[0]
                   if image.code(p.addr, 1) == b"\x5d")
        refused(f"probe add 3 {fib + 1:#x} return", "a return probe needs")
        assert g.command("probe mechanism ud").message == "mechanism ud"
        assert g.command(f"probe add 3 {ret.addr:#x} return").ok
        refused("probe enable 3", "ud2 is two bytes")
        assert g.command("probe enable 1").ok
        refused("probe mechanism int3", "probes are enabled")
        refused("probe mode int3", "probes are enabled")       # the old name
        r = g.command("probe list")
        assert "2 probes, 1 enabled, mechanism ud" in r.message, r.message
        assert g.command("probe add 5 zz entry").status_name == "BAD_ARGS"
        assert g.command("probe enable 99").status_name == "FAILED"
        assert g.command("probe frobnicate").status_name == "BAD_ARGS"
        assert g.command("run fib n=10").message == "fib = 55"
        assert g.command("probe clear").message == "2 probes removed"
        g.exit(0)


@pytest.mark.parametrize("mode", ["int3", "ud"])
def test_lossless_on_threads_and_cpus(i386, mode):
    res = stress.lossless(i386, mode, smp=2, threads=4, iters=150, on_line=lambda l: None)
    rep = res.report
    assert res.result_ok
    assert res.missed == 0 and rep.dropped == 0 and not rep.link_errors, rep.problems
    assert rep.ok, rep.problems
    assert rep.nesting_checked > 0
    for f in ("ct_root", "ct_rec", "ct_add", "ct_mul"):
        assert rep.entries[f] == rep.returns[f] == rep.expected[f] > 0


def test_single_step_baseline_misses_on_smp(i386):
    # A miss needs both CPUs in the workload at once; a loaded host can
    # leave one vCPU unscheduled for a whole short run (the other then
    # takes its threads), so a run that missed nothing is run again,
    # four times as long.
    for iters in (150, 600, 2400):
        res = stress.lossless(i386, "step", smp=2, threads=4, iters=iters,
                              on_line=lambda l: None)
        assert res.result_ok and res.report.dropped == 0
        print(f"single-step baseline missed {res.missed} of {res.firings_expected}")
        if res.missed:
            break
    assert 0 < res.missed < res.firings_expected


def test_toggling_probes_while_threads_run(i386):
    res = stress.toggle_stress(i386, "int3", smp=2, threads=4, iters=50000,
                             toggles=60, on_line=lambda l: None)
    assert res.result_ok, "the workload's results changed under toggling"
    # A dropped record would break nesting for a reason of its own.
    assert res.report.dropped == 0 and not res.report.link_errors
    assert res.nesting_checked > 0
    # A site store that raced a translation on another CPU would show up
    # here as a return missing for a whole window (tracer_settle).
    assert not res.nesting_errors, \
        f"{len(res.nesting_errors)} nesting errors in {res.windows} windows; " \
        f"first: {res.nesting_errors[:3]}"


def test_a_damaged_events_frame_is_reported(i386):
    # A frame damaged on a byte stream: the virtio port's (shm's frames
    # never travel as bytes, and outgrow a stream frame's 2 KiB).
    s, r, cap, g = _traced_fib(i386, "int3", n=6, channel="virtio")
    got = list(g.trace_frames)
    ev = next(f for f in got if f.type == frames.T_EVENTS)
    raw = bytearray(frames.encode(ev.type, ev.seq, ev.payload))
    raw[frames.HEADER_SIZE + 10] ^= 0xff
    d = frames.Deframer()
    items = d.feed(bytes(raw)) + d.finish()
    errors = [i for i in items if isinstance(i, frames.LinkError)]
    assert errors and errors[0].kind == "crc"
    rest = [f for f in got if f is not ev]
    cap2 = records.decode(rest, g.byte_order, g.hello["word_bytes"])
    rep = verify(cap2, s.probes, errors)
    assert not rep.ok
    assert any("link errors" in p for p in rep.problems)
    assert any("the guest sent" in p for p in rep.problems)


ALL_FORMS = ("fbt:fm_*:entry,fbt:fm_*:return,fbt:fib:entry,fbt:fib:return,"
             "fbt:ct_mid:entry,fbt:ct_mid:return")


@pytest.mark.parametrize("mode", ["int3", "ud"])
def test_check_mode_verifies_every_form_in_unicorn(i386, mode):
    with Guest(i386, label=f"check-{mode}", smp=2) as g:
        s = open_session(g)
        s.setup(ALL_FORMS, mode, check=True, buffer_bytes=4 << 20, strict=True)
        s.enable(True)
        for line in ("forms n=200", "fib n=10", "calltree threads=2 iters=50"):
            assert s.must(f"run {line}").ok
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    rep = check_i386.verify(cap.checks, sites_of(s.image, s.probes))
    print(rep.summary())
    assert rep.mismatches == [], rep.mismatches[:5]
    # ud2 is two bytes: in ud mode returns are probed at the ret, and the
    # one-byte push %ebp / nop entries are refused; int3 covers all eight.
    want = {"PUSH_EBP_MOV", "RET", "RET_IMM", "ENTER"}
    if mode == "int3":
        want |= {"PUSH_EBP", "NOP", "POP_EBP", "LEAVE"}
    missing = {f for f in want if rep.by_form.get(f, 0) == 0}
    assert not missing, f"no emulation of {missing} was checked: {rep.summary()}"
    assert rep.checked == len(cap.checks) > 0
    traced = verify(cap, s.probes, g.link_errors)
    assert traced.ok, traced.problems
