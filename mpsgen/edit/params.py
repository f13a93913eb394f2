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

This module holds the model (`ParamsSpec`, built from the stub and the schema) and the plans of the
three things only params ops have: the struct in the header, the header's `#include` in the `.metal`
and `.mm` files, and the functor + registration macro. The rest goes through the shared pipeline.
"""

from __future__ import annotations

import re
from dataclasses import replace

from mpsgen.edit.functor import (
    ARITY_WORDS,
    OPERANDS,
    Body,
    FunctorChoice,
    check_supported,
    comment_lines,
    derived_helpers,
    fallback_notes,
    validate_expr,
)
from mpsgen.edit.kernel import KernelChoice
from mpsgen.edit.workspace import Workspace
from mpsgen.errors import MpsgenError
from mpsgen.facts.bodies import SOURCES, BodyRequest, placeholder_comment, resolve_body
from mpsgen.facts.bodyoffer import NoBody
from mpsgen.facts.catalog import lookup
from mpsgen.facts.launcher import added_register_macros
from mpsgen.facts.params import EXEC_WITH_PARAMS, ParamsSpec, exec_with_params_available
from mpsgen.facts.resolve import params_spec, shared_call
from mpsgen.facts.rules import choose_groups
from mpsgen.facts.views import METAL_TO_TORCH
from mpsgen.model import Change, FileChange, Location, Note
from mpsgen.read.c10lib import checkout_functions
from mpsgen.read.checkout import KERNELS_DIR
from mpsgen.read.cpp import mask_code, match_brace
from mpsgen.read.kernelfile import NamespacePrefixes, Registration, namespace_prefixes
from mpsgen.read.stubs import Stub
from mpsgen.textedit import LineIndex, newline_of, replace_spans

# The c10 kernels a params functor is instantiated with (the params struct takes alpha's place).
BASE_MACROS = {1: "REGISTER_UNARY_ALPHA_OP", 2: "REGISTER_BINARY_ALPHA_OP", 3: "REGISTER_TERNARY_ALPHA_OP"}
PARAMS_GROUPS = ("float", "integer", "bool")
# complex too for a catalog body that serves it (`CatalogEntry.supports`), with the float struct
CATALOG_PARAMS_GROUPS = ("float", "integer", "complex", "bool")
# Metal types registered per group. bool is a group of its own, not part of `integer`: most of these
# ops' CPU kernels take no bool, but where MPS tests one (threshold) it must not be lost.
PARAMS_TYPES = {"float": ("float", "half", "bfloat"), "integer": ("long", "int", "short", "uchar", "char"),
                "complex": ("float2", "half2"), "bool": ("bool",)}
# complex kernels hold their scalars as real numbers: the struct instantiated for float (as upstream
# registers nan_to_num for float2 and half2 with NanToNumParams_float), which the float group's
# macro call typedefs
COMPLEX_PARAMS_TYPE = "float"
# The host kernel's dtype dispatch for the registered groups.
DISPATCH_MACROS = {
    ("float",): "AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16, ",
    ("integer",): "AT_DISPATCH_INTEGRAL_TYPES(",
    ("float", "integer"): "AT_DISPATCH_ALL_TYPES_AND2(kHalf, kBFloat16, ",
    ("float", "bool"): "AT_DISPATCH_FLOATING_TYPES_AND3(kHalf, kBFloat16, kBool, ",
    ("integer", "bool"): "AT_DISPATCH_INTEGRAL_TYPES_AND(kBool, ",
    ("float", "integer", "bool"): "AT_DISPATCH_ALL_TYPES_AND3(kHalf, kBFloat16, kBool, ",
    ("float", "complex"): "AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES_AND2(kHalf, kBFloat16, ",
}

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


def registrations(spec: ParamsSpec, groups: tuple[str, ...], functor: str):
    """The registration lines: the op's macro per real type; complex types through the c10 alpha
    macro with the struct the float call typedefs (`COMPLEX_PARAMS_TYPE`)."""
    out = []
    for g in groups:
        for t in PARAMS_TYPES[g]:
            if g == "complex":
                real = f"{spec.struct}_{COMPLEX_PARAMS_TYPE}"
                out.append(Registration(BASE_MACROS[spec.arity], (functor, t, real, t), g))
            else:
                out.append(Registration(spec.macro, (t,), g))
    return out


def params_groups(groups) -> tuple[str, ...]:
    """`groups` in registration order (bool stays a group of its own for params kernels)."""
    return (tuple(g for g in CATALOG_PARAMS_GROUPS if g in groups)
            + tuple(g for g in groups if g not in CATALOG_PARAMS_GROUPS))


def check_groups(groups: tuple[str, ...], allowed: tuple[str, ...] = PARAMS_GROUPS) -> None:
    other = [g for g in groups if g not in allowed]
    if other:
        raise MpsgenError(
            f"dtype group {other[0]!r} is not generated for a params kernel (its struct holds the "
            "scalars in the input type, which is also the output type)",
            hint="use --dtypes float, integer and/or bool, and register other dtypes by hand",
        )
    if "complex" in groups and "float" not in groups:
        raise MpsgenError(
            "a params kernel registers complex types with the struct its float registration typedefs",
            hint="register float as well",
        )
    if params_groups(groups) not in DISPATCH_MACROS:
        raise MpsgenError(
            f"a params kernel for dtype groups {', '.join(groups)} has no host dispatch mpsgen writes",
            hint="register float and/or integer as well",
        )


def check_macros(spec: ParamsSpec, macros: frozenset[str], path: str) -> None:
    base = BASE_MACROS[spec.arity]
    if base not in macros:
        raise MpsgenError(
            f"the checkout defines no {base} macro (looked in c10/metal/*.h and {path}), which a params "
            "kernel is instantiated with",
            hint="this checkout's Metal vocabulary differs from what mpsgen knows; register the functor by hand",
        )


# ---- the kernel: resolve, choose the body, plan every file ---------------------------------------


def find_params_body(*, op: str, name: str, params: ParamsSpec, expr: str | None, dtypes: tuple[str, ...] | None):
    """The functor body (`mpsgen.edit.functor.Body`): a catalog body reading these params, --expr over the
    operands and the params' names, or a placeholder."""

    field_names = tuple(f.name for f in params.fields)
    entry = lookup(name) or lookup(op)
    catalog_body = expr is None and entry is not None and bool(entry.params)
    if dtypes is not None:
        check_groups(params_groups(dtypes), CATALOG_PARAMS_GROUPS if catalog_body and "complex" in entry.supports
                     else PARAMS_GROUPS)
    if expr is not None:
        validate_expr(expr, OPERANDS[params.arity], extra=params.expr_names + ("params",))
        groups = params_groups(dtypes or ("float",))
        return Body("expr", groups, groups, "the --expr body")
    if catalog_body:
        missing = [p for p in entry.params if p not in field_names]
        if missing or entry.arity != params.arity:
            raise MpsgenError(
                f"the catalog's {entry.op} functor reads params {', '.join(entry.params)} with "
                f"{entry.arity} operands, but {op}'s stub gives {', '.join(field_names)} with {params.arity}",
                hint="pass --expr to write the body",
            )
        if dtypes is not None:
            check_supported(entry, params_groups(dtypes))
        supports = tuple(g for g in entry.supports if g in CATALOG_PARAMS_GROUPS)
        return Body("catalog", supports, entry.dtypes, f"the catalog's {entry.op} body", entry.template_name)
    return Body("placeholder", params_groups(dtypes) if dtypes else PARAMS_GROUPS, ("float",), "the placeholder body")


