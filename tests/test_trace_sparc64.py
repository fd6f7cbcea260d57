"""SPARC V9 probes end to end: ILLTRAP const22 probes over `save` (entry),
`ret`/`retl`/`return` (return) and every other control transfer (the
branch provider), emulated in the guest and checked here against the
workloads' own counts.

What must hold: fib traced with every entry and return and the right
arguments and values; calltree on preemptive threads with every CTI of it
probed loses nothing (missed=0, dropped=0), and the CALL records into each
function match its call count; the shell-game baseline on the same
workload loses firings; every refusal names its reason; check mode
re-executes every emulation of the `forms` workload, which has every class
(CALL, JMPL, Bicc, BPcc, BPr, FBfcc, FBPfcc, `save`, `return`), in
unicorn with 0 mismatches, and reports a record with a wrong field. The full-size run
(>= 10^6 firings) is `python3 -m bench lossless --arch sparc64`."""

import re
from collections import Counter

import pytest

from bench import arches
from bench.check import sparc64 as check_sparc64
from bench.trace import stress
from bench.trace.format import format_trace
from bench.trace.image import load_image
from bench.trace.rules import sparc_is_cti
from bench.trace.session import open_session
from bench.trace.sites import plan, sites_of
from bench.trace.verify import verify
from bench.wire import records
from bench.guest.qemu import Guest

ARCH = "sparc64"


@pytest.fixture(scope="module")
def sparc64(built):
    built(ARCH)
    return arches.get(ARCH)


@pytest.fixture(scope="module")
def image(sparc64):
    return load_image(sparc64.elf())


def _word(image, addr):
    return int.from_bytes(image.code(addr, 4), "big")


def test_sites_are_found_in_the_elf(image):
    assert image.arch.name == "sparc64"
    probes, notes = plan("fbt:fib:entry,fbt:fib:return", image, "emulate")
    fib = image.functions["fib"]
    entry = [p for p in probes if p.kind == "entry"]
    assert [p.addr for p in entry] == [fib.addr]
    assert _word(image, fib.addr) >> 19 == (2 << 11) | (14 << 6) | 0x3c  # save ..., %sp
    rets = [p for p in probes if p.kind == "return"]
    assert rets and all(fib.addr < p.addr < fib.addr + fib.size for p in rets)
    for p in rets:
        w = _word(image, p.addr)
        assert w >> 30 == 2 and (w >> 19) & 0x3f in (0x38, 0x39), hex(w)
    # Branch sites: control transfers only, none in a delay slot.
    branches, _ = plan("branch:ct_*", image, "emulate")
    assert branches
    for p in branches:
        assert sparc_is_cti(_word(image, p.addr))
        assert not sparc_is_cti(_word(image, p.addr - 4))


def test_a_leaf_function_gets_an_entry_probe_on_its_first_word(image):
    leaf = next(f for f in image.workload_functions()
                if f.insns and not f.insns[0].text.startswith("save"))
    probes, notes = plan(f"fbt:{leaf.name}:entry", image, "emulate")
    assert [p.addr for p in probes] == [leaf.addr] and not notes, notes


def _traced(arch, spec, line, mode="emulate", timer=None):
    with Guest(arch, label=f"trace-{mode}") as g:
        s = open_session(g)
        s.setup(spec, mode, buffer_bytes=16 << 20)      # room for the whole run
        s.enable(True, strict=True)
        if timer:
            s.must(f"timer {timer}")
        r = s.must(f"run {line}", timeout=600)
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    return s, r, cap, g


def check_fib12(cap, probes, link_errors) -> None:
    """fib(12) traced entry and return: every call, nested, with its
    argument and each return's value, through both `return` (n < 2) and
    `ret; restore` paths."""
    rep = verify(cap, probes, link_errors)
    calls = 2 * 233 - 1
    assert rep.entries["fib"] == rep.returns["fib"] == rep.expected["fib"] == calls
    assert rep.ok and rep.nesting_checked == calls, rep.problems
    lines = list(format_trace(cap, probes))
    assert lines[0] == "cpu0 t0 -> fib(12)", lines[:3]
    assert lines[-1] == "cpu0 t0 <- fib = 144", lines[-3:]
    text = "\n".join(lines)
    assert "<- fib = 0" in text and "<- fib = 1" in text and "<- fib = 89" in text


def test_fib_traced_completely(sparc64):
    s, r, cap, g = _traced(sparc64, "fbt:fib:entry,fbt:fib:return", "fib n=12")
    check_fib12(cap, s.probes, g.link_errors)


