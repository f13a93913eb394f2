"""What mpsgen knows and decides about an op, from what `mpsgen.read` read: `views` is the one model
of an op (`Views`, each file's parsed views built once per text; `read_op` -> `OpFacts`), `rules` the
dtype and test-list rules every command shares, `catalog` the built-in functor bodies, `params` the
facts of a params op (`ParamsSpec`), `resolve` the refusals in one place (`resolve_op` -> `OpSpec`, or
a `Refusal` saying why and what to do), `plan` an op's whole plan decided once (`plan_for` -> `OpPlan`:
the body with `bodies` and `functor`, the groups, the registrations with `choice`, a params kernel with
`paramskernel`, the test-list verdicts with `testplan`). Nothing here edits a file."""
