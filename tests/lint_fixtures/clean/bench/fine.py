"""Clean for every rule: imports it uses, and prose naming what exists
(bench/fine.py, bench/fine.Thing, ci/fine.sh, images/i386.elf: generated)."""

import os


class Thing:
    """Where it runs: os.getcwd(), see tracer/arch/<arch>/fire.c."""

    where = os.getcwd()
