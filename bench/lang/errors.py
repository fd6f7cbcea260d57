"""A script's errors as a compiler prints them.

    calls.d:1:22: unknown variable 'arg99'
        fbt::fib:entry { @[arg99] = count(); }
                           ^

LangError is a UsageError (exit status 2: nothing ran). Every check of
the language raises it with the place of the token at fault.
"""

from __future__ import annotations

from ..errors import UsageError


class LangError(UsageError):
    """A script refused: file:line:col: message, the line, a caret."""

    def __init__(self, path: str, text: str, pos: int, message: str):
        line = text.count("\n", 0, pos) + 1
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        src = text[start:end if end >= 0 else len(text)]
        col = pos - start + 1
        self.where = f"{path}:{line}:{col}"
        self.what = message
        super().__init__(f"{self.where}: {message}\n    {src.expandtabs(1)}\n"
                         f"    {' ' * (col - 1)}^")
