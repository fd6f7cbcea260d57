"""bench — the host side of the trap-and-emulate probe test bench.

Run as `python3 -m bench <subcommand>` from the repository root (see
`python3 -m bench --help`). Modules, in the order data flows through them:
build (images) → machine (QEMU + serial) → wire (frames, from wire.h via
cdefs) → selftest/cli (judging and reporting).
"""
