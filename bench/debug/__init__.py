"""Debugging through QEMU's GDB stub.

  debugger   `make debug`: a paused guest, gdb-multiarch attached
  gdbext     the `tb` commands, run inside gdb
  gdbread    what they read: probe table, rings, records (inside gdb)
  rsp        the harness's own Remote Serial Protocol client
  sitecheck  probe sites read through the stub (run --stub-check)
"""
