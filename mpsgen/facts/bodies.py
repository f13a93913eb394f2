"""The one body resolver: where an elementwise functor's body comes from.

Each source is a small object with one method, `offer(request) -> BodyOffer | NoBody`: a Metal
expression with its provenance (path:line, which source), or its reason for having none. The
driver, `resolve_body`, asks them in the declared order `SOURCES` and keeps every answer:

1. `expr`    the user's `--expr`;
2. `catalog` mpsgen's hand-written catalog (`facts/catalog.toml`);
3. `c10`     a `c10::metal` function the checkout's `c10/metal/*.h` define for the op (its name,
             without `special_`, or the special functions' `<name>_forward`), taking as many
             values as the functor;
4. `cpu`     the CPU kernel's scalar lambda (`aten/src/ATen/native/cpu/*.cpp`: the function the
             stub's `REGISTER_DISPATCH` names, the lambda handed to `cpu_kernel[_vec]`), translated
             by `mpsgen.facts.translate` with the helpers it calls brought along (same file, or a
             header it includes that the checkout has); its `AT_DISPATCH_*` list gives the dtype
             groups, its `-> bool` a bool output;
5. `graph`   the legacy MPSGraph code (`mpsgen.facts.graphbody.graph_body`: the graph migrate
             deletes, translated by its selector tables; `GraphSource` adapts any
             `(views, facts) -> offer` callable, so a test can stand one in).

`--body {catalog,c10,cpu,graph}` asks one source only (`forced`); `auto` takes the first offer.
A source whose offer failed `try` (`rejected`: source -> why) answers `NoBody` with that reason, so
the next source is asked; with no offer left, the placeholder is written with every answer quoted
(`placeholder_comment`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from mpsgen.facts.bodyoffer import BodyOffer, NoBody
from mpsgen.facts.catalog import CATALOG_PATH, _table_line, lookup
from mpsgen.facts.graphbody import graph_body
from mpsgen.facts.rules import promotes_int_to_float
from mpsgen.facts.translate import (CONSTANTS, ParamRead, Untranslatable, translate_condition, translate_function,
                                    translate_lambda)
from mpsgen.facts.views import OpFacts, Views
from mpsgen.model import Location
from mpsgen.read.c10lib import function_sites
from mpsgen.read.cppsyntax import CpuKernels, ScalarLambda, read_cpu_kernels, truth_operands
from mpsgen.read.kernelfile import NamespacePrefixes


CPU_DIR = "aten/src/ATen/native/cpu"
NATIVE_HEADERS = "aten/src/ATen/native"
BODY_CHOICES = ("auto", "catalog", "c10", "cpu", "graph")
OPERANDS = {1: ("x",), 2: ("a", "b"), 3: ("a", "b", "c")}
SPECIAL_PREFIX = "special_"
BACKWARD_SUFFIX = "_backward"

# What each AT_DISPATCH_* base list covers, and the extra types its `_AND<n>` arguments add, as the
# functor's dtype groups see them (`float`: float32, the group's anchor; half/bfloat16 ride along).
DISPATCH_BASES = {
    "FLOATING_TYPES": {"float"},
    "FLOATING_TYPES_AND_HALF": {"float", "half"},
    "REDUCED_FLOATING_TYPES": {"half", "bfloat16"},
    "ALL_TYPES": {"float", "integer"},
    "INTEGRAL_TYPES": {"integer"},
    "COMPLEX_TYPES": {"complex"},
    "FLOATING_AND_COMPLEX_TYPES": {"float", "complex"},
    "ALL_TYPES_AND_COMPLEX": {"float", "integer", "complex"},
}
DISPATCH_EXTRAS = {"kHalf": "half", "Half": "half", "kBFloat16": "bfloat16", "BFloat16": "bfloat16", "kBool": "bool",
                   "Bool": "bool", "kComplexHalf": "complex"}


@dataclass(frozen=True)
class BodyRequest:
    """What every source is asked: the op's facts and how the kernel file spells names."""

    views: Views
    facts: OpFacts
    op: str
    functor: str
    arity: int
    alpha: bool
    expr: str | None = None
    namespaces: NamespacePrefixes = field(default_factory=NamespacePrefixes)
    c10_functions: frozenset[str] = frozenset()
    # a params op (several scalars in a struct): its fields as (name, kind, enumerators), in the
    # stub's order; an enum field's enumerators as (`GeluType::Tanh`, its value)
    params: tuple[tuple[str, str, tuple[tuple[str, int], ...]], ...] | None = None
    # an alpha op's Scalar as the functor names it (its last operand)
    alpha_name: str = "alpha"


