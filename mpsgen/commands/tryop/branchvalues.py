"""The values that make a functor's branches switch: `try` samples them besides its edge values.

- the functor's comparison constants: each spaced comparison (`p > 1.0f - p_low`) whose one side is a
  constant (literals, `constexpr`/`const` locals with a constant initialiser, `+ - * /`, casts) and
  whose other side is an operand, or a linear function of one (`x * 2.0f + 1.0f`, a local copy such as
  `const float f = float(x);`), gives the operand's value on the boundary; so does each constant
  argument of `min`/`max`/`clamp`/`fmin`/`fmax` (a clamp's kinks);
- the scalar parameters' values (every scalar set's), where a params functor compares an operand
  with one (`f >= params.max_val`);
- the OpInfo's `domain=(lo, hi)`: its ends and 32 points inside, evenly spread.

Each value is taken in the input type with its neighbouring values of that type on both sides
(`neighbours`): a boundary written `>=` and one written `>` differ exactly there.
"""

from __future__ import annotations

import ast
import math
import re
import struct

from mpsgen.commands.tryop.values import ROUND, float32_bits, from_float32_bits, int_range, kind
from mpsgen.read.checkout import COMMON_METHODS, Checkout
from mpsgen.read.cpp import mask_code, match_brace
from mpsgen.read.opinfo import opinfo_calls

DOMAIN_POINTS = 32

_NUMBER = re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFhH]?|0[xX][0-9a-fA-F]+[uUlL]*")
_TOKEN = re.compile(r"\s*(" + _NUMBER.pattern + r"|[A-Za-z_][\w:]*(?:\s*\.\s*\w+)?|<=|>=|==|!=|&&|\|\||[-+*/()<>?:,;=!{}\[\]&|]|\S)")
_LOCAL = re.compile(r"\b(?:constexpr\s+|const\s+)+(?:static\s+)?[\w:]+\s+(\w+)\s*=\s*([^;{}]+);")
_COMPARISON = re.compile(r"\s(<=|>=|==|!=|<|>)\s")
_CLAMPS = re.compile(r"\b(?:\w+::)*(?:precise::)?(min|max|fmin|fmax|clamp)\s*\(")
_CASTS = {"float", "half", "bfloat", "T", "double", "int", "long", "static_cast", "opmath_t", "U", "R", "scalar_t"}
_STOP = {";", ",", "&&", "||", "?", ":", "{", "}", "=", "return", "if", "(", ")", "!"}


def functor_span(text: str, line: int) -> tuple[int, int]:
    """The lines (first, last) of the struct starting at `line` in `text`: to its closing brace."""
    masked = mask_code(text)
    starts = [0] + [m.end() for m in re.finditer("\n", masked)]
    if not 1 <= line <= len(starts):
        return line, line
    start = starts[line - 1]
    brace = masked.find("{", start)
    semi = masked.find(";", start)
    if brace < 0 or (0 <= semi < brace):
        return line, line
    close = match_brace(masked, brace)
    if close < 0:
        return line, line
    return line, masked.count("\n", 0, close) + 1


# A function defined at the file's top level: `[template <...>] [inline|static|constexpr ...] TYPE NAME(...) {`
_FUNCTION = re.compile(r"^[ \t]*(?:template\s*<[^{};]*?>\s*)?(?:(?:inline|static|constexpr|METAL_FUNC)\s+)*"
                       r"[\w:]+(?:\s*<[^{};()]*>)?[\s*&]+(\w+)\s*\([^;{}]*\)\s*(?:const\s*)?\{", re.M)
_CALLED = re.compile(r"\b(\w+)\s*(?:<[^<>;{}()]*>\s*)?\(")


def functor_spans(text: str, line: int) -> tuple[tuple[int, int], ...]:
    """The functor's lines: its struct (`functor_span`), then each function of the same file it calls,
    directly or through another (a derived body's helpers, `gelu_tanh_scalar`), in file order."""
    first, last = functor_span(text, line)
    masked = mask_code(text)
    starts = [0] + [m.end() for m in re.finditer("\n", masked)]
    depth, depths = 0, []
    for k, ch in enumerate(masked):  # brace depth before each offset's line: top-level definitions only
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        depths.append(depth)
    functions: dict[str, tuple[int, int]] = {}
    for m in _FUNCTION.finditer(masked):
        if m.start() > 0 and depths[m.start() - 1] != 0:
            continue
        close = match_brace(masked, m.end() - 1)
        if close < 0:
            continue
        functions.setdefault(m.group(1), (masked.count("\n", 0, m.start()) + 1, masked.count("\n", 0, close) + 1))

    def body(span):
        return masked[starts[span[0] - 1] : starts[span[1]] if span[1] < len(starts) else len(masked)]

    spans, todo = [(first, last)], [(first, last)]
    while todo:
        for name in _CALLED.findall(body(todo.pop())):
            span = functions.get(name)
            if span is not None and span not in spans and not (first <= span[0] <= last):
                spans.append(span)
                todo.append(span)
    return tuple([spans[0]] + sorted(spans[1:]))