def render_params_functor(templates, body, *, name: str, params: ParamsSpec, expr: str | None,
                          groups: tuple[str, ...], namespaces: NamespacePrefixes | None = None,
                          c10_functions: frozenset[str] = frozenset()):
    """The functor text of `body` for `groups`, spelled with the kernel file's namespace prefixes
    (catalog bodies call the checkout's `c10_functions` where they can)."""

    operands = OPERANDS[params.arity]
    spelling = (namespaces or NamespacePrefixes()).template_vars() | {"c10_functions": c10_functions}
    if body.source == "expr" or body.derived:
        expr = body.expr or expr or ""
        used = set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", expr))
        text = templates.render("params_functor_expr.metal.j2", name=name, expr=expr.strip(), operands=operands,
                                struct=params.struct, fields=params.fields, used=used, groups=groups, **spelling)
    elif body.source == "catalog":
        text = templates.render(body.template, name=name, params=params.struct, groups=groups, **spelling)
    else:
        text = templates.render("params_functor_placeholder.metal.j2", name=name, operands=operands,
                                struct=params.struct, fields=params.fields, groups=groups,
                                arity_word=ARITY_WORDS[params.arity],
                                sources=comment_lines(placeholder_comment(body.answers)), **spelling)
    return FunctorChoice(body.source, text, groups)


