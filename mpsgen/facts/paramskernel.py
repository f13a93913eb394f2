"""A params op's kernel decided (`mpsgen.facts.plan` asks it): the functor body (a catalog body
reading the params, --expr over the operands and the params' names, a body derived from the
checkout, else a placeholder), the dtype groups by the shared rules (with the exact coverage of
params registrations), the functor text, the registration lines and the file's registration
macro. edit/params.py writes the struct, the includes and the host function."""

from __future__ import annotations

import re
from dataclasses import replace

from mpsgen.errors import MpsgenError
from mpsgen.facts.bodies import SOURCES, BodyRequest, placeholder_comment, resolve_body
from mpsgen.facts.bodyoffer import NoBody
from mpsgen.facts.catalog import lookup
from mpsgen.facts.choice import KernelChoice
from mpsgen.facts.functor import (
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
from mpsgen.facts.launcher import added_register_macros, ternary_params_launcher
from mpsgen.facts.params import EXEC_WITH_PARAMS, ParamsSpec, exec_with_params_available
from mpsgen.facts.resolve import params_spec, shared_call
from mpsgen.facts.rules import choose_groups
from mpsgen.facts.views import METAL_TO_TORCH
from mpsgen.model import Note
from mpsgen.read.c10lib import checkout_functions
from mpsgen.read.kernelfile import NamespacePrefixes, Registration, namespace_prefixes
from mpsgen.read.stubs import Stub

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


def find_params_body(*, op: str, name: str, params: ParamsSpec, expr: str | None, dtypes: tuple[str, ...] | None):
    """The functor body (`mpsgen.facts.functor.Body`): a catalog body reading these params, --expr over the
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


def choose_params_kernel(views, templates, spec, options):
    """What a params op's kernel step writes (`mpsgen.facts.choice.KernelChoice`): body, groups by the
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
    # the library's ternary params launcher (and the c10 kernels it binds, where those are missing
    # too), which this checkout lacks (`params_arity` checked they can be added): the kernel step
    # writes it first, so the kernel file registering through it compiles when checked
    launcher = (ternary_params_launcher(views.ws) if params.arity == 3 and not exec_with_params_available(views.ws, 3)
                else None)
    return KernelChoice(body.source, text, regs, covered_dtypes(groups), macro, params, notes,
                        body=body if body.derived else None, params_launcher=launcher)


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
