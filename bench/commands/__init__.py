"""The subcommands of `python3 -m bench`, grouped by job.

run.py (trace a workload; inputs.py settles its arguments before anything
boots, watch.py is its --watch), trace.py (itrace, lossless, toggle),
suite.py (check, selftest, matrix, bench, fuzz, boot-time, avoid),
export.py (a saved run as CTF, text or timelines) and tools.py (cmd,
image, daemon). Each cmd_* takes the parsed arguments (bench/parser.py)
and returns an exit status; bench/cli.py maps subcommands to them.
"""
