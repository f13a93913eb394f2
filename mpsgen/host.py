"""Host files (`operations/*.mm`): the kernel function that calls the Metal library and the
`REGISTER_DISPATCH` line, written in the file's own conventions."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.checkout import OPERATIONS_DIR, Workspace
from mpsgen.cpp import mask_code, match_brace
from mpsgen.model import Location
from mpsgen.templates import Templates
from mpsgen.textedit import LineIndex, newline_of, replace_spans

_REGISTER_DISPATCH = re.compile(r"^[ \t]*REGISTER_DISPATCH\s*\(\s*(\w+)\s*,\s*&?\s*(\w+)\s*\)(\s*;)?[ \t]*\r?$", re.M)
_STATIC_FN = re.compile(r"^static\s+void\s+(\w+)\s*\(", re.M)
_HELPER_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(REGISTER_\w+_DISPATCH)\((\w+)\)((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
_NAMESPACE_END = re.compile(r"^\}\s*//\s*namespace\s+at::native\b.*$", re.M)

EXEC_FUNCTIONS = {1: "exec_unary_kernel", 2: "exec_binary_kernel", 3: "exec_ternary_kernel"}


@dataclass(frozen=True)
class DispatchRegistration:
    stub: str
    function: str
    location: Location


def find_registrations(text: str, path: str) -> list[DispatchRegistration]:
    """REGISTER_DISPATCH lines at file level (those inside #define bodies are not registrations)."""
    masked = mask_code(text)
    out = []
    for match in _REGISTER_DISPATCH.finditer(masked):
        if match.start() > 0 and masked[: match.start() - 1].rstrip("\r").endswith("\\"):
            continue
        out.append(DispatchRegistration(match.group(1), match.group(2), Location(path, masked.count("\n", 0, match.start()) + 1)))
    return out


def find_helper_macro_uses(text: str, macro: str) -> list[tuple[str, int]]:
    masked = mask_code(text)
    return [
        (m.group(1), m.end())
        for m in re.finditer(rf"^{macro}\((\w+)\)\s*;?[ \t]*\r?$", masked, re.M)
    ]


def mps_registrations(ws: Workspace, stub: str) -> list[DispatchRegistration]:
    """Every MPS registration of `stub` in the checkout's operations/*.mm files (direct, or through
    a file's one-line helper macro)."""
    found = []
    for rel in ws.checkout.glob(OPERATIONS_DIR, "*.mm"):
        text = ws.read(rel)
        if stub not in text and "_DISPATCH" not in text:
            continue
        found.extend(r for r in find_registrations(text, rel) if r.stub == stub)
        for macro, _param, _body in _helper_macros(text):
            for name, end in find_helper_macro_uses(text, macro):
                if f"{name}_stub" == stub:
                    found.append(DispatchRegistration(stub, f"{macro}({name})", Location(rel, text.count("\n", 0, end) + 1)))
    return found


def _helper_macros(text: str):
    """A file's one-line registration helpers: `#define REGISTER_X_DISPATCH(NAME) ... exec_..._kernel(iter, #NAME) ... REGISTER_DISPATCH(NAME##_stub, ...)`."""
    out = []
    for match in _HELPER_MACRO.finditer(text):
        body = match.group(3)
        param = match.group(2)
        if f"{param}##_stub" in body.replace(" ", "") and f"#{param}" in body:
            out.append((match.group(1), param, body))
    return out


def plan_host(ws: Workspace, templates: Templates, path: str, *, stub: str, functor: str, arity: int,
              alpha: bool, iterator_type: str, kernel_stem: str, params=None) -> None:
    """Add the kernel function and its REGISTER_DISPATCH unless the stub is already registered.
    `params` (a `params.ParamsSpec`): the stub takes several scalars, passed as a params struct."""
    existing = mps_registrations(ws, stub)
    if existing:
        ws.add_note(f"{existing[0].location}: {stub} is already registered for MPS ({existing[0].function}); kept as is")
        return
    text = ws.read(path)
    newline = newline_of(text)
    masked = mask_code(text)
    index = LineIndex(text)
    exec_fn = EXEC_FUNCTIONS[arity]

    # A file whose helper macro does exactly this (same exec function, same iterator type, no alpha).
    if not alpha and params is None:
        for macro, param, body in _helper_macros(text):
            if exec_fn in body and iterator_type.rstrip("&") + "&" in body.replace(" &", "&") and stub == f"{functor}_stub":
                uses = find_helper_macro_uses(text, macro)
                if uses:
                    last_end = max(end for _, end in uses)
                    last_line = index.line_of(last_end - 1)
                    anchor = index.end_of(last_line)
                    semicolon = ";" if text[index.start_of(last_line):anchor].rstrip().endswith(";") else ""
                    line = f"{macro}({functor}){semicolon}{newline}"
                    ws.write(path, replace_spans(text, [(anchor, anchor, line)]))
                    ws.add_change("host-stub", Location(path, index.line_of(anchor)), f"{macro}({functor}) registers {stub}")
                    return

    registrations = find_registrations(text, path)
    function_name = f"{functor}{function_suffix(registrations)}"
    if params is not None:
        from mpsgen.params import host_signature, render_host_kernel

        signature = host_signature(iterator_type, params)
        function_text = render_host_kernel(templates, function=function_name, iterator_type=iterator_type,
                                           kernel_name=functor, params=params)
    else:
        signature = f"{iterator_type} iter{', const Scalar& alpha' if alpha else ''}"
        function_text = templates.render(
            "host_kernel.mm.j2",
            function=function_name,
            iterator_type=iterator_type,
            exec_function=exec_fn,
            kernel_name=functor,
            alpha=alpha,
        )
    with_semicolon = sum(1 for r in registrations if _line_has_semicolon(text, index, r.location.line))
    semicolon = registrations and with_semicolon * 2 > len(registrations)
    register_text = templates.render("register_dispatch.mm.j2", stub=stub, function=function_name, semicolon=bool(semicolon))
    if newline != "\n":
        function_text = function_text.replace("\n", newline)
        register_text = register_text.replace("\n", newline)

    spans = []
    if registrations:
        first_register = index.start_of(registrations[0].location.line)
        functions_before = [m for m in _STATIC_FN.finditer(masked, 0, first_register)]
        anchor = first_register
        if functions_before:
            last = functions_before[-1]
            brace = masked.find("{", last.end())
            close = match_brace(masked, brace) if brace >= 0 else -1
            if 0 <= close < first_register:
                anchor = index.end_of(index.line_of(close))
                spans.append((anchor, anchor, newline + function_text))
            else:
                spans.append((anchor, anchor, function_text + newline))
        else:
            spans.append((anchor, anchor, function_text + newline))
        last_register = index.end_of(registrations[-1].location.line)
        spans.append((last_register, last_register, register_text))
        function_line = index.line_of(anchor) + 1
        register_line = registrations[-1].location.line + 1
    else:
        # No native section yet: open one before the namespace closes.
        ends = [m for m in _NAMESPACE_END.finditer(text) if masked[m.start()] == "}"]
        if not ends:
            from mpsgen.errors import MpsgenError

            raise MpsgenError(
                f"cannot find where `namespace at::native` closes in {path}",
                location=Location(path, index.line_count),
                hint="end the namespace with `} // namespace at::native`, or pass another --host-file",
            )
        anchor = index.start_of(index.line_of(ends[-1].start()))
        block = ""
        if "getBundledLibrary" not in masked:
            block += templates.render("metal_library.mm.j2", kernel_stem=kernel_stem) + newline
        block += function_text + newline + register_text + newline
        spans.append((anchor, anchor, block.replace("\n", newline) if newline != "\n" else block))
        function_line = register_line = index.line_of(anchor)
    ws.write(path, replace_spans(text, spans))
    ws.add_change("host-stub", Location(path, function_line), f"static void {function_name}({signature})")
    ws.add_change("register", Location(path, register_line), f"REGISTER_DISPATCH({stub}, &{function_name})")


def function_suffix(registrations: list[DispatchRegistration]) -> str:
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


def _line_has_semicolon(text: str, index: LineIndex, line: int) -> bool:
    return text[index.start_of(line) : index.end_of(line)].rstrip().endswith(";")