def covered_dtypes(groups: tuple[str, ...]) -> frozenset[str]:
    """The torch dtypes a params kernel registered for `groups` serves (bool is not in `integer`)."""

    return frozenset(METAL_TO_TORCH[t] for g in groups if g in PARAMS_TYPES for t in PARAMS_TYPES[g])


def registration_macro(templates, params: ParamsSpec, name: str) -> str:
    """`#define REGISTER_<OP>_OP(T)`: typedefs the struct for T and instantiates the c10 alpha kernel."""
    return templates.render("params_register_macro.metal.j2", macro=params.macro, struct=params.struct,
                            base=BASE_MACROS[params.arity], name=name)


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


def choose_params_kernel(views, templates, spec, options):
    """What a params op's kernel step writes (`mpsgen.edit.kernel.KernelChoice`): body, groups by the
    shared rules (with the exact coverage of params registrations), registration macro."""

    params = spec.params
    kernel = views.kernel(spec.kernel_file)
    existing = spec.functor in kernel.functors and options.dtypes is None and options.expr is None
    if existing:
        registered = kernel.registered.get(spec.functor)
        found = set(registered.groups if registered else ())
        if registered and any(i == "bool" for i, _ in registered.pairs):
            found.add("bool")  # a params kernel's bool is a group of its own (its integer group has none)
        groups = tuple(g for g in PARAMS_GROUPS if g in found)
        groups = groups or _groups_of_macro(kernel.file, params)
        if not groups:
            raise MpsgenError(
                f"struct {spec.functor}_functor exists in {spec.kernel_file} but is registered for no dtype",
                hint="pass --dtypes to choose the dtype groups to register",
            )
        body = Body("existing", groups, groups, f"the existing {spec.functor}_functor")
    else:
        body = find_params_body(op=spec.op, name=spec.functor, params=params, expr=options.expr, dtypes=options.dtypes)
        if options.expr is None and (options.body not in ("auto", "catalog") or body.source == "placeholder"):
            body = derived_params_body(views, spec, options, params, body)
        elif options.body == "catalog" and body.source != "catalog":
            raise MpsgenError(f"--body catalog: no body for {spec.op}: mpsgen's catalog has no {spec.op} body "
                              "reading a params struct", hint="choose another source with --body, or write one with --expr")
        if body.derived:
            # the host gives an unset optional the value the CPU kernel gives it
            defaults = dict(body.param_defaults)
            params = replace(params, fields=tuple(replace(f, default=defaults[f.name], default_known=True)
                                                  if f.name in defaults else f for f in params.fields))
    groups = choose_groups(views, spec.facts, supports=body.supports, defaults=body.defaults,
                           explicit=groups if existing else options.dtypes, body=body.describe,
                           minimal=body.source == "placeholder", covers=covered_dtypes,
                           allowed=PARAMS_GROUPS + tuple(g for g in body.supports if g not in PARAMS_GROUPS))
    groups = params_groups(groups)
    check_groups(groups, CATALOG_PARAMS_GROUPS if "complex" in body.supports else PARAMS_GROUPS)
    notes_c10: tuple = ()
    if existing:
        text, regs = "", ()
    else:
        text = render_params_functor(templates, body, name=spec.functor, params=params, expr=options.expr,
                                     groups=groups, namespaces=namespace_prefixes(views.ws.read(spec.kernel_file)),
                                     c10_functions=checkout_functions(views.ws, disk_cache=views.disk_cache)).text
        text = derived_helpers(body, views.ws.read(spec.kernel_file)) + text
        notes_c10 = fallback_notes(body, checkout_functions(views.ws, disk_cache=views.disk_cache))
        added = added_register_macros(views.ws) if params.arity == 3 else frozenset()
        check_macros(params, kernel.file.own_macros | views.c10_register_macros() | added, spec.kernel_file)
        regs = tuple(registrations(params, groups, spec.functor))
    params = replace(params, groups=groups)
    notes = tuple(
        Note("todo", f"{params.struct}.{field.name}: no catalog default for an unset {field.name}; the host passes "
                     f"0 with has_{field.name} = false (resolve it as the CPU kernel does, in the host or the functor)")
        for field in params.fields if field.kind == "optional" and not field.default_known
    ) + notes_c10
    macro = "" if params.macro in kernel.file.own_macros else registration_macro(templates, params, spec.functor)
    if body.derived:
        notes += (Note("info", f"body: from {body.location}, {body.describe}"),)
    return KernelChoice(body.source, text, regs, covered_dtypes(groups), macro, params, notes,
                        body=body if body.derived else None)


