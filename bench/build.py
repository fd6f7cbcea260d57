"""Building guest images from the harness, so `python3 -m bench ...` never
boots a stale image: it asks make, which rebuilds only what changed."""

from __future__ import annotations

import subprocess

from . import arches
from .cdefs import REPO
from .errors import BuildError


def ensure_image(arch: arches.Arch) -> None:
    cmd = ["make", "-s", "--no-print-directory", "-f", "guest-kernel/image.mk",
           f"ARCH={arch.name}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        out = (proc.stdout + proc.stderr).strip().splitlines()
        raise BuildError(f"building the {arch.name} image failed: {' '.join(cmd)}",
                         tail="\n".join(out[-30:]))


def user_image(arch: arches.Arch, source) -> "Path":
    """The guest image with a user's C file linked in, built in its own
    directory (build/<arch>-user/<stem>/); returns the image to boot."""
    from pathlib import Path
    src = Path(source).resolve()
    if not src.is_file():
        raise BuildError(f"no such workload file: {source}")
    out = Path("build") / f"{arch.name}-user" / src.stem
    _make(arch, out, f"building {source} into the {arch.name} image", f"USER_SRC={src}")
    return REPO / out / arch.boot_image


def _make(arch: arches.Arch, out, what: str, *variables: str) -> None:
    """image.mk for arch into out with extra make variables; BuildError
    (the command and the output's last lines) if it fails."""
    cmd = ["make", "-s", "--no-print-directory", "-f", "guest-kernel/image.mk",
           f"ARCH={arch.name}", f"OUT={out}", *variables]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).strip().splitlines()
        raise BuildError(f"{what} failed: {' '.join(cmd)}", tail="\n".join(lines[-30:]))


# The workloads the bench's -finstrument-functions baseline instruments.
INSTRUMENTED = ("guest-kernel/workloads/fib.c", "guest-kernel/workloads/calltree.c")


def instrumented_image(arch: arches.Arch) -> tuple["Path", "Path"]:
    """The guest image with INSTRUMENTED built with -finstrument-functions
    (build/<arch>-finstrument/); returns (image to boot, ELF with symbols)."""
    out = f"build/{arch.name}-finstrument"
    _make(arch, out, f"building the instrumented {arch.name} image",
          f"INSTRUMENT={' '.join(INSTRUMENTED)}")
    return REPO / out / arch.boot_image, REPO / out / arch.symbols
