"""Reduction kernels as a checkout writes them, read without assuming their names.

Kernel side (`kernels/ReduceOps.metal`): every kernel the file instantiates is one host name
`<op>_reduction<variant>_<input>_<output>` (the input type first, unlike elementwise kernels); the
names come from the compiler's reading of the file (`mpsgen.read.metalread`: the registration
macros expanded, adjacent literals joined), so however the file's macros build them,
`reduction_kernels` sees what the compiled library lists: op prefix -> variant -> (input, output)
pair -> the kernel-file line that instantiates it.

Host side (`operations/ReduceOps.mm`): the launcher composes a kernel name from an op prefix, a
variant suffix and the two types. `read_reduction_host` finds the launcher's variant suffixes
(the string literals a `switch` over the kernel enum returns: `case X::Y: return "_y";`), the
function holding that switch, and for every function of the file the functions it calls, so that
`ReductionHost.routes(fn)` says whether a stub's host function reaches the launcher and
`ReductionHost.prefixes(fn)` which op prefixes (`"prod_"`) it passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mpsgen.model import Location
from mpsgen.read.cpp import find_definitions, mask_code, match_brace, split_top_level
# a Metal scalar or vector type as a kernel name spells it (float3: the Welford partials)
from mpsgen.read.metalread import METAL_TYPE

_NAME = re.compile(rf"(?P<op>[a-z0-9_]+?)_reduction(?P<variant>(?:_[a-z0-9]+)*?)_(?P<input>{METAL_TYPE})_(?P<output>{METAL_TYPE})")
_CASE_RETURN = re.compile(r"\bcase\s+(?:(\w+)\s*::\s*)?(\w+)\s*:\s*return\s+\"(\w*)\"\s*;")
_SINGLE = re.compile(rf"(?P<op>[a-z0-9_]+?)_reduction(?P<variant>(?:_[a-z0-9]+)*?)_(?P<input>{METAL_TYPE})")
_PREFIX_LITERAL = re.compile(r"\"([a-z][a-z0-9_]*_)\"")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


@dataclass(frozen=True)
class ReductionName:
    op: str  # the prefix without its trailing underscore: "prod", "norm_l2"
    variant: str  # "" (the generic kernel), "_flat", "_outer_small_dim", ...
    input: str
    output: str


def parse_reduction_name(name: str) -> ReductionName | None:
    """`prod_reduction_outer_small_dim_half_float` -> (prod, _outer_small_dim, half, float); None
    for a name of another shape."""
    m = _NAME.fullmatch(name)
    if m is None:
        return None
    return ReductionName(m.group("op"), m.group("variant"), m.group("input"), m.group("output"))


Pair = tuple[str, str]


@dataclass(frozen=True)
class ReductionKernels:
    """What one kernel file instantiates: op prefix -> variant -> (input, output) -> line."""

    path: str
    ops: dict[str, dict[str, dict[Pair, int]]]
    # variants instantiated under one-type names only (`argmax_reduction_combine_float`): a pass of
    # their own, never named with an (input, output) pair
    single_type_variants: frozenset[str] = frozenset()

    def pairs(self, op: str) -> frozenset[Pair]:
        return frozenset(p for by_pair in self.ops.get(op, {}).values() for p in by_pair)

    def variants(self, op: str) -> frozenset[str]:
        return frozenset(self.ops.get(op, {}))

    def names(self, op: str) -> frozenset[str]:
        return frozenset(f"{op}_reduction{v}_{i}_{o}" for v, by_pair in self.ops.get(op, {}).items() for i, o in by_pair)

    def first_line(self, op: str) -> int:
        lines = [line for by_pair in self.ops.get(op, {}).values() for line in by_pair.values() if line]
        return min(lines) if lines else 0


def reduction_kernels(path: str, host_names: tuple[str, ...], lines: tuple[int, ...]) -> ReductionKernels:
    """The reduction kernels among a file's instantiated `host_names` (with the kernel-file line of
    each, `KernelReading.host_name_lines`)."""
    ops: dict[str, dict[str, dict[Pair, int]]] = {}
    single: set[str] = set()
    for i, name in enumerate(host_names):
        parsed = parse_reduction_name(name)
        if parsed is None:
            one = _SINGLE.fullmatch(name)
            if one is not None:
                single.add(one.group("variant"))
            continue
        line = lines[i] if i < len(lines) else 0
        by_pair = ops.setdefault(parsed.op, {}).setdefault(parsed.variant, {})
        by_pair.setdefault((parsed.input, parsed.output), line)
    paired = {v for by_variant in ops.values() for v in by_variant}
    return ReductionKernels(path, ops, frozenset(single - paired))


@dataclass(frozen=True)
class OrderRoutes:
    """How a host function taking an order routes it (a load-mode reduction's): `if (p == 2.0) {
    launcher(iter, "powsum_l2_"); ...}` per served order, then the code every other order runs, its
    prefix, and whether that code raises |x| to the order elementwise first (`.abs().pow(`)."""

    routes: tuple[tuple[float, str], ...]  # (order, prefix without its underscore)
    fallthrough: str  # the prefix the other orders' launch passes ("" when none)
    elementwise: bool
    in_output_type: bool = False  # |x| is converted to the output's type before the power (`.to(out.scalar_type())`)

    def route(self, order: float) -> str | None:
        """The prefix a served order goes to, None for the fall-through path."""
        return next((prefix for value, prefix in self.routes if value == order), None)


_ORDER_BRANCH = re.compile(r"\bif\s*\(\s*\w+\s*==\s*([-+]?\d+(?:\.\d*)?)\s*\)\s*\{([^{}]*)\}")


def order_routes(body: str) -> OrderRoutes | None:
    """The order routing of a function body (the text between its braces), None when it has none."""
    masked = mask_code(body)
    routes: list[tuple[float, str]] = []
    end = 0
    for m in _ORDER_BRANCH.finditer(masked):
        literals = _PREFIX_LITERAL.findall(body[m.start(2):m.end(2)])
        if literals and re.search(r"\breturn\b", masked[m.start(2):m.end(2)]):
            routes.append((float(m.group(1)), literals[0][:-1]))
            end = m.end()
    if not routes:
        return None
    rest_code = masked[end:]
    rest = _PREFIX_LITERAL.findall(body[end:])
    elementwise = bool(re.search(r"\.\s*abs\s*\(\s*\)", rest_code) and re.search(r"\.\s*pow\s*\(", rest_code))
    converted = bool(re.search(r"\.\s*abs\s*\(\s*\)\s*\.\s*to\s*\(\s*\w+\s*\.\s*scalar_type\s*\(\s*\)\s*\)", rest_code))
    return OrderRoutes(tuple(routes), rest[-1][:-1] if rest else "", elementwise, converted)


@dataclass(frozen=True)
class ReductionHost:
    """A host file's reduction launcher: the variant suffixes it composes names with (enum case ->
    suffix), the function holding that switch, and the file's call graph."""

    path: str
    suffixes: dict[str, str]  # enum case -> suffix ("Generic" -> "", "Flat" -> "_flat", ...)
    suffix_function: str  # the function whose switch returns the suffixes ("" when none)
    suffix_location: Location | None
    calls: dict[str, frozenset[str]] = field(default_factory=dict)  # function -> functions of this file it names
    literals: dict[str, tuple[str, ...]] = field(default_factory=dict)  # function -> prefix literals in its body
    cases: dict[str, frozenset[str]] = field(default_factory=dict)  # function -> the enum's cases it names
    orders: dict[str, OrderRoutes] = field(default_factory=dict)  # function -> its order routing, if any
    # function -> the input types (Metal names) a branch of it converts with `.to(...)` before launching
    converted: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def variants(self) -> frozenset[str]:
        return frozenset(self.suffixes.values())

    def reachable(self, function: str) -> set[str]:
        """`function` and every function of this file it reaches through calls."""
        seen, todo = set(), [function]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(self.calls.get(name, ()))
        return seen

    def routes(self, function: str) -> bool:
        """Whether `function` reaches the launcher's suffix function through calls in this file."""
        return bool(self.suffix_function) and self.suffix_function in self.reachable(function)

    def picks(self, function: str) -> frozenset[str]:
        """The variants the launcher can pick for `function`: the suffixes of the enum cases that
        the code it reaches names (the suffix switch itself excluded)."""
        named = set()
        for name in self.reachable(function) - {self.suffix_function}:
            named |= self.cases.get(name, frozenset())
        return frozenset(self.suffixes[case] for case in named if case in self.suffixes)

    def prefixes(self, function: str) -> tuple[str, ...]:
        """The op prefixes (`prod`, from `"prod_"`) the function passes, in order of appearance."""
        return tuple(dict.fromkeys(lit[:-1] for lit in self.literals.get(function, ())))


# ATen's ScalarType constants -> the Metal type a kernel name spells
SCALAR_TYPE_METAL = {"Bool": "bool", "Char": "char", "Byte": "uchar", "Short": "short", "Int": "int", "Long": "long",
                     "Half": "half", "Float": "float", "BFloat16": "bfloat"}
_TYPE_BRANCH = re.compile(r"\bif\s*\(\s*\w+(?:\s*\.\s*\w+\s*\(\s*\w*\s*\))*\s*\.\s*scalar_type\s*\(\s*\)\s*==\s*"
                          r"(?:(?:at|c10)\s*::\s*)?(?:ScalarType\s*::\s*|k)(\w+)\s*\)\s*\{")


def converted_inputs(masked_body: str) -> frozenset[str]:
    """The input types (Metal names) an `if (x.scalar_type() == kT) { ... .to(...) ... }` branch of a
    host function converts before it launches (`masked_body`: comments and literals blanked): a type
    with no kernel of its own served through another type's kernels."""
    out = set()
    for m in _TYPE_BRANCH.finditer(masked_body):
        close = match_brace(masked_body, m.end() - 1)
        if close >= 0 and re.search(r"\.\s*to\s*\(", masked_body[m.end():close]) \
                and m.group(1) in SCALAR_TYPE_METAL:
            out.add(SCALAR_TYPE_METAL[m.group(1)])
    return frozenset(out)


def read_reduction_host(text: str, path: str) -> ReductionHost:
    masked = mask_code(text)
    definitions = [d for d in find_definitions(text, path) if d.kind == "function"]
    names = {d.name for d in definitions}
    calls: dict[str, set[str]] = {}
    literals: dict[str, list[str]] = {}
    orders: dict[str, OrderRoutes] = {}
    converted: dict[str, frozenset[str]] = {}
    suffixes: dict[str, str] = {}
    suffix_function = ""
    suffix_location = None
    enum = ""
    for d in definitions:
        code = masked[d.code_start:d.code_end]
        called = {m.group(0) for m in _IDENT.finditer(code)} & names
        called.discard(d.name)
        calls.setdefault(d.name, set()).update(called)
        literals.setdefault(d.name, []).extend(_PREFIX_LITERAL.findall(text[d.code_start:d.code_end]))
        body = text[d.code_start:d.code_end]
        routing = order_routes(body)
        if routing is not None:
            orders[d.name] = routing
        cast = converted_inputs(code)
        if cast:
            converted[d.name] = cast
        found = list(_CASE_RETURN.finditer(body))
        cases = {m.group(2): m.group(3) for m in found}
        # the launcher's suffix switch: returns "" for one case and "_x" literals for the others
        if len(cases) >= 2 and all(s == "" or s.startswith("_") for s in cases.values()) and not suffix_function:
            suffixes = cases
            suffix_function = d.name
            suffix_location = d.location
            enum = found[0].group(1) or ""
    named: dict[str, frozenset[str]] = {}
    if enum:
        pattern = re.compile(rf"\b{re.escape(enum)}\s*::\s*(\w+)")
        named = {d.name: frozenset(pattern.findall(masked[d.code_start:d.code_end])) for d in definitions}
    return ReductionHost(path, suffixes, suffix_function, suffix_location,
                         {k: frozenset(v) for k, v in calls.items()},
                         {k: tuple(v) for k, v in literals.items()}, named, orders, converted)


@dataclass(frozen=True)
class Instantiation:
    """One explicit kernel instantiation as the compiler sees it: its host name, the kernel
    template and its template arguments (`reduction_innermost`, `("SumOp<float, LOAD_ABS>",
    "float", "float")`), and the kernel-file line that writes it."""

    name: str
    function: str
    args: tuple[str, ...]
    line: int

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """What the compiler instantiates: two instantiations with the same key are a duplicate
        explicit instantiation (an error), whatever their host names."""
        return (self.function, self.args)


_DIRECTIVE_START = re.compile(r"^[ \t]*#")
_TOP_CALL = re.compile(r"^[A-Z_][A-Z0-9_]*\s*\(")
_HOST_NAME = re.compile(r"host_name\s*\(\s*((?:\"[^\"\n]*\"\s*)+)\)")
_DECLTYPE = re.compile(r"\bdecltype\s*\(\s*(\w+)\s*<")


def reduction_instantiations(text: str, path: str) -> tuple[Instantiation, ...]:
    """Every `[[host_name(...)]] ... decltype(kernel<ARGS>)` instantiation the file's own macros
    expand to, with full template arguments (`mpsgen.read.metalread` keeps host names only): the
    file's directives and its top-level macro calls, other lines blanked, through pcpp."""
    from pcpp.preprocessor import Action, OutputDirective, Preprocessor

    masked = mask_code(text)
    lines, masked_lines = text.split("\n"), masked.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        code = masked_lines[i]
        if _DIRECTIVE_START.match(code):
            kept.append(lines[i])
            while masked_lines[i].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                kept.append(lines[i])
        elif _TOP_CALL.match(code):
            kept.append(lines[i])
        else:
            kept.append("")
        i += 1

    class _Pp(Preprocessor):
        def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
            raise OutputDirective(Action.IgnoreAndRemove)

        def on_file_open(self, is_system_include, includepath):
            raise OSError(includepath)  # the file's own macros are what name its kernels

        def on_error(self, file, line, msg):
            pass

    pp = _Pp()
    pp.line_directive = "#line"
    pp.compress = 0
    pp.define("__METAL__ 1")
    pp.define("__METAL_VERSION__ 310")
    pp.parse("\n".join(kept), path)
    import io

    out = io.StringIO()
    pp.write(out)
    expanded = out.getvalue()
    # the kernel-file line of each output line
    origin: list[int] = []
    current = 0
    for line in expanded.split("\n"):
        m = re.match(r"\s*#line\s+(\d+)", line)
        if m:
            current = int(m.group(1))
            origin.append(0)
            continue
        origin.append(current)
        current += 1
    starts = [0]
    for line in expanded.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    import bisect

    found: list[Instantiation] = []
    for m in _HOST_NAME.finditer(expanded):
        name = "".join(re.findall(r"\"([^\"]*)\"", m.group(1)))
        d = _DECLTYPE.search(expanded, m.end(), m.end() + 400)
        if d is None:
            continue
        open_at = d.end() - 1
        depth, j = 0, open_at
        while j < len(expanded):
            depth += {"<": 1, ">": -1}.get(expanded[j], 0)
            if depth == 0:
                break
            j += 1
        args = tuple(" ".join(a.split()) for a in split_top_level(expanded[open_at + 1:j], "<([", ">)]"))
        line = origin[bisect.bisect_right(starts, m.start()) - 1]
        found.append(Instantiation(name, d.group(1), args, line))
    return tuple(found)

