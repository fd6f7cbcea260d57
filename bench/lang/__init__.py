"""D, DTrace's language, compiled on the host to the probe-program VM.

    script = parse(text, "calls.d")                 # LangError: file:line:col
    out = compile_script(script, image, mechanism)  # probes, programs, outputs

The guest stays DProbes' machine: it runs only RPN programs it validated
(tracer/core/program_check.c). A script is parsed here (lexer.py,
parser.py: C's operators with C's precedence), its probe descriptions
matched against the image's functions (probes.py), its variables and
arguments checked against the functions' DWARF signatures and the VM's
limits from wire.h, and each group of probes that runs the same clauses
gets one program of RPN text, assembled by bench/program/asm.py — which
refuses what the guest's validator refuses (codegen.py). What the output
needs (aggregations' names, keys and kinds, printf templates) travels with
the programs; output.py prints the tables as DTrace does. Nothing is
armed when anything is refused: every check runs before a guest boots.
"""