@dataclass(frozen=True)
class BodyResolution:
    """The offer taken (None: the placeholder) and every source's answer, in the order asked."""

    chosen: BodyOffer | None
    answers: tuple[BodyOffer | NoBody, ...]


class ExprSource:
    name = "expr"

    def offer(self, request: BodyRequest) -> BodyOffer | NoBody:
        if request.expr is None:
            return NoBody(self.name, "no --expr given")
        return BodyOffer(self.name, request.expr, None, "the --expr body")


class CatalogSource:
    name = "catalog"

    def offer(self, request: BodyRequest) -> BodyOffer | NoBody:
        entry = lookup(request.functor) or lookup(request.op)
        lacking = [name for name in (entry.requires if entry is not None else ()) if name not in request.c10_functions]
        if lacking:
            return NoBody(self.name, f"the catalog's {entry.op} body calls "
                                     f"{', '.join(f'c10::metal::{name}' for name in lacking)}, which this checkout's "
                                     "c10/metal headers do not define")
        return catalog_offer(request.op, request.functor, request.alpha)


def catalog_offer(op: str, functor: str, alpha: bool) -> BodyOffer | NoBody:
    """The catalog's body for the op (looked up by functor, then op name), with its table's line."""
    entry = lookup(functor) or lookup(op)
    if entry is None:
        return NoBody("catalog", f"mpsgen's catalog has no {op} body")
    if alpha and not entry.alpha:
        return NoBody("catalog", f"the catalog's {entry.op} body takes no scalar, and {op}'s stub passes one")
    if entry.alpha and not alpha:
        return NoBody("catalog", f"the catalog's {entry.op} body takes the stub's Scalar, and {op}'s stub passes none")
    where = Location("mpsgen/facts/catalog.toml", _table_line(CATALOG_PATH.read_text(encoding="utf-8"), entry.op))
    return BodyOffer("catalog", "", where, f"the catalog's {entry.op} body", entry.output, entry.supports)


class C10Source:
    name = "c10"

    def offer(self, request: BodyRequest) -> BodyOffer | NoBody:
        if request.params is not None:
            names = ", ".join(name for name, _, _ in request.params)
            return NoBody(self.name, f"{request.op}'s stub passes scalars ({names}), which no c10::metal function "
                                     "takes")
        if request.alpha:
            return NoBody(self.name, f"{request.op}'s stub passes a scalar, which no c10::metal function takes")
        sites = function_sites(request.views.ws)
        base = request.op[len(SPECIAL_PREFIX):] if request.op.startswith(SPECIAL_PREFIX) else request.op
        names = list(dict.fromkeys((request.op, base, request.functor, f"{base}_forward")))
        found = [(n, sites[n]) for n in names if n in sites]
        if not found:
            return NoBody(self.name, f"the checkout's c10/metal headers define none of {', '.join(names)}")
        for name, (rel, line, count) in found:
            if count == request.arity:
                operands = ", ".join(OPERANDS[request.arity])
                groups = ("float", "int2float") if promotes_int_to_float(request.facts) else ("float",)
                return BodyOffer(self.name, f"{request.namespaces.c10}{name}({operands})", Location(rel, line),
                                 f"c10::metal::{name}", "", groups)
        name, (rel, line, count) = found[0]
        return NoBody(self.name, f"c10::metal::{name} takes {count} values, the functor {request.arity}", Location(rel, line))