def test_every_cti_of_calltree_on_preemptive_threads(sparc64, image):
    spec = stress.lossless_probes(sparc64)
    s, r, cap, g = _traced(sparc64, spec, "calltree threads=4 iters=60 depth=4",
                           timer=20000)
    rep = verify(cap, s.probes, g.link_errors)
    assert rep.ok and rep.dropped == 0 and rep.missed == 0, rep.problems
    for f in ("ct_root", "ct_rec", "ct_mid", "ct_add", "ct_mul"):
        if f in rep.entries_probed:
            assert rep.entries[f] == rep.expected[f] > 0, f
        assert rep.returns[f] == rep.expected[f] > 0, f
    # Ground truth for the branch provider: every call of a function comes
    # from a probed CALL whose record names it as the target.
    starts = {image.functions[f].addr: f for f in rep.expected}
    calls = Counter(starts[ev.words[1]] for ev in cap.events
                    if ev.kind == records.K_BRANCH and ev.words[1] in starts)
    for f in ("ct_root", "ct_rec", "ct_mid", "ct_add", "ct_mul"):
        assert calls[f] == rep.expected[f], (f, calls[f], rep.expected[f])
    flags = Counter(ev.words[2] for ev in cap.events if ev.kind == records.K_BRANCH)
    assert flags[1] and flags[0], flags         # taken and untaken both seen


def _hits(g):
    """probe id -> hits, from `probe list`."""
    out = {}
    for line in g.command("probe list").text:
        m = re.match(r"probe (\d+) .*\bhits=(\d+)", line)
        if m:
            out[int(m.group(1))] = int(m.group(2))
    return out


def test_count_only_firings_take_the_quick_path_and_count_exactly(sparc64, image):
    """Every instruction of calltree's functions probed with the null
    action on preempted threads: the entries' saves, the branches on the
    CCR, the calls and the out-of-line words resume from the quick
    path (tracer/arch/sparc64/quick.h: no register copy), the returns
    from the full one. The workload checks its own answers, each
    entry's hits equal its calls, and every probe's hits equal the same
    run's with the record action, which takes the full path everywhere."""
    with Guest(sparc64, label="quick-path") as g:
        s = open_session(g)
        assert g.command("timer 20000").ok
        got = {}
        for action in ("null", "record"):
            s.must("trace reset")
            s.must("probe clear")
            s.setup("insn:ct_*+*", "emulate", strict=True)
            s.must(f"probe action all {action}")
            since = len(g.trace_frames)
            s.enable(True)
            r = s.cmd("run calltree threads=4 iters=30 depth=4")
            s.enable(False)
            assert r.ok, r.message
            got[action] = (_hits(g), g.capture(since).expects)
        g.exit(0)
    hits, expects = got["null"]
    words = {p.id: int.from_bytes(image.code(p.addr, 4), "big") for p in s.probes}
    kinds = Counter()
    for pid, w in words.items():
        op, op2, op3 = w >> 30, (w >> 22) & 7, (w >> 19) & 0x3f
        kinds["save" if op == 2 and op3 == 0x3c else "call" if op == 1 else
              "branch" if op == 0 and op2 in (1, 2) else
              "return" if op == 2 and op3 in (0x38, 0x39) else
              "out of line" if not sparc_is_cti(w) else "other"] += 1
    assert all(kinds[k] for k in ("save", "call", "branch", "return", "out of line")), kinds
    for f in ("ct_root", "ct_rec", "ct_mid", "ct_add", "ct_mul"):
        pid = next(p.id for p in s.probes if p.addr == image.functions[f].addr)
        assert hits[pid] == expects[f] > 0, (f, hits[pid], expects[f])
    full = got["record"][0]
    differ = {pid: (hits[pid], full[pid]) for pid in words if hits[pid] != full[pid]}
    assert not differ and len(hits) == len(words), differ


def test_shell_game_baseline_loses_firings(sparc64):
    # Entries and returns only: a recursive call runs the entry while its
    # original is still in place, so the baseline must miss some.
    s, r, cap, g = _traced(sparc64, stress.LOSSLESS_FUNCS,
                           "calltree threads=4 iters=40 depth=4", mode="shellgame",
                           timer=20000)
    assert r.ok
    rep = verify(cap, s.probes, g.link_errors, allow_missing=True)
    print(f"shell game missed {rep.missed} of {rep.expected_firings}")
    assert rep.dropped == 0 and not rep.link_errors
    assert 0 < rep.missed < rep.expected_firings
    # It never records more than happened.
    for f in rep.expected:
        assert rep.entries[f] <= rep.expected[f] and rep.returns[f] <= rep.expected[f]


FORMS_SPEC = "fbt:fm_*:entry,fbt:fm_*:return,branch:fm_*"


# Each form's iterations in the check-mode run: every class many times over
# (the matrix's check cells and `make bench` run more); each firing sends a
# CHECK record of the whole register file over the 16550.
FORMS_N = 20


@pytest.fixture(scope="module")
def checked_forms(sparc64):
    """One check-mode run of `forms`: every emulated class, recorded."""
    with Guest(sparc64, label="check-emulate") as g:
        s = open_session(g)
        s.setup(FORMS_SPEC, "emulate", check=True, buffer_bytes=16 << 20, strict=True)
        s.enable(True)
        r = s.must(f"run forms n={FORMS_N}", timeout=600)
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    return s, r, cap, g


