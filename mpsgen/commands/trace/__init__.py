"""`mpsgen trace`: which ATen ops a workload calls, and which of them still go through MPSGraph.
`recorder` runs a Python script in-process (`runpy`, `sys.argv` set) under a `TorchDispatchMode` that
counts every ATen overload called per input signature (the shapes and dtypes of its tensor inputs);
a `Recording` is plain data, saved and loaded as JSON (`--save`, `--ops-file`), and needs torch.
`analysis` turns a recording and the checkout's facts (`mpsgen.commands.scan.scan_checkout`: each
entry's MPS backing, each op's candidate tier) into a `TraceReport`, one row per overload called,
without torch. Renderers live in `mpsgen.render.trace_*`."""
