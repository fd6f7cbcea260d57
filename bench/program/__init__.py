"""Probe programs, host side (seed 002's RPN handlers, wire.h's contract).

  asm        RPN text into the guest's bytecode, refused with file:line:col
  templates  the formatter: LOG records by major/minor templates, or a dump
  aggregate  AGGS frames merged across CPUs, printed as tables and histograms
  load       a compiled program into a guest's slot, attached to probes

Example programs and templates live in bench/programs/.
"""
