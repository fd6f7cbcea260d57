"""Broken on purpose for the pyflakes rule: an import nothing uses."""

import os


def answer() -> int:
    return 42
