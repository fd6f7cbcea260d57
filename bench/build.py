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
