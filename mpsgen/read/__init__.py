"""Reading a checkout: each file kind as text in, plain data out, nothing decided about an op.
`checkout` finds the root and reads files (`Texts` is what every reader takes); `nfyaml` reads
native_functions.yaml, `stubs` the stub headers, `cpp` scans C++/Objective-C++/Metal text (comments and
literals masked, braces matched, definitions found), `kernelfile` a .metal file's literal functors and
registration lines, `metalread` the same file as the compiler reads it (pcpp), `metalhost/` the host
compiler's verdict on it, `c10lib` the `c10::metal` functions the headers define, `pylists`,
`testlists` and `opinfo` the test lists and OpInfos (`cache` keeps the OpInfo index between runs),
`gitstate` which files git sees changed. Imports only `mpsgen.errors`, `mpsgen.model`, `mpsgen.dtypes`
and `mpsgen.textedit` besides itself."""