# ---- a tiny evaluator: constants, and linear functions of one operand ------------------------------


class _Linear:
    """a * var + b (var None: the constant b)."""

    __slots__ = ("var", "a", "b")

    def __init__(self, var, a, b):
        self.var, self.a, self.b = var, a, b


def _number(token: str) -> float | None:
    if not _NUMBER.fullmatch(token):
        return None
    t = token.rstrip("fFhHuUlL") if not token.lower().startswith("0x") else token.rstrip("uUlL")
    try:
        return float(int(t, 16)) if t.lower().startswith("0x") else float(t)
    except ValueError:
        return None


_NAMED = {"NAN": math.nan, "INFINITY": math.inf, "M_PI_F": math.pi, "M_SQRT2_F": math.sqrt(2.0),
          "M_SQRT1_2_F": math.sqrt(0.5), "M_LN2_F": math.log(2.0), "M_E_F": math.e}


class _Parser:
    def __init__(self, tokens: list[str], env: dict, operands: set[str]):
        self.t, self.i, self.env, self.operands = tokens, 0, env, operands

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def parse(self):
        value = self.sum()
        return value if self.i == len(self.t) else None

    def sum(self):
        left = self.product()
        while left is not None and self.peek() in ("+", "-"):
            op = self.take()
            right = self.product()
            left = _combine(left, op, right)
        return left

    def product(self):
        left = self.unary()
        while left is not None and self.peek() in ("*", "/"):
            op = self.take()
            right = self.unary()
            left = _combine(left, op, right)
        return left

    def unary(self):
        if self.peek() == "-":
            self.take()
            v = self.unary()
            return None if v is None else _Linear(v.var, -v.a, -v.b)
        if self.peek() == "+":
            self.take()
            return self.unary()
        return self.primary()

    def primary(self):
        tok = self.take()
        if tok is None:
            return None
        if tok == "(":
            v = self.sum()
            return v if self.take() == ")" else None
        n = _number(tok)
        if n is not None:
            return _Linear(None, 0.0, n)
        name = tok.split("::")[-1]
        if self.peek() == "<" and name in _CASTS:  # static_cast<float>(...)
            while self.peek() not in (">", None):
                self.take()
            self.take()
        if self.peek() == "(" and name in _CASTS:
            self.take()
            v = self.sum()
            return v if self.take() == ")" else None
        if name in _NAMED:
            return _Linear(None, 0.0, _NAMED[name])
        if tok in self.env:
            return self.env[tok]
        if tok in self.operands:
            return _Linear(tok, 1.0, 0.0)
        return None


def _combine(left, op, right):
    if left is None or right is None:
        return None
    if op in ("+", "-"):
        sign = 1.0 if op == "+" else -1.0
        if left.var and right.var:
            return _Linear(left.var, left.a + sign * right.a, left.b + sign * right.b) if left.var == right.var else None
        return _Linear(left.var or right.var, left.a + sign * right.a, left.b + sign * right.b)
    if op == "*":
        if left.var and right.var:
            return None
        return _Linear(left.var or right.var, left.a * right.b + right.a * left.b, left.b * right.b)
    if right.var or right.b == 0:
        return None
    return _Linear(left.var, left.a / right.b, left.b / right.b)


def _evaluate(text: str, env: dict, operands: set[str]):
    text = re.sub(r"^\s*(?:return|else|case)\b", "", text)
    tokens = [m.group(1) for m in _TOKEN.finditer(text)]
    try:
        return _Parser(tokens, env, operands).parse()
    except (OverflowError, ZeroDivisionError, ValueError):
        return None


