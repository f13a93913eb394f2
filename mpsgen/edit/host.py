"""Host files (`operations/*.mm`): the kernel function that calls the Metal library and the
`REGISTER_DISPATCH` line, written in the file's own conventions."""

from __future__ import annotations

import re

from mpsgen.edit.params import host_signature, render_host_kernel
from mpsgen.edit.templates import Templates
from mpsgen.errors import MpsgenError
from mpsgen.facts.views import HostView, Registration, helper_macros
from mpsgen.model import Change, FileChange, Location, Note
from mpsgen.read.cpp import mask_code, match_brace
from mpsgen.textedit import LineIndex, newline_of, replace_spans

_STATIC_FN = re.compile(r"^static\s+void\s+(\w+)\s*\(", re.M)
_NAMESPACE_END = re.compile(r"^\}\s*//\s*namespace\s+at::native\b.*$", re.M)

EXEC_FUNCTIONS = {1: "exec_unary_kernel", 2: "exec_binary_kernel", 3: "exec_ternary_kernel"}


def find_helper_macro_uses(text: str, macro: str) -> list[tuple[str, int]]:
    masked = mask_code(text)
    return [
        (m.group(1), m.end())
        for m in re.finditer(rf"^{macro}\((\w+)\)\s*;?[ \t]*\r?$", masked, re.M)
    ]


def plan_host(text: str, templates: Templates, path: str, *, stub: str, functor: str, arity: int,
              alpha: bool, iterator_type: str, kernel_stem: str, registered: list, params=None,
              alpha_name: str = "alpha", function: str = "", scalar_type: str = "") -> FileChange:
    """The host file's `text` with the kernel function and its REGISTER_DISPATCH added, unless the
    stub is already registered (`registered`: its MPS registrations, `mpsgen.facts.views.Views.registrations`).
    `params` (a `params.ParamsSpec`): the stub takes several scalars, passed as a params struct.
    `function`: the kernel function's name stem when it is not the functor's (a functor compiled
    under another name: `conj_physical_kernel` launching `copy_conj`). `scalar_type`: the
    launcher's scalar_arg_type the call passes after alpha (a ternary op's op-math type), "" none."""
    if registered:
        where = registered[0]
        note = Note("kept", f"{stub} is already registered for MPS ({where.function}); kept as is", where.location)
        return FileChange(path, text, notes=(note,))
    newline = newline_of(text)
    masked = mask_code(text)
    index = LineIndex(text)
    exec_fn = EXEC_FUNCTIONS[arity]

    # A file whose helper macro does exactly this (same exec function, same iterator type, no alpha).
    if not alpha and params is None:
        for macro, param, body in helper_macros(text):
            if exec_fn in body and iterator_type.rstrip("&") + "&" in body.replace(" &", "&") and stub == f"{functor}_stub":
                uses = find_helper_macro_uses(text, macro)
                if uses:
                    last_end = max(end for _, end in uses)
                    last_line = index.line_of(last_end - 1)
                    anchor = index.end_of(last_line)
                    semicolon = ";" if text[index.start_of(last_line):anchor].rstrip().endswith(";") else ""
                    line = f"{macro}({functor}){semicolon}{newline}"
                    change = Change("host-stub", Location(path, index.line_of(anchor)), f"{macro}({functor}) registers {stub}")
                    return FileChange(path, replace_spans(text, [(anchor, anchor, line)]), (change,))

    registrations = HostView.read(text, path).direct_registrations()
    function_name = f"{function or functor}{function_suffix(registrations)}"
    if params is not None:

        signature = host_signature(iterator_type, params)
        function_text = render_host_kernel(templates, function=function_name, iterator_type=iterator_type,
                                           kernel_name=functor, params=params)
    else:
        signature = f"{iterator_type} iter{f', const Scalar& {alpha_name}' if alpha else ''}"
        function_text = templates.render(
            "host_kernel.mm.j2",
            function=function_name,
            iterator_type=iterator_type,
            exec_function=exec_fn,
            kernel_name=functor,
            alpha=alpha,
            alpha_name=alpha_name,
            scalar_type=scalar_type,
        )
    semicolon, ampersand = dispatch_style(text, registrations)
    register_text = templates.render("register_dispatch.mm.j2", stub=stub, function=function_name,
                                     semicolon=semicolon, ampersand=ampersand)
    if newline != "\n":
        function_text = function_text.replace("\n", newline)
        register_text = register_text.replace("\n", newline)

    spans = []
    if registrations:
        first_register = index.start_of(registrations[0].location.line)
        functions_before = [m for m in _STATIC_FN.finditer(masked, 0, first_register)]
        # a backward kernel goes right after its forward one (function and registration) when the
        # file has it; anything else after the file's last kernel and last registration
        forward = _forward_neighbour(stub, registrations, functions_before)
        register_after = forward[1] if forward else registrations[-1]
        anchor = first_register
        if functions_before:
            last = forward[0] if forward else functions_before[-1]
            brace = masked.find("{", last.end())
            close = match_brace(masked, brace) if brace >= 0 else -1
            if 0 <= close < first_register:
                anchor = index.end_of(index.line_of(close))
                spans.append((anchor, anchor, newline + function_text))
            else:
                spans.append((anchor, anchor, function_text + newline))
        else:
            spans.append((anchor, anchor, function_text + newline))
        last_register = index.end_of(register_after.location.line)
        spans.append((last_register, last_register, register_text))
        function_line = index.line_of(anchor) + 1
        register_line = register_after.location.line + 1
    else:
        # No native section yet: open one before the namespace closes.
        ends = [m for m in _NAMESPACE_END.finditer(text) if masked[m.start()] == "}"]
        if not ends:

            raise MpsgenError(
                f"cannot find where `namespace at::native` closes in {path}",
                location=Location(path, index.line_count),
                hint="end the namespace with `} // namespace at::native`, or pass another --host-file",
            )
        anchor = index.start_of(index.line_of(ends[-1].start()))
        # the section stands apart from the code above it, by a blank line, as PyTorch's files do
        block = newline if anchor > 0 and text[index.start_of(index.line_of(anchor - 1)) : anchor].strip() else ""
        if "getBundledLibrary" not in masked:
            block += templates.render("metal_library.mm.j2", kernel_stem=kernel_stem) + newline
        block += function_text + newline + register_text + newline
        spans.append((anchor, anchor, block.replace("\n", newline) if newline != "\n" else block))
        function_line = register_line = index.line_of(anchor)
    changes = (
        Change("host-stub", Location(path, function_line), f"static void {function_name}({signature})"),
        Change("register", Location(path, register_line), register_text.strip()),
    )
    return FileChange(path, replace_spans(text, spans), changes)


