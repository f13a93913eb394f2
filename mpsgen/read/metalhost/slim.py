"""A try program built with only what it runs: the kernel file's registrations of other functors
declared, not instantiated.

A kernel file registers every functor it defines for every dtype (`REGISTER_*` macros expanding to
explicit template instantiations of `unary_dense`, `binary_strided`, ...: UnaryKernel.metal has
~1900); the try kernels call one functor directly and need none of them. Generating code for them
is most of what building a try program costs (2.13's UnaryKernel.metal: ~5 s of g++ at -O0, ~1 s
without them). `declare_only` makes each explicit instantiation that does not name the tried
functor an explicit instantiation declaration (`extern template`): nothing is generated for it,
and the program means the same (a declaration a try kernel did need fails the link, and the caller
builds the program whole instead). The tried functor's own registrations stay definitions, so its
templates are instantiated for exactly the types the whole program instantiates (its branch
coverage counts the same instantiations).

The text is the compiler's preprocessed output (`g++ -E`: the registrations are macro expansions),
whose line markers keep every line attributed to its file and line. Whether the whole program
compiles is asked separately (`-fsyntax-only` on the program as written: every instantiation
checked, the diagnostics a full build gives)."""

from __future__ import annotations

import re

from mpsgen.read.cpp import mask_code

# `template` not followed by `<`: an explicit instantiation (a template declaration or an explicit
# specialisation has `template <`); `x.template f<T>()` and `T::template f` follow `.`, `>` or `::`
_TEMPLATE = re.compile(r"\btemplate\b(?!\s*<)")
_MARKER = re.compile(r"^[ \t]*#[^\n]*", re.M)


def declare_only(preprocessed: str, functor: str) -> tuple[str, int]:
    """`preprocessed` with every explicit instantiation definition at namespace scope that does not
    name `<functor>_functor` turned into a declaration (`extern template ...;`), and how many."""
    masked = _MARKER.sub(lambda m: " " * len(m.group(0)), mask_code(preprocessed))
    keep = re.compile(rf"\b{re.escape(functor)}_functor\b")
    out: list[str] = []
    done = count = 0
    for m in _TEMPLATE.finditer(masked):
        i = m.start() - 1
        while i >= 0 and masked[i] in " \t\r\n":
            i -= 1
        if i >= 0 and masked[i] not in ";{}":
            continue  # not the start of a declaration (`extern template`, `::template`, `.template`)
        end = masked.find(";", m.end())
        if end < 0:
            break
        if keep.search(masked, m.end(), end):
            continue
        out.append(preprocessed[done : m.start()])
        out.append("extern ")
        done = m.start()
        count += 1
    out.append(preprocessed[done:])
    return "".join(out), count
