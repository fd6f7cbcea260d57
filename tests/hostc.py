"""Build small host C programs from tests/c against the guest's own sources
(same files, host compiler), caching the binary under build/host/."""

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "host"


def build(name: str, sources: list[str]) -> Path:
    exe = OUT / name
    srcs = [REPO / s for s in sources]
    if exe.exists() and all(exe.stat().st_mtime >= s.stat().st_mtime for s in srcs):
        return exe
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-Wall", "-Werror",
                    f"-I{REPO / 'tracer/include'}", "-o", str(exe),
                    *map(str, srcs)], check=True)
    return exe
