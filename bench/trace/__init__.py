"""Tracing, host side: from the ELF to probe sites, from records to verdicts.

  image    the guest ELF: functions, instructions, arguments (objdump, DWARF)
  rules    where each arch's fbt and branch probes go (arches.Arch.sites)
  sites    probe specs (fbt:FUNC:entry, branch:FUNC) into numbered probes
  session  a traced run: probes into the guest, the capture back
  verify   counts, nesting, drops: the Report
  format   the ctrace-like text trace and the per-function summary
  stress   the lossless and toggle stresses
  itrace   instruction traces: ITRACE records (single-step) into regions
  itrace_branches  sparc64's regions, rebuilt from branch records
  qemuref  QEMU's -singlestep exec log as the independent reference
  itrace_run  `bench itrace`: both boots, the listing, the figures
"""