def _forward_neighbour(stub: str, registrations: list[Registration], functions: list[re.Match]):
    """(definition match, registration) of the forward kernel of a `<x>_backward_stub` in this
    file, or None: `x_stub` registered here with a `static void` function defined above."""
    if not stub.endswith("_backward_stub"):
        return None
    forward_stub = stub[: -len("_backward_stub")] + "_stub"
    for registration in registrations:
        if registration.stub == forward_stub:
            found = [m for m in functions if m.group(1) == registration.function]
            return (found[-1], registration) if found else None
    return None


def function_suffix(registrations: list[Registration]) -> str:
    """How the file names kernel functions after their stub (`atan2_stub` -> `atan2_mps_kernel`,
    `hardsigmoid_kernel`, ...): the most common suffix among its registrations."""
    counts: dict[str, int] = {}
    for reg in registrations:
        if reg.stub.endswith("_stub"):
            base = reg.stub[: -len("_stub")]
            if reg.function.startswith(base) and reg.function != base:
                suffix = reg.function[len(base):]
                counts[suffix] = counts.get(suffix, 0) + 1
    return max(counts, key=lambda k: (counts[k], k == "_mps_kernel")) if counts else "_mps_kernel"


def dispatch_style(text: str, registrations: list[Registration]) -> tuple[bool, bool]:
    """(semicolon, ampersand): whether most of the file's REGISTER_DISPATCH lines end in `;` and
    pass the function as `&fn`. Ties, and a file without registrations, take `&fn` without `;`."""
    index = LineIndex(text)
    lines = [text[index.start_of(r.location.line) : index.end_of(r.location.line)].strip() for r in registrations]
    with_semicolon = sum(1 for line in lines if line.endswith(";"))
    without_ampersand = sum(1 for line in lines if re.search(r",\s*\w+\s*\)", line))
    return with_semicolon * 2 > len(lines), without_ampersand * 2 <= len(lines)