def _side(masked: str, at: int, step: int) -> str:
    """The operand of a comparison from `at` leftwards (step -1) or rightwards (+1), to the first
    delimiter at its own depth."""
    depth, k = 0, at
    n = len(masked)
    while 0 <= k < n:
        ch = masked[k]
        two = masked[k : k + 2] if step > 0 else masked[k - 1 : k + 1]
        if ch in "([" if step > 0 else ch in ")]":
            depth += 1
        elif ch in ")]" if step > 0 else ch in "([":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (ch in ";,?:{}=!" and two not in ("==", "!=", "<=", ">=") or two in ("&&", "||")):
            break
        k += step
    return masked[at:k] if step > 0 else masked[k + 1 : at + 1]


def boundary_inputs(text: str, first: int, last: int, operands: tuple[str, ...] = ()) -> list[float]:
    """The operand values on each comparison's boundary in lines first..last of `text` (the
    functor's), in order of appearance, duplicates dropped."""
    out, seen = [], set()
    for _, v in boundary_pairs(text, first, last, operands):
        if repr(v) not in seen:
            seen.add(repr(v))
            out.append(v)
    return out


def boundary_pairs(text: str, first: int, last: int, operands: tuple[str, ...] = ()) -> list[tuple[str, float]]:
    """(the name, its value) on each comparison's boundary in lines first..last of `text`: the name is
    the functor's parameter the compared side is a linear function of (through locals: logit_backward's
    `eps < scalar_t(0)` gives ("eps_", 0.0) where `const float eps = static_cast<float>(eps_);`), or ""
    for a constant compared with what try cannot invert."""
    masked = mask_code(text)
    lines = masked.split("\n")
    body = "\n".join(lines[first - 1 : last])
    names = set(operands) | _parameter_names(body)
    env: dict = {}
    for m in _LOCAL.finditer(body):
        value = _evaluate(m.group(2), env, names)
        if value is not None:
            env[m.group(1)] = value
    found: list[tuple[str, float]] = []

    def boundary(left, right):
        for a, b in ((left, right), (right, left)):
            if a is not None and b is not None and a.var and not b.var and a.a != 0:
                found.append((a.var, (b.b - a.b) / a.a))
                return
        for a, b in ((left, right), (right, left)):
            if a is not None and not a.var and b is None:
                found.append(("", a.b))  # a constant compared with what try cannot invert: the constant itself

    for m in _COMPARISON.finditer(body):
        if m.group(1) in ("<", ">") and _template_bracket(body, m.start(1)):
            continue
        left = _evaluate(_side(body, m.start(1) - 1, -1), env, names)
        right = _evaluate(_side(body, m.end(1), +1), env, names)
        boundary(left, right)
    for m in _CLAMPS.finditer(body):
        close = match_brace(body, m.end() - 1)
        if close < 0:
            continue
        args = [a for a in _split_args(body[m.end() : close])]
        values = [_evaluate(a, env, names) for a in args]
        variables = [v for v in values if v is not None and v.var]
        for v in values:
            if v is not None and not v.var:
                for x in variables or [None]:
                    boundary(x, v)
    out, seen = [], set()
    for name, v in found:
        if not math.isnan(v) and (name, repr(v)) not in seen:
            seen.add((name, repr(v)))
            out.append((name, v))
    return out


def _template_bracket(body: str, at: int) -> bool:
    """Whether the `<`/`>` at `at` (spaced) closes or opens a template's arguments (rare when spaced)."""
    return bool(re.search(r"\b(?:static_cast|numeric_limits|enable_if_t|is_same_v)\s*$", body[:at]))


def _split_args(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:k])
            start = k + 1
    out.append(text[start:])
    return out


def _parameter_names(body: str) -> set[str]:
    """The names of every function parameter in the functor (`operator()(const T a, const T b)`) and
    every local initialised from something (linear in them or not): the operands a comparison may read."""
    names = set()
    for m in re.finditer(r"\(([^()]*)\)\s*(?:const\s*)?\{", body):
        for p in m.group(1).split(","):
            pm = re.search(r"(\w+)\s*$", p.strip())
            if pm and re.search(r"\w\s+\w+\s*$", p.strip()):
                names.add(pm.group(1))
    return names


# ---- the OpInfo's domain ---------------------------------------------------------------------------


def opinfo_domain(checkout: Checkout, op: str) -> tuple[float | None, float | None] | None:
    """`domain=(lo, hi)` of the op's OpInfo (None for an open end), or None without one."""
    for _, call in opinfo_calls(checkout, op) or ():
        for keyword in getattr(call, "keywords", ()):
            if keyword.arg == "domain":
                try:
                    lo, hi = ast.literal_eval(keyword.value)
                except (ValueError, TypeError, SyntaxError):
                    return None
                return (None if lo is None else float(lo), None if hi is None else float(hi))
    return None


