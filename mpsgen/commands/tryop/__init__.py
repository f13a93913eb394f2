"""`mpsgen try OP`: run the op's functor, as it stands in the checkout, and compare it with a CPU
reference. `lookup` finds the functor and its registrations, `values` makes the inputs, `scalars` the
scalar sets of alpha and params kernels, `source` the shader source (the same for the MPS path and the
host driver), `run` runs either path, `reference` and `references` compute what torch's CPU op or the
catalog gives, `tolerances` reads the OpInfo's MPS tolerances, `compare` judges, and `api` puts it
together (`try_op`, `try_source` for `--show-source`)."""
