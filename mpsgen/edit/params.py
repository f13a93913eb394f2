"""Stubs whose extra parameters are several Scalars, bools or optional doubles (softplus, threshold,
hardtanh_backward, nan_to_num, ...). They reach the kernel as one params struct, declared in a header
shared by the host and the Metal code (`mps/kernels/<Family>.h`), as upstream's elu does:

    template <typename T>
    struct SoftplusParams {
      T beta;
      T threshold;
    };

The functor takes `(const T x, const SoftplusParams<T> params)` (binary: `(a, b, params)`), a small
macro of the kernel file typedefs `SoftplusParams<T>` per dtype and instantiates the c10 alpha
kernels with it, and the host kernel fills the struct in the common dtype and calls
`exec_{unary,binary}_kernel_with_params`.

The model (`ParamsSpec`, built from the stub and the schema) is `mpsgen.facts.params`; the kernel
(body, groups, functor text, registrations, registration macro) is decided by
`mpsgen.facts.paramskernel`. This module writes what only params ops have: the struct in the
header, the header's `#include` in the `.metal` and `.mm` files, and the host function. The rest
goes through the shared pipeline.
"""

from __future__ import annotations

import re

from mpsgen.edit.workspace import Workspace
from mpsgen.facts.params import EXEC_WITH_PARAMS, ParamsSpec
from mpsgen.facts.paramskernel import CATALOG_PARAMS_GROUPS, DISPATCH_MACROS
from mpsgen.model import Change, FileChange, Location, Note
from mpsgen.read.checkout import KERNELS_DIR
from mpsgen.read.cpp import mask_code, match_brace
from mpsgen.textedit import LineIndex, newline_of, replace_spans

_STRUCT = re.compile(r"\bstruct\s+(\w+)\s*(?::[^{;]*)?\{")
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"]+)[>\"][^\n]*$", re.M)
_PP_OPEN = re.compile(r"^[ \t]*#[ \t]*if(?:n?def)?\b")
_PP_CLOSE = re.compile(r"^[ \t]*#[ \t]*endif\b")


def host_parameters(iterator_type: str, spec: ParamsSpec) -> list[str]:
    """The host kernel's parameters: the stub's declared types, named after the schema."""
    return [f"{iterator_type} iter"] + [f"{f.declared} {f.name}" for f in spec.fields]


def host_signature(iterator_type: str, spec: ParamsSpec) -> str:
    return ", ".join(host_parameters(iterator_type, spec))


# ---- the header ----------------------------------------------------------------------------------


def plan_header(ws: Workspace, templates, spec: ParamsSpec) -> FileChange:
    """The family's header with the struct added after its last struct (or the header created with
    the conventions of the other kernels/*.h headers); a struct of that name already there is kept."""
    struct_text = templates.render("params_struct.h.j2", struct=spec.struct, fields=spec.fields)
    rel = spec.header
    declared = re.compile(rf"\bstruct\s+{re.escape(spec.struct)}\b")
    if not ws.exists(rel):
        after = _new_header(ws, struct_text)
        detail = f"struct {spec.struct} (new header)"
    else:
        text = ws.read(rel)
        masked = mask_code(text)
        existing = declared.search(masked)
        if existing:
            where = Location(rel, masked.count("\n", 0, existing.start()) + 1)
            return FileChange(rel, text, notes=(Note("kept", f"struct {spec.struct} already exists; kept as is", where),))
        newline = newline_of(text)
        body = struct_text.replace("\n", newline)
        ends = _struct_ends(masked)
        if ends:
            anchor, insert = ends[-1], newline + body
        else:
            anchor = _before_wrapper_else(masked)
            if anchor < len(text):
                insert = body + newline
            else:
                ending = "" if not text or text.endswith(("\n", "\r")) else newline
                insert = ending + (newline if text.strip() else "") + body
        after = replace_spans(text, [(anchor, anchor, insert)])
        detail = f"struct {spec.struct}"
    where = declared.search(mask_code(after)).start()
    return FileChange(rel, after, (Change("params-struct", Location(rel, after.count("\n", 0, where) + 1), detail),))


def _struct_ends(masked: str) -> list[int]:
    """Offsets just past the line of each top-level struct definition's closing `};`."""
    out = []
    pos = 0
    while True:
        match = _STRUCT.search(masked, pos)
        if not match:
            return out
        close = match_brace(masked, match.end() - 1)
        if close < 0:
            return out
        end = masked.find("\n", close)
        end = len(masked) if end < 0 else end + 1
        out.append(end)
        pos = end


