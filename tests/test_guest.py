"""Guest behaviour through the harness, on every selected arch: the command
channel, bad input, exit statuses, and what a crash or a hang looks like."""

import re
import time

import pytest

from bench import arches
from bench.wire import frames as wire
from bench.errors import GuestExited, GuestTimeout
from bench.guest.conversation import EXIT_STATUS
from bench.guest.qemu import Guest

OK = wire.REPLY_STATUS["OK"].value
BAD_ARGS = wire.REPLY_STATUS["BAD_ARGS"].value
UNKNOWN = wire.REPLY_STATUS["UNKNOWN"].value
TOO_LONG = wire.REPLY_STATUS["TOO_LONG"].value


def test_hello_describes_the_guest(guest, arch):
    assert guest.hello["arch_name"] == arch
    assert guest.hello["max_command"] == wire.MAX_COMMAND
    assert guest.hello["timer_hz"] > 0 and guest.hello["ncpus"] >= 1


@pytest.mark.parametrize("text", ["hello", "two  spaces and\ttab",
                                  "punctuation: ,.;:!?'\"()[]{}<>=+-*/%&|^~`@#$",
                                  "x" * 250], ids=["word", "spaces", "punct", "250x"])
def test_echo_round_trips(guest, text):
    r = guest.command(f"echo {text}")
    assert (r.status, r.message) == (OK, text)


def test_replies_are_numbered_in_order(guest):
    # The guest numbers every line it answers from 1, the harness's own
    # at launch too (`channel shm` under the shm channel).
    before = guest._commands_sent
    numbers = [guest.command(f"echo {i}").number for i in range(20)]
    assert numbers == list(range(before + 1, before + 21))
    assert before == (guest.channel_used == "shm"), (before, guest.channel_used)
    assert guest.link_errors == []


BAD_LINES = [
    ("frobnicate", UNKNOWN, "unknown command"),
    ("exit", BAD_ARGS, "usage: exit N"),
    ("exit 128", BAD_ARGS, "usage: exit N"),
    ("exit -1", BAD_ARGS, "usage: exit N"),
    ("exit 0x", BAD_ARGS, "usage: exit N"),
    ("exit 1 2", BAD_ARGS, "usage: exit N"),
    ("run", BAD_ARGS, "usage: run"),
    ("run nosuch", BAD_ARGS, "no workload"),
    ("run fib n=99", BAD_ARGS, "n=99: expected a number from 0 to 40"),
    ("run fib n=abc", BAD_ARGS, "expected a number"),
    ("run fib m=1", BAD_ARGS, "no parameter \"m\""),
    ("run fib n", BAD_ARGS, "expected key=value"),
    ("timer 0", BAD_ARGS, "usage: timer"),
    ("timer 99999999999", BAD_ARGS, "usage: timer"),
    ("crash nosuchkind", BAD_ARGS, "usage: crash KIND"),
    ("selftest a b", BAD_ARGS, "usage: selftest"),
    ("echo bell\x07here", BAD_ARGS, "control byte 0x07 at column 10"),
    ("nul\x00byte", BAD_ARGS, "control byte 0x00 at column 4"),
    (" ".join(["w"] * 17), BAD_ARGS, "more than 16 words"),
    ("echo " + "y" * 400, TOO_LONG, "longer than 256 bytes"),
]


@pytest.mark.parametrize("line,status,message", BAD_LINES,
                         ids=[b[2][:24] for b in BAD_LINES])
def test_bad_input_is_refused_and_the_guest_keeps_running(guest, line, status, message):
    r = guest.command(line)
    assert r.status == status, r
    assert message in r.message
    after = guest.command("echo still here")
    assert (after.status, after.message) == (OK, "still here")


def test_a_burst_of_bad_lines_then_good_ones(guest):
    for line, status, _ in BAD_LINES:
        assert guest.command(line).status == status
    assert guest.command("run fib n=10").message == "fib = 55"


def test_workload_result_frame(guest):
    r = guest.command("run fib n=20")
    assert r.ok and r.message == "fib = 6765"
    assert len(r.results) == 1
    res = r.results[0]
    assert (res["name"], res["value"], res["status"]) == ("fib", 6765, 0)
    assert res["cycles"] > 0


def test_timer_rate_can_change(guest):
    r = guest.command("timer 1000")
    assert r.ok and "1000 Hz" in r.message
    assert "hz=1000" in guest.command("info").message


@pytest.mark.parametrize("status", [0, 1, 5, 127])
def test_exit_status_reaches_the_host(guest, status):
    info = guest.exit(status)
    assert info.status == status
    assert info.rc == (status << 1) | 1


def _crash_kinds(guest):
    r = guest.command("crash")
    return r.message.split("one of: ")[1].split()