class CpuSource:
    name = "cpu"

    def offer(self, request: BodyRequest) -> BodyOffer | NoBody:
        stub = request.facts.stub
        if stub is None:
            return NoBody(self.name, f"{request.op} has no dispatch stub, so no CPU kernel registered for one")
        views = request.views
        every = views.checkout.glob(CPU_DIR, "*.cpp")
        if not every:
            return NoBody(self.name, f"this checkout has no {CPU_DIR}/*.cpp (a wheel ships none)")
        files = [rel for rel in every if stub.name in views.ws.read(rel)]
        if not files:
            return NoBody(self.name, f"no {CPU_DIR}/*.cpp registers {stub.name}")
        for rel in files:
            kernels = _kernels(views, rel)
            if stub.name not in kernels.registrations:
                continue
            function, line = kernels.registrations[stub.name]
            lambdas = kernels.lambdas(function)
            if not lambdas:
                return NoBody(self.name, f"{function} hands no lambda to cpu_kernel or cpu_kernel_vec",
                              Location(rel, line))
            chosen = _choose(lambdas)
            reads = None
            if request.alpha and request.params is None:
                # the Scalar is the functor's last operand, named `alpha_name`: the lambda's captured
                # values read from it (`eps_scalar.to<scalar_t>()`) are that operand
                if len(chosen.kernel_params) != 1:
                    return NoBody(self.name, f"{function} takes {len(chosen.kernel_params)} scalars, the functor's "
                                             "alpha one", Location(rel, chosen.line))
                reads = (ParamRead(chosen.kernel_params[0], request.alpha_name, "scalar"),)
            if request.params is not None:
                if len(chosen.kernel_params) != len(request.params):
                    return NoBody(self.name, f"{function} takes {len(chosen.kernel_params)} scalars, the params struct "
                                             f"{len(request.params)}", Location(rel, chosen.line))
                reads = tuple(ParamRead(name, f, k) for name, (f, k, _) in zip(chosen.kernel_params, request.params))
                branch = _enum_branch(request, lambdas, reads)
                if branch is not None:
                    return _translate_branches(request, kernels, rel, reads, *branch)
            if reads is not None:
                branch = _scalar_branch(request, kernels, chosen, lambdas, reads)
                if branch is not None:
                    return _translate_select(request, kernels, rel, reads, *branch)
            offer = _translate(request, kernels, rel, chosen, reads)
            if isinstance(offer, BodyOffer) and "integer" not in offer.supports and reads is None \
                    and not request.op.endswith(BACKWARD_SUFFIX):
                offer = _with_integer_lambda(request, kernels, rel, lambdas, offer)
            return offer
        return NoBody(self.name, f"no REGISTER_DISPATCH({stub.name}, ...) in {', '.join(files)}")


class GraphSource:
    """The MPSGraph source through any `(views, facts) -> BodyOffer | NoBody` callable."""

    name = "graph"

    def __init__(self, graph_body: Callable | None):
        self.graph_body = graph_body

    def offer(self, request: BodyRequest) -> BodyOffer | NoBody:
        if self.graph_body is None:
            return NoBody(self.name, "the MPSGraph source (mpsgen.facts.graphbody) is not part of this build")
        answer = self.graph_body(request.views, request.facts)
        if not isinstance(answer, (BodyOffer, NoBody)):
            return NoBody(self.name, f"the MPSGraph source answered {type(answer).__name__}, not an offer")
        if request.params is not None and isinstance(answer, BodyOffer):
            # the graph names the op's scalars as the schema does, which the params struct's fields are
            # named after: a body reading only those (and the operands) reads the struct
            fields = {name for name, _, _ in request.params}
            unmapped = [n for n in _value_names(answer.expr) if n not in fields and n not in OPERANDS[request.arity]]
            if unmapped:
                return NoBody(self.name, f"{answer.describe} gives {answer.expr}, whose {', '.join(unmapped)} is no "
                                         f"field of the params struct ({', '.join(sorted(fields))})", answer.location)
            unread = [name for name, kind, _ in request.params if kind == "enum" and name not in _value_names(answer.expr)]
            if unread:  # an enum chooses the formula: a graph not reading it computes one formula only
                return NoBody(self.name, f"{answer.describe} gives {answer.expr}, which reads no {unread[0]}: the "
                                         f"graph computes one of its formulas only", answer.location)
            if answer.integer_expr or "int2float" in answer.supports:
                return replace(answer, supports=tuple(g for g in answer.supports if g != "int2float"))
        return answer


