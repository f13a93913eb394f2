"""What a shared function hands its dispatch stub, read from `aten/src/ATen/native/*.cpp`.

    auto norm = reduction == Reduction::Mean ? 2. / input.numel() : 2.;
    ...
    mse_backward_stub(iter.device_type(), iter, norm);

    return unary_op_impl_float_out(result, self, logit_stub, Scalar(eps ? eps.value() : -1.0));

`read_stub_call` finds the call in the named function (directly, or through a helper of the file
taking the stub as an argument, whose arguments after the stub are the stub's), and gives each
argument after the iterator as written, the name the kernel calls it by (the identifier passed, or
the one parameter of the function an expression is built from: logit's `eps`), and its value as an
expression over the function's parameters (a local's initialiser substituted). `evaluate` computes
such an expression for given parameter values (what `try` hands the kernel).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.model import Location
from mpsgen.read.checkout import NATIVE_DIR
from mpsgen.read.cpp import find_definitions, mask_code, match_brace, split_top_level
from mpsgen.textedit import LineIndex


@dataclass(frozen=True)
class StubArg:
    """One argument the shared function passes its stub after the iterator."""

    text: str  # as written at the call: `norm`, `Scalar(eps ? eps.value() : -1.0)`
    name: str  # what the kernel calls it: `norm`, `eps` ("" when no one name fits)
    value: str  # over the function's parameters: `reduction == Reduction::Mean ? 2. / input.numel() : 2.`
    reads: tuple[str, ...]  # the function's parameters the value reads, in the order they appear


@dataclass(frozen=True)
class StubCall:
    function: str
    location: Location  # the call's line
    args: tuple[StubArg, ...]
    parameters: tuple[tuple[str, str], ...]  # the function's (type, name) parameters

    @property
    def where(self) -> str:
        return f"{self.location.path}:{self.location.line}"


_IDENT = re.compile(r"[A-Za-z_]\w*")


def read_stub_call(texts, functions: tuple[str, ...], stub: str, files: tuple[str, ...] | None = None) -> StubCall | None:
    """The first call of `stub` in one of `functions` (the shared kernels named by the op's
    dispatch lines, in the order given) in the checkout's `aten/src/ATen/native/*.cpp` (or `files`:
    a per-device op's MPS functions in operations/*.mm); None when the checkout has no such
    function or it does not call the stub."""

    checkout = getattr(texts, "checkout", texts)
    candidates = files if files is not None else checkout.glob(NATIVE_DIR, "*.cpp")
    paths = [rel for rel in candidates if stub in texts.read(rel)]
    for function in functions:
        for rel in paths:
            text = texts.read(rel)
            if function not in text:
                continue
            for d in find_definitions(text, rel):
                if d.name == function and d.kind in ("function", "impl-func"):
                    found = _call_in(text, rel, d, stub)
                    if found is not None:
                        return found
    return None


def _call_in(text: str, rel: str, d, stub: str) -> StubCall | None:
    parts = function_parts(text, d)
    if parts is None:
        return None
    parameters, body_start, body_end = parts
    masked = mask_code(text)
    for m in re.finditer(rf"\b{re.escape(stub)}\b", masked[body_start:body_end]):
        at = body_start + m.start()
        after = masked[at + len(stub) :].lstrip()
        if after.startswith("("):  # the stub called: (device, iter, args...)
            open_at = masked.index("(", at + len(stub))
            args = _arguments(text, masked, open_at)[2:]
        else:  # passed to a helper: helper(..., stub, args...)
            open_at = _enclosing_call(masked, body_start, at)
            if open_at is None:
                continue
            args = _arguments(text, masked, open_at)
            positions = [k for k, a in enumerate(args) if a == stub]
            if not positions:
                continue
            args = args[positions[0] + 1 :]
        names = {n for _, n in parameters}
        locals_ = _locals(text, masked, body_start, at)
        made = tuple(_stub_arg(a, names, locals_) for a in args)
        return StubCall(d.name, Location(rel, LineIndex(text).line_of(at)), made, parameters)
    return None


def function_parts(text: str, d) -> tuple[tuple[tuple[str, str], ...], int, int] | None:
    """A function's or `TORCH_IMPL_FUNC`'s (type, name) parameters and the offsets of its body's
    braces in `text` (`d`: its `cpp.Definition`); None when they cannot be delimited."""
    masked = mask_code(text)
    code = masked[d.code_start : d.code_end]
    brace = code.find("{")
    head_open = code.find("(", code.find(d.name) + len(d.name)) if d.kind == "function" else code.find("(", code.find(")") + 1)
    if brace < 0 or head_open < 0:
        return None
    head_close = match_brace(masked, d.code_start + head_open)
    parameters = tuple(_parameter(p) for p in split_top_level(text[d.code_start + head_open + 1 : head_close],
                                                                "(<[", ")>]") if p.strip())
    open_at = masked.index("{", head_close)
    close_at = match_brace(masked, open_at)
    if close_at < 0:
        return None
    return parameters, open_at, close_at


def _parameter(param: str) -> tuple[str, str]:
    words = " ".join(param.split("=")[0].split())
    m = re.search(r"(\w+)\s*$", words)
    name = m.group(1) if m else ""
    return (words[: m.start()].strip() if m else words, name)


def _arguments(text: str, masked: str, open_at: int) -> list[str]:
    close = match_brace(masked, open_at)
    return [" ".join(a.split()) for a in split_top_level(text[open_at + 1 : close], "(<[{", ")>]}") if a.strip()]


def _enclosing_call(masked: str, start: int, at: int) -> int | None:
    depth = 0
    for i in range(at - 1, start, -1):
        ch = masked[i]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                return i if ch == "(" and re.search(r"\w\s*$", masked[start:i]) else None
            depth -= 1
    return None


def _locals(text: str, masked: str, start: int, end: int) -> dict[str, str]:
    """`auto NAME = EXPR;` (or a named type) before the call, by name."""
    found = {}
    for m in re.finditer(r"(?:^|[;{}])\s*(?:const\s+)?(?:auto|double|float|int64_t|[\w:]+)\s+(\w+)\s*=\s*([^;]+);",
                         masked[start:end]):
        a, b = start + m.start(2), start + m.end(2)
        found[m.group(1)] = " ".join(text[a:b].split())
    return found


def _stub_arg(text: str, names: set[str], locals_: dict[str, str]) -> StubArg:
    value = text
    name = ""
    if _IDENT.fullmatch(text):
        name = text
        value = locals_.get(text, text)
    reads = tuple(dict.fromkeys(n for n in _IDENT.findall(_strip_scopes(value)) if n in names))
    if not name and len(reads) == 1:
        name = reads[0]
    return StubArg(text, name, value, reads)


def _strip_scopes(expr: str) -> str:
    """Qualified names (`Reduction::Mean`) and member calls (`input.numel()`) are not parameters
    read as values, except for the object a member is called on."""
    return re.sub(r"\b\w+::\w+", " ", expr)


# ---- evaluating a value ------------------------------------------------------------------------


class NotEvaluable(ValueError):
    pass


_TOKEN = re.compile(r"\s*(?:(?P<num>\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)[fFlL]?|(?P<name>[A-Za-z_]\w*(?:::\w+)*)"
                    r"|(?P<op>==|!=|<=|>=|&&|\|\||[-+*/?:().<>!]))")


def evaluate(expr: str, env: dict, numel: int | None = None, enums: dict[str, int] | None = None,
             functions: dict | None = None, optionals: frozenset = frozenset()):
    """The value of a C++ expression over the function's parameters (`env`: name -> value, None
    for an unset optional): numbers, `?:`, comparisons, arithmetic, `p.value()`, `p.has_value()`,
    `t.numel()` (`numel`), `Scalar(...)`, `static_cast<...>(...)`, enumerators (`enums`:
    `Reduction::Mean` -> 1) and one-argument helpers (`functions`). A parameter of `optionals`
    (`std::optional<double> eps`) tested alone (`eps ? eps.value() : -1.0`) is true when set, 0.0
    included. Raises NotEvaluable."""
    text = re.sub(r"\bstatic_cast\s*<[^<>]*>", "", expr)
    tokens = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip():
                raise NotEvaluable(expr)
            break
        tokens.append(m)
        pos = m.end()
    parser = _Parser(tokens, env, numel, enums or {}, functions or {}, expr)
    parser.optionals = optionals
    return parser.run()


class _Parser:
    def __init__(self, tokens, env, numel, enums, functions, expr):
        self.t, self.i, self.env, self.numel, self.enums, self.functions, self.expr = (
            tokens, 0, env, numel, enums, functions, expr)

    def peek(self):
        if self.i >= len(self.t):
            return None
        m = self.t[self.i]
        return m.group("op") or m.group("name") or m.group("num")

    def take(self, want=None):
        got = self.peek()
        if got is None or (want is not None and got != want):
            raise NotEvaluable(self.expr)
        self.i += 1
        return self.t[self.i - 1]

    def run(self):
        value = self.ternary()
        if self.i != len(self.t):
            raise NotEvaluable(self.expr)
        return value

    optionals: frozenset = frozenset()

    def ternary(self):
        start = self.i
        cond = self.binary(0)
        if self.i == start + 1 and self.t[start].group("name") in self.optionals:
            cond = self.env.get(self.t[start].group("name")) is not None  # an optional's bool: has_value()
        if self.peek() == "?":
            self.take("?")
            a = self._branch()
            self.take(":")
            b = self._branch()
            chosen = a if _truth(cond) else b
            if isinstance(chosen, NotEvaluable):
                raise chosen
            return chosen
        return cond

    def _branch(self):
        """A branch of `?:`, which only raises when it is the one taken."""
        start = self.i
        try:
            return self.ternary()
        except NotEvaluable as exc:
            self.i = start
            self._skip()
            return exc

    def _skip(self):
        depth = 0
        while self.peek() is not None:
            tok = self.peek()
            if depth == 0 and tok in (":", ")"):
                return
            depth += (tok == "(") - (tok == ")")
            self.i += 1

    LEVELS = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("+", "-"), ("*", "/"))

    def binary(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self.LEVELS[level]:
            op = self.take().group("op")
            right = self.binary(level + 1)
            left = _apply(op, left, right, self.expr)
        return left

    def unary(self):
        if self.peek() in ("-", "+", "!"):
            op = self.take().group("op")
            v = self.unary()
            return -v if op == "-" else (not _truth(v)) if op == "!" else v
        return self.postfix(self.primary())

    def primary(self):
        m = self.take()
        if m.group("num"):
            s = m.group("num")
            return float(s) if any(c in s for c in ".eE") else int(s)
        if m.group("op") == "(":
            v = self.ternary()
            self.take(")")
            return v
        name = m.group("name")
        if name is None:
            raise NotEvaluable(self.expr)
        if self.peek() == "(":  # a call: Scalar(x), a helper, or the parenthesised cast
            self.take("(")
            arg = self.ternary()
            self.take(")")
            short = name.split("::")[-1]
            if short in ("Scalar", "double", "float"):
                return arg
            if short in self.functions:
                return self.functions[short](arg)
            raise NotEvaluable(self.expr)
        if name in self.enums:
            return self.enums[name]
        if name.split("::")[-1] in ("true", "false"):
            return name.endswith("true")
        if name in self.env:
            return _Member(self.env[name], self.numel) if self.peek() == "." else self.env[name]
        raise NotEvaluable(self.expr)

    def postfix(self, value):
        while self.peek() == ".":
            self.take(".")
            member = self.take().group("name")
            self.take("(")
            self.take(")")
            if not isinstance(value, _Member):
                raise NotEvaluable(self.expr)
            value = value.call(member, self.expr)
        return value.value if isinstance(value, _Member) else value


class _Member:
    def __init__(self, value, numel):
        self.value, self.numel = value, numel

    def call(self, member: str, expr: str):
        if member == "value":
            if self.value is None:
                raise NotEvaluable(expr)
            return self.value
        if member == "has_value":
            return self.value is not None
        if member == "numel" and self.numel is not None:
            return self.numel
        raise NotEvaluable(expr)


def _truth(v) -> bool:
    return v is not None and bool(v)


def _apply(op: str, a, b, expr: str):
    if a is None or b is None:
        if op in ("==", "!="):
            return (a == b) if op == "==" else (a != b)
        raise NotEvaluable(expr)
    if op == "/":
        if isinstance(a, int) and isinstance(b, int):
            return int(a / b)
        return a / b
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "==": lambda: a == b, "!=": lambda: a != b,
            "<": lambda: a < b, ">": lambda: a > b, "<=": lambda: a <= b, ">=": lambda: a >= b,
            "&&": lambda: _truth(a) and _truth(b), "||": lambda: _truth(a) or _truth(b)}[op]()