def field_enumerators(field) -> tuple[tuple[str, int], ...]:
    """An enum field's enumerators as a body source compares them (`GeluType::Tanh`, 1)."""
    return tuple((f"{field.enum.name}::{e}", v) for e, v in field.enum.enumerators) if field.enum is not None else ()


# the sources a params op's body may come from besides the catalog and --expr (asked first, above)
DERIVED_SOURCES = tuple(source for source in SOURCES if source.name not in ("expr", "catalog"))


def derived_params_body(views, spec, options, params: ParamsSpec, fallback: Body) -> Body:
    """A params op's body from the checkout (`mpsgen.facts.bodies`: the CPU kernel's lambda with
    the stub's scalars read as the struct's fields), else `fallback` (the placeholder) quoting
    every source's answer; `--body` naming a source with nothing is exit 2."""

    request = BodyRequest(views, spec.facts, spec.op, spec.functor, params.arity, False,
                          namespaces=namespace_prefixes(views.ws.read(spec.kernel_file)),
                          c10_functions=checkout_functions(views.ws, disk_cache=views.disk_cache),
                          params=tuple((f.name, f.kind, field_enumerators(f)) for f in params.fields))
    resolution = resolve_body(request, forced=options.body, rejected=dict(options.rejected), sources=DERIVED_SOURCES)
    chosen = resolution.chosen
    if chosen is None:
        if options.body != "auto":
            answer = next((a for a in resolution.answers if a.source == options.body), None)
            reason = answer.reason if isinstance(answer, NoBody) else "it was not asked"
            raise MpsgenError(f"--body {options.body}: no body for {spec.op}: {reason}",
                              location=getattr(answer, "location", None),
                              hint="choose another source with --body, or write one with --expr")
        catalog = NoBody("catalog", f"mpsgen's catalog has no {spec.op} body reading a params struct")
        return replace(fallback, answers=(catalog,) + resolution.answers)
    validate_expr(chosen.expr, OPERANDS[params.arity], extra=params.expr_names + ("params",))
    supports = tuple(g for g in chosen.supports if g in CATALOG_PARAMS_GROUPS) or ("float",)
    if options.dtypes is not None:
        unsupported = [g for g in params_groups(options.dtypes) if g not in supports]
        if unsupported:
            raise MpsgenError(f"the body from {chosen.describe} does not handle dtype group {unsupported[0]!r} "
                              f"(it handles {', '.join(supports)})", location=chosen.location,
                              hint="drop that group from --dtypes, or pass --expr")
    return Body(chosen.source, supports, supports, chosen.describe, "", chosen.output, chosen.expr, chosen.helpers,
                chosen.location, resolution.answers, chosen.truth, chosen.defaults)


def _groups_of_macro(kernel, params: ParamsSpec) -> tuple[str, ...]:
    """The groups an existing params functor is registered for through its own macro."""
    types = {reg.args[0] for reg, _ in kernel.registrations if reg.macro == params.macro and reg.args}
    return tuple(g for g in CATALOG_PARAMS_GROUPS if types & set(PARAMS_TYPES[g]))


# ---- scan ----------------------------------------------------------------------------------------


def params_candidate(views, op: str, shared, stub: Stub, functor: str, catalog, backing: str) -> tuple[str, str]:
    """(tier, reason) of a legacy op whose params stub `migrate` can generate (the resolver's refusals
    were asked first): ready with a catalog body that reads these params, else --expr."""

    entry = lookup(functor, catalog) or lookup(op, catalog)
    carrier = shared[0].entry
    params = params_spec(views, op, stub, carrier, functor, len(carrier.tensor_inputs),
                         call=shared_call(views, shared, stub))
    names = ", ".join(f.name for f in params.fields)
    graph = "" if backing == "mpsgraph" else f" ({backing} kernel)"
    if params.arity == 3 and not exec_with_params_available(views.ws, 3):
        graph += f"; migrate adds the library's {EXEC_WITH_PARAMS[3]}"
    if entry is not None and entry.params and set(entry.params) <= {f.name for f in params.fields}:
        return "ready", f"params stub ({names} in {params.struct}), catalog body ({', '.join(entry.supports)}){graph}"
    return "expr", f"params stub ({names} in {params.struct}), no catalog body: pass --expr over {', '.join(OPERANDS_WORDS[params.arity])} and {names}{graph}"


OPERANDS_WORDS = {1: ("x",), 2: ("a", "b"), 3: ("a", "b", "c")}