_VALUE_NAME = re.compile(r"(?<![\w.:])([A-Za-z_]\w*)\b(?!\s*[(<:])")
_NOT_VALUES = frozenset({"true", "false", "float", "half", "bool", "int", "long", "short", "char", "uchar", "bfloat",
                         "T", "scalar_t", "INFINITY", "NAN", "const"}) | frozenset(CONSTANTS.values())


def _value_names(expr: str) -> list[str]:
    """The names an expression reads as values (not calls, types, casts' types or members)."""
    names = []
    for m in _VALUE_NAME.finditer(expr):
        name = m.group(1)
        if name in _NOT_VALUES or re.fullmatch(r"\d\w*", name) or name in names:
            continue
        before = expr[:m.start()].rstrip()
        if before.endswith("<"):  # static_cast<float>(...)
            continue
        names.append(name)
    return names


SOURCES = (ExprSource(), CatalogSource(), C10Source(), CpuSource(), GraphSource(graph_body))


def resolve_body(request: BodyRequest, *, forced: str = "auto", rejected: dict[str, str] | None = None,
                 sources=SOURCES) -> BodyResolution:
    """Ask the sources in order (only `forced` when it is not `auto`; `--expr` always first) and
    take the first offer; every answer is kept."""
    rejected = rejected or {}
    answers: list[BodyOffer | NoBody] = []
    chosen = None
    for source in sources:
        if forced != "auto" and source.name not in (forced, "expr"):
            continue
        if source.name == "expr" and request.expr is None:
            continue
        answer = source.offer(request)
        if isinstance(answer, BodyOffer) and source.name in rejected:
            answer = NoBody(source.name, rejected[source.name], answer.location)
        answers.append(answer)
        if chosen is None and isinstance(answer, BodyOffer):
            chosen = answer
            break
    return BodyResolution(chosen, tuple(answers))


def placeholder_comment(answers: tuple[BodyOffer | NoBody, ...]) -> tuple[str, ...]:
    """One line per source asked: what it offered or lacked (quoted above the `#error`)."""
    lines = []
    for answer in answers:
        where = f" ({answer.location})" if answer.location else ""
        if isinstance(answer, NoBody):
            lines.append(f"{answer.source}: {answer.reason}{where}")
        else:
            lines.append(f"{answer.source}: {answer.describe}{where}: {answer.expr}")
    return tuple(lines)


# ------------------------------------------------------------------------------------ the CPU source


def _kernels(views: Views, rel: str) -> CpuKernels:
    return views.view("cpu-kernels", rel, lambda text: read_cpu_kernels(text, rel))


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
INCLUDE_ROOTS = ("aten/src", "")


def _included_headers(views: Views, includes: tuple[str, ...]) -> list[str]:
    """The headers a file includes that the checkout has, and theirs in turn (breadth first, each
    once): where the helpers a lambda calls are defined (Math.h reaches airy_ai.cpp that way)."""
    seen: list[str] = []
    queue = list(includes)
    while queue:
        name = queue.pop(0)
        for base in INCLUDE_ROOTS:
            rel = f"{base}/{name}" if base else name
            if rel in seen or not views.ws.exists(rel):
                continue
            seen.append(rel)
            queue += _INCLUDE.findall(views.ws.read(rel))
            break
    return seen


