"""Building guest images from the harness, so `python3 -m bench ...` never
boots a stale image: it asks make (guest-kernel/image.mk), which rebuilds
only what changed. Besides the image of an arch: the image with a user's
own C workload linked in, and the image whose workloads are built with
-finstrument-functions (the bench's compiler-hook baseline).

A user image links the arch image's own kernel objects (image.mk's KOBJ)
and compiles only the user's file, so the arch image is brought up to date
first. Builds of one arch hold a lock (build/<arch>.lock): the matrix runs
cells in parallel, and two makes writing the same object would leave a
torn one."""

from __future__ import annotations

import contextlib
import fcntl
import re
import subprocess
from pathlib import Path

from .. import arches
from ..errors import BuildError, UsageError
from ..paths import REPO


@contextlib.contextmanager
def _locked(arch: arches.Arch):
    """One build of arch's objects at a time, across processes."""
    path = REPO / "build" / f"{arch.name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_image(arch: arches.Arch) -> None:
    with _locked(arch):
        _ensure_image(arch)


def _ensure_image(arch: arches.Arch) -> None:
    cmd = ["make", "-s", "--no-print-directory", "-f", "guest-kernel/image.mk",
           f"ARCH={arch.name}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        out = (proc.stdout + proc.stderr).strip().splitlines()
        raise BuildError(f"building the {arch.name} image failed: {' '.join(cmd)}",
                         tail="\n".join(out[-30:]))


def workload_name(source) -> str:
    """The workload a user's C file defines: WORKLOAD(ident) = { "name", ..."""
    try:
        text = Path(source).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read the workload file {source}: {e}") from None
    m = re.search(r'WORKLOAD\s*\(\s*\w+\s*\)\s*=\s*\{\s*"([^"]+)"', text)
    if not m:
        raise UsageError(f"{source}: no `WORKLOAD(ident) = {{ \"name\", ... }}` "
                         "descriptor (see guest-kernel/include/workload.h)")
    return m.group(1)


def user_image(arch: arches.Arch, source) -> Path:
    """The guest image with a user's C file linked in, built in its own
    directory (build/<arch>-user/<stem>/); returns the image to boot."""
    src = Path(source).resolve()
    if not src.is_file():
        raise UsageError(f"no such workload file: {source}")
    out = Path("build") / f"{arch.name}-user" / src.stem
    with _locked(arch):
        _ensure_image(arch)
        _make(arch, out, f"building {source} into the {arch.name} image",
              f"USER_SRC={src}", f"KOBJ=build/{arch.name}/obj")
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


def instrumented_image(arch: arches.Arch) -> tuple[Path, Path]:
    """The guest image with INSTRUMENTED built with -finstrument-functions
    (build/<arch>-finstrument/); returns (image to boot, ELF with symbols)."""
    out = f"build/{arch.name}-finstrument"
    _make(arch, out, f"building the instrumented {arch.name} image",
          f"INSTRUMENT={' '.join(INSTRUMENTED)}")
    return REPO / out / arch.boot_image, REPO / out / arch.symbols
