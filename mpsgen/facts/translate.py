"""C++ scalar code (a CPU kernel's lambda, the helpers it calls) in Metal's spelling, by tables.

Every rule is a row of data, each with its test (tests/test_translate.py):
- `FUNCTIONS`: a C++ callee (qualified, template arguments dropped) -> its Metal spelling. A name
  (`{m}precise::atan2`) replaces the callee; a pattern with `{0}`, `{1}` replaces the whole call
  with its translated arguments (`std::max`, whose NaN rule is not Metal's `max`). `{m}`/`{c}` are
  the kernel file's prefixes for `metal::` and `c10::metal::`; a `{c}` spelling needs the
  checkout's c10/metal headers to define the function, else the translation is refused naming it.
  CPU's transcendental functions are correctly rounded (libm): their rows use `precise::`.
- `BARE_FUNCTIONS`: unqualified calls a header makes through `<cmath>` (`exp(x*x)` in Math.h).
- `NAMES`: qualified names that are not calls: a prefix spelled anew (`std::numeric_limits` ->
  `{m}numeric_limits`), or a template variable (`c10::pi<T>` -> `static_cast<T>(M_PI_F)`, `{t}`
  being its template argument).
- `CONSTANTS`: <cmath>'s math macros (`M_SQRT2`) as Metal's float ones (`M_SQRT2_F`).
- `TYPES`: types Metal spells otherwise (`opmath_t` and `double` -> `float`: Metal has no double,
  and MPS kernels compute half and bfloat in float, as CPU's opmath does).
- `REFUSED`: calls with no Metal meaning (a kernel cannot raise: `TORCH_CHECK`).
A name in `std::`, `c10::` or `at::` with no row is refused, naming it; an unqualified call that is
neither a row, a parameter, nor a function the caller can bring along is refused likewise.

`translate_lambda(...) -> Translation` turns a scalar lambda into one Metal expression over the
functor's operands (a lambda that is one `return` whose text needs no `scalar_t`), else into a
helper function `<name>_scalar` templated on `scalar_t` that the expression calls, so the
functor's types fill `scalar_t`; `translate_function` spells a helper definition brought along."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from mpsgen.read.cppsyntax import Source, Syntax

PRECISE = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2", "cos", "cosh", "exp", "exp2", "log", "log2",
           "log10", "pow", "sin", "sinh", "sqrt", "tan", "tanh")
EXACT = ("abs", "fabs", "ceil", "floor", "trunc", "round", "rint", "fmod", "copysign", "nextafter", "isnan", "isinf",
         "isfinite", "signbit", "fmax", "fmin")
C10_FUNCTIONS = ("log1p", "expm1", "erf", "erfc", "erfinv", "lgamma", "tgamma")

FUNCTIONS: dict[str, str] = {
    **{f"std::{name}": f"{{m}}precise::{name}" for name in PRECISE},
    **{f"std::{name}": f"{{m}}{name}" for name in EXACT},
    **{f"std::{name}": f"{{c}}{name}" for name in C10_FUNCTIONS},
    # c10::metal::hypot takes max/min of its arguments as given, with no inf/NaN case (2.13's: hypot(0, -1)
    # is NaN): called on |a|, |b| once inf (which wins over NaN, as in libm) and NaN are settled
    "std::hypot": "(({m}isinf({0}) || {m}isinf({1})) ? INFINITY : ({m}isnan({0}) || {m}isnan({1})) ? NAN : "
                  "{c}hypot({m}abs({0}), {m}abs({1})))",
    "std::max": "(({0}) < ({1}) ? ({1}) : ({0}))",
    "std::min": "(({1}) < ({0}) ? ({1}) : ({0}))",
    "at::_isnan": "{m}isnan",
    "c10::copysign": "{m}copysign",
    "c10::is_negative": "(({0}) < 0)",
    "at::native::_isnan": "{m}isnan",
}
BARE_FUNCTIONS: dict[str, str] = {
    **{name: f"{{m}}precise::{name}" for name in PRECISE},
    **{name: f"{{m}}{name}" for name in EXACT},
}
NAMES: dict[str, str] = {
    "std::numeric_limits": "{m}numeric_limits",
    "std::enable_if_t": "{m}enable_if_t",
    "std::is_floating_point_v": "{m}is_floating_point_v",
    "std::is_integral_v": "{m}is_integral_v",
    "c10::pi": "static_cast<{t}>(M_PI_F)",
    "c10::frac_sqrt_2": "static_cast<{t}>(M_SQRT1_2_F)",
    "c10::ln_2": "static_cast<{t}>(M_LN2_F)",
}
# the math macros of <cmath> (double) as Metal's float constants
CONSTANTS: dict[str, str] = {
    "M_E": "M_E_F", "M_LOG2E": "M_LOG2E_F", "M_LOG10E": "M_LOG10E_F", "M_LN2": "M_LN2_F", "M_LN10": "M_LN10_F",
    "M_PI": "M_PI_F", "M_PI_2": "M_PI_2_F", "M_PI_4": "M_PI_4_F", "M_1_PI": "M_1_PI_F", "M_2_PI": "M_2_PI_F",
    "M_2_SQRTPI": "M_2_SQRTPI_F", "M_SQRT2": "M_SQRT2_F", "M_SQRT1_2": "M_SQRT1_2_F",
}
TYPES: dict[str, str] = {"opmath_t": "float", "double": "float", "long double": "float"}
REFUSED: dict[str, str] = {
    "TORCH_CHECK": "a Metal kernel cannot raise (CPU raises here)",
    "TORCH_INTERNAL_ASSERT": "a Metal kernel cannot raise (CPU asserts here)",
    "std::conj": "complex arithmetic (c10::complex) has no translation",
    "std::tie": "tuples have no translation",
}
# A `{c}` function the checkout's c10/metal lacks that mpsgen can write as a local helper instead:
# name -> (helper name, its definition). `{m}` is the kernel file's `metal::` prefix.
LOCAL_FALLBACKS: dict[str, tuple[str, str]] = {
    "log1p": ("log1p_local", "// log(1 + t), the low bits of a tiny t kept (this checkout's c10/metal has no log1p)\n"
                             "inline float log1p_local(const float t) {{\n"
                             "  const float u = 1.0f + t;\n"
                             "  if (u == 1.0f || {m}isinf(u)) {{\n"
                             "    return u == 1.0f ? t : u;\n"
                             "  }}\n"
                             "  return {m}precise::log(u) * (t / (u - 1.0f));\n"
                             "}}\n"),
}
_NAMESPACES = ("std", "c10", "at")
HELPER_SUFFIX = "_cpu"
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


class Untranslatable(Exception):
    """Why a piece of C++ has no Metal spelling (`where`: its line in the file)."""

    def __init__(self, reason: str, line: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.line = line


@dataclass(frozen=True)
class Translation:
    """A lambda in Metal: `expr` over the functor's operands, the `helpers` it calls (definitions,
    in the order they go in the file), and `needs`: functions the helpers call that the caller
    must bring along (names)."""

    expr: str
    helpers: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    # a params op's optional fields: field -> the C++ value the CPU kernel gives it when unset (the
    # host resolves it, in the host's `scalar_t`)
    defaults: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ParamRead:
    """A stub scalar as a params struct carries it: the kernel parameter `name` is the field
    `field` (`kind`: scalar | bool | optional | double | enum)."""

    name: str
    field: str
    kind: str


@dataclass
class _Spelling:
    metal: str
    c10: str
    c10_functions: frozenset[str]
    known: Callable[[str], bool]  # a function the caller can bring along (same file, a header)
    locals: set[str] = field(default_factory=set)
    needs: list[str] = field(default_factory=list)
    renames: dict = field(default_factory=dict)  # (start, end) of a parameter -> the operand it becomes
    fallbacks: list[str] = field(default_factory=list)  # LOCAL_FALLBACKS definitions the text calls
    nodes: dict = field(default_factory=dict)  # (start, end, kind) of any node -> its text (a params read)

    def helper_name(self, name: str) -> str:
        """A helper brought along keeps its name unless the checkout's c10::metal has one of the same
        name (a kernel file's `using namespace c10::metal;` would make the call ambiguous): then
        `<name>_cpu`, at its definition and every call."""
        return f"{name}{HELPER_SUFFIX}" if name in self.c10_functions else name

    def spell(self, pattern: str, *args: str, t: str = "") -> str:
        for name in re.findall(r"\{c\}(\w+)", pattern):
            if name in self.c10_functions:
                continue
            if name not in LOCAL_FALLBACKS:
                raise Untranslatable(f"needs c10::metal::{name}, which this checkout's c10/metal headers do not define")
            local, definition = LOCAL_FALLBACKS[name]
            pattern = pattern.replace("{c}" + name, local)
            text = definition.format(m=self.metal)
            if text not in self.fallbacks:
                self.fallbacks.append(text)
        return pattern.format(*args, m=self.metal, c=self.c10, t=t)


def _key(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, _TEMPLATE_ARGS.sub("", text)
    return "".join(text.split()).lstrip(":")


def _emit(source: Source, node: Syntax, s: _Spelling) -> str:
    kind = node.kind
    if (node.start, node.end, kind) in s.nodes:
        return s.nodes[(node.start, node.end, kind)]
    if kind == "identifier" and (node.start, node.end) in s.renames:
        return s.renames[(node.start, node.end)]
    if kind == "identifier" and source.text_of(node) in CONSTANTS and node.field != "declarator":
        return CONSTANTS[source.text_of(node)]
    if kind == "comment":
        return ""
    if kind in ("ERROR", "MISSING"):
        raise Untranslatable(f"cannot read {source.text_of(node)[:40]!r}", source.line_of(node))
    if kind == "call_expression":
        return _call(source, node, s)
    if kind == "function_declarator":
        name = node.child("declarator")
        if name is not None and name.kind == "identifier":
            return _children_renaming(source, node, s, name)
    if kind == "dependent_type":
        # `typename std::enable_if_t<...>`: with the file's `using namespace metal;` the name is
        # unqualified, where `typename` may not stand
        text = _children(source, node, s)
        return re.sub(r"^typename\s+", "", text) if "::" not in text.split("<")[0] else text
    if kind == "qualified_identifier":
        return _qualified(source, node, s, call=False)
    if kind in ("type_identifier", "primitive_type", "sized_type_specifier") and \
            " ".join(source.text_of(node).split()) in TYPES:
        return TYPES[" ".join(source.text_of(node).split())]
    if kind == "declaration" and any(c.kind == "storage_class_specifier" and source.text_of(c) == "static"
                                     for c in node.children):
        # a function's `static const T A[] = {...}` table: Metal takes it as constexpr
        text = _children(source, node, s, skip=lambda c: c.kind == "storage_class_specifier")
        return re.sub(r"^(\s*)const\b", r"\1constexpr", text)
    if kind in ("init_declarator", "array_declarator") or (kind == "identifier" and node.field == "declarator"):
        for n in node.walk():
            if n.kind == "identifier" and n.field in ("declarator", ""):
                s.locals.add(source.text_of(n))
                break
    if not node.children:
        return source.text_of(node)
    return _children(source, node, s)


def _children(source: Source, node: Syntax, s: _Spelling, skip=lambda c: False) -> str:
    out, pos = [], node.start
    for child in node.children:
        out.append(source.text[pos:child.start])
        if not skip(child):
            out.append(_emit(source, child, s))
        pos = child.end
    out.append(source.text[pos:node.end])
    return "".join(out)


def _children_renaming(source: Source, node: Syntax, s: _Spelling, name: Syntax) -> str:
    """A function declarator with its name as the helper is called (see `_Spelling.helper_name`)."""
    out, pos = [], node.start
    for child in node.children:
        out.append(source.text[pos:child.start])
        out.append(s.helper_name(source.text_of(child)) if child is name else _emit(source, child, s))
        pos = child.end
    out.append(source.text[pos:node.end])
    return "".join(out)


def _arguments(source: Source, node: Syntax, s: _Spelling) -> list[str]:
    args = node.child("arguments")
    return [_emit(source, a, s).strip() for a in args.children if a.kind not in ("(", ")", ",", "comment")]


def _call(source: Source, node: Syntax, s: _Spelling) -> str:
    callee = node.child("function")
    name = source.text_of(callee).strip()
    key = _key(name)
    line = source.line_of(node)
    if key in REFUSED:
        raise Untranslatable(f"{key}: {REFUSED[key]}", line)
    if callee.kind == "qualified_identifier":
        if key in FUNCTIONS:
            pattern = FUNCTIONS[key]
            try:
                spelled = s.spell(pattern, *(["{0}", "{1}", "{2}"] if "{0}" in pattern else []))
            except Untranslatable as exc:
                raise Untranslatable(f"{key}: {exc.reason}", line) from None
            if "{0}" in pattern:
                return s.spell(pattern, *_arguments(source, node, s))
            return spelled + _emit(source, node.child("arguments"), s)
        return _qualified(source, callee, s, call=True) + _emit(source, node.child("arguments"), s)
    if callee.kind == "identifier":
        if name in TYPES:  # a functional cast to a type Metal spells otherwise: opmath_t(x)
            return TYPES[name] + _emit(source, node.child("arguments"), s)
        if name in s.locals or name in ("scalar_t", "T", "self_t"):
            return _children(source, node, s)  # a local callable, or a functional cast: scalar_t(1)
        if name in BARE_FUNCTIONS:
            return s.spell(BARE_FUNCTIONS[name]) + _emit(source, node.child("arguments"), s)
        if s.known(name):
            if name not in s.needs:
                s.needs.append(name)
            return s.helper_name(name) + _emit(source, node.child("arguments"), s)
        raise Untranslatable(f"calls {name}, defined neither in this file nor in a header the checkout has", line)
    if callee.kind == "template_function" and key in ("static_cast", "reinterpret_cast") or key == "static_cast":
        return _children(source, node, s)
    if callee.kind == "field_expression":
        raise Untranslatable(f"calls the member {source.text_of(callee)!r} (a c10::complex or Vectorized method)", line)
    if callee.kind in ("primitive_type", "type_identifier", "template_function"):
        return _children(source, node, s)  # a functional cast: T(1.0), float(a)
    raise Untranslatable(f"cannot translate the call {name!r}", line)


def _qualified(source: Source, node: Syntax, s: _Spelling, *, call: bool) -> str:
    text = source.text_of(node).strip()
    key = _key(text)
    line = source.line_of(node)
    for rule, pattern in sorted(NAMES.items(), key=lambda kv: -len(kv[0])):
        if key == rule or key.startswith(rule + "::"):
            emitted = _children(source, node, s)
            m = re.match(r"\s*::?\s*" + r"\s*::\s*".join(map(re.escape, rule.split("::"))), emitted)
            if not m:
                m = re.match(r"\s*" + r"\s*::\s*".join(map(re.escape, rule.split("::"))), emitted)
            rest = emitted[m.end():] if m else emitted
            if "{t}" in pattern:
                args = re.match(r"\s*<(.*)>\s*$", rest, re.S)
                if not args:
                    raise Untranslatable(f"{rule} without a template argument", line)
                return s.spell(pattern, t=args.group(1).strip())
            return s.spell(pattern) + rest
    if key.split("::")[0] in _NAMESPACES or key.startswith("CPU_CAPABILITY"):
        raise Untranslatable(f"{key} has no Metal translation (mpsgen.facts.translate)", line)
    if key.split("::")[0] in ("scalar_t", "T") and call:
        raise Untranslatable(f"{key} (a member of the scalar type) has no Metal translation", line)
    return _children(source, node, s)


def _is_check(source: Source, node: Syntax) -> bool:
    """A statement that only raises: `TORCH_CHECK(d != 0, "ZeroDivisionError");` (a Metal kernel
    cannot raise: where CPU raises no value is defined, so the statement is dropped)."""
    if node.kind != "expression_statement":
        return False
    call = next((c for c in node.children if c.kind == "call_expression"), None)
    return call is not None and _key(source.text_of(call.child("function"))) == "TORCH_CHECK"


def _return_expression(source: Source, body: Syntax) -> Syntax | None:
    statements = [c for c in body.children if c.kind not in ("{", "}", "comment") and not _is_check(source, c)]
    if len(statements) == 1 and statements[0].kind == "return_statement":
        values = [c for c in statements[0].children if c.kind not in ("return", ";", "comment")]
        return values[0] if len(values) == 1 else None
    return None


def translate_lambda(source: Source, lam, *, name: str, operands: tuple[str, ...], metal: str, c10: str,
                     c10_functions: frozenset[str], known: Callable[[str], bool],
                     params: tuple[ParamRead, ...] | None = None) -> Translation:
    """The lambda as one expression over `operands` (its parameters, in order), or as a helper
    `<name>_scalar` the expression calls. `params`: a params op's stub scalars (the kernel's
    parameters as the struct's fields): the names the lambda captures from its dispatch scope are
    spelled as the fields they are read from (`auto beta = beta_.to<scalar_t>();` -> `beta`), which
    the params functor declares. Raises `Untranslatable` with the reason and line."""
    lambda_params = [p for _, p in lam.params]
    if len(lambda_params) != len(operands):
        raise Untranslatable(f"the lambda takes {len(lambda_params)} values, the functor {len(operands)}", lam.line)
    if params is None and lam.captures not in ("[]", "[=]", "[&]"):
        raise Untranslatable(f"the lambda captures {lam.captures}: values the host computes (the op's scalars)", lam.line)
    s = _Spelling(metal, c10, c10_functions, known, locals=set(lambda_params))
    # constants the lambda captures (`three`, declared `const scalar_t three(3.0f);` before it) are
    # spelled where they are used, in their type
    constants = {name: f"static_cast<{_type(kind)}>({_literal(value)})" for name, kind, value in lam.constants
                 if name not in lambda_params}
    defaults: dict[str, str] = {}
    used_fields: list[ParamRead] = []
    if params is not None:
        captured = _captured_reads(source, lam, params, set(lambda_params) | set(constants), defaults, s)
        for read in params:
            if any(text == read.field or re.search(rf"\b{read.field}\b", text) for text in captured.values()):
                used_fields.append(read)
        constants.update(captured)
    s.renames = {(n.start, n.end): constants[source.text_of(n)] for n in lam.body.walk()
                 if n.kind == "identifier" and n.field not in ("function", "declarator", "field")
                 and source.text_of(n) in constants}
    ret = _return_expression(source, lam.body)
    if ret is not None:
        expr = _emit(source, ret, s)
        free = _free_names(source, ret, set(lambda_params) | set(constants))
        if free:
            raise Untranslatable(f"the lambda uses {free[0]}, a value the host computes (captured by {lam.captures})",
                                 lam.line)
        if not re.search(r"\b(?:scalar_t|T)\b", expr):
            renamed = _rename(source, ret, dict(zip(lambda_params, operands)), s, constants)
            return Translation(" ".join(renamed.split()), tuple(s.fallbacks), tuple(s.needs),
                               _ordered(defaults, params))
    body = _emit(source, lam.body, s)
    free = _free_names(source, lam.body, set(lambda_params) | s.locals | set(constants))
    if free:
        raise Untranslatable(f"the lambda uses {free[0]}, a value the host computes (captured by {lam.captures})",
                             lam.line)
    returns = TYPES.get(lam.returns, lam.returns) or "scalar_t"
    signature = ", ".join([f"{_type(t)} {p}" for t, p in lam.params]
                          + [f"{'bool' if r.kind == 'bool' else 'scalar_t'} {r.field}" for r in used_fields])
    helper = f"template <typename scalar_t>\ninline {returns} {name}_scalar({signature}) {_dedent(body)}\n"
    call = ", ".join(list(operands) + [r.field for r in used_fields])
    return Translation(f"{name}_scalar({call})", tuple(s.fallbacks) + (helper,), tuple(s.needs),
                       _ordered(defaults, params))


def _ordered(defaults: dict[str, str], params: tuple[ParamRead, ...] | None) -> tuple[tuple[str, str], ...]:
    """The defaults in the struct's field order."""
    return tuple((r.field, defaults[r.field]) for r in params or () if r.field in defaults)


def _captured_reads(source: Source, lam, params: tuple[ParamRead, ...], bound: set[str],
                    defaults: dict[str, str], s: _Spelling) -> dict[str, str]:
    """The names the lambda uses that its dispatch scope declares from the stub's scalars, each
    spelled as the field it reads (`beta_.to<scalar_t>()` -> `beta`; an optional's
    `nan.value_or(0.)` or `p.has_value() ? p.value() : D` -> the field, its default D kept in
    `defaults` for the host), or as the expression computing it from such names
    (`const scalar_t hi = scalar_t(1) - eps;` -> `(scalar_t(1) - eps)`: the functor computes it).
    A captured name read otherwise is refused, naming it."""
    by_name = {r.name: r for r in params}
    scope = _scope_of(lam)
    used = {source.text_of(n) for n in lam.body.walk()
            if n.kind == "identifier" and n.field not in ("function", "declarator", "field")}
    out = {}
    for local in sorted(used - bound):
        if local not in scope and local in by_name:  # the kernel's own parameter, captured as it is
            out[local] = by_name[local].field
            continue
        if local not in scope:
            continue
        read = _scope_read(source, local, scope, by_name, defaults, s, frozenset())
        if read is None:
            value = _unwrap_cast(source, scope[local])
            raise Untranslatable(f"the lambda captures {local}, computed from {source.text_of(value)!r}: "
                                 "no read of the stub's scalars mpsgen can spell in the params struct",
                                 source.line_of(value))
        out[local] = read
    return out


def _scope_of(lam) -> dict:
    scope = {}
    for local, _, value in lam.scope:
        scope[local] = value  # a later declaration shadows an earlier one
    return scope


# names an expression over the stub's scalars may use besides them: the scalar type's spellings
_TYPE_NAMES = frozenset({"scalar_t", "T", "opmath_t", "float", "double"})


def _scope_read(source: Source, local: str, scope: dict, by_name: dict[str, ParamRead], defaults: dict[str, str],
                s: _Spelling, seen: frozenset[str]) -> str | None:
    """What the scope name `local` holds, in the functor's spelling: the field it reads, else the
    expression computing it from literals and other such names (parenthesised), else None."""
    if local in seen or local not in scope:
        return None
    value = _unwrap_cast(source, scope[local])
    read = _param_read(source, value, by_name, defaults)
    if read is not None:
        return read
    derived = _derived_value(source, value, scope, by_name, defaults, s, seen | {local})
    return None if derived is None else f"({derived})"


def _derived_value(source: Source, node: Syntax, scope: dict, by_name: dict[str, ParamRead],
                   defaults: dict[str, str], s: _Spelling, seen: frozenset[str]) -> str | None:
    """An expression whose every name is a scope name holding a read of the stub's scalars (or a
    type's name: `scalar_t(1) - eps`), spelled with those reads; None when it reads anything else
    (the iterator, a tensor, a call of a function the kernel calls)."""
    if node.kind not in ("binary_expression", "unary_expression", "parenthesized_expression",
                         "conditional_expression", "identifier", "call_expression", "number_literal"):
        return None
    renames = {}
    for n in node.walk():
        if n.kind == "call_expression":
            callee = n.child("function")
            if callee is None or _key(source.text_of(callee)) not in _TYPE_NAMES | {"static_cast"}:
                return None  # a functional cast only: `scalar_t(1)`
        if n.kind in ("identifier", "type_identifier") and n.field != "function":
            name = source.text_of(n)
            if name in _TYPE_NAMES:
                continue
            read = _scope_read(source, name, scope, by_name, defaults, s, seen)
            if read is None:
                return None
            renames[(n.start, n.end)] = read
        if n.kind in ("field_expression", "qualified_identifier", "subscript_expression", "assignment_expression",
                      "update_expression", "lambda_expression", "pointer_expression"):
            return None
    saved = s.renames
    s.renames = renames
    try:
        return " ".join(_emit(source, node, s).split())
    finally:
        s.renames = saved


def translate_condition(source: Source, lam, node: Syntax, *, params: tuple[ParamRead, ...], metal: str, c10: str,
                        c10_functions: frozenset[str], known: Callable[[str], bool]) -> str:
    """An `if` condition of the kernel around the lambda (`eps < scalar_t(0)`) in the functor's
    spelling, when it reads only the stub's scalars (through the names the dispatch scope gives
    them) and literals: a per-element select can then stand for the branch. Raises Untranslatable."""
    s = _Spelling(metal, c10, c10_functions, known)
    by_name = {r.name: r for r in params}
    derived = _derived_value(source, node, _scope_of(lam), by_name, {}, s, frozenset())
    if derived is None:
        raise Untranslatable(f"the branch on `{' '.join(source.text_of(node).split())}` reads more than the stub's "
                             "scalars", source.line_of(node))
    return derived


def _host_default(text: str) -> str:
    """An unset optional's value as the host writes it in its `scalar_t`: a number as
    `scalar_t(N)`, else the CPU kernel's own text (`std::numeric_limits<scalar_t>::max()`)."""
    text = " ".join(text.split())
    return f"scalar_t({text})" if re.fullmatch(r"-?[0-9.]+(?:[eE][-+]?\d+)?[fF]?", text) else text


def _unwrap_cast(source: Source, node: Syntax) -> Syntax:
    """`static_cast<T>(v)`, `T(v)`, `(v)`: v (the params functor reads each field in its type)."""
    while True:
        if node.kind == "parenthesized_expression":
            inner = [c for c in node.children if c.kind not in ("(", ")")]
            if len(inner) != 1:
                return node
            node = inner[0]
            continue
        if node.kind == "call_expression":
            callee = node.child("function")
            args = [a for a in node.child("arguments").children if a.kind not in ("(", ")", ",")]
            text = _key(source.text_of(callee))
            if len(args) == 1 and (text in ("static_cast", "float", "scalar_t", "opmath_t", "value_t", "double")):
                node = args[0]
                continue
        return node


def _param_read(source: Source, node: Syntax, by_name: dict[str, ParamRead], defaults: dict[str, str]) -> str | None:
    """The field a scope value reads, or None."""
    text = " ".join(source.text_of(node).split())
    if node.kind in ("identifier", "type_identifier") and text in by_name:  # type: `scalar_t d(delta);`
        return by_name[text].field
    if node.kind == "pointer_expression":
        inner = node.child("argument")
        if inner is not None and source.text_of(inner) in by_name:
            return by_name[source.text_of(inner)].field
    if node.kind == "call_expression":
        callee = node.child("function")
        if callee is not None and callee.kind == "field_expression":
            target = callee.child("argument")
            member = _key(source.text_of(callee.child("field") or callee))
            args = [a for a in node.child("arguments").children if a.kind not in ("(", ")", ",")]
            if target is not None and source.text_of(target) in by_name:
                read = by_name[source.text_of(target)]
                if member in ("to", "value") and not args:
                    return read.field
                if member == "value_or" and len(args) == 1 and read.kind == "optional":
                    defaults[read.field] = _host_default(source.text_of(args[0]))
                    return read.field
    if node.kind == "conditional_expression" and node.child("condition") is not None:
        condition = " ".join(source.text_of(node.child("condition")).split())
        m = re.fullmatch(r"(\w+)\s*\.\s*has_value\s*\(\s*\)", condition)
        if m and m.group(1) in by_name and by_name[m.group(1)].kind == "optional":
            read = by_name[m.group(1)]
            if _param_read(source, _unwrap_cast(source, node.child("consequence")), by_name, {}) == read.field:
                defaults[read.field] = _host_default(source.text_of(node.child("alternative")))
                return read.field
    return None


def translate_function(source: Source, node: Syntax, *, metal: str, c10: str, c10_functions: frozenset[str],
                       known: Callable[[str], bool]) -> Translation:
    """A helper definition (a template included) in Metal's spelling; `needs`: what it calls."""
    s = _Spelling(metal, c10, c10_functions, known, locals=_parameter_names(source, node))
    text = _emit(source, node, s)
    return Translation("", tuple(s.fallbacks) + (_dedent(text.strip()) + "\n",), tuple(s.needs))


def _literal(text: str) -> str:
    """A C++ number literal as Metal takes it (a double literal is float there)."""
    if re.fullmatch(r"-?\d+", text):
        return text
    return text if text[-1] in "fF" else f"{text}f"


def _type(text: str) -> str:
    return TYPES.get(text.strip(), text.strip())


def _parameter_names(source: Source, node: Syntax) -> set[str]:
    names = set()
    for n in node.walk():
        if n.kind in ("parameter_declaration", "optional_parameter_declaration"):
            d = n.child("declarator")
            if d is not None:
                names.add(source.text_of(d).lstrip("&*").strip())
        if n.kind == "function_declarator":
            d = n.child("declarator")
            if d is not None:
                names.add(source.text_of(d))  # recursion calls itself
    return names


def _free_names(source: Source, node: Syntax, bound: set[str]) -> list[str]:
    """Identifiers used as values that are neither parameters nor declared in the code."""
    declared = set(bound)
    for n in node.walk():
        if n.kind in ("init_declarator",):
            d = n.child("declarator")
            if d is not None:
                declared.add(source.text_of(d).split("[")[0].strip())
        if n.kind == "declaration":
            for d in n.children:
                if d.field == "declarator" and d.kind == "identifier":
                    declared.add(source.text_of(d))
        if n.kind == "for_range_loop":
            d = n.child("declarator")
            if d is not None:
                declared.add(source.text_of(d))
    free = []
    for n in node.walk():
        if n.kind == "identifier" and n.field not in ("function", "declarator", "name", "field"):
            name = source.text_of(n)
            if name not in declared and not name.isupper() and name not in free:
                free.append(name)
    return free


def _rename(source: Source, node: Syntax, mapping: dict[str, str], s: _Spelling,
            constants: dict[str, str] | None = None) -> str:
    """The expression emitted with its parameters renamed to the functor's operands (and captured
    constants spelled out)."""
    mapping = {**(constants or {}), **mapping}
    s.renames = {(n.start, n.end): mapping[source.text_of(n)] for n in node.walk()
                 if n.kind == "identifier" and n.field != "function" and source.text_of(n) in mapping}
    try:
        return _emit(source, node, s)
    finally:
        s.renames = {}


def _dedent(text: str) -> str:
    lines = text.splitlines()
    if len(lines) < 2:
        return text
    indents = [len(l) - len(l.lstrip()) for l in lines[1:] if l.strip()]
    cut = max(0, min(indents) - 2) if indents else 0
    return "\n".join([lines[0]] + [l[cut:] if l[:cut].strip() == "" else l.lstrip() for l in lines[1:]])