def _covers(lam: ScalarLambda) -> set[str]:
    """The dtype kinds the lambda's AT_DISPATCH list serves: its base list (the longest name of
    `DISPATCH_BASES` the macro starts with, before `_AND...`) and the extra types it names."""
    if lam.dispatch is None:  # a branch of its own for one type: `[](bool x) -> bool`
        types = {p.strip() for p, _ in lam.params}
        return {"bool"} if types == {"bool"} else set()
    base = lam.dispatch.expands_to[len("AT_DISPATCH_"):]
    head = next((key for key in sorted(DISPATCH_BASES, key=len, reverse=True)
                 if base == key or base.startswith(key + "_AND")), None)
    covered = set(DISPATCH_BASES.get(head, ()))
    covered |= {DISPATCH_EXTRAS[e.split("::")[-1]] for e in lam.dispatch.extra if e.split("::")[-1] in DISPATCH_EXTRAS}
    return covered


def _choose(lambdas: tuple[ScalarLambda, ...]) -> ScalarLambda:
    """The lambda a Metal functor reproduces: one writing bool where the kernel special-cases a bool
    output, else the one serving float32 (not the reduced-float or complex branches), else the first."""
    for lam in lambdas:
        if lam.returns == "bool" and {p.strip() for p, _ in lam.params} != {"bool"}:
            return lam
    for lam in lambdas:
        if "float" in _covers(lam):
            return lam
    return lambdas[0]


_ENUM_CONDITION = re.compile(r"!?\(\s*(\w+)\s*==\s*([\w:]+)\s*\)")


def _enum_branch(request: BodyRequest, lambdas, reads: tuple[ParamRead, ...]):
    """Where the kernel branches on one of its enum scalars (`if (approximate == GeluType::Tanh)`):
    (the field, the enumerator's value, the lambdas of that branch, those of the other), else None."""
    enums = {name: dict(enumerators) for name, kind, enumerators in request.params if kind == "enum"}
    by_param = {r.name: r for r in reads}
    for lam in lambdas:
        for condition in lam.conditions:
            m = _ENUM_CONDITION.fullmatch(condition)
            if not m or m.group(1) not in by_param or by_param[m.group(1)].field not in enums:
                continue
            read = by_param[m.group(1)]
            values = enums[read.field]
            if m.group(2) not in values:
                continue
            plain = condition.lstrip("!")
            then = tuple(l for l in lambdas if plain in l.conditions)
            other = tuple(l for l in lambdas if "!" + plain in l.conditions)
            if then and other:
                return read, m.group(2), values[m.group(2)], then, other
    return None


def _translate_branches(request: BodyRequest, kernels: CpuKernels, rel: str, reads, read: ParamRead, enumerator: str,
                        value: int, then, other) -> BodyOffer | NoBody:
    """One body selecting per element on the enum field: `(approximate == 1) ? (tanh form) : (erf
    form)`, each branch the lambda that branch hands cpu_kernel for float32 (named apart)."""
    suffix = enumerator.split("::")[-1].lower()
    first = _translate(replace(request, functor=f"{request.functor}_{suffix}"), kernels, rel, _choose(then), reads)
    second = _translate(request, kernels, rel, _choose(other), reads)
    for offer in (first, second):
        if isinstance(offer, NoBody):
            return NoBody("cpu", f"{offer.reason} (the branch {'where' if offer is first else 'unless'} "
                                 f"{read.field} is {enumerator})", offer.location)
    supports = tuple(g for g in first.supports if g in second.supports)
    if not supports or first.output != second.output:
        return NoBody("cpu", f"the branches on {read.field} serve different dtypes or outputs", first.location)
    expr = f"({read.field} == {value}) ? ({first.expr}) : ({second.expr})"
    helpers = tuple(dict.fromkeys(first.helpers + second.helpers))
    defaults = tuple(dict.fromkeys(first.defaults + second.defaults))
    describe = f"{request.op}'s CPU kernel, both branches on {read.field} ({enumerator} or not)"
    return BodyOffer("cpu", expr, first.location, describe, first.output, supports, helpers, defaults=defaults)


