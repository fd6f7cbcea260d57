"""The correctness matrix: cells read from ci/matrix.cfg, run in parallel.

One import for the matrix's three jobs, each in a module of its own:
matrix_plan.py reads ci/matrix.cfg into Cells (every key checked, the file
and line named when one is wrong) and selects a group's cells by arch and
name; matrix_run.py runs them as parallel `python3 -m bench` processes,
here or on libvirt hosts; matrix_report.py holds the Outcomes a run leaves
and tells them as a table (summary_lines), JUnit XML and TAP.

A cell passes when its command exits 0. `xfail = TEXT` marks a cell that
is known to fail, and how: it is an expected failure only if it fails and
its output contains TEXT; a different failure is a failure, and a pass is
an unexpected pass (XPASS), which fails the run so the marker is removed.
"""

from __future__ import annotations

from .matrix_plan import (KEYS, KINDS, MATRIX_FILE, Cell, MatrixError, load,
                          parse, select)
from .matrix_report import MatrixResult, Outcome, summary_lines
from .matrix_run import OUT_DIR, bench_argv, on_host, run

__all__ = ["KEYS", "KINDS", "MATRIX_FILE", "Cell", "MatrixError", "load", "parse",
           "select", "MatrixResult", "Outcome", "summary_lines", "OUT_DIR",
           "bench_argv", "on_host", "run"]
