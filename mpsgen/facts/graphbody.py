"""The legacy MPSGraph graph as a body source: `graph_body(views, facts) -> BodyOffer | NoBody`.

The graph `migrate` is about to delete (`mpsgen.read.graphread`) is translated, node by node, into one
Metal expression over the functor's operands (`x`; `a`, `b`[, `c`]) and, for a params stub, the
schema's scalar names. The translation is data: `TRANSLATIONS` maps an MPSGraph selector to a Metal
pattern (`{0}`, `{1}` ... its tensor arguments, in the selector's order), `CASTS` a cast's target to a
Metal type. A node no row covers (a reduction, a split, a helper of another file, a run-time branch)
gives `NoBody` naming it with its `path:line`: never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.facts.bodyoffer import BodyOffer, NoBody
from mpsgen.facts.translate import CONSTANTS as MATH_CONSTANTS  # <cmath>'s macros, spelled as the CPU source does
from mpsgen.facts.views import OpFacts, Views
from mpsgen.model import Location
from mpsgen.read.graphread import Graph, GraphNode, read_graph
from mpsgen.read.stubcall import NotEvaluable, evaluate, read_stub_call

SOURCE = "graph"


@dataclass(frozen=True)
class Rule:
    pattern: str  # Metal, `{i}` the i-th tensor argument
    boolean: bool = False  # the result is a predicate (a comparison, a logical op, isnan ...)
    # the pattern means the same for integer (and bool) operands as MPSGraph's node does for an
    # integer tensor: a graph of such rows alone serves integers (signbit of an integer: x < 0)
    integer: bool = False


_B = True
_I = True
# MPSGraph selector -> Metal. Arithmetic and math compute in the functor's value type (float for
# floating inputs); a predicate's result is bool.
TRANSLATIONS: dict[str, Rule] = {
    # arithmetic
    "additionWithPrimaryTensor:secondaryTensor:name:": Rule("({0} + {1})", integer=_I),
    "subtractionWithPrimaryTensor:secondaryTensor:name:": Rule("({0} - {1})", integer=_I),
    "multiplicationWithPrimaryTensor:secondaryTensor:name:": Rule("({0} * {1})", integer=_I),
    "divisionWithPrimaryTensor:secondaryTensor:name:": Rule("({0} / {1})"),
    "negativeWithTensor:name:": Rule("(-{0})", integer=_I),
    "squareWithTensor:name:": Rule("({0} * {0})"),
    "reciprocalWithTensor:name:": Rule("(1.0f / {0})"),
    "powerWithPrimaryTensor:secondaryTensor:name:": Rule("pow({0}, {1})"),
    "maximumWithPrimaryTensor:secondaryTensor:name:": Rule("c10::metal::max({0}, {1})"),
    "minimumWithPrimaryTensor:secondaryTensor:name:": Rule("c10::metal::min({0}, {1})"),
    # comparisons
    "equalWithPrimaryTensor:secondaryTensor:name:": Rule("({0} == {1})", _B, _I),
    "notEqualWithPrimaryTensor:secondaryTensor:name:": Rule("({0} != {1})", _B, _I),
    "lessThanWithPrimaryTensor:secondaryTensor:name:": Rule("({0} < {1})", _B, _I),
    "lessThanOrEqualToWithPrimaryTensor:secondaryTensor:name:": Rule("({0} <= {1})", _B, _I),
    "greaterThanWithPrimaryTensor:secondaryTensor:name:": Rule("({0} > {1})", _B, _I),
    "greaterThanOrEqualToWithPrimaryTensor:secondaryTensor:name:": Rule("({0} >= {1})", _B, _I),
    "isNaNWithTensor:name:": Rule("isnan({0})", _B),
    "isInfiniteWithTensor:name:": Rule("isinf({0})", _B),
    "isFiniteWithTensor:name:": Rule("isfinite({0})", _B),
    # the float of an integer keeps its sign (an integer has no -0): one pattern for both
    "signbitWithTensor:name:": Rule("signbit(static_cast<float>({0}))", _B, _I),
    # logical
    "notWithTensor:name:": Rule("(!{0})", _B, _I),
    "logicalANDWithPrimaryTensor:secondaryTensor:name:": Rule("({0} && {1})", _B, _I),
    "logicalORWithPrimaryTensor:secondaryTensor:name:": Rule("({0} || {1})", _B, _I),
    "logicalXORWithPrimaryTensor:secondaryTensor:name:": Rule("({0} != {1})", _B),
    "logicalNANDWithPrimaryTensor:secondaryTensor:name:": Rule("(!({0} && {1}))", _B, _I),
    "logicalNORWithPrimaryTensor:secondaryTensor:name:": Rule("(!({0} || {1}))", _B, _I),
    # select, clamp
    "selectWithPredicateTensor:truePredicateTensor:falsePredicateTensor:name:": Rule("({0} ? {1} : {2})", integer=_I),
    # NaN stays NaN, as CPU's clamp keeps it (Metal's min/max would return the bound)
    "clampWithTensor:minValueTensor:maxValueTensor:name:": Rule("({0} < {1} ? {1} : ({0} > {2} ? {2} : {0}))"),
    "reLUWithTensor:name:": Rule("max({0}, 0.0f)"),
    # unary math
    "absoluteWithTensor:name:": Rule("abs({0})"),
    "signWithTensor:name:": Rule("(({0} > 0) - ({0} < 0))"),
    "floorWithTensor:name:": Rule("floor({0})"),
    "ceilWithTensor:name:": Rule("ceil({0})"),
    "truncateWithTensor:name:": Rule("trunc({0})"),
    "roundWithTensor:name:": Rule("rint({0})"),
    "squareRootWithTensor:name:": Rule("sqrt({0})"),
    "reverseSquareRootWithTensor:name:": Rule("rsqrt({0})"),
    "exponentWithTensor:name:": Rule("exp({0})"),
    "exponentBase2WithTensor:name:": Rule("exp2({0})"),
    "exponentBase10WithTensor:name:": Rule("exp10({0})"),
    "logarithmWithTensor:name:": Rule("log({0})"),
    "logarithmBase2WithTensor:name:": Rule("log2({0})"),
    "logarithmBase10WithTensor:name:": Rule("log10({0})"),
    "sinWithTensor:name:": Rule("sin({0})"),
    "cosWithTensor:name:": Rule("cos({0})"),
    "tanWithTensor:name:": Rule("tan({0})"),
    "asinWithTensor:name:": Rule("asin({0})"),
    "acosWithTensor:name:": Rule("acos({0})"),
    "atanWithTensor:name:": Rule("atan({0})"),
    "sinhWithTensor:name:": Rule("sinh({0})"),
    "coshWithTensor:name:": Rule("cosh({0})"),
    "tanhWithTensor:name:": Rule("tanh({0})"),
    "asinhWithTensor:name:": Rule("precise::asinh({0})"),
    "acoshWithTensor:name:": Rule("precise::acosh({0})"),
    "atanhWithTensor:name:": Rule("precise::atanh({0})"),
    "atan2WithPrimaryTensor:secondaryTensor:name:": Rule("precise::atan2({0}, {1})"),
    "sigmoidWithTensor:name:": Rule("(1.0f / (1.0f + exp(-{0})))"),
    "softPlusWithTensor:name:": Rule("log(1.0f + exp({0}))"),
    "erfWithTensor:name:": Rule("c10::metal::erf({0})"),
}
# constants: the scalar (a literal or a scalar parameter) is the value; shape and dtype follow the operands
CONSTANTS = frozenset({"constantWithScalar:dataType:", "constantWithScalar:shape:dataType:"})
# a cast's target (C++ ScalarType or MPSDataType) -> Metal type
CASTS: dict[str, str] = {
    "ScalarType::Bool": "bool",
    "MPSDataTypeBool": "bool",
    "ScalarType::Float": "float",
    "MPSDataTypeFloat32": "float",
    "ScalarType::Half": "half",
    "MPSDataTypeFloat16": "half",
    "ScalarType::Int": "int",
    "MPSDataTypeInt32": "int",
    "ScalarType::Long": "long",
    "MPSDataTypeInt64": "long",
}
OPERANDS = {1: ("x",), 2: ("a", "b"), 3: ("a", "b", "c")}


class Untranslatable(Exception):
    def __init__(self, what: str, location: Location | None):
        super().__init__(what)
        self.what = what
        self.location = location


@dataclass(frozen=True)
class Translation:
    expr: str
    boolean: bool  # the result is a predicate: the op writes bool
    casts: tuple[str, ...]  # Metal types the graph casts to


def translate(node: GraphNode, operands: tuple[str, ...], unset: dict[str, str] | None = None,
              scalars: dict[str, str] | None = None) -> Translation:
    """The Metal expression of a graph (`Untranslatable` names the first node no row covers).
    `unset`: an optional scalar -> the value its stub receives when it is unset (the shared
    function's sentinel, `eps ? eps.value() : -1.0` -> "-1.0"): `eps.has_value()` is `eps != -1.0f`.
    `scalars`: a scalar parameter of the graph -> the functor's name for what the stub receives
    (None: names kept); a scalar it lacks is one the stub does not receive."""
    casts: list[str] = []
    unset = unset or {}

    def walk(n: GraphNode, rounding: bool = True) -> tuple[str, bool]:
        if n.kind == "input":
            return operands[int(n.name)], False
        if n.kind == "scalar":
            if scalars is None:
                return n.name, False
            if n.name not in scalars:
                raise Untranslatable(f"the scalar {n.name}, which the stub does not receive", n.location)
            return scalars[n.name], False
        if n.kind == "number":
            return _float_literal(n.name), False
        if n.kind == "has_value":
            if n.name not in unset:
                raise Untranslatable(f"`{n.name}.has_value()`, whose unset value the stub call does not show",
                                     n.location)
            name = n.name if scalars is None else scalars.get(n.name, n.name)
            return f"({name} != {_float_literal(unset[n.name])})", True
        if n.kind == "cast":
            to = CASTS.get(n.name)
            if to is None:
                raise Untranslatable(f"a cast to {n.name}", n.location)
            casts.append(to)
            inner, _ = walk(n.args[0])
            return f"static_cast<{to}>({inner})", to == "bool"
        if n.kind == "send" and rounding and n.name in ARITHMETIC and _in_input_type(n):
            # arithmetic on the op's scalars alone, held in the input's dtype, is rounded to it as the
            # graph holds it: logit's 1 - eps is 1 in half for a small eps, as on CPU (a scalar alone
            # is left in float, as CPU's opmath reads it)
            inner, boolean = walk(n, rounding=False)
            return f"static_cast<scalar_t>({inner})", boolean
        if n.kind == "send":
            if n.name in CONSTANTS:
                value = n.args[0] if n.args else None
                if value is not None and value.kind == "other" and value.name in MATH_CONSTANTS:
                    return MATH_CONSTANTS[value.name], False  # <cmath>'s M_SQRT1_2: Metal's M_SQRT1_2_F
                if value is None or value.kind not in ("number", "scalar"):
                    raise Untranslatable(f"[graph {n.name}] of a value mpsgen cannot read", n.location)
                return walk(value)
            rule = TRANSLATIONS.get(n.name)
            if rule is None:
                raise Untranslatable(f"MPSGraph {n.name.split(':')[0]}", n.location)
            args = [walk(a)[0] for a in n.args]
            try:
                return rule.pattern.format(*args), rule.boolean
            except IndexError:
                raise Untranslatable(f"MPSGraph {n.name} with {len(args)} tensor arguments", n.location) from None
        raise Untranslatable(f"`{n.name}`", n.location)

    expr, boolean = walk(node)
    return Translation(expr, boolean, tuple(dict.fromkeys(casts)))


ARITHMETIC = frozenset(("additionWithPrimaryTensor:secondaryTensor:name:", "subtractionWithPrimaryTensor:secondaryTensor:name:",
                        "multiplicationWithPrimaryTensor:secondaryTensor:name:",
                        "divisionWithPrimaryTensor:secondaryTensor:name:", "negativeWithTensor:name:"))


def _in_input_type(n: GraphNode) -> bool:
    """A tensor made of the op's scalars alone, held in the input's dtype: a constant of a scalar
    parameter with the input's `dataType`, or arithmetic on such constants (and literals) only."""
    if n.kind != "send":
        return False
    if n.name in CONSTANTS:
        return bool(n.args) and n.args[0].kind == "scalar" and n.args[-1].kind == "dtype"
    if n.name not in ARITHMETIC:
        return False
    literal = lambda a: a.kind == "send" and a.name in CONSTANTS and bool(a.args) and a.args[0].kind == "number"
    return all(_in_input_type(a) or literal(a) for a in n.args) and any(_in_input_type(a) for a in n.args)


def _float_literal(text: str) -> str:
    if any(c in text for c in ".eE"):
        return f"{text}f"
    return f"{text}.0f"


def legacy_graphs(views: Views, facts: OpFacts) -> list[Graph]:
    """The graphs of the op's legacy kernels (the `MPS:` lines migrate deletes), out= kernel first."""
    kernels = sorted(facts.legacy_kernels, key=lambda k: ("out" not in k, k))
    found = []
    for kernel in kernels:
        for rel in views.host_files():
            text = views.ws.read(rel)
            if kernel not in text:
                continue
            definitions = views.definitions(rel)
            if not any(d.name == kernel or kernel in d.args for d in definitions):
                continue
            # read once a text: scan, migrate's plan and its re-plans each ask for it
            found.append(views.view(f"graph:{kernel}", rel,
                                    lambda t, rel=rel, kernel=kernel: read_graph(t, rel, kernel, views.definitions(rel))))
            break
    return found


def graph_body(views: Views, facts: OpFacts) -> BodyOffer | NoBody:
    """A body from the op's legacy MPSGraph graph, or why there is none."""
    if not facts.legacy_kernels:
        return NoBody(SOURCE, f"{facts.op} has no legacy MPS kernel (no `MPS:` dispatch line) to read a graph from")
    graphs = legacy_graphs(views, facts)
    if not graphs:
        return NoBody(SOURCE, f"the legacy kernels of {facts.op} ({', '.join(sorted(facts.legacy_kernels))}) "
                              f"are defined in no operations/*.mm file")
    first_reason: NoBody | None = None
    unset, scalars = _stub_scalars(views, facts)
    for graph in graphs:
        offer = _offer(facts, graph, unset, scalars)
        if isinstance(offer, BodyOffer):
            return offer
        first_reason = first_reason or offer
    return first_reason


def _stub_scalars(views: Views, facts: OpFacts) -> tuple[dict[str, str], dict[str, str] | None]:
    """What the stub receives of the op's scalars, read from the checkout's shared .cpp function:
    for each optional scalar, its value when unset (`Scalar(eps ? eps.value() : -1.0)`: eps ->
    "-1.0"); and the functor's name for each scalar the stub receives: a one-Scalar stub's is the
    functor's alpha, named as `resolve` names it (the one parameter the argument reads, else
    `alpha`), when the stub receives it as it is. Without the shared function (a wheel has no
    .cpp): None, and a graph reading the op's scalars has no body (what the stub receives is unknown)."""
    if facts.stub is None or not facts.stub.scalar_count:
        return {}, None
    call = read_stub_call(views.ws, tuple(dict.fromkeys(site.line.kernel for site in facts.shared)),
                          facts.stub.name) if facts.shared else None
    names: dict[str, str] | None = None
    if call is not None and facts.stub.scalar_count == 1 and len(call.args) == 1:
        arg = call.args[0]
        # only a scalar the stub receives as it is (or its unset sentinel): mse_backward's `norm` is
        # computed from `reduction` and the input's size, which the graph's scalar is not
        names = {read: arg.name or "alpha" for read in arg.reads if _passed_as_is(arg.value, read)}
    found = {}
    for arg in call.args if call is not None else ():
        if len(arg.reads) != 1 or arg.name != arg.reads[0] or "value()" not in arg.value:
            continue
        try:
            value = evaluate(arg.value, {arg.name: None})
        except NotEvaluable:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found[arg.name] = repr(float(value))
    return found, names


def _passed_as_is(value: str, name: str) -> bool:
    """`eps`, `eps ? eps.value() : -1.0`, `eps.value_or(-1.0)`, `Scalar(...)`/`static_cast<...>(...)` of them."""
    text = re.sub(r"\s+", "", value)
    text = re.sub(r"^(?:Scalar|static_cast<[\w:]+>)\((.*)\)$", r"\1", text)
    number = r"-?[\d.]+(?:[eE][-+]?\d+)?"
    return re.fullmatch(rf"{name}(?:\?{name}\.value\(\):{number}|\.value_or\({number}\))?", text) is not None


def _offer(facts: OpFacts, graph: Graph, unset: dict[str, str] | None = None,
           scalars: dict[str, str] | None = None) -> BodyOffer | NoBody:
    if graph.output is None:
        return NoBody(SOURCE, f"{graph.function}: {graph.why}", graph.why_location or graph.location)
    operands = OPERANDS.get(len(graph.inputs))
    if operands is None:
        return NoBody(SOURCE, f"{graph.function} takes {len(graph.inputs)} tensors: no functor shape for that",
                      graph.location)
    if scalars is None and facts.stub is not None and facts.stub.scalar_count == 1:  # params stubs keep field names
        used = sorted({n.name for n in _nodes(graph.output) if n.kind in ("scalar", "has_value")})
        if used:
            return NoBody(SOURCE, f"{graph.function}'s graph reads {', '.join(used)}: what {facts.stub.name} receives "
                                  "for it is read from the shared .cpp function calling the stub, which this checkout "
                                  "lacks", graph.location)
    try:
        out = translate(graph.output, operands, unset, scalars)
    except Untranslatable as exc:
        where = f" at {exc.location}" if exc.location else ""
        return NoBody(SOURCE, f"{graph.function}'s graph uses {exc.what}{where}: no Metal translation for it",
                      exc.location or graph.location)
    # bool inputs: a graph that casts its inputs to bool reads any dtype as a truth value; a graph of
    # integer-safe rows alone (its result cast to bool at most) means the same for integer operands
    if "bool" in out.casts and not _casts_only_output(graph):
        supports = ("float", "integer", "bool")
    elif _integer_safe(graph.output):
        supports = ("float", "integer", "bool") if out.boolean else ("float", "integer")
    else:
        supports = ("float",)
    notes = "; ".join(graph.notes)
    describe = f"{facts.op}'s MPSGraph graph ({graph.function})" + (f"; {notes}" if notes else "")
    return BodyOffer(SOURCE, out.expr, graph.location, describe, output="bool" if out.boolean else "",
                     supports=supports)


def _casts_only_output(graph: Graph) -> bool:
    """The graph's only bool cast is of its result (signbit: `castMPSTensor(graph, signbit(x), Bool)`)."""
    return graph.output is not None and graph.output.kind == "cast" and not any(
        n.kind == "cast" for n in _nodes(graph.output.args[0]))


def _integer_safe(output: GraphNode) -> bool:
    """Every node is an input or a row marked `integer` (a bool cast of the result aside): no
    literal (`1.0f`), no cast, no float-only math."""
    root = output.args[0] if output.kind == "cast" and CASTS.get(output.name) == "bool" and output.args else output
    for node in _nodes(root):
        if node.kind == "input":
            continue
        if node.kind != "send" or not TRANSLATIONS.get(node.name, Rule("")).integer:
            return False
    return True


def _nodes(node: GraphNode):
    yield node
    for a in node.args:
        yield from _nodes(a)