# The OpInfo classes whose default sample function draws every value with make_tensor.
_MAKE_TENSOR_DEFAULTS = frozenset({"BinaryUfuncInfo", "UnaryUfuncInfo"})
# What in a sample function's body can feed a non-finite or extreme value: an inf or NaN by name, a
# float parsed from a string, a dtype's limits, a literal with a two-digit exponent.
_NON_FINITE_WORDS = re.compile(r"\b(inf|nan|infinity|isinf|isnan|finfo|iinfo)\b|\bfloat\(\s*['\"]|\d[eE][+-]?\d\d",
                               re.IGNORECASE)


def samples_finite_parts(checkout: Checkout, op: str) -> bool:
    """Whether every value upstream's `test_output_match` feeds the op has finite parts: its OpInfo's
    `sample_inputs_func=` is a function of the OpInfo file whose body names no inf or NaN (it draws with
    make_tensor, whose complex parts are finite, and adds only finite literals: pow's zeros raised to
    `[1j, 2]`) nor a dtype's limits or a large literal, or the OpInfo has none and its class's default draws with make_tensor. False whenever
    that cannot be read (a lambda, a function defined elsewhere, an unreadable file)."""
    calls = [(ref, call) for ref, call in opinfo_calls(checkout, op) or () if not ref.kind.startswith("Foreach")]
    if not calls:
        return False
    text = checkout.read(COMMON_METHODS)
    for ref, call in calls:
        if call is None:
            return False
        given = {k.arg: k.value for k in getattr(call, "keywords", ())}
        if "sample_inputs_func" not in given:
            if ref.kind not in _MAKE_TENSOR_DEFAULTS:
                return False
            continue
        function = given["sample_inputs_func"]
        if not isinstance(function, ast.Name):
            return False
        m = re.search(rf"^def {re.escape(function.id)}\(.*?(?=^\S)", text + "\nend", re.MULTILINE | re.DOTALL)
        if m is None or _NON_FINITE_WORDS.search(m.group(0)):
            return False
    return True


# How far inside its domain a UnaryUfuncInfo's default samples stay (OpInfo's `_domain_eps`, 1e-5 in
# 2.13-2.15's opinfo/core.py): `sample_inputs_elementwise_unary` draws floating values in
# [lo + eps, hi - eps].
DOMAIN_EPS = 1e-5


def unsampled_domain(checkout: Checkout, op: str) -> tuple[float | None, float | None] | None:
    """The op's OpInfo `domain=(lo, hi)` when every float value upstream's `test_output_match` feeds
    it stays DOMAIN_EPS inside each finite end: every OpInfo of the op a UnaryUfuncInfo drawing with
    its default sample function (no `sample_inputs_func=`) and declaring that domain. None otherwise
    (another class, its own sample function, no domain, an unreadable file)."""
    calls = opinfo_calls(checkout, op)
    if not calls or any(call is None or ref.kind != "UnaryUfuncInfo"
                        or any(k.arg == "sample_inputs_func" for k in call.keywords) for ref, call in calls):
        return None
    domain = opinfo_domain(checkout, op)
    return domain if domain is not None and any(end is not None for end in domain) else None


def near_domain_end(value, domain: tuple[float | None, float | None]) -> bool:
    """`value` lies in the domain, closer than DOMAIN_EPS to one of its finite ends."""
    lo, hi = domain
    return isinstance(value, float) and math.isfinite(value) and (
        (lo is not None and lo <= value < lo + DOMAIN_EPS) or (hi is not None and hi - DOMAIN_EPS < value <= hi))


def domain_values(domain: tuple[float | None, float | None] | None) -> list[float]:
    """The domain's ends and DOMAIN_POINTS points evenly inside (a half-open domain: steps of powers
    of two from its end)."""
    if domain is None:
        return []
    lo, hi = domain
    out = [v for v in (lo, hi) if v is not None]
    if lo is not None and hi is not None:
        out += [lo + (hi - lo) * k / (DOMAIN_POINTS + 1) for k in range(1, DOMAIN_POINTS + 1)]
    elif lo is not None:
        out += [lo + 2.0 ** k for k in range(-10, 11)]
    elif hi is not None:
        out += [hi - 2.0 ** k for k in range(-10, 11)]
    return out


# ---- in a type, with neighbours --------------------------------------------------------------------