def _before_wrapper_else(masked: str) -> int:
    """Where a header wrapped in `#if ... #pragma once ... #else #error ... #endif` ends its code:
    the start of its last `#else` line (the end of the text when it has no such wrapper)."""
    first = re.search(r"^[ \t]*#[ \t]*(\w+)", masked, re.M)
    elses = list(re.finditer(r"^[ \t]*#[ \t]*else\b", masked, re.M))
    if first is None or not first.group(1).startswith("if") or not elses:
        return len(masked)
    return elses[-1].start()


def _new_header(ws: Workspace, struct_text: str) -> str:
    """A header in the style of the checkout's other kernels/*.h headers: the same lines up to and
    including `#pragma once`, and the same closing lines when they wrap the code in an `#if`."""
    for rel in ws.checkout.glob(KERNELS_DIR, "*.h"):
        text = ws.read(rel)
        pragma = re.search(r"^[ \t]*#[ \t]*pragma[ \t]+once[^\n]*\n", text, re.M)
        if not pragma:
            continue
        newline = newline_of(text)
        prologue = text[: pragma.end()]
        epilogue = ""
        if re.search(r"^[ \t]*#[ \t]*if", prologue, re.M):
            wrapper_else = _before_wrapper_else(mask_code(text))
            if wrapper_else == len(text):
                continue
            epilogue = newline + text[wrapper_else:]
        return prologue + newline + struct_text.replace("\n", newline) + epilogue
    return "#pragma once\n\n" + struct_text


# ---- includes ------------------------------------------------------------------------------------


def plan_include(text: str, rel: str, header: str) -> FileChange:
    """`#include <header>` in the first top-level include block of `rel` (its `text`): at its
    sorted place when the block is sorted, else after its last line. Nothing when the file includes
    it already."""
    masked = mask_code(text)
    found = list(_includes(text, masked))
    if any(m.group(2) == header for m, _ in found):
        return FileChange(rel, text)
    newline = newline_of(text)
    index = LineIndex(text)
    block = _first_block(found, index)
    line_text = f"#include <{header}>{newline}"
    if not block:
        pragma = re.search(r"^[ \t]*#[ \t]*pragma[ \t]+once[^\n]*\n", text, re.M)
        anchor = pragma.end() if pragma else 0
    else:
        names = [m.group(2) for m in block]
        if names == sorted(names):
            after = [m for m in block if m.group(2) < header]
            anchor = index.end_of(index.line_of(after[-1].start())) if after else index.start_of(index.line_of(block[0].start()))
        else:
            anchor = index.end_of(index.line_of(block[-1].start()))
    line = index.line_of(anchor) if anchor < len(text) else index.line_count + 1
    return FileChange(rel, replace_spans(text, [(anchor, anchor, line_text)]),
                      (Change("include", Location(rel, line), f"#include <{header}>"),))


def _includes(text: str, masked: str):
    """Each `#include` (outside comments) with the depth of the `#if` blocks around it."""
    depth = 0
    offset = 0
    for raw, code in zip(text.split("\n"), masked.split("\n")):
        if _PP_OPEN.match(code):
            depth += 1
        elif _PP_CLOSE.match(code):
            depth = max(0, depth - 1)
        elif code.lstrip().startswith("#"):
            match = _INCLUDE.match(text, offset, offset + len(raw))
            if match:
                yield match, depth
        offset += len(raw) + 1


def _first_block(found, index: LineIndex):
    """The first run of top-level includes on consecutive lines."""
    block = []
    for match, depth in found:
        if depth:
            if block:
                break
            continue
        if block and index.line_of(match.start()) != index.line_of(block[-1].start()) + 1:
            break
        block.append(match)
    return block


# ---- the Metal side ------------------------------------------------------------------------------


# ---- the kernel: resolve, choose the body, plan every file ---------------------------------------


def render_host_kernel(templates, *, function: str, iterator_type: str, kernel_name: str, params: ParamsSpec) -> str:
    complex_ = "complex" in params.groups
    inits = [i for f in params.fields for i in f.host_inits]
    if complex_:  # complex kernels take the struct for float
        inits = [re.sub(r"\bscalar_t\b", "value_t", i) for i in inits]
    return templates.render(
        "params_host_kernel.mm.j2", function=function, parameters=host_parameters(iterator_type, params),
        struct=params.struct, inits=inits, complex=complex_,
        dispatch=DISPATCH_MACROS[tuple(g for g in CATALOG_PARAMS_GROUPS if g in params.groups)],
        exec_function=EXEC_WITH_PARAMS[params.arity], kernel_name=kernel_name,
    )


# ---- scan ----------------------------------------------------------------------------------------


