"""Who may include what: the kernel, the tracer and the host share headers
only through include/ (wire.h, frame.h); the kernel (guest-kernel/,
firmware/) names no header of tracer/include.

Two checks, each tried on a broken variant so it can fail: every
`#include "x.h"` of the kernel's sources is resolved as the compiler would
and none lands in tracer/include; and the build itself enforces it —
image.mk compiles a kernel source without -Itracer/include, so a kernel
file that includes tracer.h does not build, while a tracer file still
sees tracer/include."""

import re
import shlex
import subprocess

import pytest

from bench.paths import REPO

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
KERNEL_TREES = ("guest-kernel", "firmware")


def _tracer_includes(path, text: str) -> list[str]:
    """The headers text includes that resolve only in tracer/include (a
    header of the file's own directory or of include/ wins, as with -I)."""
    out = []
    for name in INCLUDE_RE.findall(text):
        if (path.parent / name).is_file() or (REPO / "include" / name).is_file():
            continue
        if (REPO / "tracer/include" / name).is_file():
            out.append(name)
    return out


def test_the_kernel_includes_nothing_from_tracer_include():
    found = {}
    for tree in KERNEL_TREES:
        for p in sorted((REPO / tree).rglob("*")):
            if p.suffix in (".c", ".h", ".S") and p.is_file():
                names = _tracer_includes(p, p.read_text())
                if names:
                    found[str(p.relative_to(REPO))] = names
    assert found == {}


def test_the_include_check_catches_a_kernel_file_naming_tracer_h():
    fake = REPO / "guest-kernel/core/not_a_file.c"
    assert _tracer_includes(fake, '#include "wire.h"\n#include "tracer.h"\n') == ["tracer.h"]


def test_shared_headers_are_in_include_only():
    for name in ("wire.h", "frame.h"):
        assert (REPO / "include" / name).is_file()
        assert not (REPO / "tracer/include" / name).exists()
        assert not (REPO / "guest-kernel/include" / name).exists()


def _compile_command(arch: str, source: str, out) -> list[str]:
    """The command image.mk would compile source with (make -n)."""
    obj = f"{out}/obj/{source}.o"
    proc = subprocess.run(["make", "-n", "-B", "-s", "--no-print-directory", "-f",
                           "guest-kernel/image.mk", f"ARCH={arch}", f"OUT={out}", obj],
                          cwd=REPO, capture_output=True, text=True, check=True)
    lines = [ln for ln in proc.stdout.splitlines() if f" -o {obj} " in ln]
    assert len(lines) == 1, proc.stdout
    return shlex.split(lines[0])


@pytest.mark.parametrize("source,sees_tracer", [
    ("guest-kernel/core/main.c", False),
    ("guest-kernel/workloads/fib.c", False),
    ("tracer/core/probe.c", True),
    ("tracer/workloads/firepath.c", True),
])
def test_image_mk_gives_tracer_include_to_the_tracer_only(tmp_path, source, sees_tracer):
    cmd = _compile_command("i386", source, tmp_path)
    assert "-Iinclude" in cmd
    assert ("-Itracer/include" in cmd) == sees_tracer


def test_a_kernel_file_including_tracer_h_does_not_build(tmp_path):
    """The broken variant: the kernel's own compile command, given a file
    that includes tracer.h, fails on that include; the same file with
    wire.h (shared) builds."""
    cmd = _compile_command("i386", "guest-kernel/core/main.c", tmp_path)
    (tmp_path / "include").mkdir()
    for link, target in (("arch", "guest-kernel/arch/i386"), ("tarch", "tracer/arch/i386")):
        (tmp_path / "include" / link).symlink_to(REPO / target)

    def build(text: str) -> subprocess.CompletedProcess:
        src = tmp_path / "probe_me.c"
        src.write_text(text)
        args = [a for a in cmd if not a.startswith("-M")]
        i = args.index("-o")
        args[i + 1:i + 3] = [str(tmp_path / "probe_me.o"), str(src)]
        return subprocess.run(args, cwd=REPO, capture_output=True, text=True)

    ok = build('#include "wire.h"\nint probe_me(void) { return WIRE_MAGIC0; }\n')
    assert ok.returncode == 0, ok.stderr
    bad = build('#include "tracer.h"\nint probe_me(void) { return 0; }\n')
    assert bad.returncode != 0
    assert "tracer.h" in bad.stderr