def next_float(x: float, metal_type: str, up: bool) -> float:
    """The next value of the float type after x (towards +inf when up)."""
    if metal_type == "float" or metal_type == "bfloat":
        u = float32_bits(x)
        step = 1 if metal_type == "float" else 1 << 16
        if x == 0.0:
            u = step if up else 0x80000000 | step
        elif (x > 0) == up:
            u += step
        else:
            u -= step
        return from_float32_bits(u & 0xFFFFFFFF)
    h = struct.unpack("<H", struct.pack("<e", x))[0]
    if x == 0.0:
        h = 1 if up else 0x8001
    elif (x > 0) == up:
        h += 1
    else:
        h -= 1
    return struct.unpack("<e", struct.pack("<H", h & 0xFFFF))[0]


def neighbours(value: float, metal_type: str) -> list:
    """`value` in the type and the type's values just below and above it (integers: floor - 1 ..
    ceil + 1, within range); [] for bool and complex types or a value the type cannot hold."""
    k = kind(metal_type)
    if k in ("int", "uint"):
        if not math.isfinite(value):
            return []
        lo, hi = int_range(metal_type)
        return [v for v in range(math.floor(value) - 1, math.ceil(value) + 2) if lo <= v <= hi]
    if k != "float" or not math.isfinite(value):
        return []
    r = ROUND[metal_type](value)
    if not math.isfinite(r):
        return []
    out = [r]
    for up in (False, True):
        n = next_float(r, metal_type, up)
        if math.isfinite(n):
            out.append(n)
    return sorted(set(out), key=lambda v: (v, math.copysign(1.0, v)))


def branch_values(metal_type: str, boundaries: list[float], scalars: list[float], domain: list[float]) -> list:
    """Each value with its neighbours in `metal_type`, duplicates dropped, in order."""
    out, seen = [], set()
    for v in [*boundaries, *scalars, *domain]:
        for n in neighbours(v, metal_type):
            key = repr(n)
            if key not in seen:
                seen.add(key)
                out.append(n)
    return out


# ---- operands that bound a loop's count ------------------------------------------------------------

_DEFINITION = re.compile(r"\b(\w+)\s*\(([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*)\)\s*(?:const\s*)?\{")
_NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "defined"}
_FOR = re.compile(r"\bfor\s*\(")
_ASSIGNED = re.compile(r"\b(\w+)\s*=(?!=)\s*([^;]*);")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")


def _definitions(masked: str, start: int = 0, end: int | None = None):
    """(name, parameter names, body) of every function defined in masked[start:end] (any depth)."""
    end = len(masked) if end is None else end
    for m in _DEFINITION.finditer(masked, start, end):
        if m.group(1) in _NOT_FUNCTIONS:
            continue
        close = match_brace(masked, m.end() - 1)
        if close < 0:
            continue
        names = []
        for p in _split_args(m.group(2)):
            p = p.split("=")[0].strip()
            found = re.search(r"(\w+)\s*(?:\[[^\]]*\])?$", p)
            names.append(found.group(1) if found and re.search(r"\w[\s*&]+\w+", p) else "")
        yield m.group(1), names, masked[m.end() : close]


def _sources(body: str, params: list[str]) -> dict[str, set[int]]:
    """Each name in `body` -> the parameter positions its value comes from (the parameters
    themselves, and locals assigned from them: `const float b = static_cast<float>(b_);`)."""
    found = {name: {k} for k, name in enumerate(params) if name}
    for _ in range(3):
        for m in _ASSIGNED.finditer(body):
            came = set().union(*(found.get(t, set()) for t in _IDENTIFIER.findall(m.group(2))))
            if came and not came <= found.get(m.group(1), set()):
                found[m.group(1)] = found.get(m.group(1), set()) | came
    return found


def _counted_loops(body: str, sources: dict[str, set[int]]) -> set[int]:
    """Parameter positions a `for` loop's counter is compared with in its condition
    (`for (int64_t k = 1; k < n; k++)`): the loop runs as many times as that value."""
    out = set()
    for m in _FOR.finditer(body):
        close = match_brace(body, m.end() - 1)
        if close < 0:
            continue
        parts = _split_args(body[m.end() : close].replace(";", ","))
        if len(parts) < 3:
            continue
        counter = re.search(r"(\w+)\s*=", parts[0])
        if counter is None:
            continue
        k = re.escape(counter.group(1))
        limits = re.findall(rf"\b{k}\s*(?:<=|<|>=|>|!=)\s*([^&|;),]+)", parts[1])
        limits += re.findall(rf"([^&|;(,]+?)\s*(?:<=|<|>=|>|!=)\s*{k}\b", parts[1])
        for limit in limits:
            for name in _IDENTIFIER.findall(limit):
                out |= sources.get(name, set())
    return out


