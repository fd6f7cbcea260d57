"""Check mode, host half: every emulation re-executed in an independent
model (python3-unicorn) and compared field by field.

  report       CheckReport, what a check found (both arches)
  i386         IA-32 CHECK records against unicorn (ref_i386's model)
  i386_opt     opt's CHECK records: the displaced run over a stack window
  i386_ool     out-of-line slots' CHECK records: the copied instruction
  x86_unicorn  the unicorn instance both i386 site checkers share
  sparc64      SPARC V9 CHECK records against unicorn (ref_sparc64's model)
  sparc64_ool  out-of-line slots' CHECK records: the copied word
  sparc64_watch  watched accesses' CHECK records
  ref_i386     unicorn's x86-32 as a reference for the emulated forms
  ref_sparc64  unicorn's SPARC64 as a reference, with its gaps bridged
"""