def test_every_crash_kind_gives_a_dump_and_a_failing_status(arch, built):
    built(arch)
    with Guest(arch, label="kinds") as g:
        kinds = _crash_kinds(g)
    assert kinds, "the guest lists no crash kinds"
    special = arches.get(arch).crash_status
    for kind in kinds:
        with Guest(arch, label=f"crash-{kind}") as g:
            with pytest.raises(GuestExited) as exc:
                g.command(f"crash {kind}", timeout=20)
            want = special.get(kind, "UNEXPECTED_TRAP")
            assert exc.value.status == EXIT_STATUS[want], (kind, str(exc.value))
            dump = "\n".join(g.text)
            assert "UNEXPECTED TRAP" in dump, (kind, dump)
            # A register dump: at least 8 hex register values.
            assert len(re.findall(r"0x[0-9a-f]{8}", dump)) >= 8, (kind, dump)
            # The harness names the code at the faulting PC from the ELF.
            if arches.get(arch).pc_registers:
                assert re.search(r"0x[0-9a-f]+ <\w+\+0x[0-9a-f]+>", dump), dump
            assert g.exit_info.rc == (EXIT_STATUS[want] << 1) | 1
            assert not g.alive


def test_a_hung_guest_times_out_is_killed_and_its_log_kept(arch, built):
    built(arch)
    g = Guest(arch, label="hang")
    with g:
        g.command("echo before the hang")
        t0 = time.monotonic()
        with pytest.raises(GuestTimeout) as exc:
            g.command("hang", timeout=2)
        waited = time.monotonic() - t0
        assert not g.alive, "QEMU still running after the timeout"
    assert 2 <= waited < 10
    msg = str(exc.value)
    assert "timed out waiting for the reply to 'hang'" in msg
    assert g.arch.qemu in msg and str(g.log_path) in msg
    log = g.log_path.read_text()
    assert ">> echo before the hang" in log and ">> hang" in log
    assert "harness killed QEMU" in log
    assert g.serial_path.stat().st_size > 0


def _smp_for(arch):
    return min(4, arches.get(arch).max_smp)


def test_calltree_ground_truth_with_threads_on_every_cpu(arch, built):
    built(arch)
    smp = _smp_for(arch)
    with Guest(arch, label="calltree", smp=smp) as g:
        assert g.hello["ncpus"] == smp
        r = g.command("run calltree threads=8 iters=500 depth=3")
        assert r.ok, r
        # Per iteration: root 1 + rec 4 + mid 2 + add 5 + mul 2 = 14 calls.
        assert r.results[0]["value"] == 8 * 500 * 14
        assert r.results[0]["status"] == 0
        # ref=0 (scaling runs): no reference run, so the calls a tracer
        # must see are the threads' alone.
        since = len(g.trace_frames)
        r = g.command("run calltree threads=8 iters=500 depth=3 ref=0")
        assert r.ok and r.results[0]["value"] == 8 * 500 * 14, r
        expects = g.capture(since).expects
        assert expects["ct_thread"] == 8 and expects["ct_root"] == 8 * 500, expects


def test_workload_refuses_more_threads_than_it_tracks(guest):
    r = guest.command("run calltree threads=33")
    assert r.status == BAD_ARGS and "threads=33" in r.message


def test_preemption_at_a_high_rate_keeps_deep_recursion_correct(arch, built):
    """Threads preempted at 20 kHz in 64-deep recursion: on sparc64 every
    switch spills and refills register windows, so any window lost or
    restored in the wrong place shows up as a wrong count or checksum."""
    built(arch)
    with Guest(arch, label="preempt-deep", smp=_smp_for(arch)) as g:
        assert g.command("timer 20000").ok
        r = g.command("run calltree threads=6 iters=400 depth=64", timeout=120)
        assert r.ok, r
        # Per iteration: root 1 + rec 65 + mid 2 + add 66 + mul 2 = 136 calls.
        assert r.results[0]["value"] == 6 * 400 * 136


def test_concurrent_printing_loses_and_garbles_nothing(arch, built):
    built(arch)
    with Guest(arch, label="printers", smp=_smp_for(arch)) as g:
        r = g.command("run printers threads=6 lines=60")
        assert r.ok and r.results[0]["value"] == 360
        want = {f"printer {t} line {i} of 60: the quick brown fox"
                for t in range(6) for i in range(60)}
        got = [l for l in r.text if l.startswith("printer ")]
        assert sorted(got) == sorted(want), set(got) ^ want
        assert g.link_errors == []


def test_all_eight_cpus_run_threads(arch, built):
    if arches.get(arch).max_smp < 8:
        pytest.skip(f"{arch} has at most {arches.get(arch).max_smp} CPU(s)")
    built(arch)
    with Guest(arch, label="smp8", smp=8) as g:
        assert g.hello["ncpus"] == 8
        r = g.command("selftest threads", timeout=120)
        assert r.ok, "\n".join(r.text)
        runs = [l for l in r.text if l.startswith("INFO: threads: cpu")]
        assert len(runs) == 8 and all(not l.endswith(" 0 times") for l in runs), runs
