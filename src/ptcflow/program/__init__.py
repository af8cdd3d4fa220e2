"""The program host: runs a RunProgram (PTC-Lisp in, ProgramOutput out)."""