def test_check_mode_verifies_every_class_in_unicorn(checked_forms):
    s, r, cap, g = checked_forms
    assert r.ok and r.results[0]["value"] == 5 * FORMS_N
    rep = check_sparc64.verify(cap.checks, sites_of(s.image, s.probes))
    print(rep.summary())
    assert rep.mismatches == [], rep.mismatches[:5]
    missing = [c for c in check_sparc64.CLASSES if rep.by_form.get(c, 0) == 0]
    assert not missing, f"no emulation of {missing} was checked: {rep.summary()}"
    assert rep.checked == len(cap.checks) == len(cap.events)   # every firing
    traced = verify(cap, s.probes, g.link_errors)
    assert traced.ok and traced.missed == 0, traced.problems


def test_check_mode_catches_a_wrong_emulation(checked_forms):
    """A record of each class, with one "after" field the emulation defines
    changed (the fields in turn, so each is changed in some class), is
    reported, naming that field. Each altered record is confirmed on a fresh
    unicorn instance, a second or so apiece: one per class keeps it short."""
    C = check_sparc64
    s, r, cap, g = checked_forms
    sites = sites_of(s.image, s.probes)
    one = {}
    for rec in cap.checks:
        cls = C.classify(int.from_bytes(sites[rec.probe].code[:4], "big"))
        one.setdefault(cls, rec)
    assert set(one) == set(C.CLASSES)
    after = C.NREGS
    bad, want = [], []
    changes = (("npc", 4), ("pc", 8), ("i0", 1), ("g1", 1 << 40), ("ccr", 1),
               ("fsr fcc", 1 << 10))
    assert len(one) >= len(changes)
    for n, (cls, rec) in enumerate(one.items()):
        for field, delta in [changes[n % len(changes)]]:
            w = list(rec.words)
            idx = C.I_FSR if field == "fsr fcc" else C.NAMES.index(field)
            w[after + idx] ^= delta
            bad.append(records.Event(rec.cpu, rec.thread, rec.probe, rec.kind,
                                     rec.cycles, tuple(w)))
            want.append((cls, field))
    rep = C.verify(bad, sites)          # one run of the checker for them all
    assert len(rep.mismatches) == len(bad), (len(rep.mismatches), rep.mismatches[:5])
    for (cls, field), line in zip(want, rep.mismatches):
        assert f" {field}: expected" in line, (cls, field, line)


def test_refusals_name_a_reason_and_change_nothing(sparc64, image):
    fib = image.functions["fib"]
    tracer_fn = image.symbols["tracer_record"]
    illtrap = next(i.addr for f in image.functions.values() for i in f.insns
                   if i.text.startswith(("illtrap", "unimp"))
                   and not image.symbols["__notrace_start"] <= i.addr
                   < image.symbols["__notrace_end"])
    cti = next(i for i in fib.insns[1:] if sparc_is_cti(_word(image, i.addr)))
    slot = cti.addr + 4
    plain = next(i.addr for i in fib.insns[1:]
                 if not sparc_is_cti(_word(image, i.addr))
                 and not sparc_is_cti(_word(image, i.addr - 4)))
    with Guest(sparc64, label="probe-refusals") as g:
        def refused(line, reason):
            r = g.command(line)
            assert r.status_name == "FAILED" and reason in r.message, r.message
        refused(f"probe add 1 {tracer_fn:#x} branch", "code of the tracer or trap path")
        # The trap tables and the miss handlers' code beside them run at
        # TL > 0, where a probe's ILLTRAP is a double fault: every first
        # instruction now has an entry probe elsewhere, never there.
        for name in ("trap_table", "tl1_table", "immu_miss_count"):
            refused(f"probe add 1 {image.symbols[name]:#x} entry",
                    "code of the tracer or trap path")
        refused(f"probe add 1 {illtrap:#x} branch", "ILLTRAP/unimp word is already there")
        refused(f"probe add 1 {slot:#x} branch", "delay slot")
        refused(f"probe add 1 {plain:#x} branch", "not a control-transfer")
        wrpr = next(i.addr for i in image.functions["fm_fp"].insns
                    if i.mnemonic == "wrpr")
        refused(f"probe add 1 {wrpr:#x} insn", "privileged state")
        refused(f"probe add 1 {plain:#x} return", "not a control-transfer")
        refused(f"probe add 1 {fib.addr + 2:#x} branch", "word-aligned")
        assert g.command(f"probe add 1 {fib.addr:#x} entry 1").ok
        refused(f"probe add 2 {fib.addr:#x} entry", "already probed (probe 1)")
        assert g.command("probe mode int3").status_name == "BAD_ARGS"
        assert g.command("probe enable 1").ok
        assert g.command("run fib n=10").message == "fib = 55"
        assert g.command("probe clear").message == "1 probes removed"
        assert g.command("run fib n=10").message == "fib = 55"
        g.exit(0)


def test_the_i386_guest_refuses_branch_probes(built):
    built("i386")
    i386 = arches.get("i386")
    img = load_image(i386.elf())
    with Guest(i386, label="branch-refused") as g:
        r = g.command(f"probe add 1 {img.functions['fib'].addr:#x} branch")
        assert r.status_name == "FAILED" and "sparc64 provider" in r.message, r.message
        g.exit(0)
