"""Host programs built from the guest's own sources: the emulators
(tracer/arch/<arch>/emulate.c) and the framing (tracer/core/frame.c) are
pure C, so the same files compile for the host, where they can be fed
millions of states (bench/check/fuzz*.py) or checked byte for byte
(tests/test_wire.py). They see include/ (wire.h, frame.h: the headers
the guest shares with the host) unless told other directories. Binaries
are cached under build/host/ and rebuilt when any source is newer."""

import subprocess
from pathlib import Path

from ..errors import BuildError
from ..paths import BUILD, REPO

OUT = BUILD / "host"


def build(name: str, sources: list, include_dirs=("include",)) -> Path:
    """Compile sources (repo-relative paths, or absolute ones) into
    build/host/<name>, unless it is newer than all of them."""
    exe = OUT / name
    srcs = [Path(s) if Path(s).is_absolute() else REPO / s for s in sources]
    if exe.exists() and all(exe.stat().st_mtime >= s.stat().st_mtime for s in srcs):
        return exe
    OUT.mkdir(parents=True, exist_ok=True)
    cmd = ["gcc", "-std=gnu11", "-O2", "-Wall", "-Werror",
           *(f"-I{REPO / d}" for d in include_dirs), "-o", str(exe), *map(str, srcs)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"building the host program {name} failed: {' '.join(cmd)}",
                         tail=(proc.stdout + proc.stderr).strip())
    return exe
