"""Editing a checkout: the one pipeline and the file families it runs. `pipeline` writes an op's plan
(`mpsgen.facts.plan.OpPlan`, decided in facts/) by running the steps in order; each family takes text
and the plan's facts and returns a `FileChange`: `dispatch` (native_functions.yaml), `kernel` (the
.metal file), `reduction`, `launcher`, `host` (the .mm file), `params` (params structs, their header and include), `expectations` with `testlists` and
`opinfo` (the test lists), `legacy` (the MPSGraph code migrate removes). `workspace` is the in-memory
overlay a plan is built on, `linemap` moves reported lines through later edits, `clangformat` formats
the added lines once, `templates` the Jinja loader (`mpsgen.facts.templates`), `apply` turns a Plan into a diff, JSON
or an atomic write, `lock` keeps one writer per checkout."""
