"""`make bench`: the seeds' experiments side by side, measured in one run.

  plan        the boots and the experiments in each, in order (start here)
  core        the run's state: figures, sizes, targets, timings, boots
  dprobes     DProbes' five experiments and probecost
  lang        a compiled D one-liner against RPN by hand; self-> per firing
  firepath    the fire path's cost stage by stage, the out-of-line path
  watch       the cost of a watch firing
  channels    the drain against the raw channel; the sustained run
  fbt         function-boundary tracing vs -finstrument-functions
  paired      calltree probed vs hooked, two guests up, runs alternating
  scaling     firings/s by vCPUs against the bare trap's
  kernel      every kernel function probed
  interrupts  seed 003: the tracer's own TLB misses and faults
  table, plots, command   what the run prints and writes

`run(arch, reps=, small=)` is the command; small: few iterations.
"""

from .command import run

__all__ = ["run"]