def _scalar_branch(request: BodyRequest, kernels: CpuKernels, chosen: ScalarLambda, lambdas, reads):
    """Where the kernel chooses its lambda by a condition on its scalars alone (`if (eps <
    scalar_t(0))`, the else branch clamping to [eps, 1 - eps]): (the condition in the functor's
    spelling, its text, the lambdas of that branch, those of the other), else None. A branch on
    anything else (the dtype, the iterator) is not one: `_choose` picks among those."""
    spelling = dict(metal=request.namespaces.metal, c10=request.namespaces.c10, c10_functions=request.c10_functions,
                    known=lambda name: False)
    for condition, node in zip(chosen.conditions, chosen.condition_nodes):
        plain = condition.lstrip("!")
        then = tuple(l for l in lambdas if plain in l.conditions)
        other = tuple(l for l in lambdas if "!" + plain in l.conditions)
        if not then or not other or node is None:
            continue
        try:
            text = translate_condition(kernels.source, chosen, node, params=reads, **spelling)
        except Untranslatable:
            continue  # a branch on the dtype (`iter.dtype() == kBFloat16`): `_choose` took the float32 lambda
        return text, plain, then, other
    return None


def _translate_select(request: BodyRequest, kernels: CpuKernels, rel: str, reads, condition: str, plain: str,
                      then, other) -> BodyOffer | NoBody:
    """One body selecting per element on a condition over the scalars: `(eps < scalar_t(0)) ?
    (that branch's lambda) : (the other's)`, each the lambda its branch hands cpu_kernel for float32
    (the first one's helper named apart)."""
    first = _translate(replace(request, functor=f"{request.functor}_then"), kernels, rel, _choose(then), reads)
    second = _translate(request, kernels, rel, _choose(other), reads)
    for offer in (first, second):
        if isinstance(offer, NoBody):
            return NoBody("cpu", f"{offer.reason} (the branch {'where' if offer is first else 'unless'} {plain})",
                          offer.location)
    supports = tuple(g for g in first.supports if g in second.supports)
    if not supports or first.output != second.output:
        return NoBody("cpu", f"the branches on {plain} serve different dtypes or outputs", first.location)
    expr = f"({condition}) ? ({first.expr}) : ({second.expr})"
    helpers = tuple(dict.fromkeys(first.helpers + second.helpers))
    defaults = tuple(dict.fromkeys(first.defaults + second.defaults))
    describe = f"{request.op}'s CPU kernel, both branches on `{plain}` selected per element"
    return BodyOffer("cpu", expr, first.location, describe, first.output, supports, helpers, defaults=defaults)


def _with_integer_lambda(request: BodyRequest, kernels: CpuKernels, rel: str, lambdas, offer: BodyOffer) -> BodyOffer:
    """The offer with the integer group added where the kernel has a lambda of its own for the
    integral types (`AT_DISPATCH_INTEGRAL_TYPES`, e.g. fmod's `x % d`) that translates as one
    expression; an int2float op's integers take the float lambda already."""
    if "int2float" in offer.supports:
        return offer
    for lam in lambdas:
        if _covers(lam) != {"integer"} or lam.returns == "bool":
            continue
        other = _translate(request, kernels, rel, lam)
        if isinstance(other, BodyOffer) and not other.helpers and other.output == offer.output:
            return replace(offer, supports=offer.supports + ("integer",), integer_expr=other.expr)
    return offer


