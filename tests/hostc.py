"""Build small host C programs from tests/c against the guest's own sources
(same files, host compiler), caching the binary under build/host/."""

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "host"


def build(name: str, sources: list, include_dirs=("tracer/include",)) -> Path:
    """Compile sources (repo-relative paths, or absolute ones) into
    build/host/<name>, unless it is newer than all of them."""
    exe = OUT / name
    srcs = [Path(s) if Path(s).is_absolute() else REPO / s for s in sources]
    if exe.exists() and all(exe.stat().st_mtime >= s.stat().st_mtime for s in srcs):
        return exe
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-Wall", "-Werror",
                    *(f"-I{REPO / d}" for d in include_dirs), "-o", str(exe),
                    *map(str, srcs)], check=True)
    return exe
