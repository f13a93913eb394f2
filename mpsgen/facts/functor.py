"""Choosing a functor body: the built-in catalog, a user's --expr, or a placeholder that stops the
build at the spot to fill in. Never a silently wrong kernel."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from mpsgen.dtypes import GROUPS
from mpsgen.facts.templates import Templates
from mpsgen.errors import MpsgenError
from mpsgen.facts.bodies import BodyResolution, placeholder_comment
from mpsgen.facts.bodyoffer import NoBody
from mpsgen.facts.catalog import load_catalog, lookup
from mpsgen.model import Location, Note
from mpsgen.read.checkout import C10_METAL_DIR
from mpsgen.read.kernelfile import NamespacePrefixes

OPERANDS = {1: ("x",), 2: ("a", "b"), 3: ("a", "b", "c")}
ARITY_WORDS = {1: "unary", 2: "binary", 3: "ternary"}
_CAST = re.compile(r"\b(static_cast)\s*<\s*[A-Za-z_][\w:]*\s*>(?=\s*\()")
_FORBIDDEN = {";": "a semicolon", "{": "a brace", "}": "a brace", "#": "a preprocessor `#`",
              "\n": "a newline", "\r": "a newline", "\\": "a backslash", '"': "a string", "'": "a character literal"}
_TOKEN = re.compile(r"\s*(?:(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFuU]?)|(?P<name>[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)|(?P<op>\*\*|::|[-+*/%<>=!&|^~?:,.()\[\]]+))")


@dataclass(frozen=True)
class FunctorChoice:
    """The rendered functor and where it came from (`catalog`, `expr` or `placeholder`)."""

    source: str
    text: str
    groups: tuple[str, ...]


def operands_for(arity: int, alpha: bool, alpha_name: str = "alpha") -> tuple[str, ...]:
    """The functor's operands; an alpha kernel's Scalar named as the shared function names it
    (logit's `eps`, mse_backward's `norm`; `alpha` when nothing names it)."""
    return OPERANDS[arity] + ((alpha_name,) if alpha else ())


def validate_expr(expr: str, operands: tuple[str, ...], extra: tuple[str, ...] = (), scalar: str = "") -> None:
    """A single Metal expression over the operands (and `extra` names: a params struct's fields):
    no statements, no blocks, no preprocessor. `scalar`: how the stub's Scalar operand got its
    name, said when the expression uses a name that is not an operand."""
    for ch, what in _FORBIDDEN.items():
        if ch in expr:
            raise MpsgenError(
                f"--expr must be a single expression; it contains {what}",
                hint=f"write one expression over {', '.join(operands)}, e.g. --expr \"{operands[0]} * {operands[0]}\"",
            )
    if "//" in expr or "/*" in expr:
        raise MpsgenError("--expr must not contain a comment", hint="remove the comment")
    if not expr.strip():
        raise MpsgenError("--expr is empty", hint=f"write one expression over {', '.join(operands)}")
    # a C++ cast names its type between angle brackets: read `static_cast<bool>(x)` as the call `static_cast(x)`
    expr = _CAST.sub(r"\1", expr)
    depth, pos = 0, 0
    tokens = []
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if not match or match.end() == pos:
            if expr[pos:].strip() == "":
                break
            raise MpsgenError(f"--expr: cannot read {expr[pos:].strip()[:20]!r}", hint="use operands, numbers, operators and function calls")
        tokens.append(match)
        pos = match.end()
    for i, match in enumerate(tokens):
        op = match.group("op")
        if op:
            for ch in op:
                depth += (ch == "(") - (ch == ")")
                if depth < 0:
                    raise MpsgenError("--expr has an unbalanced `)`", hint="balance the parentheses")
                if ch == "," and depth == 0:
                    raise MpsgenError("--expr must be a single expression; it has a top-level comma",
                                      hint="write one expression; commas only separate a call's arguments")
        elif i > 0 and _ends_operand(tokens[i - 1]):
            raise MpsgenError(f"--expr must be a single expression; {match.group().strip()!r} follows an operand with no operator",
                              hint=f"join the parts with an operator, e.g. --expr \"{operands[0]} * {operands[0]}\"")
        name = match.group("name")
        if name and name not in operands and name not in extra:
            called = i + 1 < len(tokens) and (tokens[i + 1].group("op") or "").startswith("(")
            if not called and not name.isupper() and name not in ("true", "false") and "::" not in name:
                named = [n for n in extra if n != "params"]
                raise MpsgenError(
                    f"--expr uses {name!r}, which is not an operand of this {ARITY_WORDS[len([o for o in operands if o in OPERANDS[1] + OPERANDS[3]])]} op",
                    hint=f"operands are {', '.join(operands)}" + (f"; parameters {', '.join(named)}" if named else "")
                    + (f"; {scalar}" if scalar else ""),
                )
    if depth != 0:
        raise MpsgenError("--expr has an unbalanced `(`", hint="balance the parentheses")


def validate_flag(flag: str, expr: str, names: tuple[str, ...]) -> None:
    """A reduction flag's expression (`--combine` over `a`, `b`), by `validate_expr`'s rules, its
    errors naming the flag and the names it may use."""
    try:
        validate_expr(expr, names)
    except MpsgenError as exc:
        message = re.sub(r"which is not an operand of this \w+ op", f"which {flag} does not define", exc.message)
        hint = re.sub(r"operands are .*", f"{flag} may use {', '.join(names)}", exc.hint or "")
        hint = re.sub(r"--expr \"[^\"]*\"", f"{flag} \"...\"", hint)
        raise MpsgenError(message.replace("--expr", flag), hint=hint.replace("--expr", flag) or None) from None


def _ends_operand(token: re.Match) -> bool:
    op = token.group("op")
    return op is None or op.endswith((")", "]"))


def effective_groups(groups: tuple[str, ...]) -> tuple[str, ...]:
    """`bool` is part of the integer registrations already."""
    if "bool" in groups and ("integer" in groups or "int2float" in groups):
        return tuple(g for g in groups if g != "bool")
    return groups


def check_supported(entry, groups: tuple[str, ...]) -> None:
    """Refuse `--dtypes` groups a catalog body does not handle."""
    unsupported = [g for g in groups if g not in entry.supports]
    if unsupported:
        raise MpsgenError(
            f"the catalog's {entry.op} functor does not handle dtype group {unsupported[0]!r} "
            f"(it handles {', '.join(entry.supports)})",
            hint="drop that group from --dtypes, or pass --expr",
        )


@dataclass(frozen=True)
class Body:
    """Where a functor body comes from, before the dtype groups are chosen: the catalog, --expr, a
    source's derived expression (`c10`, `cpu`, `graph`: `mpsgen.facts.bodies`), a placeholder, or a
    functor the kernel file already has. `supports`: the groups it can serve; `defaults`: the groups
    to register when no OpInfo says what MPS tests; `answers`: what each body source offered or
    lacked (a placeholder quotes them above its `#error`)."""

    source: str
    supports: tuple[str, ...]
    defaults: tuple[str, ...]
    describe: str
    template: str = ""
    output: str = ""  # the Metal output type of every registration ("": as the group says)
    expr: str = ""  # a derived body's expression
    helpers: tuple[str, ...] = ()  # definitions a derived expression calls, written before the functor
    location: Location | None = None  # where the derived body's source states it
    answers: tuple = ()  # every body source's answer (BodyOffer | NoBody), in the order asked
    truth: bool = False  # operands are read as truth values only (BodyOffer.truth)
    param_defaults: tuple[tuple[str, str], ...] = ()  # a params body's optional fields unset (BodyOffer.defaults)
    integer_expr: str = ""  # the integer group's own expression (BodyOffer.integer_expr)
    not_registered: tuple[str, ...] = ()  # Metal input types the op does not take (CatalogEntry.not_registered)

    @property
    def derived(self) -> bool:
        return self.source in DERIVED


DERIVED = ("c10", "cpu", "graph")


def find_body(resolution: BodyResolution, *, op: str, name: str, arity: int, alpha: bool, expr: str | None,
              dtypes: tuple[str, ...] | None, forced: str = "auto", alpha_name: str = "alpha",
              promotes: str = "", scalar: str = "") -> Body:
    """The body for `name`'s functor from the resolver's answer (`mpsgen.facts.bodies`): --expr,
    the catalog's, a derived expression, else a placeholder that stops the build until it is
    written, quoting what each source lacked. `forced` (`--body`): a source with nothing is exit 2."""

    operands = operands_for(arity, alpha, alpha_name)
    chosen = resolution.chosen
    if expr is not None:
        validate_expr(expr, operands, scalar=scalar)
        # integer inputs of an op that promotes them (`promotes`: why) reach the expression as floats
        # (the int2float overload converts its operands first), so the default serves them, unless
        # the expression names `T`, which that overload binds to the integer input type
        ints = bool(promotes) and not re.search(r"\bT\b", expr)
        groups = effective_groups(dtypes or (("float", "int2float") if ints else ("float",)))
        return Body("expr", groups, groups, "the --expr body", answers=resolution.answers)
    if chosen is None and forced not in ("auto", "expr"):
        answer = next((a for a in resolution.answers if a.source == forced), None)
        reason = answer.reason if isinstance(answer, NoBody) else "it was not asked"
        raise MpsgenError(f"--body {forced}: no body for {op}: {reason}", location=getattr(answer, "location", None),
                          hint="choose another source with --body, or write one with --expr")
    if chosen is not None and chosen.source == "catalog":
        entry = lookup(name) or lookup(op)
        if entry.arity != arity:
            raise MpsgenError(
                f"the catalog's {entry.op} functor is {ARITY_WORDS[entry.arity]}, but {op} has {arity} tensor inputs",
                hint="pass --expr to write the body",
            )
        if dtypes is not None:
            check_supported(entry, effective_groups(dtypes))
        return Body("catalog", entry.supports, entry.dtypes, f"the catalog's {entry.op} body", entry.template_name,
                    entry.output, answers=resolution.answers, not_registered=entry.not_registered)
    if chosen is not None:
        validate_expr(chosen.expr, operands)
        supports = chosen.supports or ("float",)
        if dtypes is not None:
            unsupported = [g for g in effective_groups(dtypes) if g not in supports]
            if unsupported:
                raise MpsgenError(f"the body from {chosen.describe} does not handle dtype group {unsupported[0]!r} "
                                  f"(it handles {', '.join(supports)})", location=chosen.location,
                                  hint="drop that group from --dtypes, or pass --expr")
        defaults = tuple(g for g in supports if g != "bool") or supports
        if chosen.integer_expr:
            validate_expr(chosen.integer_expr, operands)
        return Body(chosen.source, supports, defaults, chosen.describe, "", chosen.output, chosen.expr, chosen.helpers,
                    chosen.location, resolution.answers, chosen.truth, integer_expr=chosen.integer_expr)
    groups = effective_groups(dtypes) if dtypes else tuple(GROUPS)
    return Body("placeholder", groups, ("float",), "the placeholder body", answers=resolution.answers)


def render_functor(templates: Templates, body: Body, *, name: str, arity: int, alpha: bool,
                   expr: str | None, groups: tuple[str, ...],
                   namespaces: NamespacePrefixes | None = None, c10_functions: frozenset[str] = frozenset(),
                   alpha_name: str = "alpha") -> FunctorChoice:
    """The functor text for `body`, with an overload for each of `groups`, spelled with the kernel
    file's namespace prefixes; `c10_functions`: the checkout's `c10::metal` functions
    (`mpsgen.read.c10lib`), which catalog bodies call instead of local helpers."""
    groups = effective_groups(groups)
    operands = operands_for(arity, alpha, alpha_name)
    spelling = (namespaces or NamespacePrefixes()).template_vars() | {"c10_functions": c10_functions}
    if body.source == "expr" or body.derived:
        text = templates.render("functor_expr.metal.j2", name=name, expr=(body.expr or expr or "").strip(),
                                integer_expr=body.integer_expr, operands=operands, groups=groups, output=body.output, truth=body.truth,
                                alpha_name=alpha_name if alpha else "", opmath_alpha=arity == 3 and alpha,
                                **spelling)
    elif body.source == "catalog":
        text = templates.render(body.template, name=name, groups=groups, **spelling)
    else:
        text = templates.render(
            "functor_placeholder.metal.j2", name=name, operands=operands, alpha=alpha,
            groups=groups, arity_word=ARITY_WORDS[arity], sources=comment_lines(placeholder_comment(body.answers)),
            output=body.output, opmath_alpha=arity == 3 and alpha, **spelling,
        )
    return FunctorChoice(body.source, text, groups)


def comment_lines(lines: tuple[str, ...]) -> tuple[str, ...]:
    """Each source's answer wrapped to fit 80 columns after `  //   ` (continuations indented), so
    clang-format has no comment to reflow into its neighbour."""
    out = []
    for line in lines:
        out += textwrap.wrap(line, width=72, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    return tuple(out)


def fallback_notes(body, functions: frozenset[str]) -> tuple:
    """A note for a catalog body that keeps a local helper because the checkout's c10/metal lacks
    a function it would call (its catalog entry's `c10` list)."""

    if body.source != "catalog":
        return ()
    entry = next((e for e in load_catalog().values() if e.template_name == body.template), None)
    missing = [name for name in (entry.c10 if entry else ()) if name not in functions]
    if not missing:
        return ()
    names = ", ".join(f"c10::metal::{name}" for name in missing)
    return (Note("info", f"{entry.op}_functor carries a local helper: this checkout's {C10_METAL_DIR} headers declare no {names}"),)


# File-scope helpers of the catalog's complex overloads (templates/complex_helpers.metal.j2), in the
# order they are written, with the helpers each one calls.
SHARED_HELPERS = {
    "complex_log1p_": (),
    "complex_abs_": (),
    "complex_log_abs_": ("complex_log1p_",),
    "complex_sqrt_": ("complex_abs_",),
}
HELPERS_TEMPLATE = "complex_helpers.metal.j2"


def shared_helpers(templates: Templates, functor_text: str, file_text: str, *,
                   namespaces: NamespacePrefixes | None = None, c10_functions: frozenset[str] = frozenset()) -> str:
    """The file-scope helpers `functor_text` calls that `file_text` (the kernel file as planned so
    far) does not define yet, rendered to go before the functor: each written once per file and
    reused by every later op; "" when none is missing. A helper the checkout's c10/metal has
    (log1p) is called there instead (`c10_functions`)."""

    wanted: list[str] = []

    def want(name: str) -> None:
        if name == "complex_log1p_" and "log1p" in c10_functions:
            return
        for dependency in SHARED_HELPERS[name]:
            want(dependency)
        if name not in wanted:
            wanted.append(name)

    for name in SHARED_HELPERS:
        if re.search(rf"(?<![\w.]){name}\s*\(", functor_text):
            want(name)
    missing = [name for name in SHARED_HELPERS if name in wanted and not _defines(file_text, name)]
    if not missing:
        return ""
    spelling = (namespaces or NamespacePrefixes()).template_vars() | {"c10_functions": c10_functions}
    return templates.render(HELPERS_TEMPLATE, which=missing, **spelling)


def _defines(text: str, name: str) -> bool:
    return re.search(rf"^[ \t]*(?:static[ \t]+)?inline[ \t]+\w+[ \t]+{name}[ \t]*\(", text, re.M) is not None


def derived_helpers(body: Body, file_text: str) -> str:
    """The definitions a derived body calls that the kernel file as planned lacks (each written
    once per file: a second op bringing the same helper along reuses it)."""
    return "".join(text + "\n" for text in body.helpers if text.strip() not in file_text)
