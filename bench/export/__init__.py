"""Exports: decoded records into what other tools and eyes read. They read
a Capture (bench/wire/records.py), never the raw stream.

  ctf       a CTF 1.8 trace (babeltrace2, Trace Compass) through python3-bt2
  logs      a saved run (build/logs/NAME.serial + .log) back into a capture
  timeline  per-CPU call timelines as PNG pictures (matplotlib)
"""