def loop_bounded_operands(source: str, functor: str) -> tuple[int, ...]:
    """The operands (positions in `functor`'s operator()) that bound a `for` loop's count in the
    functor or in a function of `source` it calls, through other functions and locals: laguerre's
    `for (int64_t k = 1; (k < n) && ...; k++)` on `n`, its second operand. Such a loop runs as long as
    the value: try's extremes (3.4e38) would never finish."""
    masked = mask_code(source)
    functions: dict[str, list[tuple[list[str], str]]] = {}
    for name, params, body in _definitions(masked):
        functions.setdefault(name, []).append((params, body))
    bounded: dict[str, set[int]] = {}

    def own(params: list[str], body: str) -> set[int]:
        # the loop's limit is a parameter itself (laguerre's `int64_t n`), not a local computed from one
        # (gamma's `n = floor(x)`, reached only below 12 behind a branch)
        out = _counted_loops(body, {name: {k} for k, name in enumerate(params) if name}) if "for" in body else set()
        calls = [c for c in _CALLED.finditer(body) if bounded.get(c.group(1))]
        sources = _sources(body, params) if calls else {}
        for call in calls:
            paren = body.find("(", call.start())
            close = match_brace(body, paren)
            if close < 0:
                continue
            args = _split_args(body[paren + 1 : close])
            for p in bounded[call.group(1)]:
                if p < len(args):
                    for name in _IDENTIFIER.findall(args[p]):
                        out |= sources.get(name, set())
        return out

    # each function with a counted loop, then (until nothing changes) those calling one of them
    todo = dict(functions)
    while todo:
        changed = set()
        for name, overloads in todo.items():
            found = set().union(*(own(params, body) for params, body in overloads))
            if not found <= bounded.get(name, set()):
                bounded[name] = bounded.get(name, set()) | found
                changed.add(name)
        if not changed:
            break
        callers = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(changed))) + r")\s*(?:<[^<>;{}()]*>\s*)?\(")
        todo = {name: overloads for name, overloads in functions.items()
                if any(callers.search(body) for _, body in overloads)}
    struct = re.search(rf"\bstruct\s+{re.escape(functor)}_functor\b[^;{{]*\{{", masked)
    if struct is None:
        return ()
    close = match_brace(masked, struct.end() - 1)
    operands: set[int] = set()
    for m in re.finditer(r"\boperator\s*\(\s*\)\s*\(", masked[: close]):
        if m.start() < struct.end():
            continue
        paren = m.end() - 1
        end_params = match_brace(masked, paren)
        brace = masked.find("{", end_params)
        if end_params < 0 or brace < 0 or masked[end_params + 1 : brace].strip() not in ("", "const"):
            continue
        params = []
        for p in _split_args(masked[paren + 1 : end_params]):
            found = re.search(r"(\w+)\s*$", p.split("=")[0].strip())
            params.append(found.group(1) if found else "")
        body_end = match_brace(masked, brace)
        operands |= own(params, masked[brace + 1 : body_end])
    return tuple(sorted(operands))


def scalar_boundaries(text: str, spans, arity: int) -> list[float]:
    """The values on the boundaries of the functor's comparisons of its scalar argument (an alpha
    kernel's operand after its `arity` tensors, through locals: logit_backward's `eps < scalar_t(0)`
    gives 0): try runs a scalar set with the argument at each, which the schema's variants may miss
    (logit_backward's `x == 0` branch is taken only where eps is 0)."""
    if not spans:
        return []
    first, last = spans[0]
    masked = mask_code(text)
    body = "\n".join(masked.split("\n")[first - 1 : last])
    m = re.search(r"\boperator\s*\(\s*\)\s*\(", body)
    if m is None:
        return []
    close = match_brace(body, m.end() - 1)
    params = [re.search(r"(\w+)\s*$", p.split("=")[0].strip()) for p in _split_args(body[m.end() : close])]
    if close < 0 or len(params) <= arity or params[arity] is None:
        return []
    name = params[arity].group(1)
    out = []
    for var, value in boundary_pairs(text, first, last):
        if var == name and math.isfinite(value) and value not in out:
            out.append(value)
    return out
