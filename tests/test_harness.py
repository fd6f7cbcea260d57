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
