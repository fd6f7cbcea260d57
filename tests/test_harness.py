"""The harness's own failure paths, and the command-line contract."""

import subprocess

import pytest

from bench import arches, cli
from bench.errors import LaunchError, UsageError
from bench.guest.qemu import Guest
from conftest import REPO


def test_missing_image_is_a_clear_launch_error(arch, tmp_path):
    with pytest.raises(LaunchError) as exc:
        with Guest(arch, image=tmp_path / "nope.elf"):
            pass
    assert "no guest image" in str(exc.value)


def test_qemu_failing_at_start_is_reported_with_its_words(arch, built):
    built(arch)
    with pytest.raises(LaunchError) as exc:
        with Guest(arch, extra_args=["-no-such-option"]):
            pass
    msg = str(exc.value)
    assert "before the guest said HELLO" in msg
    assert "-no-such-option" in msg         # QEMU's own complaint, and the cmdline


def test_unknown_arch_is_refused_by_the_cli(capsys):
    assert cli.main(["selftest", "--arch", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown arch 'bogus'" in err and "i386" in err


def test_make_check_with_a_bogus_arch_fails_clearly():
    p = subprocess.run(["make", "--no-print-directory", "check", "ARCH=bogus"],
                       cwd=REPO, capture_output=True, text=True)
    assert p.returncode != 0
    assert "unknown arch 'bogus'" in p.stdout + p.stderr


def test_boot_time_prints_the_median_last(arch, capsys):
    assert cli.main(["boot-time", "--arch", arch, "--runs", "3"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("boot-to-ready median ") and last.endswith(" ms")


def test_smp_beyond_the_machine_is_refused():
    arch = arches.available()[0]
    with pytest.raises(UsageError, match="runs 1 to"):
        Guest(arch, smp=arches.get(arch).max_smp + 1)


# -- started by the wrong Python ------------------------------------------------
# `python3 -S` leaves out site.py, and with it /usr/lib/python3/dist-packages:
# the same view of the python3-* packages as a python3 from pyenv or a venv.

def _wrong_python_problems(p: subprocess.CompletedProcess) -> list[str]:
    """What is wrong with how a start without the python3-* packages ended:
    it must be exit status 2 and one line naming /usr/bin/python3 and why."""
    problems = []
    if p.returncode != 2:
        problems.append(f"exit status {p.returncode}, not 2")
    lines = (p.stdout + p.stderr).splitlines()
    if len(lines) != 1:
        problems.append(f"{len(lines)} lines, not one: {lines[-3:]}")
    text = p.stdout + p.stderr
    for want in ("/usr/bin/python3", "elftools", "python3-"):
        if want not in text:
            problems.append(f"no {want!r} in the message")
    if "Traceback" in text:
        problems.append("a traceback")
    return problems


def _start(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["/usr/bin/python3", "-S", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_a_python_without_the_debian_packages_is_told_which_to_use():
    for argv in (["-m", "bench", "--help"], ["-m", "bench", "run", "--arch", "i386"]):
        p = _start(*argv)
        assert _wrong_python_problems(p) == [], argv


def test_without_the_check_the_wrong_python_ends_in_a_traceback():
    # The broken variant: entering the CLI past bench/__main__.py's check.
    p = _start("-c", "import sys; from bench.cli import main; sys.exit(main())",
               "--help")
    assert "elftools" in p.stderr
    assert "no '/usr/bin/python3' in the message" in _wrong_python_problems(p)
    assert "a traceback" in _wrong_python_problems(p)


def test_another_python3_on_path_is_stopped_too():
    import os
    import shutil
    other = shutil.which("python3")
    if other is None or os.path.realpath(other) == os.path.realpath("/usr/bin/python3"):
        pytest.skip("the python3 on PATH is Debian's")
    p = subprocess.run([other, "-m", "bench", "--help"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    if p.returncode == 0:
        pytest.skip(f"{other} sees the packages too")
    assert _wrong_python_problems(p) == []


def test_debian_python_starts_the_bench():
    p = subprocess.run(["/usr/bin/python3", "-m", "bench", "--help"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("usage: python3 -m bench")
