"""The commands, one module or folder each, as library functions the CLI calls and whose reports
`mpsgen.render` shows: `newop` and `migrate` decide each op's plan (`mpsgen.facts.plan`) and write it through `mpsgen.edit.pipeline` (`confirm` plans a
command in memory to tell whether it would complete), `verify/` checks an op's change, `scan` ranks the
checkout's ops, `tryop/` runs a functor against a CPU reference, `trace/` records what a workload calls."""
