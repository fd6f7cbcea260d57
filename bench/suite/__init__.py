"""Suites: what runs many guests and judges them.

  selftest  the guest's self-tests, judged without trusting one signal
  matrix    the correctness matrix (ci/matrix.cfg), cells in parallel
  hosts     the libvirt hosts the matrix places cells on
  perf      `make bench`: the seeds' experiments, table, JSON, plots
  junit     JUnit XML out and in
  tap       TAP 13 out
"""
