"""Check mode, host half: every emulation re-executed in an independent
model (python3-unicorn) and compared field by field.

  report       CheckReport, what a check found (both arches)
  i386         IA-32 CHECK records against unicorn (ref_i386's model)
  i386_opt     opt's CHECK records: the displaced run over a stack window
  sparc64      SPARC V9 CHECK records against unicorn (ref_sparc64's model)
  ref_i386     unicorn's x86-32 as a reference for the emulated forms
  ref_sparc64  unicorn's SPARC64 as a reference, with its gaps bridged
"""
