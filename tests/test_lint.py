"""ci/lint.py, rule by rule, on the two trees in tests/lint_fixtures/: each
rule must fail on broken/, naming every offence planted there (so a rule
that stops looking is caught), and pass on clean/, which holds the forms a
rule must not mistake for offences. The tool runs as `make lint` does, as a
process, and is judged by its exit status and its lines."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT = REPO / "ci" / "lint.py"
FIXTURES = REPO / "tests" / "lint_fixtures"

# rule -> the lines it must print on broken/ (each a FILE:LINE: prefix and
# the words that say what is wrong).
BROKEN = {
    "pyflakes": [
        "bench/unused_import.py:3:1: 'os' imported but unused",
    ],
    "shellcheck": [
        "ci/ls_loop.sh:3:10: error: Iterating over ls output is fragile",
    ],
    "arch-ifdef": [
        "tracer/core/arch_test.c:3: #ifdef tests an arch by name (__sparc__)",
        "tracer/core/arch_test.c:5: #elif tests an arch by name (ARCH_I386)",
        "guest-kernel/include/arch_test.h:4: #if tests an arch by name (__x86_64__)",
    ],
    "paths": [
        "docs/page.md:3: names bench/missing.py, which does not exist",
        "docs/page.md:3: names bench/programs/*.rpn, which does not exist",
        "docs/page.md:4: names tracer/arch/<arch>/fire.c, which does not exist "
        "(tracer/arch/sparc64/fire.c)",
        "docs/page.md:5: links to other.md, which does not exist (docs/other.md)",
        "bench/names_missing.py:2: names bench/gone.py, which does not exist",
        "bench/names_missing.py:4: names bench/gone_too.py, which does not exist",
        "tracer/core/names_missing.c:2: names tracer/core/gone.c, which does not exist",
        "tracer/core/names_missing.c:3: names tracer/core/gone.c, which does not exist",
        "guest-kernel/names_missing.mk:1: names tracer/gone/, which does not exist",
    ],
}


def lint(tree: str, *rules: str) -> subprocess.CompletedProcess:
    args = [sys.executable, str(LINT), "--root", str(FIXTURES / tree)]
    for r in rules:
        args += ["--rule", r]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_rule_fails_on_its_broken_fixture(rule):
    res = lint("broken", rule)
    lines = res.stdout.splitlines()
    assert res.returncode == 1, res.stdout + res.stderr
    for want in BROKEN[rule]:
        assert any(line.startswith(want) for line in lines), \
            f"{rule} did not report {want!r}; it printed:\n{res.stdout}"
    findings = [l for l in lines if not l.startswith("lint: ")]
    assert len(findings) == len(BROKEN[rule]), \
        f"{rule} reported more than was planted:\n{res.stdout}"
    assert lines[-1] == f"lint: 1 rules, {len(BROKEN[rule])} findings"


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_rule_passes_on_the_clean_fixture(rule):
    res = lint("clean", rule)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines() == [f"lint: rule {rule}: 0 findings",
                                       "lint: 1 rules, 0 findings"]


def test_every_rule_by_default_and_the_summary_counts_them():
    res = lint("broken")
    total = sum(len(v) for v in BROKEN.values())
    assert res.returncode == 1
    assert res.stdout.splitlines()[-1] == f"lint: {len(BROKEN)} rules, {total} findings"
    assert lint("clean").stdout.splitlines()[-1] == f"lint: {len(BROKEN)} rules, 0 findings"


def test_a_root_that_is_not_a_directory_is_bad_usage():
    res = subprocess.run([sys.executable, str(LINT), "--root", str(FIXTURES / "nowhere")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "not a directory" in res.stderr


def test_make_check_counts_each_rule_as_a_check(capsys):
    from bench.suite import lint as check_lint
    assert check_lint.row(FIXTURES / "broken") == ("lint rules", 0, len(BROKEN), 0)
    assert check_lint.row(FIXTURES / "clean") == ("lint rules", len(BROKEN), 0, 0)
    assert "lint: rule paths: 0 findings" in capsys.readouterr().out