def _groups(request: BodyRequest, lam: ScalarLambda, truth: bool = False) -> tuple[str, ...]:
    """The dtype groups the lambda serves: its dispatch list's, complex only where the lambda reads
    its operands as truth values and writes bool (`a && b`: the functor's complex overload reads
    each operand as one); other complex code (c10::complex arithmetic) is not translated."""
    covered = _covers(lam)
    if request.op.endswith(BACKWARD_SUFFIX):
        # a gradient: autograd asks a backward kernel for floating dtypes only, and an integer one is
        # no gradient (smooth_l1_loss_backward's integer lambda divides by beta truncated to 0)
        covered -= {"integer", "bool"}
    groups = []
    if "float" in covered:
        groups.append("float")
        if promotes_int_to_float(request.facts):
            groups.append("int2float")
    if "integer" in covered and "int2float" not in groups:
        groups.append("integer")
    if "bool" in covered:
        groups.append("bool")
    if "complex" in covered and truth and lam.returns == "bool":
        groups.append("complex")
    return tuple(groups)


def _translate(request: BodyRequest, kernels: CpuKernels, rel: str, lam: ScalarLambda,
               reads: tuple[ParamRead, ...] | None = None) -> BodyOffer | NoBody:
    views = request.views
    # the headers it includes (transitively) the checkout has, then ATen/native's other headers: a
    # partial checkout (a wheel's headers) lacks some links of the chain the build follows
    # (upstream's kernels reach Math.h through ATen/cpu/vec)
    headers = _included_headers(views, kernels.includes)
    headers += [h for h in views.checkout.glob(NATIVE_HEADERS, "*.h") if h not in headers]

    def definitions(name: str):
        if name in kernels.functions:
            return rel, kernels, kernels.functions[name]
        for header in headers:
            if name not in views.ws.read(header):
                continue  # parse only the headers naming it
            found = _kernels(views, header)
            if name in found.functions:
                return header, found, found.functions[name]
        return None

    def known(name: str) -> bool:
        return definitions(name) is not None

    spelling = dict(metal=request.namespaces.metal, c10=request.namespaces.c10, c10_functions=request.c10_functions,
                    known=known)
    describe = f"{request.op}'s CPU kernel"
    location = Location(rel, lam.line)
    truth = truth_operands(kernels.source, lam)
    groups = _groups(request, lam, truth)
    if not groups:
        return NoBody("cpu", f"{lam.kernel}'s lambda serves no dtype a Metal functor registers "
                             f"({lam.dispatch.macro if lam.dispatch else 'no AT_DISPATCH list'})", location)
    try:
        translation = translate_lambda(kernels.source, lam, name=request.functor, operands=OPERANDS[request.arity],
                                       params=reads, **spelling)
    except Untranslatable as exc:
        return NoBody("cpu", f"{lam.kernel}'s lambda: {exc.reason}", Location(rel, exc.line or lam.line))
    helpers: list[str] = []
    done: set[str] = set()
    pending = list(translation.needs)
    brought: list[tuple[str, tuple[str, ...]]] = []
    while pending:
        name = pending.pop(0)
        if name in done:
            continue
        done.add(name)
        where, found, defs = definitions(name)
        texts = []
        for definition in defs:
            try:
                part = translate_function(found.source, definition.node, **spelling)
            except Untranslatable as exc:
                return NoBody("cpu", f"{lam.kernel}'s lambda calls {name} ({where}:{definition.line}), which cannot "
                                     f"be brought along: {exc.reason}", Location(where, exc.line or definition.line))
            texts += part.helpers
            pending += [n for n in part.needs if n not in done]
        brought.append((name, tuple(texts)))
    # callees first: a helper goes after every helper it calls
    for _, texts in reversed(brought):
        helpers += texts
    every = tuple(dict.fromkeys(tuple(helpers) + translation.helpers))  # a fallback helper once
    return BodyOffer("cpu", translation.expr, location, describe, "bool" if lam.returns == "bool" else "", groups,
                     every, truth="complex" in groups, defaults=translation.defaults)
