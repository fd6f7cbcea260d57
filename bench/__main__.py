"""`python3 -m bench`: first make sure this Python can see the packages the
bench is built on, then hand over to bench/cli.py.

The bench uses Debian's python3-* packages (python3-pyelftools,
python3-unicorn, python3-capstone, python3-bt2), which apt installs for
/usr/bin/python3 alone. Another python3 found first on PATH (pyenv, a
venv, /usr/local) cannot import them, and without this check it would die
in a traceback about `elftools` from deep inside an import. So before any
of the bench's modules is imported, the packages every command needs are
looked up (find_spec: found, not imported) and, if one is missing, one
line says which Python to use and why, with exit status 2 (bad usage:
nothing ran; bench/errors.py)."""

import importlib.util
import sys

from .errors import EXIT_USAGE     # errors.py imports nothing third-party

# Imported by the harness itself at start-up (elftools) or by its checkers
# (unicorn, capstone); bt2 is needed by CTF export alone.
REQUIRED = ("elftools", "unicorn", "capstone")


def missing_packages() -> list[str]:
    return [m for m in REQUIRED if importlib.util.find_spec(m) is None]


def wrong_python_line(missing: list[str]) -> str:
    return (f"error: {sys.executable} cannot import {', '.join(missing)}: run "
            "the bench with Debian's /usr/bin/python3 (`/usr/bin/python3 -m "
            "bench ...`), the only Python that sees the python3-* packages it "
            "needs (python3-pyelftools, python3-unicorn, python3-capstone, "
            "python3-bt2)")


if __name__ == "__main__":
    _missing = missing_packages()
    if _missing:
        print(wrong_python_line(_missing), file=sys.stderr)
        sys.exit(EXIT_USAGE)

    from .cli import main

    sys.exit(main())
