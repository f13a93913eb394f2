"""Metal without a Mac: a .metal file compiled by the host C++ compiler against mpsgen's Metal
prelude (`include/`, package data). `rewrite` makes the same-line rewrites the host compiler needs,
`compiler` finds and runs it and parses its diagnostics, `check` gives a file's `CompileResult`, and
`owners` says which functor a diagnostic belongs to."""
