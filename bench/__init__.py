"""bench — the host side of the trap-and-emulate probe test bench.

Run as `python3 -m bench <subcommand>` from the repository root (see
`python3 -m bench --help`). The rooms, roughly in the order data flows
through them (docs/DESIGN.md); no module imports one that imports it back, not
even lazily (tests/test_imports.py walks them):

  paths, errors   where things are; the errors and exit statuses
  wire/           what crosses the serial line, read from the C headers
  arches          every host-side fact about an arch, in one table
  guest/          images (make) and guests under a backend (QEMU, libvirt)
  trace/          ELF → probe sites → a traced run → records → verdicts
  check/          check mode: each emulation re-run in unicorn
  program/        probe programs: assembler, templates, aggregations
  lang/           D scripts compiled to probe programs (bench trace)
  debug/          QEMU's GDB stub: make debug, the gdb extension, RSP
  export/         CTF traces, saved runs read back, call timelines
  suite/          what runs many guests: self-tests, matrix, make bench
  parser, cli     the command line's grammar, and its entry (main)
  commands/       each subcommand's code, grouped by job (run, trace, suite, ...)
"""
