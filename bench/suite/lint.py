"""make lint as one row of make check's summary.

ci/lint.py is a standalone script (make lint runs it without the harness),
so it runs here as a process: its lines are echoed as they are, and each
of its rules counts as one check, passed with no finding and failed with
any. A lint that could not run at all (no per-rule lines, or an exit
status other than 0 or 1) is one failure.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ..paths import REPO

LINT = REPO / "ci" / "lint.py"
RULE_LINE = re.compile(r"^lint: rule \S+: (\d+) findings$", re.M)


def row(root: Path = REPO) -> tuple[str, int, int, int]:
    """(what, passed, failed, skipped) for check's summary."""
    print("== lint (ci/lint.py)", flush=True)
    res = subprocess.run([sys.executable, str(LINT), "--root", str(root)],
                         capture_output=True, text=True, timeout=300)
    print(res.stdout + res.stderr, end="", flush=True)
    counts = [int(n) for n in RULE_LINE.findall(res.stdout)]
    if res.returncode not in (0, 1) or not counts:
        return ("lint", 0, 1, 0)
    failed = sum(1 for n in counts if n)
    return ("lint rules", len(counts) - failed, failed, 0)
